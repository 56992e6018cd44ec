"""The tray screenshot (docs/screenshots/tray.png): the real window, one approval waiting and two
sessions finishing while another program has the focus, so the tray shows one coalesced balloon.

It needs a tray host on the X server (Debian's `trayer`), for example:

    xvfb-run -a -s "-screen 0 1280x800x24" sh -c 'trayer --edge top --align right \\
        --widthtype pixel --width 120 --heighttype pixel --height 24 --transparent false &
        sleep 1; QT_QPA_PLATFORM=xcb .venv/bin/python scripts/tray_screenshot.py & sleep 7;
        import -window root docs/screenshots/tray.png; kill %2'

The model is scripted; everything else is the real app on a temporary data folder.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication, QLabel

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController, create_qapplication
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

SESSIONS = (
    ("Clean build", PermissionMode.ASK, "Clean the build folder"),
    ("Parser", PermissionMode.AUTO, "Plan the parser"),
    ("Docs", PermissionMode.AUTO, "Update the docs"),
)


async def drive(controller: GuiController, app: App, root: Path) -> QLabel:
    await controller.ready.wait()
    print(f"tray available: {controller.tray.available}", flush=True)
    created = []
    for name, mode, _text in SESSIONS:
        folder = root / name.replace(" ", "-").lower()
        folder.mkdir()
        created.append(await app.sessions.create_root(folder, name=name, permission_mode=mode))
    elsewhere = QLabel("Another program has the focus")
    elsewhere.setStyleSheet(
        "background: #fff3bf; border: 2px solid #888; font-size: 15px;"
        " qproperty-alignment: AlignCenter;"
    )
    elsewhere.resize(300, 110)
    elsewhere.move(20, 600)
    elsewhere.show()
    elsewhere.activateWindow()
    for _ in range(100):
        if QApplication.activeWindow() is elsewhere:
            break
        await asyncio.sleep(0.05)
    for session, (_name, _mode, text) in zip(created, SESSIONS, strict=True):
        await app.sessions.send(session.id, text)
        app.owner.start(session.id)
        await asyncio.sleep(0.3)
    return elsewhere


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-tray-"))
    paths = DataPaths(root / "data", "screenshot")
    paths.ensure()
    command = ScriptedCall("run_command", {"command": "rm -rf build"})
    provider = ScriptedProvider(
        [
            Reply("I'll clean it.", tool_calls=(command,)),
            Reply("The parser plan is ready."),
            Reply("The docs are updated."),
        ],
        when_done="error",
    )
    app = App(paths, providers=FixedResolver(provider))
    qapp = create_qapplication(sys.argv)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    controller = GuiController(app)  # quits on SIGTERM like the real app
    with loop:
        driver = loop.create_task(drive(controller, app, root))
        code: int = loop.run_until_complete(controller.main())
        driver.cancel()
    return code


if __name__ == "__main__":
    sys.exit(main())
