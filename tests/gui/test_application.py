"""The GUI controller with the real App on a temporary data folder, on a qasync loop."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest
import shiboken6
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

from fxdesk import messages
from fxdesk.app import App
from fxdesk.domain.model import KeySource, PermissionMode, Profile, SessionState
from fxdesk.gui.application import GuiController, Outcome, qt_thread_first
from fxdesk.gui.sessions.new_session import NewSessionDialog
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.gui.settings.setup_dialog import SetupDialog
from fxdesk.gui.window.banner import Banner
from fxdesk.gui.window.messages import ErrorDetailsDialog
from fxdesk.paths import DataPaths
from fxdesk.store import migrations
from tests.gui.waiting import until


class Running:
    """A controller whose ``main`` runs as a task; ``stop`` quits it and returns the exit code."""

    def __init__(self, paths: DataPaths) -> None:
        self.app = App(paths)
        self.controller = GuiController(self.app)
        self.task = asyncio.ensure_future(self.controller.main())

    async def started(self) -> GuiController:
        await until(lambda: self.controller.ready.is_set() or self.task.done())
        return self.controller

    async def stop(self) -> Outcome:
        self.controller.request_quit()
        return await asyncio.wait_for(self.task, 30)


async def test_starts_shows_the_empty_state_and_quits_cleanly(data_paths: DataPaths) -> None:
    run = Running(data_paths)
    controller = await run.started()
    window = controller.window
    assert window.isVisible()
    assert window.centre.currentWidget() is window.empty_state
    assert window.status_info.text() == f"Data in {data_paths.root}"
    assert "schema" not in window.status_info.text()  # jargon stays in the tooltip
    assert "Database version" in window.status_info.toolTip()
    assert await run.stop() == Outcome.CLOSED
    assert run.app.started is False
    assert not shiboken6.isValid(window) or not window.isVisible()


async def test_a_new_session_appears_in_the_tree_and_is_selected(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run = Running(data_paths)
    controller = await run.started()
    try:
        session = await run.app.sessions.create_root(
            project, name="Refactor", permission_mode=PermissionMode.AUTO
        )
        assert controller.model.session_count == 1
        workspace = controller.model.index(0, 0)
        assert workspace.data() == "project"
        assert controller.window.selected_session() == session
        assert "Refactor" in controller.window.panel.title.text()
    finally:
        assert await run.stop() == Outcome.CLOSED
    # durable: a second start shows it from the database
    again = Running(data_paths)
    controller = await again.started()
    try:
        assert controller.model.session_count == 1
        index = controller.model.session_index(session.id)
        assert index.data() == "Refactor"
    finally:
        assert await again.stop() == Outcome.CLOSED


async def test_the_new_session_dialog_creates_a_session(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "my project"
    project.mkdir()
    run = Running(data_paths)
    controller = await run.started()
    try:
        controller.window.new_action.trigger()
        dialog = await until(
            lambda: next(
                (w for w in QApplication.topLevelWidgets() if isinstance(w, NewSessionDialog)),
                None,
            )
        )
        assert isinstance(dialog, NewSessionDialog)
        await until(dialog.isVisible)
        ok = dialog.buttons.buttons()[0]
        assert not dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
        dialog.folder_edit.setText(str(tmp_path / "missing"))
        assert dialog.problem.text() == "That folder does not exist."
        dialog.folder_edit.setText(str(project))
        dialog.name_edit.setText("Write tests")
        dialog.mode_combo.setCurrentIndex(2)
        assert ok.isEnabled()
        dialog.accept()
        await until(lambda: controller.model.session_count == 1)
        created = controller.window.selected_session()
        assert created is not None and created.name == "Write tests"
        assert created.permission_mode == PermissionMode.YOLO
        assert created.state == SessionState.IDLE
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_a_newer_database_is_explained_and_exits_with_the_data_code(
    data_paths: DataPaths,
) -> None:
    conn = sqlite3.connect(data_paths.database)
    conn.execute(f"PRAGMA application_id = {migrations.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 42")
    conn.commit()
    conn.close()
    run = Running(data_paths)
    box = await until(
        lambda: next(
            (w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)), None
        )
    )
    assert isinstance(box, QMessageBox)
    assert "created by a newer fxdesk (schema 42)" in box.text()
    assert await run.stop() == Outcome.DATA_UNUSABLE


async def test_crash_logs_of_the_last_run_are_offered(data_paths: DataPaths) -> None:
    report = data_paths.crash_dir / "fault-20260101-000000-pid999999999.log"
    report.write_text("Fatal Python error: Segmentation fault\n")
    run = Running(data_paths)
    run.app.crash_log.previous = [report]
    controller = await run.started()
    try:
        banner = controller.window.findChild(Banner)
        assert "stopped unexpectedly" in banner.label.text()
        show = next(b for b in banner.findChildren(QPushButton) if b.text() == "Show crash log")
        show.click()
        dialog = await until(lambda: controller.messages.dialogs)
        assert "Segmentation fault" in dialog[0].details.toPlainText()
        dialog[0].close()
        banner.dismiss_button.click()
        assert report.with_suffix(".seen").exists() and not report.exists()
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_unexpected_errors_open_details_that_can_be_copied(data_paths: DataPaths) -> None:
    run = Running(data_paths)
    controller = await run.started()
    try:
        messages.error("Something broke", details="Traceback: line 1")
        dialogs = await until(lambda: controller.messages.dialogs)
        dialog = dialogs[0]
        assert isinstance(dialog, ErrorDetailsDialog) and dialog.isVisible()
        assert not dialog.isModal()
        dialog.copy_button.click()
        assert QApplication.clipboard().text() == "Traceback: line 1"
        assert "Something broke" in controller.window.statusBar().currentMessage()
        dialog.close()
    finally:
        assert await run.stop() == Outcome.CLOSED


@pytest.mark.parametrize("trigger", ["close", "ctrl_q"])
async def test_every_quit_path_shuts_down_in_order(data_paths: DataPaths, trigger: str) -> None:
    run = Running(data_paths)
    controller = await run.started()
    store = run.app.store
    if trigger == "close":
        controller.window.close()
    else:
        controller.window.quit_action.trigger()
    assert await asyncio.wait_for(run.task, 30) == Outcome.CLOSED
    assert store.closed


async def test_first_run_asks_for_a_model_and_the_demo_becomes_the_default(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run = Running(data_paths)
    controller = await run.started()
    try:
        setup = await until(lambda: controller.setup if controller.setup else None)
        assert isinstance(setup, SetupDialog)
        await until(setup.isVisible)
        assert setup.parent() is controller.window
        setup.demo_button.click()
        await until(lambda: controller.setup is None)
        assert [p.name for p in await run.app.profiles.list()] == ["demo"]
        assert await run.app.profiles.default_name() == "demo"

        # Later runs do not ask again.
        assert await run.stop() == Outcome.CLOSED
        again = Running(data_paths)
        second = await again.started()
        await asyncio.sleep(0.2)
        assert second.setup is None
        assert await again.stop() == Outcome.CLOSED
    finally:
        if not run.task.done():
            await run.stop()


async def test_settings_open_once_and_profile_changes_reach_the_composer(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run = Running(data_paths)
    controller = await run.started()
    try:
        await until(lambda: controller.setup)
        assert controller.setup is not None
        controller.setup.reject()
        await until(lambda: controller.setup is None)
        await run.app.sessions.create_root(project, name="One")
        window = controller.window
        await until(lambda: window.panel.composer.profile.count() == 1)

        window.settings_action.trigger()
        settings = controller.settings
        assert isinstance(settings, SettingsDialog) and settings.isVisible()
        window.settings_action.trigger()
        assert controller.settings is settings  # one Settings window, raised again

        await run.app.profiles.save(
            Profile("local", "openai", model="llama3.1", key_source=KeySource.NONE),
            make_default=True,
        )
        settings.profiles_changed.emit()
        composer = window.panel.composer
        await until(lambda: composer.profile.count() == 2)
        assert composer.profile.itemText(0) == "Default (local)"
        assert composer.profile.itemData(1) == "local"
        settings.close()
        await until(lambda: controller.settings is None)
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_a_new_session_can_pick_its_profile(data_paths: DataPaths, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run = Running(data_paths)
    controller = await run.started()
    try:
        await until(lambda: controller.setup)
        assert controller.setup is not None
        await controller.setup.try_demo()
        await until(lambda: controller.setup is None)
        await run.app.profiles.set_default_permission_mode(PermissionMode.YOLO)
        controller.window.new_action.trigger()
        dialog = await until(
            lambda: next(
                (w for w in QApplication.topLevelWidgets() if isinstance(w, NewSessionDialog)),
                None,
            )
        )
        assert isinstance(dialog, NewSessionDialog)
        await until(dialog.isVisible)
        assert dialog.mode_combo.currentData() == PermissionMode.YOLO.value
        assert dialog.profile_combo.itemText(0) == "Default profile (demo)"
        dialog.folder_edit.setText(str(project))
        dialog.profile_combo.setCurrentIndex(dialog.profile_combo.findData("demo"))
        dialog.accept()
        await until(lambda: controller.model.session_count == 1)
        created = controller.window.selected_session()
        assert created is not None and created.profile == "demo"
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_docks_that_share_a_side_are_tabs(data_paths: DataPaths) -> None:
    """Issue 14: a dock opening beside another squeezed it (and the transcript); docks on one
    side are tabs of one another, and one that opens by itself comes to the front."""
    run = Running(data_paths)
    controller = await run.started()
    window = controller.window
    try:
        approvals, inbox = controller.approvals_dock, controller.agents.inbox_dock
        processes, runs = controller.processes.dock, controller.agents.runs_dock
        window.resize(1600, 900)
        for first, second in ((inbox, approvals), (runs, processes)):
            first.show()
            second.show()
            second.raise_()
            await until(lambda d=second: not d.visibleRegion().isEmpty())  # type: ignore[misc]
            assert first in window.tabifiedDockWidgets(second)
            assert first.visibleRegion().isEmpty()  # behind, as a tab; not squeezed beside it
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_the_window_comes_back_maximized_with_its_docks_after_a_restart(
    data_paths: DataPaths,
) -> None:
    """Issue 14: the maximized state was not restored (nor the window's size or the docks)."""
    run = Running(data_paths)
    window = (await run.started()).window
    assert not window.isMaximized()
    dock = window.approvals_action
    assert not dock.isChecked()
    window.showMaximized()
    dock.trigger()  # the person opens the Approvals dock
    await until(lambda: window.isMaximized() and dock.isChecked())
    assert await run.stop() == Outcome.CLOSED

    again = Running(data_paths)
    window = (await again.started()).window
    await until(lambda: window.isMaximized())
    assert window.approvals_action.isChecked()
    window.showNormal()
    window.resize(700, 500)  # the offscreen screen is 800x600: a restored window fits it
    window.approvals_action.trigger()
    await until(lambda: not window.isMaximized() and not window.approvals_action.isChecked())
    size = (window.width(), window.height())
    assert await again.stop() == Outcome.CLOSED

    third = Running(data_paths)
    window = (await third.started()).window
    assert not window.isMaximized()
    assert (window.width(), window.height()) == size
    assert not window.approvals_action.isChecked()
    assert await third.stop() == Outcome.CLOSED


async def test_new_session_starts_in_the_open_sessions_folder_and_offers_recent_ones(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 14: New session did not prefill the current workspace or offer recent folders."""
    older, newer = tmp_path / "older", tmp_path / "newer"
    older.mkdir()
    newer.mkdir()
    run = Running(data_paths)
    controller = await run.started()
    try:
        engine = run.app.engine
        first = await engine.create_session(older, name="old work")
        await until(lambda: engine.now_ms() > first.updated_at_ms)  # "newer" is later
        await engine.create_session(newer, name="new work")
        await until(lambda: controller.model.session_count == 2)
        controller.window.select_session(first.id)
        await until(lambda: controller.window.selected_session() is not None)
        controller.window.new_action.trigger()
        dialog = await until(
            lambda: next(
                (w for w in QApplication.topLevelWidgets() if isinstance(w, NewSessionDialog)),
                None,
            )
        )
        assert isinstance(dialog, NewSessionDialog)
        assert dialog.folder_edit.text() == str(older)  # the open session's workspace
        assert dialog.buttons.button(dialog.buttons.StandardButton.Ok).isEnabled()
        assert dialog.recent == [str(newer), str(older)]  # latest first
        completer = dialog.folder_edit.completer()
        completer.setCompletionPrefix("NEW")
        assert completer.currentCompletion() == str(newer)
        dialog.reject()
    finally:
        assert await run.stop() == Outcome.CLOSED


def test_the_window_hands_the_gil_to_the_qt_thread_within_a_millisecond() -> None:
    """While the window runs, a thread holding the GIL gives it up after 1 ms (not Python's
    5 ms) when the Qt thread waits for it; the interval is put back afterwards."""
    before = sys.getswitchinterval()
    with qt_thread_first():
        assert sys.getswitchinterval() == pytest.approx(0.001)
    assert sys.getswitchinterval() == before
