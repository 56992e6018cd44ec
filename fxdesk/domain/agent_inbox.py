"""The root session's inbox as values: events, lanes, signals and their validation (issue 13).

Each root session has one inbox (spec agent-coordinator §2.7, §2.8): the completion events of
its background runs and the *signals* (alerts) its running agents raise. An event reaches the
root agent on a lane: ``queue`` (its next turn, or a continuation when the root is idle) or
``steer`` (injected into the running turn at its next step boundary). Pure: the store persists
these and applies the capacity rule of ``domain/agent_runs.py``.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.agent_runs import AgentRunError


class EventKind(enum.StrEnum):
    COMPLETION = "completion"
    SIGNAL = "signal"


class Lane(enum.StrEnum):
    QUEUE = "queue"
    STEER = "steer"


class EventStatus(enum.StrEnum):
    """An inbox event's delivery state. ``pending`` and ``claimed`` count against capacity."""

    PENDING = "pending"
    CLAIMED = "claimed"  # handed to a delivery attempt, with a lease
    CONSUMED = "consumed"  # delivered, or written already consumed (a cancel from the window)
    SUPERSEDED = "superseded"  # a signal of a run that was cancelled: kept, never delivered
    DEAD = "dead"  # ran out of delivery attempts: shown, no longer retried

    @property
    def counted(self) -> bool:
        return self in (EventStatus.PENDING, EventStatus.CLAIMED)


class Severity(enum.StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"


def completion_key(run_id: str) -> str:
    """The event key of a run's completion: unique per session, so one completion per run."""
    return f"completion:{run_id}"


# --- signals --------------------------------------------------------------------------------

MAX_KEY_CHARS = 64
MAX_DEDUPE_KEY_CHARS = 128
MAX_SUMMARY_CHARS = 300
MAX_DETAILS_BYTES = 8 * 1024
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")


class InvalidSignal(AgentRunError):
    """The signal's input is malformed; the message names the field."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__("INVALID_SIGNAL", f"signal {field}: {why}")
        self.field = field


class SignalRefused(AgentRunError):
    """A well-formed signal the store would not take (run gone, finished, inbox full...)."""


@dataclass(frozen=True)
class SignalInput:
    """What the ``emit_signal`` tool passes in, validated (spec §2.9)."""

    key: str
    severity: Severity
    summary: str
    details: Mapping[str, Any] | list[Any] | str | int | float | bool | None = None
    dedupe_key: str | None = None

    def details_json(self) -> str | None:
        return None if self.details is None else json.dumps(self.details, sort_keys=True)


def validate_signal(
    key: object,
    severity: object,
    summary: object,
    details: object = None,
    dedupe_key: object = None,
) -> SignalInput:
    """A ``SignalInput`` from untrusted tool arguments, or ``InvalidSignal`` naming the field.

    Sizes are bounded so a looping agent cannot fill the database through its alerts."""
    if not isinstance(key, str) or not key.strip():
        raise InvalidSignal("key", "required, a short identifier such as 'err-rate'")
    key = key.strip()
    if len(key) > MAX_KEY_CHARS or not _KEY.fullmatch(key):
        raise InvalidSignal(
            "key", f"use at most {MAX_KEY_CHARS} letters, digits and . _ : / - (got {key[:80]!r})"
        )
    try:
        level = Severity(severity if isinstance(severity, str) else "")
    except ValueError:
        choices = ", ".join(s.value for s in Severity)
        raise InvalidSignal("severity", f"one of {choices} (got {severity!r})") from None
    if not isinstance(summary, str) or not summary.strip():
        raise InvalidSignal("summary", "required, one line saying what happened")
    summary = summary.strip()
    if len(summary) > MAX_SUMMARY_CHARS:
        raise InvalidSignal(
            "summary",
            f"at most {MAX_SUMMARY_CHARS} characters (got {len(summary)}); put the rest in details",
        )
    if details is not None:
        try:
            encoded = json.dumps(details, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidSignal("details", f"must be JSON ({exc})") from None
        if len(encoded.encode("utf-8")) > MAX_DETAILS_BYTES:
            raise InvalidSignal(
                "details", f"at most {MAX_DETAILS_BYTES} bytes of JSON (got {len(encoded)})"
            )
    if dedupe_key is not None:
        if not isinstance(dedupe_key, str) or not dedupe_key.strip():
            raise InvalidSignal("dedupe_key", "when given, a non-empty string")
        dedupe_key = dedupe_key.strip()
        if len(dedupe_key) > MAX_DEDUPE_KEY_CHARS:
            raise InvalidSignal("dedupe_key", f"at most {MAX_DEDUPE_KEY_CHARS} characters")
    return SignalInput(key, level, summary, details, dedupe_key)  # type: ignore[arg-type]


class SignalStatus(enum.StrEnum):
    ACCEPTED = "accepted"
    DEDUPLICATED = "deduplicated"


@dataclass(frozen=True)
class SignalAccepted:
    """The answer to ``emit_signal`` (spec §2.9): after a dedupe, the original event's id."""

    signal_id: str
    status: SignalStatus
    lane: Lane
    count: int  # how many times this signal was raised within its window


# --- events ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class InboxEvent:
    """One ``agent_inbox`` row as the store returns it."""

    id: str
    root_session_id: str
    run_id: str
    kind: EventKind
    event_key: str
    lane: Lane
    status: EventStatus
    requires_continuation: bool
    payload: Mapping[str, Any]
    severity: Severity | None
    signal_key: str | None
    dedupe_key: str | None
    count: int
    revision: int
    attempts: int
    lease_owner: str | None
    lease_expires_at_ms: int | None
    available_at_ms: int
    created_at_ms: int
    updated_at_ms: int
    consumed_at_ms: int | None
    last_error: str | None


def retry_delay_ms(attempts: int, base_ms: int) -> int:
    """Back-off before delivery attempt ``attempts + 1``: base, 2x, 4x... capped at 5 minutes."""
    return int(min(base_ms * (2 ** max(0, attempts - 1)), 300_000))
