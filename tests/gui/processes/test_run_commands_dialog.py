"""Edit saved run commands…: the dialog driven with keys against the real App, its refusals
shown beside the field they name with nothing saved, and what it saved run from Run ▸."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QWidget

from fxdesk.domain.background import Origin
from fxdesk.domain.run_commands import RunCommand
from fxdesk.gui.processes.dock import ProcessesDock
from fxdesk.gui.processes.run_commands_dialog import RunCommandsDialog
from fxdesk.gui.tasks import alive
from fxdesk.paths import DataPaths
from tests.gui.processes.test_processes_dock import start
from tests.gui.waiting import until

CTRL = Qt.KeyboardModifier.ControlModifier
ALT = Qt.KeyboardModifier.AltModifier


def focused(dialog: RunCommandsDialog) -> QWidget:
    widget = dialog.focusWidget()
    assert widget is not None
    return widget


def key(dialog: RunCommandsDialog, which: Qt.Key, modifier: object = None) -> None:
    """A key to whatever has the dialog's focus, as the person presses it."""
    if modifier is None:
        QTest.keyClick(focused(dialog), which)
    else:
        QTest.keyClick(focused(dialog), which, modifier)  # type: ignore[arg-type]


def type_text(dialog: RunCommandsDialog, text: str, *, replace: bool = False) -> None:
    if replace:
        key(dialog, Qt.Key.Key_A, CTRL)
    QTest.keyClicks(focused(dialog), text)


def menu_texts(dock: ProcessesDock) -> list[str]:
    dock.run_menu.aboutToShow.emit()
    return [a.text() for a in dock.run_menu.actions()]


async def open_editor(dock: ProcessesDock) -> RunCommandsDialog:
    dock.edit_action.trigger()
    dialog = await until(
        lambda: dock.editor is not None and dock.editor.isVisible() and dock.editor
    )
    assert isinstance(dialog, RunCommandsDialog)
    dialog.activateWindow()
    await until(dialog.isActiveWindow)
    return dialog


async def test_made_with_keys_refused_beside_the_field_then_saved_and_run_from_the_menu(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run, controller, _session_id = await start(data_paths, tmp_path)
    try:
        assert controller.processes is not None
        dock = controller.processes.dock
        engine = run.app.engine
        assert dock.place is not None
        workspace_id = dock.place.workspace_id
        (tmp_path / "project" / "web").mkdir()
        assert menu_texts(dock) == [
            "No saved run commands in this workspace",
            "",
            "&Edit saved run commands…",
        ]
        assert dock.edit_action in controller.window.view_menu.actions()  # the dock may be hidden

        dialog = await open_editor(dock)
        assert not dock.edit_action.isEnabled()  # one editor at a time
        # nothing saved yet: one empty command, the keyboard in its name
        assert dialog.table.topLevelItemCount() == 1
        assert focused(dialog) is dialog.name_edit
        type_text(dialog, "dev server")
        key(dialog, Qt.Key.Key_Tab)
        assert focused(dialog) is dialog.command_edit
        type_text(dialog, "echo ready in $PWD; sleep 300")
        key(dialog, Qt.Key.Key_Tab)
        assert focused(dialog) is dialog.folder_edit
        type_text(dialog, "../web")
        key(dialog, Qt.Key.Key_Tab)
        assert focused(dialog) is dialog.url_check
        key(dialog, Qt.Key.Key_Tab)
        assert focused(dialog) is dialog.durable_check
        key(dialog, Qt.Key.Key_Space)  # keeps running after quit
        assert dialog.durable_check.isChecked()
        assert dialog.table.topLevelItem(0).text(4) == "yes"  # type: ignore[union-attr]

        dialog.folder_edit.setFocus()
        assert not dialog.save_button.isDefault()
        for pressed in (Qt.Key.Key_Return, Qt.Key.Key_Enter):  # Enter in a field never saves
            key(dialog, pressed)
        await asyncio.sleep(0.2)
        assert not dialog.tasks and not dialog.field_problems["folder"].isVisible()
        assert dialog.isVisible() and await engine.run_commands(workspace_id) == ()

        key(dialog, Qt.Key.Key_Return, CTRL)  # Ctrl+Enter does: refused beside the folder
        folder_problem = dialog.field_problems["folder"]
        await until(folder_problem.isVisible)
        assert folder_problem.text() == (
            "The folder of 'dev server' ('../web') leads out of the workspace."
        )
        assert focused(dialog) is dialog.folder_edit
        assert dialog.isVisible() and await engine.run_commands(workspace_id) == ()
        assert (dialog.name_edit.text(), dialog.folder_edit.text()) == ("dev server", "../web")

        type_text(dialog, "web", replace=True)  # fixing it clears the sentence
        assert not folder_problem.isVisible()

        key(dialog, Qt.Key.Key_A, ALT)  # Add: a second one, the keyboard in its name
        await until(lambda: dialog.table.topLevelItemCount() == 2)
        assert dialog.current_row() == 1 and focused(dialog) is dialog.name_edit
        type_text(dialog, "DEV SERVER")
        key(dialog, Qt.Key.Key_Tab)
        type_text(dialog, "echo ping")
        key(dialog, Qt.Key.Key_S, ALT)  # Save by its mnemonic: refused beside the name
        name_problem = dialog.field_problems["name"]
        await until(name_problem.isVisible)
        assert name_problem.text() == "Two run commands are named 'DEV SERVER'."
        assert dialog.current_row() == 1 and focused(dialog) is dialog.name_edit
        assert await engine.run_commands(workspace_id) == ()

        type_text(dialog, "ping", replace=True)
        key(dialog, Qt.Key.Key_P, ALT)  # Move up (a mnemonic clicks after a short flash)
        await until(lambda: dialog.current_row() == 0)
        assert [dialog.table.topLevelItem(r).text(0) for r in (0, 1)] == [  # type: ignore[union-attr]
            "ping",
            "dev server",
        ]
        key(dialog, Qt.Key.Key_Return, CTRL)
        await until(lambda: dock.editor is None)
        saved = (
            RunCommand("ping", "echo ping"),
            RunCommand("dev server", "echo ready in $PWD; sleep 300", "web", durable=True),
        )
        assert await engine.run_commands(workspace_id) == saved
        assert dock.run_commands == saved
        assert dock.status.text().startswith("Saved 2 run commands for ")
        assert dock.edit_action.isEnabled()

        # Run ▸ offers them at once, in their order, and starts one where it was saved
        texts = menu_texts(dock)
        assert texts[:2] == ["Run “ping”", "Run “dev server”"]
        dock.run_menu.actions()[1].trigger()
        await until(lambda: dock.model.rowCount() == 1)
        task = dock.model.task(0)
        assert task.origin is Origin.PERSON and task.cwd.endswith("/project/web")
        await until(lambda: "ready in" in dock.log.text.toPlainText())
        assert menu_texts(dock)[1] == "Stop “dev server” (#1)"
        await dock.stop(task)
    finally:
        await run.stop()


async def test_esc_cancels_and_blank_rows_are_not_commands(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run, controller, _session_id = await start(data_paths, tmp_path)
    try:
        assert controller.processes is not None
        dock = controller.processes.dock
        engine = run.app.engine
        assert dock.place is not None
        workspace_id = dock.place.workspace_id
        kept = (RunCommand("tests", "pytest -x"), RunCommand("lint", "ruff check"))
        await engine.set_run_commands(workspace_id, kept)

        dialog = await open_editor(dock)
        assert dialog.current_row() == 0 and focused(dialog) is dialog.name_edit
        assert dialog.name_edit.text() == "tests"
        type_text(dialog, "changed", replace=True)
        key(dialog, Qt.Key.Key_Escape)  # cancels: nothing saved
        await until(lambda: dock.editor is None)
        assert await engine.run_commands(workspace_id) == kept

        dialog = await open_editor(dock)
        key(dialog, Qt.Key.Key_V, ALT)  # Remove "tests"
        await until(lambda: dialog.table.topLevelItemCount() == 1)
        assert dialog.name_edit.text() == "lint"
        key(dialog, Qt.Key.Key_A, ALT)  # Add, then leave it blank
        await until(lambda: dialog.table.topLevelItemCount() == 2)
        key(dialog, Qt.Key.Key_Return, CTRL)
        await until(lambda: dock.editor is None)
        assert await engine.run_commands(workspace_id) == (RunCommand("lint", "ruff check"),)
        assert menu_texts(dock)[0] == "Run “lint”"
        await until(lambda: not alive(dialog))  # deleted once closed
    finally:
        await run.stop()
