"""Background tasks through the engine facade, as the window and the CLI use them.

A real ``App`` on a temporary data folder: real SQLite, the real wrapper provider running real
``bash`` (in bubblewrap where this machine has it), real servers (``python3 -m http.server``)
answering real HTTP. Nothing is faked but the model, which these tests never call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.background import Origin, StopResult, TaskState
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.facade import BackgroundError, BackgroundTask, Engine, TaskNotFound
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import ScriptedProvider
from fxdesk.tools.sandbox_probe import sandbox_status
from tests.helpers import SANDBOX_PYTHON

WAIT_S = 60.0
SERVER = f"{SANDBOX_PYTHON} -m http.server 0 --bind 127.0.0.1"


@asynccontextmanager
async def running_app(paths: DataPaths) -> AsyncIterator[App]:
    app = App(paths, providers=FixedResolver(ScriptedProvider([])))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "index.html").write_text("hello from the project\n")
    return folder


async def until_url(engine: Engine, ref: str, session_id: str) -> BackgroundTask:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while True:
        task = engine.background_task(ref, session_id)
        if task.url is not None:
            return task
        assert task.state.running, f"the server ended: {task}"
        assert asyncio.get_running_loop().time() < deadline, "no URL detected in time"
        await asyncio.sleep(0.05)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


async def test_a_server_started_through_the_facade_answers_at_its_detected_url_and_stops(
    data_paths: DataPaths, project: Path
) -> None:
    async with running_app(data_paths) as app:
        engine = app.engine
        session = await engine.create_session(project, start=False)
        started = await engine.start_background(session.id, SERVER, expect_url=True)
        assert started.ref == "#1"
        assert started.origin is Origin.PERSON
        assert started.state is TaskState.RUNNING

        task = await until_url(engine, "#1", session.id)
        assert task.url is not None and task.url.startswith("http://127.0.0.1:")
        page = await asyncio.to_thread(fetch, task.url + "/index.html")
        assert page == "hello from the project\n"  # it serves the workspace: it runs there

        outcome = await engine.stop_background("#1", session.id)
        assert outcome.result is StopResult.STOPPED
        assert outcome.message == "Command #1 stopped."
        assert engine.background_task("#1", session.id).state is TaskState.STOPPED
        with pytest.raises(OSError):
            await asyncio.to_thread(fetch, task.url)


async def test_durable_servers_are_found_again_by_the_next_fxdesk_and_local_ones_stop_at_quit(
    data_paths: DataPaths, project: Path
) -> None:
    async with running_app(data_paths) as app:
        engine = app.engine
        session = await engine.create_session(project, start=False)
        await engine.start_background(session.id, SERVER, expect_url=True)
        await engine.start_background(session.id, "sleep 600", durable=False)
        durable = await until_url(engine, "#1", session.id)
        stops, keeps = engine.background_quit_plan()
        assert [t.ref for t in stops] == ["#2"]
        assert [t.ref for t in keeps] == ["#1"]
        local = engine.background_task("#2", session.id)

    assert app.started is False
    try:
        async with running_app(data_paths) as again:
            engine = again.engine
            found = engine.background_task("#1", session.id)
            assert found.state is TaskState.RUNNING
            assert (found.url, found.pid, found.stable_id) == (
                durable.url,
                durable.pid,
                durable.stable_id,
            )
            assert durable.url is not None
            assert await asyncio.to_thread(fetch, durable.url) == "hello from the project\n"
            assert [t.ref for t in engine.background_tasks(session.id)] == ["#1"]  # #2 ended
            assert not Path(f"/proc/{local.pid}").exists() or _is_zombie(local.pid)
            outcome = await engine.stop_background(durable.stable_id)
            assert outcome.result is StopResult.STOPPED
    finally:
        _kill_if_left(durable.pid)


async def test_restart_stops_the_task_and_starts_its_command_again_in_the_same_folder(
    data_paths: DataPaths, project: Path
) -> None:
    (project / "web").mkdir()
    async with running_app(data_paths) as app:
        engine = app.engine
        session = await engine.create_session(project, start=False)
        first = await engine.start_background(session.id, "pwd; sleep 600", cwd="web")
        outcome, second = await engine.restart_background("#1", session.id)
        assert outcome is not None and outcome.result is StopResult.STOPPED
        assert engine.background_task("#1", session.id).state is TaskState.STOPPED
        assert (second.ref, second.command, second.cwd) == ("#2", first.command, first.cwd)
        assert second.state is TaskState.RUNNING
        summary = await engine.background_log("#2", session.id)
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while str(project / "web") not in summary.head:
            assert asyncio.get_running_loop().time() < deadline, summary
            await asyncio.sleep(0.05)
            summary = await engine.background_log("#2", session.id)
        await engine.stop_background("#2", session.id)


async def test_clear_errors_for_what_cannot_be_started_or_found(
    data_paths: DataPaths, project: Path
) -> None:
    async with running_app(data_paths) as app:
        engine = app.engine
        session = await engine.create_session(project, start=False)
        with pytest.raises(BackgroundError, match="outside the workspace"):
            await engine.start_background(session.id, "sleep 1", cwd="..")
        with pytest.raises(BackgroundError, match="no command"):
            await engine.start_background(session.id, "   ")
        with pytest.raises(TaskNotFound, match="no background task #7"):
            engine.background_task("#7", session.id)
        assert engine.background_tasks(session.id) == []


async def test_looking_processes_run_no_background_tasks(
    data_paths: DataPaths, project: Path
) -> None:
    app = App(data_paths, providers=FixedResolver(ScriptedProvider([])))
    await app.start(recover=False)
    try:
        assert app.engine.runs_background is False
        assert app.engine.background_quit_plan() == ([], [])
        with pytest.raises(RuntimeError, match="runs no background tasks"):
            app.engine.all_background_tasks()
    finally:
        await app.stop()


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except OSError:
        return True


def _kill_if_left(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


@pytest.mark.skipif(not sandbox_status().available, reason="no sandbox on this machine")
@pytest.mark.parametrize("enabled", [True, False])
async def test_unrestricted_mode_runs_outside_the_sandbox_only_while_the_setting_allows_it(
    data_paths: DataPaths, project: Path, enabled: bool
) -> None:
    async with running_app(data_paths) as app:
        engine = app.engine
        await engine.profiles.set_unrestricted_enabled(True)
        session = await engine.create_session(project, start=False)
        await engine.configure(session.id, permission_mode=PermissionMode.UNRESTRICTED)
        await engine.profiles.set_unrestricted_enabled(enabled)
        database = data_paths.database
        line = f"test -e {database} && echo SEES-THE-DATA || echo DATA-HIDDEN"
        task = await engine.start_background(session.id, line, durable=False)
        log = Path(task.log_path)
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while b"DATA" not in log.read_bytes():
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.02)
        said = log.read_bytes()
        # Turned off in Settings, unrestricted runs as yolo does: in the sandbox, which hides
        # fxdesk's data folder.
        assert (b"SEES-THE-DATA" in said) is enabled
        assert (b"DATA-HIDDEN" in said) is not enabled


async def test_a_port_taken_by_another_program_is_named_and_nothing_is_started_or_killed(
    data_paths: DataPaths, project: Path
) -> None:
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    try:
        async with running_app(data_paths) as app:
            engine = app.engine
            session = await engine.create_session(project, start=False)
            command = f"{SANDBOX_PYTHON} -m http.server {port} --bind 127.0.0.1"
            with pytest.raises(BackgroundError) as refused:
                await engine.start_background(session.id, command, expect_url=True)
            said = str(refused.value)
            assert f"port {port} is already taken by PID {os.getpid()} (" in said
            assert "the command was not started" in said
            assert engine.background_tasks(session.id) == []
        listener.getsockname()  # still ours, still open: nothing signalled its holder
    finally:
        listener.close()
