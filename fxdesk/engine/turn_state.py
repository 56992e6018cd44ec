"""What a turn runs with and how it ends; shared by the turn loop and its tool calls."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk import messages
from fxdesk.domain import reasons
from fxdesk.domain.authority import AdmissionSnapshot
from fxdesk.domain.live import LivePresentation
from fxdesk.domain.model import Profile, Session
from fxdesk.domain.work import WorkItem
from fxdesk.engine.authority import AuthorityResolver
from fxdesk.engine.cancel import CancelToken
from fxdesk.providers.base import Provider, Usage
from fxdesk.store import StoreError


class TurnEnd(enum.StrEnum):
    COMPLETED = "completed"  # the history commit landed
    FAILED = "failed"  # provider failure, max iterations...
    PAUSED = "paused"  # a step could not be saved; resume continues
    CANCELLED = "cancelled"  # the cancel token was raised
    STOPPED = "stopped"  # the owner is shutting down: nothing more is written


@dataclass(frozen=True)
class TurnOutcome:
    end: TurnEnd
    diagnostic: str | None = None
    model_calls: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass
class TurnRuntime:
    """What one turn runs with; built fresh per work item, never shared.

    ``authority`` is the host's live authority, resolved again for every tool action and model
    call; without one the admission snapshot stands in for it (nothing is ever revoked then).
    """

    session: Session
    workspace: Path
    item: WorkItem
    snapshot: AdmissionSnapshot
    provider: Provider
    cancel: CancelToken
    stopping: Callable[[], bool]
    live: LivePresentation | None = None
    profile: Profile | None = None  # for prices
    authority: AuthorityResolver | None = None


class TurnStop(Exception):
    """Ends the turn with ``end``; raised anywhere inside it, caught by the runner."""

    def __init__(self, end: TurnEnd, diagnostic: str | None = None) -> None:
        super().__init__(end.value)
        self.end = end
        self.diagnostic = diagnostic


class Stopping(Exception):
    """Raised inside a write transaction that found the turn stopped: nothing is written."""


class StaleAuthority(Exception):
    """Raised inside the transaction that would start a tool action, when the host's authority
    changed since the action was decided: nothing is written, the action is decided again."""


def paused(exc: StoreError) -> TurnStop:
    """The stop for a store failure: the item pauses (interrupted) and resume continues.

    The person is told why, in the store's words ("The disk holding ... is full; nothing was
    saved. Free some space and try again."): the paused item itself can only say "paused",
    since the failure that paused it may be what keeps its reason from being saved (found by
    tests/reliability/test_store_faults.py: a full disk stopped a session in silence)."""
    messages.error(exc.user_message, key=f"store:{type(exc).__name__}")
    return TurnStop(
        TurnEnd.PAUSED, reasons.diagnostic(reasons.TURN_NOT_COMMITTED, exc.user_message)
    )
