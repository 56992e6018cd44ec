"""Entities and enums of fxdesk, as immutable snapshots.

Views and the engine pass these around; the store returns them instead of live database rows. Names
are the person's words: a workspace holds sessions, a session has a queue of work items, each run as
one turn whose steps form the history.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.frozen import quick_init


class WorkStatus(enum.StrEnum):
    """Status of one work item (spec child-sessions §2.19 QueueStatus)."""

    PENDING = "pending"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_WORK


_TERMINAL_WORK = frozenset({WorkStatus.COMPLETED, WorkStatus.FAILED, WorkStatus.CANCELLED})


class SessionState(enum.StrEnum):
    """A session's state, derived from its queue (spec child-sessions §3.2)."""

    IDLE = "idle"
    QUEUED = "queued"
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ARCHIVED = "archived"


class SessionMode(enum.StrEnum):
    """``one_off`` sessions end with their work; ``persistent`` ones idle and take more."""

    ONE_OFF = "one_off"
    PERSISTENT = "persistent"


class PermissionMode(enum.StrEnum):
    """How much a session's agent may do without asking (``domain.permissions``).

    ``ask``: reads inside the workspace only; ``auto``: commands and writes inside the workspace,
    in the sandbox, asking before anything that must leave it; ``yolo``: no questions, still in
    the sandbox; ``unrestricted``: yolo without the sandbox, offered only once the person turns
    it on (``UNRESTRICTED_SETTING``).
    """

    ASK = "ask"
    AUTO = "auto"
    YOLO = "yolo"
    UNRESTRICTED = "unrestricted"

    @property
    def never_asks(self) -> bool:
        """yolo and unrestricted: no questions, only deny rules refuse."""
        return self in (PermissionMode.YOLO, PermissionMode.UNRESTRICTED)


# The app setting that makes ``unrestricted`` a mode the person can pick (off by default).
UNRESTRICTED_SETTING = "permissions.unrestricted_enabled"
UNRESTRICTED_OFF = (
    "unrestricted mode (commands without the sandbox) is turned off: turn it on in Settings → "
    f"General (the setting {UNRESTRICTED_SETTING}), or pick yolo, which runs in the sandbox"
)


class WorkKind(enum.StrEnum):
    """Where a work item came from."""

    PROMPT = "prompt"  # the person typed it
    TASK = "task"  # a parent session delegated it
    CONTINUATION = "continuation"  # an inbox event woke an idle root session
    STEER = "steer"  # for the running turn, at its next step; a normal message if it ends first


class EntryKind(enum.StrEnum):
    """One row of a session's committed history."""

    USER = "user"  # the message that started a turn
    ASSISTANT = "assistant"  # one finished model response (text; tool calls follow)
    TOOL_CALL = "tool_call"  # a tool call the model asked for
    TOOL_RESULT = "tool_result"  # its finished result
    TURN_END = "turn_end"  # the turn committed; proof for restart recovery
    NOTICE = "notice"  # a system note shown to the person (e.g. interrupted)


@dataclass(frozen=True)
class Workspace:
    id: int
    path: str
    name: str
    created_at_ms: int


@quick_init
@dataclass(frozen=True)
class Session:
    """One agent session, root or child."""

    id: str
    workspace_id: int
    parent_id: str | None
    root_id: str
    is_child: bool
    name: str
    mode: SessionMode
    profile: str | None
    model: str | None
    effort: str | None
    permission_mode: PermissionMode
    state: SessionState
    archived_from: SessionState | None
    generation: int
    next_event_sequence: int
    last_work_id: str | None
    created_at_ms: int
    updated_at_ms: int
    config_json: str = "{}"

    @property
    def config(self) -> dict[str, Any]:
        """Notification policy, agent definition... (parsed from ``config_json``)."""
        value = json.loads(self.config_json or "{}")
        return value if isinstance(value, dict) else {}


class KeySource(enum.StrEnum):
    """Where a profile's API key comes from."""

    KEYRING = "keyring"
    ENV = "env"
    NONE = "none"


@dataclass(frozen=True)
class Profile:
    """A model provider profile; its secret, if any, lives in the keyring, never here.

    Prices are in US dollars per million tokens; None when unknown. An ``acp`` profile is an
    external agent over the Agent Client Protocol: ``command`` with ``args`` and extra ``env``
    start it (docs/acp.md); it has no model, key or prices of its own.
    """

    name: str
    kind: str  # scripted | openai | anthropic | acp
    base_url: str | None = None
    model: str | None = None
    script_path: str | None = None
    created_at_ms: int = 0
    effort: str | None = None
    max_tokens: int | None = None
    connect_timeout_s: float = 10.0
    read_timeout_s: float = 120.0
    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None
    key_source: KeySource = KeySource.KEYRING
    key_env: str | None = None
    command: str | None = None  # acp: the agent's program
    args: tuple[str, ...] = ()  # acp: its arguments
    env: tuple[tuple[str, str], ...] = ()  # acp: extra environment (NAME, value)
    # acp: names of more variables whose values are secrets, kept in the keyring (one JSON
    # object under the profile's entry), never here.
    secret_env: tuple[str, ...] = ()
    preset: str | None = None  # acp: the preset it was made from (domain/acp_presets.py)
    # acp: whether the agent runs in the sandbox; None: the default (on; a preset's own).
    sandbox: bool | None = None
    # Whether the model takes images; None: guessed from its name (domain/images.py).
    accepts_images: bool | None = None

    def cost_usd(self, input_tokens: int, output_tokens: int) -> float | None:
        """What these tokens cost, or None when the profile has no prices."""
        if self.price_in_per_mtok is None and self.price_out_per_mtok is None:
            return None
        return (
            input_tokens * (self.price_in_per_mtok or 0.0)
            + output_tokens * (self.price_out_per_mtok or 0.0)
        ) / 1_000_000


@dataclass(frozen=True)
class Receipt:
    """The durable answer to a session command; replaying an idempotent command returns it."""

    code: str
    session_id: str
    generation: int
    event_sequence: int
    fingerprint: str
