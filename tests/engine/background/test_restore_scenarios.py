"""Persistence and restore (spec §6): scenarios 10-14 of spec §9.

fxdesk keeps every session's records in its one SQLite database, so the reference's
per-session folders and capabilities (owned or borrowed) have no counterpart. The reference's
*writable* authority is "this fxdesk process owns the record"; *read-only* is "another live
fxdesk owns it" (a second window, a ``fxdesk run``). "fxdesk restarted" is a new runtime on
the same database, the old one dropped without its shutdown, as if it had been killed; the
processes are the fake's, so they outlive it.
"""

from __future__ import annotations

import signal
from pathlib import Path

from fxdesk.domain.background import Persistence, StopResult, TaskState
from fxdesk.domain.process_identity import TokenMatch
from fxdesk.store import background
from fxdesk.store.faults import Fault
from tests.engine.background.harness import Harness


async def test_scenario_10_a_restored_task_of_this_fxdesk_is_writable(bg: Harness) -> None:
    """Scenario 10: a running record whose identity matches is re-attached with its number,
    writable: stopping it writes its record."""
    task = await bg.launch("npm run dev", cwd="web")
    restarted = await bg.restart()
    assert restarted.restored is not None
    assert (restarted.restored.live, restarted.restored.read_only) == (1, 0)
    found = restarted.task(task.ref, bg.session_id)
    assert (found.number, found.pid, found.stable_id) == (task.number, task.pid, task.stable_id)
    assert found.read_only is False and found.state is TaskState.RUNNING

    outcome = await restarted.stop(task.ref, bg.session_id)
    assert outcome.result is StopResult.STOPPED
    record = await bg.store.read(lambda: background.by_stable_id(bg.session_id, task.stable_id))
    assert record is not None and record.state is TaskState.STOPPED


async def test_scenario_10_a_dead_fxdesks_records_are_adopted(bg: Harness) -> None:
    """Scenario 10, the other way in: records of an fxdesk process that is gone are taken
    over (writable) by the next one."""
    task = await bg.launch("npm run dev")
    restarted = await bg.restart(instance_id="instance-2", owner_alive=lambda _owner: False)
    assert restarted.task(task.ref, bg.session_id).read_only is False
    rows = await bg.records()
    assert [r[5] for r in rows] == ["instance-2"]


async def test_scenario_11_records_are_validated_and_only_valid_ones_attached(
    bg: Harness,
) -> None:
    """Scenario 11 (adapted: there is no "missing capability" to skip on; the restore decides
    per record): each running record is checked before anything is listed. One whose process
    is gone, one without its log and one outside its workspace are not attached and are
    marked stale; one whose identity cannot be read is checked (the identity is asked) but
    neither attached nor rewritten: the next start looks again."""
    gone = await bg.launch("npm run dev")
    no_log = await bg.launch("npm run api")
    unreadable = await bg.launch("npm run storybook")
    moved = await bg.launch("npm run docs")
    bg.fake.vanish(gone.pid)
    bg.fake.processes[gone.pid].reaped = True
    Path(no_log.log_path).unlink()
    bg.fake.identity[unreadable.pid] = TokenMatch.UNAVAILABLE
    await bg.store.write(
        lambda: (
            bg.store_rows(
                "UPDATE background_task SET cwd = '/elsewhere' "
                f"WHERE stable_id = '{moved.stable_id}'"
            )
            and None
        )
    )
    matched_before = len(bg.fake.named("match"))

    restarted = await bg.restart()
    report = restarted.restored
    assert report is not None
    assert (report.live, report.stale, report.unverified) == (0, 3, 1)
    shown = {t.stable_id: t for t in restarted.all_tasks()}  # listed as stale, for the person
    assert set(shown) == {gone.stable_id, no_log.stable_id, moved.stable_id}
    assert all(t.state is TaskState.STALE and not t.stoppable for t in shown.values())
    asked = {call[1] for call in bg.fake.named("match")[matched_before:]}
    assert {gone.pid, unreadable.pid} <= asked
    states = {r[1]: r[2] for r in await bg.records()}
    assert states == {
        gone.stable_id: "stale",
        no_log.stable_id: "stale",
        moved.stable_id: "stale",
        unreadable.stable_id: "running",
    }


async def test_scenario_12_another_fxdesks_tasks_are_read_only_and_never_listed_twice(
    bg: Harness,
) -> None:
    """Scenario 12: a running task of another live fxdesk in the workspace is listed
    read-only (its log readable, never its record written); restoring again adds nothing."""
    task = await bg.launch("npm run dev")
    viewer = await bg.restart(instance_id="instance-2", owner_alive=lambda _owner: True)
    assert viewer.restored is not None
    assert (viewer.restored.live, viewer.restored.read_only) == (1, 1)
    (found,) = viewer.workspace_tasks(task.workspace_id)
    assert found.read_only is True and found.stable_id == task.stable_id
    Path(task.log_path).write_text("hello\n")
    assert "hello" in (await viewer.log_summary(task.ref, bg.session_id)).head

    again = await viewer.restore()
    assert (again.live, again.skipped) == (0, 1)
    assert len(viewer.all_tasks()) == 1
    assert [r[5] for r in await bg.records()] == ["instance-1"]  # still the owner's record


async def test_scenario_12_a_read_only_task_can_be_stopped_and_its_record_is_left(
    bg: Harness,
) -> None:
    """Spec §6.6 step 5: a read-only task can be stopped; its record is not rewritten."""
    task = await bg.launch("npm run dev")
    viewer = await bg.restart(instance_id="instance-2", owner_alive=lambda _owner: True)
    outcome = await viewer.stop(task.ref, bg.session_id)
    assert outcome.result is StopResult.STOPPED
    assert bg.fake.signals == [(task.pid, signal.SIGTERM)]
    assert [(r[2], r[5]) for r in await bg.records()] == [("running", "instance-1")]


async def test_scenario_13_a_degraded_record_gets_a_last_try_at_quit(bg: Harness) -> None:
    """Scenario 13 (adapted: "closing the source" is fxdesk's quit): a durable task whose
    record could not be written is tried again before the quit decides; saved now, it is
    confirmed and keeps running (nothing signalled), and the next fxdesk finds it."""
    bg.faults.fail(1, Fault.DEFINITE, onward=True, label="background record")
    task = await bg.launch("npm run dev")
    assert task.persistence is Persistence.INITIAL_RECORD_DEGRADED
    assert await bg.records() == []
    bg.faults.clear()

    stopped = await bg.runtime.shutdown()
    assert stopped == 0 and bg.fake.signals == []
    assert bg.task(task.number).persistence is Persistence.CONFIRMED
    record = await bg.store.read(lambda: background.by_stable_id(bg.session_id, task.stable_id))
    assert record is not None
    assert (record.number, record.pid, record.state) == (task.number, task.pid, TaskState.RUNNING)
    restarted = await bg.restart()
    assert restarted.task(task.ref, bg.session_id).state is TaskState.RUNNING


async def test_scenario_13_a_task_still_unsaved_at_quit_is_stopped(bg: Harness) -> None:
    """The other side of scenario 13: when the last try fails too, nothing could find the task
    again, so it is stopped at quit (spec §3.12 step 4), after its identity matched."""
    bg.faults.fail(1, Fault.DEFINITE, onward=True, label="background record")
    task = await bg.launch("npm run dev")
    assert await bg.runtime.shutdown() == 1
    assert bg.fake.signals == [(task.pid, signal.SIGTERM)]
    assert bg.task(task.number).state is TaskState.STOPPED


async def test_scenario_14_the_runtime_borrows_the_store_and_leaves_it_open(
    bg: Harness,
) -> None:
    """Scenario 14 (adapted: the one database is the "capability"; the App owns it, the
    runtime borrows it): the runtime's quit leaves the store working for whoever owns it."""
    task = await bg.launch("npm run dev")
    await bg.runtime.shutdown()
    record = await bg.store.read(lambda: background.by_stable_id(bg.session_id, task.stable_id))
    assert record is not None
    await bg.store.write(lambda: bg.store_rows("SELECT 1") and None)
