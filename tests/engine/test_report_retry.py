"""Which failed report polls are retried, and how soon (spec child-sessions §7.1, issue 10 item 10).

Transient failures (a busy lock, a full disk, an I/O error, a commit that failed or whose outcome
is unknown, out of memory) keep the schedule and retry; permanent ones (a damaged, foreign,
newer or read-only database, a closed store, a bug in the poller) stop it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxdesk.domain.model import SessionMode
from fxdesk.domain.report_policy import TERMINAL, ReportPolicy
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import FakeClock
from fxdesk.engine.report_poller import ReportPoller
from fxdesk.engine.report_scheduler import (
    FAST_RETRIES,
    RETRY_DELAY_MS,
    RETRY_MAX_DELAY_MS,
    Poller,
    PollKind,
    PollOutcome,
    ReportScheduler,
    RetryablePollError,
    retry_delay_ms,
)
from fxdesk.store import Store, StoreError, control
from fxdesk.store.errors import (
    CommitFailed,
    CommitIndeterminate,
    CorruptDatabaseError,
    DatabaseLockedError,
    DiskFullError,
    NewerSchemaError,
    NotADatabaseError,
    ReadOnlyError,
    StoreClosedError,
)
from tests.engine.harness import Engine, say
from tests.engine.locking import write_locked_by_another_process

DB = Path("/data/fxdesk.sqlite3")


class FailingPoller(Poller):
    """Raises ``error`` on every poll while it is set; otherwise reports and looks again later."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error
        self.calls: list[int] = []

    async def poll(self, session_id: str, work_id: str, now_ms: int) -> PollOutcome:
        self.calls.append(now_ms)
        if self.error is not None:
            raise self.error
        return PollOutcome(PollKind.EMITTED, now_ms + 1000)


TRANSIENT = [
    DatabaseLockedError(DB, 5),
    DiskFullError(DB),
    StoreError(f"Reading or writing {DB} failed with an I/O error (disk I/O error)."),
    CommitFailed("saving (poll) failed, nothing was written"),
    CommitIndeterminate("saving (poll) failed; it is not known whether it was saved"),
    MemoryError(),
    RetryablePollError("lock busy"),
]
PERMANENT = [
    CorruptDatabaseError(DB, "database disk image is malformed"),
    NotADatabaseError(DB, "file is not a database"),
    ReadOnlyError(DB, "attempt to write a readonly database"),
    NewerSchemaError(DB, 99),
    StoreClosedError(),
    RuntimeError("a bug in the poller"),
]


@pytest.mark.parametrize("error", TRANSIENT, ids=lambda e: type(e).__name__)
async def test_a_transient_failure_keeps_the_schedule_and_retries_in_25_ms(
    error: BaseException,
) -> None:
    clock = FakeClock(100)
    poller = FailingPoller(error)
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("child", "work", 100)
    report = await scheduler.poll_once()
    assert (report.retryable_failures, report.stopped) == (1, 0)
    assert scheduler.schedules() == {("child", "work"): 100 + RETRY_DELAY_MS}
    poller.error = None  # the trouble cleared
    clock.now = 100 + RETRY_DELAY_MS
    report = await scheduler.poll_once()
    assert report.emitted == 1 and poller.calls == [100, 125]


@pytest.mark.parametrize("error", PERMANENT, ids=lambda e: type(e).__name__)
async def test_a_permanent_failure_stops_the_schedule(error: BaseException) -> None:
    clock = FakeClock(100)
    poller = FailingPoller(error)
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("child", "work", 100)
    scheduler.register("child", "other", 5000)
    report = await scheduler.poll_once()
    assert (report.retryable_failures, report.stopped) == (0, 1)
    assert scheduler.schedules() == {("child", "other"): 5000}  # only the failed one stopped
    clock.now = 200
    assert (await scheduler.poll_once()).due == 0
    assert poller.calls == [100]  # never asked again


def test_the_retry_delay_stays_at_25_ms_then_doubles_to_a_bound() -> None:
    delays = [retry_delay_ms(n) for n in range(1, 40)]
    assert delays[:FAST_RETRIES] == [RETRY_DELAY_MS] * FAST_RETRIES  # the spec's rhythm
    assert delays[FAST_RETRIES : FAST_RETRIES + 3] == [50, 100, 200]
    assert max(delays) == RETRY_MAX_DELAY_MS == delays[-1]
    assert delays == sorted(delays)


async def test_a_failure_that_lasts_backs_off_and_a_success_resets_it() -> None:
    clock = FakeClock(0)
    poller = FailingPoller(DiskFullError(DB))
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("child", "work", 0)
    for n in range(1, 20):
        report = await scheduler.poll_once()
        assert report.retryable_failures == 1
        (at,) = scheduler.schedules().values()
        assert at - clock.now == retry_delay_ms(n)
        clock.now = at
    # 19 polls span 46 s (at a flat 25 ms they would span half a second), never more than 5 s
    # apart
    assert len(poller.calls) == 19 and clock.now == 46_450
    assert max(b - a for a, b in zip(poller.calls, poller.calls[1:], strict=False)) == 5_000
    poller.error = None
    await scheduler.poll_once()  # succeeds: the next failure starts from 25 ms again
    poller.error = DiskFullError(DB)
    clock.now = scheduler.schedules()[("child", "work")]
    await scheduler.poll_once()
    assert scheduler.schedules()[("child", "work")] == clock.now + RETRY_DELAY_MS


async def test_re_registering_a_schedule_forgets_its_failures() -> None:
    clock = FakeClock(0)
    poller = FailingPoller(DatabaseLockedError(DB, 5))
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("child", "work", 0)
    for _ in range(FAST_RETRIES + 2):
        clock.now = scheduler.schedules()[("child", "work")]
        await scheduler.poll_once()
    scheduler.register("child", "work", clock.now)  # e.g. the work was admitted again
    await scheduler.poll_once()
    assert scheduler.schedules()[("child", "work")] == clock.now + RETRY_DELAY_MS


# --- with a real store --------------------------------------------------------------------------


async def _cancelled_child_with_a_terminal_policy(root: Path) -> tuple[str, str]:
    """A data folder holding a cancelled child whose report policy waits for its next poll."""
    engine = await Engine.create(root, [say("x")], clock=FakeClock(0))
    try:
        parent = await engine.root_session()
        child = await engine.sessions.create_child(
            parent.id,
            name="reporter",
            mode=SessionMode.ONE_OFF,
            first_message="task",
            reports=ReportPolicy(report_interval_ms=100, stop_conditions=frozenset({TERMINAL})),
        )
        await engine.start_blocked(child.id)
        (item,) = await engine.items(child.id)
        assert await engine.owner.cancel(child.id, "stop") == 1
        assert (child.id, item.id) in engine.owner.scheduler.schedules()
        return child.id, item.id
    finally:
        engine.provider.release()
        await engine.close()


async def test_a_database_another_program_holds_is_retried_until_it_lets_go(
    tmp_path: Path,
) -> None:
    child, work = await _cancelled_child_with_a_terminal_policy(tmp_path)
    path = tmp_path / "fxdesk.sqlite3"
    store = await Store.aopen(path, busy_timeout_s=0.2)
    try:
        clock = FakeClock(10)
        scheduler = ReportScheduler(clock, ReportPoller(store, EventBus()))
        scheduler.register(child, work, 10)
        with write_locked_by_another_process(path):
            report = await scheduler.poll_once()
        assert (report.retryable_failures, report.stopped) == (1, 0)
        assert scheduler.schedules() == {(child, work): 35}
        clock.now = 35
        report = await scheduler.poll_once()  # the other program let go
        assert report.stopped == 1 and scheduler.schedules() == {}
        assert await store.read(lambda: control.active_policies(child)) == []
    finally:
        await asyncio.to_thread(store.close)


async def test_a_closed_store_stops_the_schedule_instead_of_retrying_forever(
    tmp_path: Path,
) -> None:
    child, work = await _cancelled_child_with_a_terminal_policy(tmp_path)
    store = await Store.aopen(tmp_path / "fxdesk.sqlite3")
    poller = ReportPoller(store, EventBus())
    clock = FakeClock(10)
    scheduler = ReportScheduler(clock, poller)
    scheduler.register(child, work, 10)
    await asyncio.to_thread(store.close)
    report = await scheduler.poll_once()
    assert (report.retryable_failures, report.stopped) == (0, 1)
    assert scheduler.schedules() == {}
    clock.now = 35
    assert (await scheduler.poll_once()).due == 0 and poller.calls == 1
