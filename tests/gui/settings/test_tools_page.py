"""Settings → Tools against the real App on a qasync loop: a workspace's MCP server listed as not
trusted (nothing started), trusted from the page, then running with its tools, and its log."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QTreeWidgetItem

from fxdesk.app import App
from fxdesk.domain.mcp import ServerState
from fxdesk.gui.settings.tools_page import ToolsPage
from fxdesk.paths import DataPaths
from tests.gui.approvals.test_approvals import (  # noqa: F401 (keep_running, no_bugs: autouse)
    keep_running,
    no_bugs,
    shown,
)
from tests.gui.waiting import until
from tests.mcp.harness import stdio_config, tiny_processes, write_config


def rows(page: ToolsPage) -> list[tuple[str, str]]:
    found = []
    for i in range(page.tree.topLevelItemCount()):
        item = page.tree.topLevelItem(i)
        assert isinstance(item, QTreeWidgetItem)
        found.append((item.text(0), item.text(2)))
    return found


async def test_a_workspace_server_is_trusted_from_the_page_and_its_tools_listed(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "project"
    write_config(workspace / ".mcp.json", {"tiny": stdio_config()})
    app = App(DataPaths(tmp_path / "data", "--data-dir"))
    await app.start(background=False, run_handed_off=False, mcp=True)
    try:
        await app.sessions.create_root(workspace, name="look")
        page = ToolsPage(app.engine.mcp, app.engine.subscribe)
        with shown(page):
            await until(lambda: rows(page) == [("tiny", "not trusted: nothing started")])
            assert tiny_processes() == []
            item = page.tree.topLevelItem(0)
            page.tree.setCurrentItem(item)
            assert page.trust_button.isEnabled()
            assert not page.log_button.isEnabled()  # nothing ran, nothing logged

            page.trust_button.click()
            await until(lambda: rows(page) and rows(page)[0][1].startswith("running, 3 tools"))
            top = page.tree.topLevelItem(0)
            assert top is not None
            tools = [top.child(i).text(0) for i in range(top.childCount())]
            assert tools == ["mcp__tiny__echo", "mcp__tiny__add", "mcp__tiny__hang"]
            assert not page.trust_button.isEnabled()
            status = page.selected()
            assert status is not None and status.state is ServerState.RUNNING

            page.log_button.click()
            await until(lambda: "tiny MCP server starting" in page.log_view.toPlainText())
    finally:
        await app.stop()
