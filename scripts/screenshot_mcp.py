"""Settings → Tools with real MCP servers, for docs/screenshots/settings-tools.png.

Seeds a temporary data folder: a workspace whose ``.mcp.json`` runs the tests' tiny server over
stdio (trusted, so it runs in the sandbox), a cloned one whose configuration is not trusted, and
a global server whose endpoint does not answer (restarting). Then runs the real window and opens
Settings on the Tools page with the running server selected and its log shown. Run it under the
screenshot tool (it keeps the window open until it is ended):

    /work/shared/tools/screenshot docs/screenshots/settings-tools.png --wm --wait 14 -- \\
        .venv/bin/python scripts/screenshot_mcp.py
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import qasync

from fxdesk.app import App
from fxdesk.domain.mcp import ServerState
from fxdesk.domain.model import KeySource, Profile
from fxdesk.gui.application import GuiController, create_qapplication
from fxdesk.paths import DataPaths

TINY = Path(__file__).resolve().parent.parent / "tests" / "mcp" / "tiny_server.py"


def servers(**entries: object) -> str:
    return json.dumps({"mcpServers": entries}, indent=2)


async def seed(root: Path) -> DataPaths:
    paths = DataPaths(root / "data", "--data-dir")
    parser, cloned = root / "expression-parser", root / "cloned-repo"
    for folder in (parser, cloned):
        folder.mkdir(parents=True)
    tiny = {"command": sys.executable, "args": [str(TINY), "stdio"]}
    (parser / ".mcp.json").write_text(servers(tiny=tiny))
    (cloned / ".mcp.json").write_text(servers(helper={"command": "npx", "args": ["-y", "x"]}))
    paths.root.mkdir(parents=True)
    (paths.config / "mcp.json").write_text(
        servers(issues={"type": "http", "url": "http://127.0.0.1:9/mcp"})
    )
    app = App(paths)
    await app.start(background=False, run_handed_off=False, mcp=True)
    try:
        await app.profiles.save(
            Profile("demo", "scripted", key_source=KeySource.NONE), make_default=True
        )
        for folder in (parser, cloned):
            await app.sessions.create_root(folder, name=f"work in {folder.name}")
        await app.mcp.trust(parser)
    finally:
        await app.stop()
    return paths


async def until(condition: Callable[[], bool], within: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.05)


async def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-mcp-shot-"))
    paths = await seed(root)
    app = App(paths)
    controller = GuiController(app)
    task = asyncio.ensure_future(controller.main())
    await controller.ready.wait()
    controller.window.setGeometry(0, 0, 1280, 800)
    await until(lambda: any(s.state is ServerState.RUNNING for s in app.mcp.statuses()))
    controller.window.settings_action.trigger()
    await until(lambda: controller.settings is not None and controller.settings.isVisible())
    dialog = controller.settings
    assert dialog is not None
    dialog.resize(1000, 640)
    dialog.move(140, 80)
    page = dialog.tools_page
    assert page is not None
    dialog.tabs.setCurrentWidget(page)
    for i in range(page.tree.topLevelItemCount()):
        item = page.tree.topLevelItem(i)
        if item is not None and item.text(0) == "tiny":
            page.tree.setCurrentItem(item)
    page.log_button.click()
    await task


if __name__ == "__main__":
    os.environ.setdefault("FXDESK_LOG_LEVEL", "WARNING")
    qt = create_qapplication(sys.argv)
    qasync.run(main())
