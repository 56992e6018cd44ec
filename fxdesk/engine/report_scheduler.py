"""Timed progress and terminal reports, without any model call (spec child-sessions §7.1).

``ReportScheduler`` keeps one check time per (session, work item). A supervisor task sleeps
until the earliest one (or until woken by a change), then polls every due pair through a
``Poller``; the poller decides what to report and returns when to look again. The clock is
injectable so tests drive time exactly.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import enum
import logging
from dataclasses import dataclass

from fxdesk.engine.clock import Clock
from fxdesk.store import StoreError

log = logging.getLogger(__name__)

RETRY_DELAY_MS = 25
MAX_TIME_MS = 2**63 - 1


class PollKind(enum.StrEnum):
    INACTIVE = "inactive"
    PENDING = "pending"
    EMITTED = "emitted"
    STOPPED = "stopped"


@dataclass(frozen=True)
class PollOutcome:
    kind: PollKind
    next_check_ms: int | None = None
    coalesced_ticks: int = 0


class RetryablePollError(Exception):
    """Try again shortly (lock busy, store unavailable, commit indeterminate)."""


class Poller(abc.ABC):
    @abc.abstractmethod
    async def poll(self, session_id: str, work_id: str, now_ms: int) -> PollOutcome:
        """Report for this work item if due; raise ``RetryablePollError`` to be asked again."""


@dataclass
class PollReport:
    registered: int = 0
    due: int = 0
    emitted: int = 0
    stopped: int = 0
    retryable_failures: int = 0


def _retryable(exc: BaseException) -> bool:
    """Store trouble (a busy lock, an indeterminate or failed commit, a full disk) passes;
    anything else is a bug in the poller and stops that schedule."""
    return isinstance(exc, RetryablePollError | StoreError)


class ReportScheduler:
    """Schedules keyed by (session, work); the supervisor polls the due ones."""

    def __init__(self, clock: Clock | None, poller: Poller | None) -> None:
        self.clock = clock
        self.poller = poller
        self.closed = False
        self._schedules: dict[tuple[str, str], int] = {}
        self._changed = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self.polls = 0

    @property
    def enabled(self) -> bool:
        """Schedules exist only with both a clock and a poller (spec §2.17)."""
        return self.clock is not None and self.poller is not None

    def schedules(self) -> dict[tuple[str, str], int]:
        return dict(self._schedules)

    def register(self, session_id: str, work_id: str, next_check_ms: int) -> bool:
        """Set the check time for (session, work), overwriting any earlier one."""
        if not self.enabled or self.closed:
            return False
        self._schedules[(session_id, work_id)] = next_check_ms
        self._changed.set()
        return True

    def wake(self, session_id: str) -> None:
        """Pull the session's checks forward to now (after a completion or a cancel)."""
        if self.clock is None:
            return
        now = self.clock.now_ms()
        for key in self._schedules:
            if key[0] == session_id:
                self._schedules[key] = min(self._schedules[key], now)
        self._changed.set()

    def remove_session(self, session_id: str) -> None:
        for key in [k for k in self._schedules if k[0] == session_id]:
            del self._schedules[key]
        self._changed.set()

    async def poll_once(self) -> PollReport:
        """Poll every due schedule once."""
        report = PollReport()
        if not self.enabled or self.closed:
            return report
        assert self.clock is not None and self.poller is not None
        now = self.clock.now_ms()
        report.registered = len(self._schedules)
        due = [key for key, at in self._schedules.items() if at <= now]
        report.due = len(due)
        for key in due:
            if self.closed:
                break
            session_id, work_id = key
            self.polls += 1
            try:
                outcome = await self.poller.poll(session_id, work_id, now)
            except Exception as exc:
                if _retryable(exc):
                    report.retryable_failures += 1
                    self._schedules[key] = min(now + RETRY_DELAY_MS, MAX_TIME_MS)
                else:
                    log.warning("report poll of %s stopped: %s", work_id, exc)
                    self._schedules.pop(key, None)
                    report.stopped += 1
                continue
            if outcome.kind == PollKind.PENDING and outcome.next_check_ms is not None:
                self._schedules[key] = outcome.next_check_ms
            elif outcome.kind == PollKind.EMITTED:
                report.emitted += 1
                if outcome.next_check_ms is None:
                    self._schedules.pop(key, None)
                    report.stopped += 1
                else:
                    self._schedules[key] = outcome.next_check_ms
            else:
                self._schedules.pop(key, None)
                report.stopped += 1
        return report

    # --- the supervisor ----------------------------------------------------------------------

    def start(self) -> None:
        if self.enabled and self._supervisor is None and not self.closed:
            self._supervisor = asyncio.get_running_loop().create_task(
                self._run(), name="report-supervisor"
            )

    async def _run(self) -> None:
        assert self.clock is not None
        while not self.closed:
            self._changed.clear()
            if self._schedules:
                delay = (min(self._schedules.values()) - self.clock.now_ms()) / 1000
                if delay <= 0:
                    await self.poll_once()
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(delay, 3600))
            else:
                await self._changed.wait()

    async def stop(self) -> None:
        """No poll starts after this; a poll already running finishes first."""
        self.closed = True
        self._changed.set()
        task, self._supervisor = self._supervisor, None
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
