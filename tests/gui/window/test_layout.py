"""A layout that never collapses (issue 14 item 4): at 800×600 the window holds what it shows
without growing (the Approvals dock stays closed there, the open session's approval is inline),
Ctrl+B hides the session tree and gives its room to the transcript (the wide-screen column is
tested on the transcript view itself). The real App under the GUI controller; the model scripted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.application import Outcome
from fxdesk.gui.sessions.composer import Composer
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider
from tests.gui.sessions.test_session_flow import Window
from tests.gui.waiting import until


async def test_at_800_by_600_an_approval_fits_without_widening_the_window(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write = ScriptedCall("write_file", {"path": "n.md", "content": "n"})
    run = await Window(data_paths, ScriptedProvider([Reply("W.", tool_calls=(write,))])).started()
    controller = run.controller
    window = controller.window
    try:
        window.resize(800, 600)
        await until(lambda: window.width() == 800)
        await run.app.sessions.create_root(
            project,
            name="A session with a long name that must not widen anything",
            permission_mode=PermissionMode.ASK,
        )
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Write it")
        assert controller.approvals is not None
        await until(controller.approvals.inline.isVisible)
        await asyncio.sleep(0.2)  # the layout requests it posted run on the loop (never nested)
        assert window.width() == 800  # nothing widened it
        assert window.minimumSizeHint().width() <= 800
        assert controller.approvals_dock.isHidden()  # no room: the inline one is enough
        assert controller.approvals_dock.count == 1  # still listed there for View → Approvals
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_ctrl_b_hides_the_session_tree_and_gives_its_room_to_the_transcript(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    run = await Window(data_paths, ScriptedProvider([])).started()
    window = run.controller.window
    try:
        await run.app.sessions.create_root(
            project, name="Tree", permission_mode=PermissionMode.AUTO
        )
        await until(lambda: run.panel.session is not None)
        window.activateWindow()
        await until(window.isActiveWindow)
        window.tree.setFocus()
        before = run.panel.width()
        QTest.keyClick(window, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)
        await until(window.sessions_panel.isHidden)
        await until(lambda: run.panel.width() > before)
        assert run.panel.composer.edit.hasFocus()  # the keyboard never stays in a hidden tree
        assert window.saved_state()["sidebar"] == "hidden"
        # Ctrl+K wants the filter, which lives in the sidebar: it comes back.
        QTest.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
        await until(lambda: window.sessions_panel.isVisible() and window.filter_edit.hasFocus())
        assert window.saved_state()["sidebar"] == "shown"
        window.sidebar_action.setChecked(False)
        state = window.saved_state()
        window.sidebar_action.setChecked(True)
        window.restore_state(state)  # the next start puts it back as it was
        assert window.sessions_panel.isHidden()
    finally:
        assert await run.stop() == Outcome.CLOSED


def test_the_message_box_is_as_tall_as_its_text_between_two_and_ten_lines(qtbot: QtBot) -> None:
    """An empty box leaves the transcript its room (at 800×600 a fixed box took a sixth of the
    window); a long message is seen whole, up to ten lines, then scrolls."""
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(600, 300)
    composer.show()
    edit = composer.edit
    empty = edit.height()
    assert empty == edit.height_for(2)
    edit.setPlainText("one\ntwo\nthree\nfour\nfive")
    assert edit.height() == edit.height_for(5) > empty
    edit.setPlainText("\n".join(str(n) for n in range(40)))
    assert edit.height() == edit.height_for(10)  # then it scrolls
    assert edit.verticalScrollBar().maximum() > 0
    edit.clear()
    assert edit.height() == empty


def test_up_and_down_in_an_empty_message_box_bring_back_what_was_sent(qtbot: QtBot) -> None:
    """Issue 18 item 6: a prompt history. Up in an empty box recalls the last message sent,
    again the one before; Down goes forward and back to an empty box; an edited recall is a
    draft of its own (Up then moves the cursor, as in any text)."""
    composer = Composer()
    qtbot.addWidget(composer)
    composer.show()
    edit = composer.edit
    edit.history_source = lambda: ["first question", "second\nquestion"]
    edit.setFocus()
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "second\nquestion"
    assert edit.height() == edit.height_for(2)
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "first question"
    QTest.keyClick(edit, Qt.Key.Key_Up)  # nothing older: stays
    assert edit.toPlainText() == "first question"
    QTest.keyClick(edit, Qt.Key.Key_Down)
    QTest.keyClick(edit, Qt.Key.Key_Down)
    assert edit.toPlainText() == ""
    QTest.keyClick(edit, Qt.Key.Key_Up)
    QTest.keyClicks(edit, " again")  # edited: a draft now
    QTest.keyClick(edit, Qt.Key.Key_Up)
    assert edit.toPlainText() == "second\nquestion again"
    sent: list[str] = []
    composer.submitted.connect(lambda text, _steer: sent.append(text))
    QTest.keyClick(edit, Qt.Key.Key_Return)
    assert sent == ["second\nquestion again"]


def test_files_dropped_on_the_message_box_become_mentions(qtbot: QtBot, tmp_path: Path) -> None:
    """Issue 18 item 6: a workspace file dropped from the file manager becomes ``@path`` (its
    text goes to the model with the message); a file elsewhere, its full path."""
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent

    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("x")
    (tmp_path / "notes.txt").write_text("n")
    composer = Composer()
    qtbot.addWidget(composer)
    composer.show()
    edit = composer.edit
    edit.workspace = workspace
    data = QMimeData()
    data.setUrls(
        [
            QUrl.fromLocalFile(str(workspace / "src" / "app.py")),
            QUrl.fromLocalFile(str(tmp_path / "notes.txt")),
        ]
    )
    at, action = QPointF(10, 10), Qt.DropAction.CopyAction
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    assert edit.canInsertFromMimeData(data)
    for event in (  # what a drag from the file manager delivers
        QDragEnterEvent(at.toPoint(), action, data, buttons, keys),
        QDragMoveEvent(at.toPoint(), action, data, buttons, keys),
        QDropEvent(at, action, data, buttons, keys),
    ):
        QApplication.sendEvent(edit.viewport(), event)
    assert edit.toPlainText() == f"@src/app.py {tmp_path / 'notes.txt'} "
