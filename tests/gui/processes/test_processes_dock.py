"""The Processes dock with the real App, real ``bash`` tasks and a real HTTP server."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from PySide6.QtCore import QUrl

from fxdesk.domain.background import Origin, TaskState
from fxdesk.domain.run_commands import RunCommand
from fxdesk.gui.application import GuiController
from fxdesk.gui.processes.controller import quit_text
from fxdesk.gui.processes.model import (
    COL_CPU,
    COL_EXIT,
    COL_MEMORY,
    COL_NUMBER,
    COL_ORIGIN,
    COL_STATE,
    COL_URL,
)
from fxdesk.gui.sessions.model import ROLE_BACKGROUND
from fxdesk.paths import DataPaths
from tests.gui.test_application import Running
from tests.gui.waiting import until
from tests.helpers import SANDBOX_PYTHON

SERVER = f"{SANDBOX_PYTHON} -m http.server 0 --bind 127.0.0.1"


async def start(data_paths: DataPaths, tmp_path: Path) -> tuple[Running, GuiController, str]:
    project = tmp_path / "project"
    project.mkdir()
    run = Running(data_paths)
    controller = await run.started()
    session = await run.app.engine.create_session(project, start=False)
    await until(lambda: controller.model.session_index(session.id).isValid())
    controller.window.select_session(session.id)
    return run, controller, session.id


def cell(controller: GuiController, row: int, column: int) -> str:
    assert controller.processes is not None
    model = controller.processes.dock.model
    return str(model.index(row, column).data())


async def test_a_task_appears_is_counted_everywhere_and_stops_from_the_dock(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run, controller, session_id = await start(data_paths, tmp_path)
    try:
        assert controller.processes is not None
        dock = controller.processes.dock
        assert dock.isHidden()  # nothing to show yet
        assert controller.processes.quit_question() == ""
        engine = run.app.engine
        await engine.start_background(session_id, "echo started; sleep 600", durable=False)
        await until(lambda: dock.model.rowCount() == 1)
        assert not dock.isHidden()  # opened by the first task
        assert cell(controller, 0, COL_NUMBER) == "#1"
        assert cell(controller, 0, COL_STATE) == "running"
        assert cell(controller, 0, COL_EXIT) == "—"
        assert cell(controller, 0, COL_ORIGIN).startswith("you · ")
        assert "stops at quit" in cell(controller, 0, COL_ORIGIN)
        index = controller.model.session_index(session_id)
        assert index.data(ROLE_BACKGROUND) == 1
        assert "1 background command running" in str(index.data(3))  # the tooltip
        tooltip = controller.notifications.status.tooltip
        assert tooltip.endswith("1 background command running")
        assert controller.processes.quit_question() == (
            "1 background command will be stopped (#1 echo started; sleep 600)."
        )
        # usage of the process group, sampled off the GUI thread
        await dock.sample()
        await dock.sample()
        assert cell(controller, 0, COL_CPU).endswith("%")
        assert cell(controller, 0, COL_MEMORY).endswith(("KB", "MB"))
        # its log is shown
        assert dock.selected() is not None
        await until(lambda: "started" in dock.log.text.toPlainText())

        said = await dock.stop(dock.model.task(0))
        assert said == "Command #1 stopped."
        await until(lambda: cell(controller, 0, COL_STATE) == "stopped")
        assert dock.status.text() == "Command #1 stopped."
        assert index.data(ROLE_BACKGROUND) == 0
        assert controller.notifications.status.tooltip.endswith("idle")
        assert engine.background_task("#1", session_id).state is TaskState.STOPPED
        assert not dock.buttons["stop"].isEnabled()
    finally:
        await run.stop()


async def test_a_server_url_opens_while_it_runs_and_is_refused_once_stopped(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run, controller, session_id = await start(data_paths, tmp_path)
    try:
        assert controller.processes is not None
        dock = controller.processes.dock
        opened: list[QUrl] = []
        dock.open_url_with = lambda url: opened.append(url) or True
        engine = run.app.engine
        await engine.start_background(session_id, SERVER, expect_url=True, durable=False)
        await until(lambda: dock.model.rowCount() == 1)
        await until(lambda: cell(controller, 0, COL_URL).startswith("http://127.0.0.1:"), 60)
        url = cell(controller, 0, COL_URL)
        dock.view.clicked.emit(dock.model.index(0, COL_URL))
        assert [u.toString() for u in opened] == [url]

        await dock.stop(dock.model.task(0))
        await until(lambda: cell(controller, 0, COL_STATE) == "stopped")
        dock.view.clicked.emit(dock.model.index(0, COL_URL))
        assert len(opened) == 1  # refused
        assert dock.status.text().startswith(f"Not opening {url}: command #1 is stopped")
    finally:
        await run.stop()


async def test_saved_run_commands_start_and_stop_from_the_run_menu(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run, controller, session_id = await start(data_paths, tmp_path)
    try:
        assert controller.processes is not None
        dock = controller.processes.dock
        engine = run.app.engine
        session = next(s for s in (await engine.catalog()).sessions if s.id == session_id)
        workspace_id = session.workspace_id
        (tmp_path / "project" / "web").mkdir()
        saved = (RunCommand.make("watch", "sleep 300", "web"),)
        await engine.set_run_commands(workspace_id, saved)
        assert dock.place is not None and dock.place.session_id == session_id
        assert await dock.load_run_commands() == saved
        dock.run_menu.aboutToShow.emit()
        assert [a.text() for a in dock.run_menu.actions()] == [
            "Run “watch”",
            "",
            "&Edit saved run commands…",
        ]

        dock.run_menu.actions()[0].trigger()
        await until(lambda: dock.model.rowCount() == 1)
        task = dock.model.task(0)
        assert task.origin is Origin.PERSON and task.cwd.endswith("/project/web")
        assert cell(controller, 0, 3) == "web"  # the folder, relative to the workspace
        dock.run_menu.aboutToShow.emit()
        assert dock.run_menu.actions()[0].text() == "Stop “watch” (#1)"
        dock.run_menu.actions()[0].trigger()
        await until(lambda: cell(controller, 0, COL_STATE) == "stopped")
    finally:
        await run.stop()


async def test_the_quit_question_names_what_stops_and_what_keeps_running(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run, controller, session_id = await start(data_paths, tmp_path)
    engine = run.app.engine
    try:
        await engine.start_background(session_id, "sleep 600", durable=True)
        await engine.start_background(session_id, "sleep 601", durable=False)
        controller.ask_quit()
        await until(lambda: controller.quit_box is not None)
        box = controller.quit_box
        assert box is not None
        assert box.text() == (
            "1 background command will be stopped (#2 sleep 601); "
            "1 durable command keeps running (#1 sleep 600)."
        )
        box.reject()  # Cancel: nothing happens
        await until(lambda: controller.quit_box is None)
        assert not controller.quit_event.is_set()
        await engine.stop_background("#1", session_id)
    finally:
        await run.stop()


def test_quit_text_counts_and_lists_a_few() -> None:
    assert quit_text([], []) == ""

    class T:
        def __init__(self, n: int, command: str) -> None:
            self.ref, self.command = f"#{n}", command

    many = [T(n, f"cmd {n}") for n in range(1, 6)]
    assert quit_text(many, []) == (  # type: ignore[arg-type]
        "5 background commands will be stopped (#1 cmd 1, #2 cmd 2, #3 cmd 3, and 2 more)."
    )
    assert quit_text([], many[:2]) == (  # type: ignore[arg-type]
        "2 durable commands keep running (#1 cmd 1, #2 cmd 2)."
    )


async def test_usage_sampling_is_cheap(data_paths: DataPaths, tmp_path: Path) -> None:
    run, controller, session_id = await start(data_paths, tmp_path)
    try:
        assert controller.processes is not None
        dock = controller.processes.dock
        for n in range(3):
            await run.app.engine.start_background(
                session_id, f"sleep 60{n} & sleep 61{n}; wait", durable=False
            )
        await until(lambda: dock.model.rowCount() == 3)
        began = time.perf_counter()
        for _ in range(5):
            await dock.sample()
        per_sample = (time.perf_counter() - began) / 5 * 1000
        print(f"usage sample of 3 tasks: {per_sample:.1f} ms (worker thread)")
        assert per_sample < 500
        usage = dock.model.usage(dock.model.task(0).stable_id)
        assert usage is not None and usage.processes >= 2  # the wrapper and its children
    finally:
        await run.stop()
        await asyncio.sleep(0)
