"""Usage in the window (issue 14 item 6): the session header's totals after a turn, "usage not
reported" for a server that says nothing, and View → Usage with its per-day and per-session
tables. The real App runs under the GUI controller; only the model is scripted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtWidgets import QApplication

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.application import Outcome
from fxdesk.gui.window.usage_view import UsageDialog
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider
from tests.gui.sessions.test_session_flow import Window
from tests.gui.waiting import until


async def test_the_header_shows_what_the_session_used_and_the_usage_view_lists_it(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply("counted", usage=(1500, 300)), Reply("quiet", usage=None)])
    run = await Window(data_paths, provider).started()
    try:
        counted = await run.app.sessions.create_root(
            project, name="Counted", permission_mode=PermissionMode.AUTO
        )
        await until(lambda: run.panel.session is not None and run.panel.session.id == counted.id)
        run.type_and_send("Count me")
        label = run.panel.usage
        await until(lambda: "1.5k in / 300 out" in label.text())
        assert "today 1.8k tokens" in label.text()  # unpriced: tokens, not a made-up cost
        assert "This session: 1.5k in / 300 out" in label.toolTip()

        quiet = await run.app.sessions.create_root(
            project, name="Quiet", permission_mode=PermissionMode.AUTO
        )
        run.controller.window.select_session(quiet.id)
        await until(lambda: run.panel.session is not None and run.panel.session.id == quiet.id)
        run.type_and_send("Say nothing of usage")
        await until(lambda: "usage not reported" in label.text())
        assert "0 in / 0 out" not in label.text()

        sessions = run.controller.sessions
        assert sessions is not None
        sessions.usage_action.trigger()
        dialog = await until(
            lambda: next(
                (w for w in QApplication.topLevelWidgets() if isinstance(w, UsageDialog)), None
            )
        )
        assert dialog.days.rowCount() == 1  # today
        assert dialog.days.item(0, 1).text() == "2"  # two model calls
        assert dialog.days.item(0, 5).text() == "1"  # one unreported
        names = [dialog.sessions.item(r, 0).text() for r in range(dialog.sessions.rowCount())]
        assert names[0] == "Counted" and set(names) == {"Counted", "Quiet"}
        dialog.close()
        await asyncio.sleep(0)
    finally:
        assert await run.stop() == Outcome.CLOSED
