"""Processes (issue 16 item 5): what real child processes do to fxdesk, through the real App
with scripted models: a server that double-forks out of its group, a PID that now names
another process, a signal the kernel refuses, zombies, bytes that are not text, a command that
closes its output early and goes on, and one that fills the disk.

Real processes and signals throughout; the one fake is the kernel's refusal of a signal
(EPERM), which a root test process cannot get for real: the two functions that send the signal
are replaced by ones that record the call and raise ``PermissionError``.

Already covered beside these, at the runtime's level: a PID reused *during* a stop's grace
period, or at quit and in stop-and-forget, with the recording fake process identity
(``tests/engine/background/test_stop_scenarios.py``); a server ignoring SIGTERM killed with its
children, and an unsandboxed double fork reported by PID
(``tests/engine/background/test_real_processes.py``); 50 MB of output, split characters and
timeouts of ``run_command`` (``tests/tools/test_shell.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from fxdesk import messages
from fxdesk.app import App
from fxdesk.domain.background import TaskState
from fxdesk.domain.model import PermissionMode, WorkStatus
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, StreamEvent
from fxdesk.providers.scripted import Reply, Step
from fxdesk.tools.background import identity
from fxdesk.tools.sandbox_probe import sandbox_status
from tests.engine.agents.harness import WAIT_S, ByName, Dynamic, Script, call, tool_results
from tests.reliability.real_app import data, integrity, run_turn, running
from tests.reliability.test_store_faults import tmpfs


def gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def zombies(since: float) -> dict[int, str]:
    """Zombie children of this process started after ``since`` (``time.time()``): what this
    test's fxdesk started and never reaped (not what an earlier test left), each with what
    it was and who should have reaped it (said when a run on a slow machine finds one)."""
    found: dict[int, str] = {}
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_ZOMBIE and child.create_time() >= since - 1:
                parent = child.parent()
                found[child.pid] = (
                    f"{child.name()} (started {child.create_time() - since:+.1f} s) under "
                    f"{parent.pid if parent else '?'} "
                    f"{' '.join(parent.cmdline())[:200] if parent else ''}"
                )
    return found


async def until(  # type: ignore[no-untyped-def]
    condition, timeout_s: float = WAIT_S, what: Callable[[], object] = lambda: ""
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"condition not reached in time {what()}"
        await asyncio.sleep(0.05)


class Hooked(Script):
    """A script that awaits ``hooks[i]`` before it answers model call ``i``."""

    def __init__(
        self, steps: list[Step | Dynamic], hooks: dict[int, Callable[[], Awaitable[None]]]
    ):
        super().__init__(steps)
        self.hooks = hooks

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        hook = self.hooks.get(len(self.requests))
        if hook is not None:
            await hook()
        async for event in super().stream(request):
            yield event


# --- a server that double-forks and detaches ----------------------------------------------


async def test_a_server_that_double_forks_out_of_its_group_is_stopped_with_its_sandbox(
    tmp_path: Path, workspace: Path
) -> None:
    """The model starts a server that double-forks a ``setsid`` child out of its process
    group (as daemons do) and stops it. In the sandbox the task's PID namespace is its own:
    the stop ends it whole, the escaped child too, says "stopped", and leaves no zombie.
    Before, a durable task's escaped child was left running and only named. (Unsandboxed,
    there is no namespace: the child is named with its PID and not signalled,
    ``test_real_processes.py``.)"""
    if not sandbox_status().available:
        pytest.skip("no sandbox here: the escaped process is reported, not stopped")
    server = '( setsid sleep 600 & echo "escaped=$!" ); echo ready; exec sleep 600'
    leader: list[int] = []
    outsiders: list[int] = []
    began_at = time.time()

    async def find_the_escaped() -> None:
        task = app.engine.background_task("#1", session_ids[0])
        leader.append(task.pid)
        init = psutil.Process(task.pid).parent()  # the sandbox's init

        def escaped() -> list[int]:
            return [
                p.pid
                for p in init.children(recursive=True)
                if p.name() == "sleep" and os.getpgid(p.pid) != task.pid
            ]

        await until(escaped)
        outsiders.extend(escaped())

    root = Hooked(
        [call("start_background", command=server), call("stop_background", task="#1"), Reply("ok")],
        {1: find_the_escaped},
    )
    session_ids: list[str] = []
    paths = data(tmp_path)
    app = App(paths, providers=ByName({}, root))
    await app.start()
    try:
        session = await app.engine.create_session(workspace, permission_mode=PermissionMode.YOLO)
        session_ids.append(session.id)
        await app.engine.send(session.id, "Serve")
        assert await asyncio.wait_for(app.engine.join(session.id), WAIT_S) == Result.IDLE
        results = tool_results(root.requests[-1])
        assert results[-1] == "Command #1 stopped.", results
        assert outsiders, "the double fork did not happen"
        await until(
            lambda: all(gone(pid) for pid in [*leader, *outsiders]),
            what=lambda: [pid for pid in [*leader, *outsiders] if not gone(pid)],
        )
        assert app.engine.background_task("#1", session.id).state is TaskState.STOPPED
    finally:
        await app.stop()
        for pid in outsiders:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    await until(lambda: not zombies(began_at), what=lambda: zombies(began_at))


# --- a PID that now names another process ---------------------------------------------------


async def test_a_durable_task_whose_pid_now_names_another_process_is_never_signalled(
    tmp_path: Path, workspace: Path
) -> None:
    """A durable server outlives fxdesk; while fxdesk is closed it dies and its PID goes to
    an unrelated process (here: its record is pointed at one, the token left as it was,
    which is what a reused PID looks like). The next fxdesk marks the task stale, a stop by
    the model says it is no longer running, and the unrelated process is never signalled."""
    paths = data(tmp_path)
    async with running(paths, Script([]), background=True) as app:
        session = await app.engine.create_session(workspace, start=False)
        task = await app.engine.start_background(session.id, "exec sleep 600")
        old_pid = task.pid
    assert not gone(old_pid)  # durable: still running after the quit
    os.killpg(old_pid, signal.SIGKILL)
    await until(lambda: gone(old_pid))
    unrelated = await asyncio.create_subprocess_exec("sleep", "600", start_new_session=True)
    try:
        db = sqlite3.connect(paths.database)
        db.execute("UPDATE background_task SET pid = ? WHERE pid = ?", (unrelated.pid, old_pid))
        db.commit()
        db.close()

        root = Script([call("stop_background", task="#1"), Reply("It was gone.")])
        async with running(paths, root, background=True) as app:
            found = app.engine.background_task("#1", session.id)
            assert found.state is TaskState.STALE
            await app.engine.send(session.id, "Stop it")
            assert await asyncio.wait_for(app.engine.join(session.id), WAIT_S) == Result.IDLE
            (said,) = tool_results(root.requests[-1])
            assert "not running" in said, said
        assert unrelated.returncode is None  # never signalled
        assert psutil.Process(unrelated.pid).status() != psutil.STATUS_STOPPED
    finally:
        unrelated.kill()
        await unrelated.wait()


# --- a signal the kernel refuses ------------------------------------------------------------


async def test_a_refused_signal_is_said_plainly_and_the_task_is_left_running(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel answers EPERM to the stop's signal (another user's process, a locked-down
    container): the model is told the task could not be signalled, permission denied; the
    task stays running and listed; once signals work again, a stop stops it."""
    refused: list[tuple[object, int]] = []

    def refuse(target: object, number: int, *_rest: object) -> bool:
        refused.append((target, number))
        raise PermissionError(errno.EPERM, "Operation not permitted")

    root = Script(
        [
            call("start_background", command="exec sleep 600"),
            call("stop_background", task="#1"),
            Reply("Could not."),
            call("stop_background", task="#1"),
            Reply("Stopped."),
        ]
    )
    paths = data(tmp_path)
    async with running(paths, root, background=True) as app:
        with monkeypatch.context() as patch:
            patch.setattr(identity, "_pidfd_signal_group", refuse)
            patch.setattr(identity.os, "killpg", refuse)
            session_id = await run_turn(app, workspace, "Start and stop", within=WAIT_S * 2)
        results = tool_results(root.requests[2])
        assert results[-1] == "Command #1 could not be signalled: permission denied."
        assert refused and refused[0][1] == signal.SIGTERM
        task = app.engine.background_task("#1", session_id)
        assert task.state is TaskState.RUNNING and not gone(task.pid)

        await app.engine.send(session_id, "Try again")
        assert await asyncio.wait_for(app.engine.join(session_id), WAIT_S) == Result.IDLE
        assert tool_results(root.requests[4])[-1] == "Command #1 stopped."
        await until(lambda: gone(task.pid))


# --- zombies, output, early close ------------------------------------------------------------


async def test_commands_that_leave_zombies_closed_output_and_odd_bytes(
    tmp_path: Path, workspace: Path
) -> None:
    """In one turn: a command whose own child becomes a zombie under it (``exec`` into a
    program that never reaps); one that closes its output early and goes on working (the
    result waits for its exit and has its code); one that closes its output and outlives its
    timeout (ended on time); and one that prints NUL and bytes that are not UTF-8, in the
    foreground and in a background log. Every result is stored and read back after a
    restart, with U+FFFD for the bad bytes; no zombie is left; the database is intact."""
    began_at = time.time()
    odd = r"printf 'caf\351 \000nul\377\376 end\n'"
    root = Script(
        [
            call("run_command", command="sleep 0.1 & exec sleep 1"),
            call(
                "run_command",
                command="echo early; exec >&- 2>&-; sleep 1; echo late > after.txt; exit 3",
            ),
            call("run_command", command="exec >&- 2>&-; sleep 60", timeout_s=2),
            call("run_command", command=odd),
            call("start_background", command=f"{odd}; exec sleep 600"),
            Dynamic(lambda r: call("read_background_log", task="#1")),
            call("stop_background", task="#1"),
            Reply("Done."),
        ]
    )
    paths = data(tmp_path)
    began = time.monotonic()
    async with running(paths, root, background=True) as app:
        session_id = await run_turn(app, workspace, "Run them", within=WAIT_S * 2)
        results = tool_results(root.requests[-1])
        assert results[0] == "(no output)\n[exit code 0]"
        assert results[1] == "early\n[exit code 3]"
        assert (workspace / "after.txt").read_text() == "late\n"  # it was waited for
        assert "timed out" in results[2] or "timeout" in results[2], results[2]
        assert results[3] == "caf\ufffd \x00nul\ufffd\ufffd end\n[exit code 0]"
        assert "caf\ufffd \u2400nul\ufffd\ufffd end" in results[5]
        assert results[6] == "Command #1 stopped."
    assert time.monotonic() - began < WAIT_S  # the 60 s command did not hold the turn
    await until(lambda: not zombies(began_at), what=lambda: zombies(began_at))
    async with running(paths, Script([]), background=True) as again:
        transcript = await again.engine.transcript(session_id)
        stored = [e.content for e in transcript.entries if e.kind.value == "tool_result"]
        assert stored == results
    assert integrity(paths) == "ok"


# --- a command that fills the disk ---------------------------------------------------------


async def test_a_command_that_fills_the_disk_fails_clearly_and_the_store_survives(
    tmp_path: Path,
) -> None:
    """The workspace and the data folder share a small disk (a real 8 MB tmpfs) and the
    model's command fills it. The command fails with the system's "No space left on
    device"; saving its result may fail too, and then the person is told the disk is full and
    the turn pauses. Either way the database stays intact, and once the file is deleted a
    restart and a resume finish the turn without running the command again."""
    with tmpfs(tmp_path / "small", "8m") as disk:
        paths = DataPaths(disk / "data", "test")
        workspace = disk / "project"
        workspace.mkdir()
        fill = "echo once >> tags.txt; head -c 64M /dev/zero > fill.bin"
        root = Script([call("run_command", command=fill), Reply("The disk is full.")])
        told: list[str] = []
        detach = messages.hub.attach(lambda m: told.append(m.text))
        try:
            async with running(paths, root, background=True) as app:
                session = await app.engine.create_session(
                    workspace, permission_mode=PermissionMode.YOLO, first_message="Fill it"
                )
                await asyncio.wait_for(app.engine.join(session.id), WAIT_S)
                (item,) = await app.engine.items(session.id)
                reason = await app.engine.failure_reason(item.id) or ""
        finally:
            detach()
        print(f"disk full: the turn {item.status.value}")
        if item.status is WorkStatus.COMPLETED:
            (result,) = tool_results(root.requests[-1])
            assert "No space left on device" in result and "[exit code 1]" in result
        else:
            assert any("full" in text for text in [reason, *told]), (reason, told)
        assert integrity(paths) == "ok"
        (workspace / "fill.bin").unlink()

        again = Script([Reply("The disk is full.")])
        async with running(paths, again, background=True) as app:
            if item.status is not WorkStatus.COMPLETED:
                app.engine.resume(session.id)
                await asyncio.wait_for(app.engine.join(session.id), WAIT_S)
            (item,) = await app.engine.items(session.id)
            assert item.status is WorkStatus.COMPLETED
        assert (workspace / "tags.txt").read_text() == "once\n"  # never run twice
        assert integrity(paths) == "ok"
