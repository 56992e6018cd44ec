"""The Changes dock (issue 18 item 1) over a real App, a real git repository and a scripted
agent editing through the real tools: View → Changes lists the session's files first with
their diffs, Revert asks with verbs and puts the file back, Copy patch fills the clipboard."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtGui import QGuiApplication

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.application import Outcome
from fxdesk.gui.theme import Role, color, is_dark
from fxdesk.paths import DataPaths
from tests.engine.test_changes import agent, repository
from tests.gui.sessions.test_session_flow import Window
from tests.gui.waiting import until


async def test_the_changes_dock_lists_diffs_reverts_and_copies_a_patch(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    folder = repository(tmp_path / "repo")
    run = await Window(data_paths, agent()).started()
    try:
        session = await run.app.engine.create_session(
            folder, first_message="Fix the parser", permission_mode=PermissionMode.YOLO
        )
        await asyncio.wait_for(run.app.engine.join(session.id), 60)
        changes = run.controller.changes
        assert changes is not None and run.controller.sessions is not None
        changes.confirm = run.controller.sessions.confirm  # the recording one
        window = run.controller.window
        window.select_session(session.id)
        assert changes.dock.isHidden()  # until asked for
        changes.toggle_action.trigger()  # View → Changes (Ctrl+Shift+G)
        dock = changes.dock
        await until(lambda: dock.files.topLevelItemCount() == 2)
        first = dock.files.topLevelItem(0)
        assert first is not None
        assert [first.text(c) for c in range(4)] == [
            "parser.py",
            "modified",
            "+1 −1",
            "this session",
        ]
        assert dock.summary.text() == "2 changed files, 2 by this session"
        assert "+    return int(s)" in dock.diff.toPlainText()
        # The code is coloured as Python over the added/removed line backgrounds.
        found = dock.diff.document().find("return")
        assert found.charFormat().foreground().color() == color(
            Role.SYNTAX_KEYWORD, dark=is_dark(dock.diff.palette())
        )

        dock.side_button.click()  # side by side: old on the left, new on the right
        assert dock.views.currentWidget() is dock.pair
        assert "-    return int(s[:-1])" in dock.old_side.toPlainText()
        assert "+    return int(s)" in dock.new_side.toPlainText()
        assert "+    return int(s)" not in dock.old_side.toPlainText()
        assert dock.hunk_button.isEnabled()
        dock.side_button.click()

        dock.patch_button.click()
        assert (
            QGuiApplication.clipboard().text() == (await run.app.engine.changes(session.id)).patch()
        )

        dock.revert_button.click()
        await until(lambda: "put parser.py back" in dock.note.text().lower())
        assert run.confirmations[-1] == "Revert this file?"
        assert run.verbs[-1] == ("Revert file", "Keep it")
        assert "int(s[:-1])" in (folder / "parser.py").read_text()
    finally:
        assert await run.stop() == Outcome.CLOSED
