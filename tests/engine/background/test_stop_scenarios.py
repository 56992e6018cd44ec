"""Stopping: one task, a workspace (stop-and-forget) and quit (spec §3.9-3.12, §4): scenarios
22-25 of spec §9, and PID reuse in each of the three paths.

The recording fake provider (``tests/fakes``) stands for the processes, because what these
scenarios are about cannot be made on demand with real ones: a PID that another process now
has (``reuse_pid``: the old token is ``mismatched``), an identity that cannot be read, a signal
that fails. ``fake.signals`` is every signal the runtime sent; a test asserts on it. The
real-process versions (a server that ignores SIGTERM, one that double-forks) are in
``test_real_processes.py``.
"""

from __future__ import annotations

import signal

import pytest

from fxdesk.domain.background import (
    LaunchPolicy,
    StopResult,
    TaskNotFound,
    TaskState,
)
from fxdesk.domain.process_identity import TokenMatch
from fxdesk.store import background
from fxdesk.tools.background.escaped import Escaped
from tests.engine.background.harness import Harness, make_session


async def stored_state(bg: Harness, stable_id: str, session_id: str = "s1") -> TaskState:
    record = await bg.store.read(lambda: background.by_stable_id(session_id, stable_id))
    assert record is not None
    return record.state


async def test_scenario_22_stop_finds_nothing_then_stops_the_running_task(bg: Harness) -> None:
    """Scenario 22: nothing to stop is said, not an error of the process; a matching task is
    signalled once, confirmed gone and marked stopped; a second stop sends nothing."""
    with pytest.raises(TaskNotFound, match="no background task #1"):
        await bg.runtime.stop("#1", bg.session_id)
    assert bg.fake.signals == []

    task = await bg.launch("npm run dev", expect_url=True)
    outcome = await bg.runtime.stop(task.ref, bg.session_id)
    assert (outcome.number, outcome.result) == (task.number, StopResult.STOPPED)
    assert outcome.message == f"Command #{task.number} stopped."
    assert bg.fake.signals == [(task.pid, signal.SIGTERM)]

    again = await bg.runtime.stop(task.ref, bg.session_id)
    assert again.result is StopResult.NOT_RUNNING
    assert bg.fake.signals == [(task.pid, signal.SIGTERM)]  # nothing more was sent
    stopped = bg.task(task.number)
    assert stopped.state is TaskState.STOPPED and stopped.expect_url is False
    assert await stored_state(bg, task.stable_id) is TaskState.STOPPED


async def test_scenario_23_a_signal_error_is_reported_and_the_task_stays_running(
    bg: Harness,
) -> None:
    """Scenario 23: the provider's PermissionError comes back as it is; nothing changes."""
    task = await bg.launch()
    bg.fake.signal_error = PermissionError(1, "Operation not permitted")
    outcome = await bg.runtime.stop(task.ref, bg.session_id)
    assert outcome.result is StopResult.SIGNAL_ERROR
    assert outcome.message == f"Command #{task.number} could not be signalled: permission denied."
    assert bg.task(task.number).state is TaskState.RUNNING
    assert await stored_state(bg, task.stable_id) is TaskState.RUNNING


async def test_scenario_24_no_signal_on_a_reused_pid_or_an_unreadable_identity(
    bg: Harness,
) -> None:
    """Scenario 24: a PID that another process has now is never signalled (the task is stale,
    and the record says so: Appendix A 1); an identity that cannot be read is never
    signalled and never called gone (the task stays running)."""
    reused = await bg.launch("npm run dev")
    bg.fake.reuse_pid(reused.pid)
    outcome = await bg.runtime.stop(reused.ref, bg.session_id)
    assert outcome.result is StopResult.ALREADY_GONE
    assert outcome.message == f"Command #{reused.number} was no longer running (marked stale)."
    assert bg.fake.signals == []
    assert bg.task(reused.number).state is TaskState.STALE
    assert await stored_state(bg, reused.stable_id) is TaskState.STALE

    unreadable = await bg.launch("npm run dev -- --port 5174")
    bg.fake.identity[unreadable.pid] = TokenMatch.UNAVAILABLE
    outcome = await bg.runtime.stop(unreadable.ref, bg.session_id)
    assert outcome.result is StopResult.INDETERMINATE
    assert "nothing was signalled" in outcome.message
    assert bg.fake.signals == []
    assert bg.task(unreadable.number).state is TaskState.RUNNING
    assert await stored_state(bg, unreadable.stable_id) is TaskState.RUNNING


async def test_scenario_25_stop_and_forget_removes_only_this_workspaces_tasks(
    bg: Harness,
) -> None:
    """Scenario 25: of a task in the workspace (with a token), one in another workspace and
    one in the workspace without a token, exactly one is signalled and only it is removed."""
    inside = await bg.launch("npm run dev", cwd="web")
    other_workspace = bg.root / "other"
    other_workspace.mkdir()
    await make_session(bg.store, other_workspace, "s2")
    outside = await bg.runtime.launch("s2", "npm run dev")
    untokened = await bg.launch("sleep 600")
    bg.runtime.find(untokened.ref, bg.session_id).token = None  # as a record without one

    result = await bg.runtime.forget_workspace(inside.workspace_id)
    assert (result.signalled, result.removed) == (1, 1)
    assert result.message == "1 signalled, 1 removed"
    assert bg.fake.signals == [(inside.pid, signal.SIGTERM)]
    left = [(t.session_id, t.number) for t in bg.runtime.all_tasks()]
    assert left == [("s2", outside.number), ("s1", untokened.number)]
    removed = [e for e in bg.events if e.removed]
    assert [e.task.stable_id for e in removed] == [inside.stable_id]


async def test_a_handle_whose_process_outlives_the_task_is_left_to_a_reaper(
    bg: Harness,
) -> None:
    """In the sandbox the task's PID is the wrapper inside it, and fxdesk's handle is on
    bubblewrap, which outlives the wrapper for a moment while it tears the sandbox down. When
    a task ends then (stopped, found finished, or found gone), its handle is not reaped yet; it
    is given to a reaper, never just dropped (dropped, bubblewrap stayed a zombie as long as
    fxdesk ran: the CI of stop 28). Each of the three ways a task ends."""
    stopped = await bg.launch("npm run dev")
    bg.fake.processes[stopped.pid].handle_lingers = True
    outcome = await bg.runtime.stop(stopped.ref, bg.session_id)
    assert outcome.result is StopResult.STOPPED

    finished = await bg.launch("npm run build")
    bg.fake.processes[finished.pid].handle_lingers = True
    bg.fake.finish(finished.pid, 0)
    await bg.runtime.refresh(force=True)
    assert bg.task(finished.number).state is TaskState.EXITED

    gone = await bg.launch("npm run storybook")
    bg.fake.processes[gone.pid].handle_lingers = True
    bg.fake.reuse_pid(gone.pid)
    assert (await bg.runtime.stop(gone.ref, bg.session_id)).result is StopResult.ALREADY_GONE

    forgotten = [call[1] for call in bg.fake.named("forget")]
    assert sorted(forgotten) == sorted([stopped.pid, finished.pid, gone.pid])
    assert all(bg.runtime.find(t.ref, bg.session_id).owned is None for t in (stopped, finished))


async def test_stop_and_forget_never_signals_a_reused_pid_and_keeps_an_unreadable_one(
    bg: Harness,
) -> None:
    """PID reuse in stop-and-forget (spec §3.10): a mismatched token is taken as gone, not
    signalled, and the task is removed; an unreadable identity is neither: the task stays."""
    reused = await bg.launch("npm run dev")
    unreadable = await bg.launch("npm run storybook")
    bg.fake.reuse_pid(reused.pid)
    bg.fake.identity[unreadable.pid] = TokenMatch.UNAVAILABLE

    result = await bg.runtime.forget_workspace(reused.workspace_id)
    assert bg.fake.signals == []
    assert (result.signalled, result.removed, result.kept) == (0, 1, 1)
    assert [t.stable_id for t in bg.runtime.all_tasks()] == [unreadable.stable_id]
    assert bg.task(unreadable.number).state is TaskState.RUNNING


async def test_shutdown_never_signals_a_reused_pid_or_an_unreadable_one(bg: Harness) -> None:
    """PID reuse at quit (spec §3.12 step 4): process-local tasks are stopped at quit, but a
    reused PID is not signalled (its task is only marked stopped: it is gone), an unreadable
    one is left as it is, and a durable task whose record is saved is not touched at all."""
    alive = await bg.launch("sleep 600", policy=LaunchPolicy.PROCESS_LOCAL)
    reused = await bg.launch("npm run dev", policy=LaunchPolicy.PROCESS_LOCAL)
    unreadable = await bg.launch("npm run storybook", policy=LaunchPolicy.PROCESS_LOCAL)
    durable = await bg.launch("npm run api", policy=LaunchPolicy.DURABLE)
    bg.fake.reuse_pid(reused.pid)
    bg.fake.identity[unreadable.pid] = TokenMatch.UNAVAILABLE

    stopped = await bg.runtime.shutdown()
    assert bg.fake.signals == [(alive.pid, signal.SIGTERM)]
    assert stopped == 2  # the live one, and the one already gone
    states = {t.number: t.state for t in bg.runtime.all_tasks()}
    assert states == {
        alive.number: TaskState.STOPPED,
        reused.number: TaskState.STOPPED,
        unreadable.number: TaskState.RUNNING,
        durable.number: TaskState.RUNNING,
    }
    assert bg.fake.processes[durable.pid].alive  # durable servers keep running


async def test_a_task_that_ignores_sigterm_is_killed_deliberately(bg: Harness) -> None:
    """The SIGKILL step (issue 12, Build 4): after the grace period the group is killed, after
    its identity matched again; the outcome says it was forced."""
    bg.fake.ignores_sigterm = True
    task = await bg.launch()
    outcome = await bg.runtime.stop(task.ref, bg.session_id)
    assert outcome.result is StopResult.KILLED
    assert "ignored SIGTERM" in outcome.message
    assert bg.fake.signals == [(task.pid, signal.SIGTERM), (task.pid, signal.SIGKILL)]
    assert bg.task(task.number).state is TaskState.STOPPED
    assert await stored_state(bg, task.stable_id) is TaskState.STOPPED


async def test_a_pid_reused_during_the_grace_period_is_not_killed(bg: Harness) -> None:
    """The escalation checks the identity again: a PID taken by another process between the
    SIGTERM and the SIGKILL is never SIGKILLed."""
    bg.fake.ignores_sigterm = True
    task = await bg.launch()
    real_signal = bg.fake.signal_group

    def signal_then_reuse(pid: int, token: object, number: int) -> None:
        real_signal(pid, token, number)  # type: ignore[arg-type]
        if number == signal.SIGTERM:
            bg.fake.reuse_pid(pid)

    bg.fake.signal_group = signal_then_reuse  # type: ignore[method-assign]
    outcome = await bg.runtime.stop(task.ref, bg.session_id)
    assert outcome.result is StopResult.STOPPED
    assert [s for _, s in bg.fake.signals] == [signal.SIGTERM]


async def test_a_process_that_left_the_group_is_reported_never_signalled(bg: Harness) -> None:
    """A double fork out of the task's process group (issue 12): the stop says which PIDs
    still run and that fxdesk did not stop them; nothing is sent to them."""
    task = await bg.launch()
    bg.fake.escaped[task.log_path] = [Escaped(777001, "node")]
    outcome = await bg.runtime.stop(task.ref, bg.session_id)
    assert outcome.result is StopResult.STOPPED
    assert outcome.left_running == ((777001, "node"),)
    assert "PID 777001 (node)" in outcome.message and "kill 777001" in outcome.message
    assert bg.fake.signals == [(task.pid, signal.SIGTERM)]
