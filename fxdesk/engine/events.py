"""Events the engine publishes on its bus, after the change they describe is durable.

Frozen dataclasses holding domain snapshots. The GUI subscribes through ``gui/bridge.py``.
``publish_change`` is the one way a committed work ``Change`` becomes events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxdesk.domain.approvals import Approval
from fxdesk.domain.background import BackgroundTask, TaskState
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.deliveries import Delivery
from fxdesk.domain.frozen import quick_init
from fxdesk.domain.mcp import ServerStatus
from fxdesk.domain.model import Session, Workspace
from fxdesk.domain.work import Change, ControlEvent, WorkItem
from fxdesk.engine.bus import EventBus


@dataclass(frozen=True)
class McpServersChanged:
    """An MCP server started, stopped, restarts or was (un)trusted: every server as of now."""

    servers: tuple[ServerStatus, ...]


@dataclass(frozen=True)
class WorkspaceAdded:
    workspace: Workspace


@dataclass(frozen=True)
class SessionAdded:
    session: Session


@quick_init
@dataclass(frozen=True)
class SessionChanged:
    """A session's durable record changed (state, name, parent, counters...)."""

    session: Session
    previous: Session | None = None


@quick_init
@dataclass(frozen=True)
class WorkChanged:
    """Work items changed state (one committed batch)."""

    session_id: str
    items: tuple[WorkItem, ...]
    events: tuple[ControlEvent, ...]


@dataclass(frozen=True)
class HistoryAppended:
    session_id: str
    entries: tuple[HistoryEntry, ...]


@dataclass(frozen=True)
class DeliveryAdded:
    delivery: Delivery


@dataclass(frozen=True)
class TextStreamed:
    """Assistant text as it streams in (live only; the durable copy comes with the step)."""

    session_id: str
    work_id: str
    text: str


@dataclass(frozen=True)
class ToolOutput:
    """Lines a running command printed (live only, secrets masked; its result is the durable
    copy). Whole lines only, so a key split between two reads is masked too."""

    session_id: str
    work_id: str
    call_id: str
    text: str


@dataclass(frozen=True)
class LiveChanged:
    """The live view of a running item changed; fetch ``owner.live_snapshot`` to redraw."""

    session_id: str
    revision: int


@dataclass(frozen=True)
class BusyElsewhere:
    """Another process holds (or no longer holds) a session's lock."""

    session_id: str
    busy: bool
    holder_pid: int | None = None


@dataclass(frozen=True)
class RecoveryReport:
    sessions_changed: int = 0
    work_interrupted: int = 0
    work_completed: int = 0
    sessions_external_busy: int = 0
    sessions_failed: int = 0
    busy_sessions: tuple[str, ...] = field(default=(), repr=False)
    interrupted_sessions: tuple[str, ...] = field(default=(), repr=False)

    @property
    def fully_reconciled(self) -> bool:
        return self.sessions_external_busy == 0 and self.sessions_failed == 0


@dataclass(frozen=True)
class ApprovalChanged:
    """An approval was raised, answered, cancelled or went stale."""

    approval: Approval


@dataclass(frozen=True)
class RulesChanged:
    """Permission rules were added or removed."""


@dataclass(frozen=True)
class BackgroundChanged:
    """A background task was listed, changed state or URL, or was forgotten.

    ``previous`` is its state before (None: newly listed, launched or restored); ``removed``:
    it left the list (stop-and-forget). Views re-read nothing: ``task`` is the snapshot."""

    task: BackgroundTask
    previous: TaskState | None = None
    removed: bool = False

    @property
    def session_id(self) -> str:
        return self.task.session_id

    @property
    def workspace_id(self) -> int:
        return self.task.workspace_id

    @property
    def task_id(self) -> str:
        return self.task.stable_id

    @property
    def completed(self) -> bool:
        """It just stopped running (a completion: notify the person)."""
        return self.previous is TaskState.RUNNING and not self.task.state.running


def publish_change(bus: EventBus, change: Change | None, session: Session | None = None) -> None:
    """Publish a committed work change and the session as it is after it.

    Args:
        bus: Where to publish.
        change: The committed change (``WorkChanged``); None if nothing changed.
        session: The session re-read in the same transaction (``SessionChanged``); None when
            nothing about it changed or no view needs the snapshot.
    """
    if change is not None:
        bus.publish(WorkChanged(change.record.session_id, change.items, change.events))
    if session is not None:
        bus.publish(SessionChanged(session))
