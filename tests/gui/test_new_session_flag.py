"""``fxdesk --new-session`` (the desktop entry's "New session" action): the window opens with
the New session dialog, but never over the first-run setup (a session needs a model first)."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QApplication

from fxdesk.app import App
from fxdesk.gui.application import GuiController, Outcome
from fxdesk.gui.sessions.new_session import NewSessionDialog
from fxdesk.paths import DataPaths
from tests.gui.waiting import until


def _dialog() -> NewSessionDialog | None:
    found = (w for w in QApplication.topLevelWidgets() if isinstance(w, NewSessionDialog))
    return next((w for w in found if w.isVisible()), None)


async def _run(data_paths: DataPaths, new_session: bool) -> tuple[GuiController, asyncio.Task]:
    controller = GuiController(App(data_paths), new_session=new_session)
    task = asyncio.ensure_future(controller.main())
    await until(lambda: controller.ready.is_set() or task.done())
    return controller, task


async def _stop(controller: GuiController, task: asyncio.Task) -> Outcome:
    controller.request_quit()
    return await asyncio.wait_for(task, 30)


async def test_new_session_opens_the_dialog_once_a_model_is_set_up(
    data_paths: DataPaths,
) -> None:
    controller, task = await _run(data_paths, new_session=True)
    try:
        setup = await until(lambda: controller.setup)  # first run: the model comes first
        await asyncio.sleep(0.2)
        assert _dialog() is None
        await setup.try_demo()
        await until(lambda: controller.setup is None)
    finally:
        assert await _stop(controller, task) == Outcome.CLOSED

    controller, task = await _run(data_paths, new_session=True)
    try:
        dialog = await until(_dialog)
        assert dialog.parent() is controller.window
        dialog.reject()
    finally:
        assert await _stop(controller, task) == Outcome.CLOSED


async def test_without_the_flag_no_dialog_opens(data_paths: DataPaths) -> None:
    await data_paths_with_demo(data_paths)
    controller, task = await _run(data_paths, new_session=False)
    try:
        await asyncio.sleep(0.3)
        assert _dialog() is None
    finally:
        assert await _stop(controller, task) == Outcome.CLOSED


async def data_paths_with_demo(data_paths: DataPaths) -> None:
    controller, task = await _run(data_paths, new_session=False)
    try:
        setup = await until(lambda: controller.setup)
        await setup.try_demo()
        await until(lambda: controller.setup is None)
    finally:
        await _stop(controller, task)
