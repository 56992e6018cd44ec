"""Interval reports of work a restart interrupted (issue 10 item 12; the decision is written in
``fxdesk/engine/report_scheduler.py``): nothing reports while nothing runs the work; resuming
it resumes its reports on the policy and time window captured at its first admission."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fxdesk.domain.model import SessionMode, WorkStatus
from fxdesk.domain.report_policy import DURATION_ELAPSED, TERMINAL, ReportPolicy
from fxdesk.engine.clock import FakeClock
from fxdesk.engine.owner import Result
from fxdesk.providers.scripted import Step
from fxdesk.store import control
from tests.engine.harness import Engine, say, wait_until


async def _interrupted_reporter(
    root: Path, policy: ReportPolicy, steps: Sequence[Step]
) -> tuple[Engine, FakeClock, str, str]:
    """A child admitted at t=0 with ``policy``, its process gone mid-turn, recovered at t=530
    by a new process (returned)."""
    clock = FakeClock(0)
    first = await Engine.create(root, steps, clock=clock)
    parent = await first.root_session()
    child = await first.sessions.create_child(
        parent.id, name="reporter", mode=SessionMode.ONE_OFF, first_message="task", reports=policy
    )
    await first.start_blocked(child.id)
    (item,) = await first.items(child.id)
    assert first.owner.scheduler.schedules() == {(child.id, item.id): 100}
    await first.close()  # like a killed process: shutdown writes nothing, the item stays running
    clock = FakeClock(530)
    engine = await first.reopen(clock=clock)
    report = await engine.owner.recover()
    assert report.work_interrupted == 1
    return engine, clock, child.id, item.id


async def _active_policies(engine: Engine, session_id: str) -> list[tuple[str, str, int | None]]:
    return await engine.store.read(lambda: control.active_policies(session_id))


async def _intervals(engine: Engine, session_id: str) -> list[dict[str, object]]:
    found = await engine.store.read(lambda: control.deliveries(session_id=session_id))
    return [d.payload for d in found if d.kind.value == "interval"]


async def test_interrupted_work_reports_nothing_until_resumed_then_on_its_first_window(
    tmp_path: Path,
) -> None:
    policy = ReportPolicy(
        on_completed=False,
        report_interval_ms=100,
        report_duration_ms=1000,
        stop_conditions=frozenset({DURATION_ELAPSED}),
    )
    engine, clock, child, work = await _interrupted_reporter(
        tmp_path, policy, [say("never answered"), say("done")]
    )
    try:
        # Interrupted, nothing runs it: no schedule, so no "interrupted" reports every 100 ms;
        # its policy waits in the ledger, still running, for the work to be resumed.
        assert engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == [(child, work, 100)]
        assert (await engine.owner.scheduler.poll_once()).registered == 0

        engine.provider.hold()
        engine.owner.start(child, retry=True)  # the person resumes it
        await wait_until(lambda: engine.provider.entered == 1)
        # Re-registered at re-admission, on the first admission's policy and window: the
        # reports missed while fxdesk was not running collapse into one, due at once.
        assert engine.owner.scheduler.schedules() == {(child, work): 100}
        report = await engine.owner.scheduler.poll_once()
        assert report.emitted == 1
        assert await _intervals(engine, child) == [{"state": "running", "ticks": 5}]
        assert engine.owner.scheduler.schedules() == {(child, work): 600}
        clock.now = 1000  # the window opened at the first admission (t=0) ends now
        report = await engine.owner.scheduler.poll_once()
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == []
        engine.provider.release()
        assert await engine.owner.join(child) == Result.COMPLETED
        (item,) = await engine.items(child)
        assert item.status == WorkStatus.COMPLETED
        assert len(await _intervals(engine, child)) == 1
    finally:
        engine.provider.release()
        await engine.close()


async def test_a_terminal_policy_of_resumed_work_reports_its_outcome_and_compacts(
    tmp_path: Path,
) -> None:
    policy = ReportPolicy(report_interval_ms=100, stop_conditions=frozenset({TERMINAL}))
    engine, _clock, child, work = await _interrupted_reporter(
        tmp_path, policy, [say("never answered"), say("done")]
    )
    try:
        engine.owner.start(child, retry=True)
        assert await engine.owner.join(child) == Result.COMPLETED
        await wait_until(lambda: (child, work) in engine.owner.scheduler.schedules())
        report = await engine.owner.scheduler.poll_once()  # woken by the completion
        assert report.stopped == 1 and engine.owner.scheduler.schedules() == {}
        assert await _active_policies(engine, child) == []
        assert await engine.deliveries(child) == [("terminal", "completed")]
    finally:
        await engine.close()


async def test_closing_interrupted_work_after_a_restart_stops_its_policy(tmp_path: Path) -> None:
    """Interrupted work ends by a resume or a close (a cancel leaves it alone, spec §3.6); the
    close stops its running policy durably, so none is left running with nothing timing it."""
    policy = ReportPolicy(report_interval_ms=100, stop_conditions=frozenset({TERMINAL}))
    engine, clock, child, work = await _interrupted_reporter(tmp_path, policy, [say("never")])
    try:
        assert await engine.owner.cancel(child, "stop") == 0  # interrupted: left as it is
        assert await _active_policies(engine, child) == [(child, work, 100)]
        receipt = await engine.sessions.close(child)
        assert receipt.code == "lifecycle_changed"
        assert await _active_policies(engine, child) == []
        clock.now = 10_000
        assert (await engine.owner.scheduler.poll_once()).registered == 0
        assert await _intervals(engine, child) == []
        assert engine.provider.calls == 0  # nothing ran it again
    finally:
        await engine.close()
