"""Spec child-sessions scenarios 6–18: report schedules, polls and the supervisor.

Scenarios 12, 13 and 18 fail "every allocation" of the reference. Python has no allocator to
fail; its nearest failures are a ``MemoryError`` and a store failure at each step, which 12, 13
and 18 inject (12: at each of the three steps of a registration, for each of scenario 6's three
registrations).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.model import SessionMode, SessionState, WorkStatus
from fxdesk.domain.report_policy import DURATION_ELAPSED, TERMINAL, ReportPolicy
from fxdesk.engine.clock import FakeClock
from fxdesk.engine.owner import Result
from fxdesk.engine.report_scheduler import Poller, PollKind, PollOutcome, ReportScheduler
from fxdesk.store import control, repo
from fxdesk.store.errors import DatabaseLockedError
from fxdesk.store.faults import Fault
from tests.engine.harness import Engine, say, wait_until
from tests.engine.locking import shorten_busy_wait, write_locked_by_another_process


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


class _Armed:
    """A one-shot out-of-memory failure: ``hit()`` raises once after ``arm()``."""

    def __init__(self) -> None:
        self.armed = False

    def arm(self) -> None:
        self.armed = True

    def hit(self) -> None:
        if self.armed:
            self.armed = False
            raise MemoryError("no memory to register")


class _Schedules(dict):  # type: ignore[type-arg]
    def __init__(self, fault: _Armed) -> None:
        super().__init__()
        self.fault = fault

    def __setitem__(self, key: object, value: object) -> None:
        self.fault.hit()
        super().__setitem__(key, value)


class _Failures(dict):  # type: ignore[type-arg]
    def __init__(self, fault: _Armed) -> None:
        super().__init__()
        self.fault = fault

    def pop(self, *args: Any) -> Any:
        self.fault.hit()
        return super().pop(*args)


class _Changed(asyncio.Event):
    def __init__(self, fault: _Armed) -> None:
        super().__init__()
        self.fault = fault

    def set(self) -> None:
        self.fault.hit()
        super().set()


@pytest.mark.parametrize("step", ["store", "reset", "wake"])
def test_scenario_12_registration_under_out_of_memory_ends_consistently(step: str) -> None:
    """Scenario 12: scenario 6's three registrations, with out of memory at one step of one
    registration (the schedule's store, the reset of its failure count, the supervisor's
    wake), for each of the three in turn. The failing call raises and leaves either the state
    before it or the state after it, nothing between; repeated, it succeeds; every run ends
    with exactly work-a = 150 and work-b = 200."""
    registrations = [("child", "work-a", 100), ("child", "work-b", 200), ("child", "work-a", 150)]
    for failing in range(len(registrations)):
        fault = _Armed()
        scheduler = ReportScheduler(FakeClock(), FakePoller(PollOutcome(PollKind.INACTIVE)))
        if step == "store":
            scheduler._schedules = _Schedules(fault)
        elif step == "reset":
            scheduler._failures = _Failures(fault)
        else:
            scheduler._changed = _Changed(fault)
        for n, (session_id, work_id, at) in enumerate(registrations):
            before = scheduler.schedules()
            if n == failing:
                fault.arm()
                with pytest.raises(MemoryError):
                    scheduler.register(session_id, work_id, at)
                assert scheduler.schedules() in (before, {**before, (session_id, work_id): at})
            assert scheduler.register(session_id, work_id, at)
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
        assert await engine.owner.join(child) == Result.CANCELLED  # its completion wakes too
        report = await engine.owner.scheduler.poll_once()
        assert report.emitted == 0 and await engine.deliveries(child) == []
        assert engine.owner.scheduler.schedules() == {(child, work): 100}
        clock.now = 100
        report = await engine.owner.scheduler.poll_once()
        assert report.emitted == 1
        assert await engine.deliveries(child) == [("interval", "cancelled")]
        clock.now = 250
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == 0
        assert await engine.deliveries(child) == [("interval", "cancelled")]  # no more
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
    the turn ends cancelled; a poll while another process keeps the database locked fails and
    keeps the schedule, an indeterminate one too, and the one that succeeds writes the missing
    terminal exactly once and stops the policy."""
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
        await shorten_busy_wait(engine.store)
        with write_locked_by_another_process(tmp_path / "fxdesk.sqlite3"):  # always busy
            report = await engine.owner.scheduler.poll_once()
        assert (report.retryable_failures, report.stopped) == (1, 0)
        assert engine.owner.scheduler.schedules() == {(child, work): 35}
        clock.now = 35
        engine.faults.fail(1, Fault.INDETERMINATE, label="poll")  # it landed; nobody knows
        report = await engine.owner.scheduler.poll_once()
        assert (report.retryable_failures, report.stopped) == (1, 0)
        assert engine.owner.scheduler.schedules() == {(child, work): 60}
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
        a, b = await engine.items(child.id)
        assert (a.content, b.content) == ("work-a", "work-b")
        # each item's own schedule (woken to now by its completion) and its own policy
        assert set(engine.owner.scheduler.schedules()) == {(child.id, a.id), (child.id, b.id)}
        policies = await engine.store.read(lambda: control.active_policies(child.id))
        assert sorted(policies) == sorted([(child.id, a.id, hour), (child.id, b.id, hour)])
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
        ((left, _work),) = engine.owner.scheduler.schedules()
        assert left == two.id
        assert await _active_policies(engine, one.id) == 0

        assert await engine.owner.cancel(two.id, "stop") == 1
        await engine.owner.join(two.id)
        engine.faults.fail(2, Fault.DEFINITE, label="stop_policies")  # its 2nd save
        receipt = await engine.sessions.detach(two.id)
        assert receipt.code == "relationship_changed"
        faults = [(r.label, r.fault) for r in engine.faults.records if r.fault]
        assert faults == [
            ("stop_policies", Fault.INDETERMINATE),  # close: it landed, unconfirmed
            ("stop_policies", Fault.DEFINITE),  # detach: it did not land
        ]
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


def test_a_bug_in_the_poller_stops_only_its_schedule() -> None:
    """An exception at any step of a poll (a bug in the poller) stops only that schedule; the
    others carry on and nothing is left half-registered. (Scenario 13, the durable cleanup under
    failures: test_spec_terminals.py; scenario 18, out of memory: above.)"""
    clock = FakeClock(100)
    poller = FakePoller(PollOutcome(PollKind.PENDING, 1000))
    scheduler = ReportScheduler(clock, poller)
    scheduler.register("c", "broken", 100)
    scheduler.register("c", "fine", 100)
    poller.fail_next = RuntimeError("a bug")
    report = asyncio.run(scheduler.poll_once())
    assert (report.due, report.stopped) == (2, 1)
    assert scheduler.schedules() == {("c", "fine"): 1000}


async def _timed_and_running(engine: Engine, session_id: str) -> tuple[set[str], set[str]]:
    """The session's work ids with a schedule, and those with a running policy in the ledger."""
    timed = {w for s, w in engine.owner.scheduler.schedules() if s == session_id}
    policies = await engine.store.read(lambda: control.active_policies(session_id))
    return timed, {w for _s, w, _due in policies}


@pytest.mark.parametrize("failure", ["definite", "indeterminate", "out_of_memory"])
async def test_scenario_13_a_failing_cleanup_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """Stop-and-compact a captured interval-100 policy while its save fails definitely, lands
    without an answer, or runs out of memory. A failure may surface (out of memory) or defer
    the cleanup (store unavailable), but nothing is orphaned: after the next poll every
    running policy is timed and every schedule is a running policy, and a repeated cleanup
    leaves neither."""
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    try:
        child, work = await _running_child(engine, ReportPolicy(report_interval_ms=100), "task")
        assert await _timed_and_running(engine, child) == ({work}, {work})
        clock.now = 10
        if failure == "out_of_memory":
            real = control.stop_policies
            calls: list[int] = []

            def stop_once(*args: Any, **kwargs: Any) -> int:
                calls.append(1)
                if len(calls) == 1:
                    raise MemoryError("no memory for the cleanup")
                return real(*args, **kwargs)

            monkeypatch.setattr(control, "stop_policies", stop_once)
            with pytest.raises(MemoryError):
                await engine.owner.stop_reports(child)
        else:
            fault = Fault.DEFINITE if failure == "definite" else Fault.INDETERMINATE
            engine.faults.fail(1, fault, label="stop_policies")
            await engine.owner.stop_reports(child)  # deferred: logged, schedules woken
        await engine.owner.scheduler.poll_once()
        timed, running = await _timed_and_running(engine, child)
        assert timed == running  # nothing orphaned either way
        assert running == (set() if failure == "indeterminate" else {work})
        await engine.owner.stop_reports(child)
        assert await _timed_and_running(engine, child) == (set(), set())
    finally:
        engine.provider.release()
        await engine.close()


POLL_STEPS = [
    (control, "policy_state"),
    (control, "get_item"),
    (repo, "get_session"),
    (control, "append_delivery"),
    (control, "set_policy_due"),
]


@pytest.mark.parametrize(("module", "step"), POLL_STEPS, ids=[name for _m, name in POLL_STEPS])
async def test_scenario_18_a_poll_that_runs_out_of_memory_is_retried_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: Any, step: str
) -> None:
    """Schedule at 100, clock at 100, a ``MemoryError`` at one step of the poll's transaction:
    the transaction leaves nothing (no delivery, the policy's next check unmoved), the
    schedule is kept and retried 25 ms later, and that run reports 1 due and writes exactly
    one report."""
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    try:
        child, work = await _running_child(engine, ReportPolicy(report_interval_ms=100), "task")
        real = getattr(module, step)
        calls: list[int] = []

        def fail_once(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:
                raise MemoryError(f"no memory in {step}")
            return real(*args, **kwargs)

        monkeypatch.setattr(module, step, fail_once)
        clock.now = 100
        report = await engine.owner.scheduler.poll_once()
        assert (report.due, report.retryable_failures, report.stopped) == (1, 1, 0)
        assert engine.owner.scheduler.schedules() == {(child, work): 125}
        assert await engine.deliveries(child) == []
        assert await _next_due(engine, work) == 100
        clock.now = 125
        report = await engine.owner.scheduler.poll_once()
        assert (report.due, report.emitted) == (1, 1)
        assert await engine.deliveries(child) == [("interval", "running")]
        assert engine.owner.scheduler.schedules() == {(child, work): 200}
        assert engine.provider.calls == 0  # reports never run the model
    finally:
        engine.provider.release()
        await engine.close()


async def _next_due(engine: Engine, work_id: str) -> int | None:
    state = await engine.store.read(lambda: control.policy_state(work_id))
    assert state is not None
    return state[2]


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


async def test_scenario_15_with_the_real_poller_reports_never_run_the_model(
    tmp_path: Path,
) -> None:
    """Scenario 15 through the durable poller: reports at exact fake times, a poll that meets a
    busy database (held by another process) retried 25 ms later, and no model call made by any
    of it (the child's own turn waits in its first model call throughout)."""
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    try:
        child, work = await _running_child(engine, ReportPolicy(report_interval_ms=100), "task")
        requests = len(engine.provider.requests)
        clock.now = 99
        report = await engine.owner.scheduler.poll_once()
        assert (report.registered, report.due) == (1, 0)
        clock.now = 100
        report = await engine.owner.scheduler.poll_once()
        assert (report.due, report.emitted) == (1, 1)
        assert engine.owner.scheduler.schedules() == {(child, work): 200}
        clock.now = 200
        await shorten_busy_wait(engine.store)
        with write_locked_by_another_process(tmp_path / "fxdesk.sqlite3"):
            report = await engine.owner.scheduler.poll_once()
        assert report.retryable_failures == 1
        clock.now = 224
        assert (await engine.owner.scheduler.poll_once()).due == 0
        clock.now = 225
        report = await engine.owner.scheduler.poll_once()
        assert report.emitted == 1
        assert await engine.deliveries(child) == [("interval", "running")] * 2
        assert engine.provider.calls == 0 and len(engine.provider.requests) == requests
    finally:
        engine.provider.release()
        await engine.close()


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
    assert set(scheduler.schedules().values()) == {1000}  # the due ones moved to their next
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
    await wait_until(lambda: scheduler.sleeping_until == 10_000)  # armed for 10 s
    await asyncio.wait_for(scheduler.stop(), 2)  # promptly, not after 10 s
    assert poller.calls == [] and scheduler.polls == 0


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
