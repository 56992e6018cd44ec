"""Terminal deliveries under faults (spec child-sessions §3.12 cancel, §5.2, scenarios 13, 43,
45): a cancel is durable and reaches the running turn whether or not its terminal delivery can
be written; the missing terminal is written later, exactly once, by the next cancel, the next
item the session runs, a report poll, or the next start's recovery."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxdesk.domain.model import SessionMode, WorkStatus
from fxdesk.domain.report_policy import TERMINAL, ReportPolicy
from fxdesk.engine.clock import FakeClock
from fxdesk.engine.owner import Result
from fxdesk.store import control
from fxdesk.store.faults import Fault
from tests.engine.harness import Engine, say

TERMINAL_CANCELLED = ("terminal", "cancelled")


async def _cancel_with_the_terminal_failing(engine: Engine, session_id: str) -> None:
    """Cancel the session's blocked turn while its terminal delivery cannot be saved: the
    cancel still counts the item, the turn is told and ends cancelled, no terminal exists."""
    engine.faults.fail(1, Fault.DEFINITE, label="terminals")
    assert await engine.owner.cancel(session_id, "stop") == 1
    assert [r.label for r in engine.faults.records if r.fault] == ["terminals"]
    assert await asyncio.wait_for(engine.owner.join(session_id), 10) == Result.CANCELLED
    (item, *_rest) = await engine.items(session_id)
    assert (item.status, item.reason) == (WorkStatus.CANCELLED, "stop")
    assert await engine.deliveries(session_id) == []
    engine.faults.clear()
    engine.provider.release()  # the barrier the turn was held at; its call was cancelled


async def test_scenario_45_cancel_signals_the_turn_and_later_cancels_repair_the_terminal(
    tmp_path: Path,
) -> None:
    engine = await Engine.create(tmp_path, [say("never")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "blocked")
        await engine.start_blocked(child.id)
        await _cancel_with_the_terminal_failing(engine, child.id)
        assert await engine.owner.cancel(child.id, "stop") == 0
        assert await engine.owner.cancel(child.id, "stop") == 0
        assert await engine.deliveries(child.id) == [TERMINAL_CANCELLED]
        assert engine.provider.calls == 0  # the held model call was cancelled unanswered
    finally:
        await engine.close()


async def test_the_next_item_the_session_runs_repairs_a_missing_terminal(tmp_path: Path) -> None:
    """Spec §3.9 step 7: terminals are reconciled before the next item is admitted."""
    engine = await Engine.create(tmp_path, [say("never"), say("next answer")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "blocked")
        await engine.start_blocked(child.id)
        await _cancel_with_the_terminal_failing(engine, child.id)
        await engine.sessions.send(child.id, "next", source_id=root.id)
        assert await engine.run(child.id) == Result.IDLE
        assert await engine.deliveries(child.id) == [TERMINAL_CANCELLED, ("terminal", "completed")]
    finally:
        await engine.close()


async def test_a_start_that_finds_no_work_repairs_a_missing_terminal(tmp_path: Path) -> None:
    """Spec §3.9 step 7 comes before "no work": a start with nothing to run still writes it."""
    engine = await Engine.create(tmp_path, [say("never")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "blocked")
        await engine.start_blocked(child.id)
        await _cancel_with_the_terminal_failing(engine, child.id)
        assert await engine.run(child.id) == Result.NO_WORK
        assert await engine.deliveries(child.id) == [TERMINAL_CANCELLED]
        assert await engine.run(child.id) == Result.NO_WORK
        assert await engine.deliveries(child.id) == [TERMINAL_CANCELLED]
    finally:
        await engine.close()


async def test_a_restart_repairs_a_terminal_the_cancel_never_wrote(tmp_path: Path) -> None:
    """The process ends between the cancel's commit and its terminal's (here: the terminal
    commit failed, then the process stopped). The next start's recovery writes it once."""
    engine = await Engine.create(tmp_path, [say("never")])
    root = await engine.root_session()
    child = await engine.child(root, "blocked")
    await engine.start_blocked(child.id)
    await _cancel_with_the_terminal_failing(engine, child.id)
    await engine.close()
    again = await engine.reopen()
    try:
        report = await again.owner.recover()
        assert (report.sessions_changed, report.sessions_failed) == (0, 0)
        assert await again.deliveries(child.id) == [TERMINAL_CANCELLED]
        await again.owner.recover()
        assert await again.deliveries(child.id) == [TERMINAL_CANCELLED]
    finally:
        await again.close()


async def test_a_failed_repair_is_retried_at_the_next_start(tmp_path: Path) -> None:
    """Recovery's own terminal repair failing is logged, not fatal, and tried again later."""
    engine = await Engine.create(tmp_path, [say("never")])
    root = await engine.root_session()
    child = await engine.child(root, "blocked")
    await engine.start_blocked(child.id)
    await _cancel_with_the_terminal_failing(engine, child.id)
    engine.faults.fail(1, Fault.DEFINITE, label="terminal_sweep")
    await engine.owner.recover()
    assert await engine.deliveries(child.id) == []
    await engine.close()
    again = await engine.reopen()
    try:
        await again.owner.recover()
        assert await again.deliveries(child.id) == [TERMINAL_CANCELLED]
    finally:
        await again.close()


async def test_scenario_43_a_lost_terminal_write_is_repaired_once_at_restart(
    tmp_path: Path,
) -> None:
    """Scenario 43. Adapted: a finishing item's terminal delivery is saved in the same
    transaction as the item's completion, so "the terminal write fails definitely" loses the
    completion with it. The first run says control_failed with no terminal; recovery completes
    the item from its committed history (so 1 completed here, not 0) and writes exactly one
    terminal; a second recovery adds nothing; the model ran once."""
    engine = await Engine.create(tmp_path, [say("done")])
    root = await engine.root_session()
    child = await engine.child(root, "work")
    engine.faults.fail(1, Fault.DEFINITE, label="complete")
    try:
        assert await engine.run(child.id) == Result.CONTROL_FAILED
        assert await engine.deliveries(child.id) == []
        (item,) = await engine.items(child.id)
        assert item.status == WorkStatus.RUNNING
    finally:
        await engine.close()
    again = await engine.reopen()
    try:
        report = await again.owner.recover()
        assert (report.work_completed, report.work_interrupted) == (1, 0)
        assert await again.deliveries(child.id) == [("terminal", "completed")]
        report = await again.owner.recover()
        assert (report.sessions_changed, report.work_completed) == (0, 0)
        assert await again.deliveries(child.id) == [("terminal", "completed")]
        assert engine.provider.calls + again.provider.calls == 1
        assert (await again.items(child.id))[0].status == WorkStatus.COMPLETED
    finally:
        await again.close()


@pytest.mark.parametrize("failures", [1, 2, 3])
@pytest.mark.parametrize("kind", [Fault.DEFINITE, Fault.INDETERMINATE])
async def test_scenario_13_report_cleanup_under_failures_leaves_nothing_behind(
    tmp_path: Path, kind: Fault, failures: int
) -> None:
    """Scenario 13 (port of "an allocation failure at every step"): the stop-and-compact of a
    captured interval-100 policy is one transaction, so every failure inside it is a failure of
    its commit. Each failed compaction is a retryable failure that keeps the schedule; once the
    store works again one poll stops it, and nothing is left: no schedule, no running policy,
    exactly one terminal delivery."""
    clock = FakeClock(0)
    engine = await Engine.create(tmp_path, [say("x")], clock=clock)
    policy = ReportPolicy(report_interval_ms=100, stop_conditions=frozenset({TERMINAL}))
    try:
        root = await engine.root_session()
        child = await engine.sessions.create_child(
            root.id, name="r", mode=SessionMode.ONE_OFF, first_message="task", reports=policy
        )
        await engine.start_blocked(child.id)
        (item,) = await engine.items(child.id)
        clock.now = 10
        assert await engine.owner.cancel(child.id, "stop") == 1
        assert await asyncio.wait_for(engine.owner.join(child.id), 10) == Result.CANCELLED
        scheduler = engine.owner.scheduler
        engine.faults.fail(1, kind, label="poll", onward=True)
        for _attempt in range(failures):
            report = await scheduler.poll_once()
            assert (report.retryable_failures, report.stopped) == (1, 0)
            assert scheduler.schedules() == {(child.id, item.id): clock.now + 25}
            clock.now += 25
        engine.faults.clear()
        report = await scheduler.poll_once()
        assert report.stopped == 1 and scheduler.schedules() == {}
        active = await engine.store.read(lambda: control.active_policies(child.id))
        assert active == []
        assert await engine.deliveries(child.id) == [TERMINAL_CANCELLED]
    finally:
        engine.provider.release()
        await engine.close()


async def test_a_close_does_not_depend_on_its_terminal_write(tmp_path: Path) -> None:
    """Closing is archive first, then stopping the live turn, then the terminals (as a cancel):
    a failure writing the terminal neither fails the close nor leaves the turn running, and the
    next start's sweep writes the missing terminal exactly once."""
    engine = await Engine.create(tmp_path, [say("never")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "blocked")
        await engine.start_blocked(child.id)
        engine.faults.fail(1, Fault.DEFINITE, label="terminals")
        receipt = await engine.sessions.close(child.id)
        assert receipt.code == "lifecycle_changed"
        assert [r.label for r in engine.faults.records if r.fault] == ["terminals"]
        assert not engine.owner.is_running(child.id)  # the live turn was stopped
        (item,) = await engine.items(child.id)
        assert item.status == WorkStatus.CANCELLED
        assert (await engine.session(child.id)).state.value == "archived"
        assert await engine.deliveries(child.id) == []
        engine.faults.clear()
        engine.provider.release()
        assert engine.provider.calls == 0
    finally:
        await engine.close()
    again = await engine.reopen()
    try:
        await again.owner.recover()
        assert await again.deliveries(child.id) == [TERMINAL_CANCELLED]
    finally:
        await again.close()
