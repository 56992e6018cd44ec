"""Puts the window in the Edit saved run commands… scene and waits, for a screenshot of it.

    /work/shared/tools/screenshot docs/screenshots/run-commands.png --wm --wait 12 -- \\
        .venv/bin/python scripts/run_commands_screenshot.py

The dialog for a workspace with three saved commands, the third being typed with a folder that
leads out of the workspace and Save pressed: the refusal shows under the folder field, nothing
is saved. Everything is real: the App on a temporary data folder, the facade's own check.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from fxdesk.app import App
from fxdesk.domain.run_commands import RunCommand
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController, create_qapplication
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import ScriptedProvider


async def until(condition: Callable[[], object], within: float = 30.0) -> object:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not (value := condition()):
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.05)
    return value


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-run-commands-"))
    folder = tmp / "shop-frontend"
    (folder / "web").mkdir(parents=True)
    paths = DataPaths(tmp / "data", "--data-dir")
    # A model is configured (the scripted one, never called): no first-run setup over the shot.
    controller = GuiController(App(paths, providers=FixedResolver(ScriptedProvider([]))))
    running = asyncio.ensure_future(controller.main())
    await until(lambda: controller.ready.is_set())
    window, engine = controller.window, controller.app.engine
    window.setGeometry(0, 0, 1440, 900)
    session = await engine.create_session(folder, start=False, name="Search results")
    await engine.set_run_commands(
        session.workspace_id,
        (
            RunCommand.make("dev server", "npm run dev", "web", expect_url=True),
            RunCommand.make("tests --watch", "npx vitest --watch", durable=False),
            RunCommand.make("storybook", "npm run storybook -- -p 6006", "web", durable=True),
        ),
    )
    window.select_session(session.id)
    assert controller.processes is not None
    dock = controller.processes.dock
    dock.show()
    dock.edit_action.trigger()
    await until(lambda: dock.editor is not None and dock.editor.isVisible())
    editor = dock.editor
    assert editor is not None
    editor.resize(860, 560)
    await asyncio.sleep(0.5)
    editor.select_row(0)
    editor.add_button.click()
    editor.name_edit.setFocus()
    QTest.keyClicks(editor.name_edit, "api")
    editor.command_edit.setFocus()
    QTest.keyClicks(editor.command_edit, "uvicorn app:main --reload")
    editor.folder_edit.setFocus()
    QTest.keyClicks(editor.folder_edit, "../api")
    QTest.keyClick(editor.url_check, Qt.Key.Key_Space)
    await editor.save()  # refused: shown under the folder, nothing saved
    print("scene ready", flush=True)
    await running


if __name__ == "__main__":
    os.environ.setdefault("FXDESK_LOG_LEVEL", "WARNING")
    create_qapplication(sys.argv)
    qasync.run(main())
