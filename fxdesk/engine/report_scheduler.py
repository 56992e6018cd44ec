"""Timed progress and terminal reports, without any model call (spec child-sessions §7.1).

``ReportScheduler`` keeps one check time per (session, work item). A supervisor task sleeps
until the earliest one (or until woken by a change), then polls every due pair through a
``Poller``; the poller decides what to report and returns when to look again. The clock is
injectable so tests drive time exactly.

A poll that fails is classified (``classify``): a *transient* failure (a busy or locked database,
a full disk, an I/O error, a commit that failed or whose outcome is unknown, out of memory) keeps
the schedule and retries; a *permanent* one (a damaged, foreign, newer or read-only database, a
closed store, a bug in the poller) stops that schedule and logs why, since waiting cannot fix it.
Retries come 25 ms apart for the first ``FAST_RETRIES`` (the spec's rhythm: a busy lock clears
within them), then the delay doubles up to ``RETRY_MAX_DELAY_MS``, so a disk that stays full is
asked every few seconds rather than 40 times a second, forever. A successful poll or a new
registration starts the count again.

After a restart (decided here; spec §7.1 does not say). Schedules live in memory; the ledger's
running policies (``work_policy``) are what they time. Start-up registers none of them: recovery
makes running work interrupted, and nothing runs it until the person resumes it (spec §3.7).
Interval reports are about work in progress, so they wait with the work instead of saying
"interrupted" every interval (for ever, for a policy without a duration) about work the tree
already shows as interrupted. Resuming the work resumes its reports: re-admission captures the
policy again, capture keeps the first admission's (``control.capture_policy``), and the runner
registers its next check. So the interval is the same and the time window still counts from
the first admission; the reports missed while no process ran the work collapse into one that
carries their tick count, and a window that ended meanwhile stops the policy at the first poll.
Interrupted work ends only by a resume or a close (a cancel leaves it alone, spec §3.6), and a
close stops the session's running policies durably. (Work that recovery finds *completed* gets
its terminal report from recovery's reconciliation, but its policy is left running in the
ledger with nothing timing it: harmless, and recovery's to stop.)
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import enum
import logging
from dataclasses import dataclass

from fxdesk.engine.clock import Clock
from fxdesk.store.errors import is_transient

log = logging.getLogger(__name__)

RETRY_DELAY_MS = 25
FAST_RETRIES = 4
RETRY_MAX_DELAY_MS = 5_000
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


class PollFailure(enum.Enum):
    TRANSIENT = "transient"  # keep the schedule, try again
    PERMANENT = "permanent"  # stop the schedule


def classify(exc: BaseException) -> PollFailure:
    """Whether a failed poll is worth repeating (spec §7.1: retry on out of memory, a busy
    lock, an unavailable store, an indeterminate commit; stop on what waiting cannot fix,
    a bug in the poller included)."""
    if isinstance(exc, RetryablePollError | MemoryError) or is_transient(exc):
        return PollFailure.TRANSIENT
    return PollFailure.PERMANENT


def retry_delay_ms(failures: int) -> int:
    """How long to wait after the ``failures``-th failure in a row (1-based) of one schedule."""
    doublings = min(max(0, failures - FAST_RETRIES), 16)  # 25 ms << 16 is far past the bound
    return min(RETRY_DELAY_MS << doublings, RETRY_MAX_DELAY_MS)


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


class ReportScheduler:
    """Schedules keyed by (session, work); the supervisor polls the due ones."""

    def __init__(self, clock: Clock | None, poller: Poller | None) -> None:
        self.clock = clock
        self.poller = poller
        self.closed = False
        self._schedules: dict[tuple[str, str], int] = {}
        self._failures: dict[tuple[str, str], int] = {}  # transient failures in a row
        self._changed = asyncio.Event()
        self._supervisor: asyncio.Task[None] | None = None
        self.polls = 0
        # The check time the supervisor sleeps until (None while it polls or has nothing to
        # time): what a test or a debugger looks at to know the timer is armed.
        self.sleeping_until: int | None = None

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
        self._failures.pop((session_id, work_id), None)
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
            self._failures.pop(key, None)
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
                self._failed(key, exc, now, report)
                continue
            self._failures.pop(key, None)
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

    def _failed(
        self, key: tuple[str, str], exc: BaseException, now: int, report: PollReport
    ) -> None:
        """Retry a transient failure later; stop the schedule on a permanent one."""
        if classify(exc) == PollFailure.TRANSIENT:
            failures = self._failures[key] = self._failures.get(key, 0) + 1
            delay = retry_delay_ms(failures)
            log.debug(
                "report poll of %s deferred %d ms (failure %d): %r", key[1], delay, failures, exc
            )
            self._schedules[key] = min(now + delay, MAX_TIME_MS)
            report.retryable_failures += 1
            return
        log.warning("report poll of %s stopped: %r", key[1], exc)
        self._schedules.pop(key, None)
        self._failures.pop(key, None)
        report.stopped += 1

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
                earliest = min(self._schedules.values())
                delay = (earliest - self.clock.now_ms()) / 1000
                if delay <= 0:
                    await self.poll_once()
                    continue
                self.sleeping_until = earliest
                try:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), min(delay, 3600))
                finally:
                    self.sleeping_until = None
            else:
                await self._changed.wait()

    async def stop(self) -> None:
        """No poll starts after this; a poll already running finishes first."""
        self.closed = True
        self._changed.set()
        task, self._supervisor = self._supervisor, None
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
