"""Types shared by the session owner and its item execution: slots, results and verdicts."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain.authority import AdmissionSnapshot
from fxdesk.domain.live import LivePresentation
from fxdesk.domain.model import Session
from fxdesk.domain.report_policy import ReportPolicy
from fxdesk.domain.work import WorkItem
from fxdesk.engine.cancel import CancelToken
from fxdesk.engine.errors import SessionNotActive, SessionNotFound, WorkActive
from fxdesk.engine.providers import Resolved
from fxdesk.providers.base import ProviderError

__all__ = [
    "COMPLETION_CACHE",
    "Admission",
    "Admitted",
    "Drain",
    "ItemOutcome",
    "Result",
    "SessionNotActive",
    "SessionNotFound",
    "Slot",
    "StartResult",
    "WorkActive",
]

COMPLETION_CACHE = 64


class StartResult(enum.StrEnum):
    STARTED = "started"
    ALREADY_RUNNING = "already_running"


class Result(enum.StrEnum):
    """What running a session's queue came to (spec §3.11 ChildResult)."""

    IDLE = "idle"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    AWAITING_APPROVAL = "awaiting_approval"
    PAUSED = "paused"
    EXTERNAL_BUSY = "external_busy"
    NO_WORK = "no_work"
    SESSION_FAILED = "session_failed"
    CONTROL_FAILED = "control_failed"
    ADMISSION_FAILED = "admission_failed"
    OWNER_STOPPED = "owner_stopped"


class Admission(enum.StrEnum):
    """What the admission transaction found when it looked at the queue's head again."""

    ADMITTED = "admitted"  # the item is running now
    MOVED = "moved"  # another item is the head now: look again
    GONE = "gone"  # the session's record is gone
    FAILED = "failed"  # the item could not be admitted and is failed durably


class Drain(enum.StrEnum):
    """Whether a slot's drain loop runs another item after this one."""

    CONTINUE = "continue"
    STOP = "stop"


@dataclass(frozen=True)
class ItemOutcome:
    """What running one item came to: the slot's result, or more of its queue to run."""

    result: Result
    drain: Drain = Drain.STOP

    @classmethod
    def more_work(cls) -> ItemOutcome:
        """The item finished and the queue holds more runnable work."""
        return cls(Result.IDLE, Drain.CONTINUE)


@dataclass(eq=False)
class Slot:
    session_id: str
    retry: bool
    cancel: CancelToken = field(default_factory=CancelToken)
    shutdown: bool = False
    wake_requested: bool = False
    finished: bool = False
    result: Result = Result.NO_WORK
    live: LivePresentation = field(default_factory=LivePresentation)
    task: asyncio.Task[Result] | None = None
    model_calls: int = 0
    # The outcome of the run this slot was restarted after: published instead of a
    # ``no_work`` of its own (the pending start found nothing more to do).
    prior: Result | None = None


@dataclass(frozen=True)
class Admitted:
    """An item just moved to running, with what its turn runs with."""

    session: Session
    item: WorkItem
    snapshot: AdmissionSnapshot
    policy: ReportPolicy
    workspace: Path
    resolved: Resolved | ProviderError
