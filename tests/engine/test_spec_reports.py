"""Spec child-sessions scenarios 6–18: report schedules, polls and the supervisor."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxdesk.domain.model import SessionMode, SessionState, WorkStatus
from fxdesk.domain.report_policy import DURATION_ELAPSED, TERMINAL, ReportPolicy
from fxdesk.engine.clock import FakeClock
from fxdesk.engine.owner import Result
from fxdesk.engine.report_scheduler import Poller, PollKind, PollOutcome, ReportScheduler
from fxdesk.store import control
from fxdesk.store.errors import DatabaseLockedError
from fxdesk.store.faults import Fault
from tests.engine.harness import Engine, say, wait_until


class FakePoller(Poller):
    """Returns scripted outcomes; records every call; can fail or block on demand."""

    def __init__(self, outcome: PollOutcome) -> None:
        self.outcome = outcome
        self.calls: list[tuple[str, str, int]] = []
        self.fail_next: Exception | None = None
        self.block: asyncio.Event | None = None
        self.entered = asyncio.Event()

    async def poll(self, session_id: str, work_id: str, now_ms: int) -> PollOutcome:
        self.calls.append((session_id, work_id, now_ms))
        self.entered.set()
        if self.block is not None:
            await self.block.wait()
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        return self.outcome


def test_scenario_6_schedule_identity_is_exact() -> None:
    scheduler = ReportScheduler(FakeClock(), FakePoller(PollOutcome(PollKind.INACTIVE)))
    scheduler.register("child", "work-a", 100)
    scheduler.register("child", "work-b", 200)
    scheduler.register("child", "work-a", 150)  # overwrites; not the minimum
    assert scheduler.schedules() == {("child", "work-a"): 150, ("child", "work-b"): 200}


def test_schedules_need_a_clock_and_a_poller() -> None:
    assert not ReportScheduler(None, None).register("c", "w", 1)
    assert not ReportScheduler(FakeClock(), None).register("c", "w", 1)


async def _running_child(engine: Engine, policy: ReportPolicy, *messages: str) -> tuple[str, str]:
    root = await engine.root_session()
    child = await engine.sessions.create_child(
        root.id,
        name="reporter",
        mode=SessionMode.ONE_OFF,
        first_message=messages[0],
        reports=policy,
    )
    for message in messages[1:]:
        await engine.sessions.send(child.id, message, source_id=root.id)
    await engine.start_blocked(child.id)
    (item, *_rest) = await engine.items(child.id)
    return child.id, item.id


async def _active_policies(engine: Engine, session_id: str) -> int:
    return len(await engine.store.read(lambda: control.active_policies(session_id)))


async def test_scenario_7_duration_only_policy_reports_cancelled_until_it_ends(
    tmp_path: Path,
) -> None:
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    policy = ReportPolicy(
        on_completed=False,
        on_failed=False,
        on_cancelled=False,
        report_interval_ms=100,
        report_duration_ms=250,
        stop_conditions=frozenset({DURATION_ELAPSED}),
    )
    try:
        child, work = await _running_child(engine, policy, "long task")
        clock.now = 10
        assert await engine.owner.cancel(child, "stop") == 1
        assert (child, work) in engine.owner.scheduler.schedules()
        report = await engine.owner.scheduler.poll_once()
        assert report.emitted == 0
        clock.now = 100
        report = await engine.owner.scheduler.poll_once()
        assert report.emitted == 1
        assert await engine.deliveries(child) == [("interval", "cancelled")]
        clock.now = 250
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == 0
    finally:
        engine.provider.release()
        await engine.close()


async def test_scenario_8_terminal_stop_removes_the_schedule_after_compaction(
    tmp_path: Path,
) -> None:
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    policy = ReportPolicy(report_interval_ms=100, stop_conditions=frozenset({TERMINAL}))
    try:
        child, work = await _running_child(engine, policy, "task")
        clock.now = 10
        assert await engine.owner.cancel(child, "stop") == 1
        assert (child, work) in engine.owner.scheduler.schedules()
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == 0
        assert await engine.deliveries(child) == [("terminal", "cancelled")]
    finally:
        engine.provider.release()
        await engine.close()


async def test_scenario_9_poll_survives_contention_and_an_indeterminate_compaction(
    tmp_path: Path,
) -> None:
    """Scenario 9: the cancel's terminal cannot be saved, yet the cancel counts its item and
    the turn ends cancelled; the polls that fail keep the schedule, and the one that succeeds
    writes the missing terminal exactly once and stops the policy."""
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    policy = ReportPolicy(report_interval_ms=100, stop_conditions=frozenset({TERMINAL}))
    try:
        child, work = await _running_child(engine, policy, "task")
        clock.now = 10
        engine.faults.fail(1, Fault.DEFINITE, label="terminals")  # the ledger's first save
        assert await engine.owner.cancel(child, "stop") == 1
        assert await asyncio.wait_for(engine.owner.join(child), 10) == Result.CANCELLED
        assert await engine.deliveries(child) == []
        engine.faults.fail(1, Fault.DEFINITE, label="poll")  # like a lock that stays busy
        report = await engine.owner.scheduler.poll_once()
        assert report.retryable_failures == 1
        assert engine.owner.scheduler.schedules() == {(child, work): 35}
        clock.now = 35
        engine.faults.fail(2, Fault.INDETERMINATE, label="poll")
        report = await engine.owner.scheduler.poll_once()
        assert report.retryable_failures == 1 and engine.owner.scheduler.schedules()
        clock.now = 60
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == 0
        assert (await engine.deliveries(child)).count(("terminal", "cancelled")) == 1
        assert engine.provider.calls == 0
    finally:
        engine.provider.release()
        await engine.close()


async def test_scenario_10_sequential_work_policies_coexist(tmp_path: Path) -> None:
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("a"), say("b")], clock=clock)
    hour = 3_600_000
    policy = ReportPolicy(
        report_interval_ms=hour,
        report_duration_ms=2 * hour,
        stop_conditions=frozenset({DURATION_ELAPSED}),
    )
    try:
        root = await engine.root_session()
        child = await engine.sessions.create_child(
            root.id,
            name="c",
            mode=SessionMode.PERSISTENT,
            first_message="work-a",
            reports=policy,
        )
        await engine.sessions.send(child.id, "work-b", source_id=root.id)
        assert await engine.run(child.id) == Result.IDLE
        assert len(engine.owner.scheduler.schedules()) == 2
        assert await _active_policies(engine, child.id) == 2
    finally:
        await engine.close()


async def test_scenario_11_close_and_detach_stop_timers_before_dropping_them(
    tmp_path: Path,
) -> None:
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x"), say("y")], clock=clock)
    policy = ReportPolicy(
        on_completed=False,
        on_failed=False,
        on_cancelled=False,
        report_interval_ms=100,
        report_duration_ms=1000,
        stop_conditions=frozenset({DURATION_ELAPSED}),
    )
    try:
        root = await engine.root_session()
        one = await engine.sessions.create_child(
            root.id, name="one", first_message="a", reports=policy
        )
        two = await engine.sessions.create_child(
            root.id, name="two", first_message="b", reports=policy
        )
        engine.provider.hold()
        engine.owner.start(one.id)
        engine.owner.start(two.id)
        await wait_until(lambda: engine.provider.entered == 2)
        assert len(engine.owner.scheduler.schedules()) == 2

        engine.faults.fail(1, Fault.INDETERMINATE, label="stop_policies")
        receipt = await engine.sessions.close(one.id)
        assert receipt.code == "lifecycle_changed"
        assert len(engine.owner.scheduler.schedules()) == 2  # woken, not dropped
        clock.now = 10
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and len(engine.owner.scheduler.schedules()) == 1
        assert await _active_policies(engine, one.id) == 0

        assert await engine.owner.cancel(two.id, "stop") == 1
        await engine.owner.join(two.id)
        engine.faults.fail(2, Fault.DEFINITE, label="stop_policies")  # its 2nd save
        receipt = await engine.sessions.detach(two.id)
        assert receipt.code == "relationship_changed"
        assert len(engine.owner.scheduler.schedules()) == 1
        clock.now = 11
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        after = await engine.session(two.id)
        assert after.parent_id is None
        assert await _active_policies(engine, two.id) == 0
        assert await engine.deliveries(two.id) == []
        clock.now = 1000
        report = await engine.owner.scheduler.poll_once()
        assert (report.registered, report.emitted) == (0, 0)
    finally:
        engine.provider.release()
        await engine.close()


def test_scenarios_12_18_a_failing_poll_leaves_nothing_behind() -> None:
    """Scenarios 12, 18 (intent): an exception at any step of a poll (a bug in the poller)
    stops only that schedule; the others carry on and nothing is left half-registered.
    (Scenario 13, the durable cleanup under failures: test_spec_terminals.py.)"""
    clock = FakeClock(100)
    poller = FakePoller(PollOutcome(PollKind.PENDING, 1000))
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("c", "broken", 100)
    scheduler.register("c", "fine", 100)
    poller.fail_next = RuntimeError("a bug")
    report = asyncio.run(scheduler.poll_once())
    assert (report.due, report.stopped) == (2, 1)
    assert scheduler.schedules() == {("c", "fine"): 1000}


async def test_scenario_14_shutdown_racing_a_wake_polls_once() -> None:
    clock = FakeClock(0)
    poller = FakePoller(PollOutcome(PollKind.PENDING, 0))
    poller.block = asyncio.Event()
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("child", "work", 0)
    scheduler.start()
    await asyncio.wait_for(poller.entered.wait(), 5)
    scheduler.wake("child")
    stopping = asyncio.ensure_future(scheduler.stop())
    await wait_until(lambda: scheduler.closed)
    poller.block.set()
    await asyncio.wait_for(stopping, 5)
    assert len(poller.calls) == 1


async def test_scenario_15_exact_fake_time_and_retry_without_the_model(tmp_path: Path) -> None:
    clock = FakeClock(99)
    poller = FakePoller(PollOutcome(PollKind.EMITTED, 200))
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("child", "work", 100)
    report = await scheduler.poll_once()
    assert (report.registered, report.due, len(poller.calls)) == (1, 0, 0)
    clock.now = 100
    report = await scheduler.poll_once()
    assert (report.due, report.emitted, len(poller.calls)) == (1, 1, 1)
    poller.fail_next = DatabaseLockedError(tmp_path / "db", 0.1)
    clock.now = 200
    report = await scheduler.poll_once()
    assert report.retryable_failures == 1
    clock.now = 224
    assert (await scheduler.poll_once()).due == 0
    clock.now = 225
    assert (await scheduler.poll_once()).emitted == 1


async def test_scenario_16_hundreds_of_schedules_and_idle_owners() -> None:
    clock = FakeClock(100)
    poller = FakePoller(PollOutcome(PollKind.PENDING, 1000))
    scheduler = ReportScheduler(clock, poller)
    for n in range(300):
        scheduler.register("child", f"soon-{n}", 100)
        scheduler.register("child", f"later-{n}", 1000)
    report = await scheduler.poll_once()
    assert (report.registered, report.due, len(poller.calls)) == (600, 300, 300)
    assert len(scheduler.schedules()) == 600
    idle_poller = FakePoller(PollOutcome(PollKind.INACTIVE))
    idle = ReportScheduler(FakeClock(100), idle_poller)
    for _ in range(100):
        report = await idle.poll_once()
        assert (report.registered, report.due) == (0, 0)
    assert idle_poller.calls == []


async def test_scenario_17_shutdown_wakes_a_far_future_timer_without_polling() -> None:
    poller = FakePoller(PollOutcome(PollKind.PENDING, 10_000))
    scheduler = ReportScheduler(FakeClock(0), poller)
    scheduler.register("child", "work", 10_000)
    scheduler.start()
    await asyncio.sleep(0.01)
    await asyncio.wait_for(scheduler.stop(), 2)
    assert poller.calls == []


async def test_the_supervisor_polls_when_due(tmp_path: Path) -> None:
    clock = FakeClock(0)
    poller = FakePoller(PollOutcome(PollKind.EMITTED, None))
    scheduler = ReportScheduler(clock, poller)
    scheduler.start()
    scheduler.register("child", "work", 0)
    await asyncio.wait_for(poller.entered.wait(), 5)
    await wait_until(lambda: not scheduler.schedules())
    await scheduler.stop()
    assert len(poller.calls) == 1


@pytest.mark.parametrize("state", [SessionState.IDLE])
async def test_a_policy_without_intervals_has_nothing_to_poll(
    tmp_path: Path, state: SessionState
) -> None:
    engine = await Engine.create(tmp_path, [say("x")], clock=FakeClock(0))
    try:
        session = await engine.root_session("hi")
        assert await engine.run(session.id) == Result.IDLE
        assert engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, session.id) == 0
        (item,) = await engine.items(session.id)
        assert item.status == WorkStatus.COMPLETED
        assert (await engine.session(session.id)).state == state
    finally:
        await engine.close()
