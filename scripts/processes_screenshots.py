"""Puts the window in one Processes-dock scene and waits, for a screenshot of it.

    /work/shared/tools/screenshot docs/screenshots/processes-running.png --wait 14 -- \\
        .venv/bin/python scripts/processes_screenshots.py running

Scenes: ``running`` (a dev server with its URL, and a watcher), ``stale`` (a server whose log
vanished, its URL refused), ``log`` (a coloured log, searched). Everything is
real: the App on a temporary data folder, real ``bash`` tasks, a real ``http.server``. The
stale server (its log deleted while it ran) is killed by this script at the end; the others
stop when the window quits.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path

import qasync
from PySide6.QtCore import Qt

from fxdesk.app import App
from fxdesk.domain.background import TaskState
from fxdesk.domain.run_commands import RunCommand
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController, create_qapplication
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import ScriptedProvider

SERVER = "python3 -m http.server 0 --bind 127.0.0.1"
VITE = "bash scripts/vite-dev.sh"  # a Vite-style coloured banner, then a real server
WATCH = "bash scripts/tsc-watch.sh"  # a type-checker in watch mode, coloured
VITE_SCRIPT = r"""printf '\n  \033[32m\033[1mVITE\033[22m v5.4.2\033[39m  '
printf 'ready in \033[1m312\033[22m ms\n\n'
printf '  \033[32m➜\033[39m  \033[1mLocal\033[22m:   \033[36mhttp://127.0.0.1:\033[1m5199\033[22m/\033[39m\n'
exec python3 -m http.server 5199 --bind 127.0.0.1
"""
WATCH_SCRIPT = r"""for i in $(seq 1 400); do
  printf '\033[90m[%s]\033[0m \033[36mFile change detected.\033[0m ' "$(date +%T)"
  printf 'Starting incremental compilation...\n'
  if [ $((i % 3)) = 0 ]; then
    printf '\033[96msrc/parser.ts\033[0m:\033[93m42\033[0m:\033[93m7\033[0m - '
    printf '\033[91merror\033[0m\033[90m TS2322: \033[0m'
    printf "Type 'string' is not assignable to type 'number'.\n"
    printf 'Found \033[1;31m1 error\033[0m. Watching for file changes.\n'
  else
    printf 'Found \033[1;32m0 errors\033[0m. Watching for file changes.\n'
  fi
  sleep 0.4
done
sleep 600
"""


async def until(condition: Callable[[], object], within: float = 30.0) -> object:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not (value := condition()):
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.05)
    return value


def project(root: Path) -> Path:
    folder = root / "shop-frontend"
    (folder / "web").mkdir(parents=True)
    (folder / "index.html").write_text("<h1>shop</h1>\n")
    (folder / "web" / "index.html").write_text("<h1>web</h1>\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "vite-dev.sh").write_text(VITE_SCRIPT)
    (folder / "scripts" / "tsc-watch.sh").write_text(WATCH_SCRIPT)
    return folder


async def main(scene: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-processes-"))
    folder = project(tmp)
    paths = DataPaths(tmp / "data", "--data-dir")
    # A model is configured (the scripted one, never called): no first-run setup over the shot.
    controller = GuiController(App(paths, providers=FixedResolver(ScriptedProvider([]))))
    running = asyncio.ensure_future(controller.main())
    await until(lambda: controller.ready.is_set())
    window, engine = controller.window, controller.app.engine
    window.setGeometry(0, 0, 1440, 900)
    checkout = await engine.create_session(folder, start=False, name="Checkout page")
    vite = await engine.start_background(checkout.id, VITE, expect_url=True, durable=False)
    await until(lambda: engine.background_task(vite.ref, checkout.id).url)
    # Its log is deleted while it runs (someone cleaned the data folder): fxdesk can no longer
    # tell what it is, so it is stale and its URL is not opened any more.
    await asyncio.to_thread(Path(vite.log_path).unlink)
    await until(lambda: engine.background_task(vite.ref, checkout.id).state is TaskState.STALE)
    session = await engine.create_session(folder, start=False, name="Search results")
    workspace = session.workspace_id
    await engine.set_run_commands(
        workspace,
        (
            RunCommand.make("dev server", SERVER, expect_url=True),
            RunCommand.make("types --watch", WATCH),
        ),
    )
    window.select_session(session.id)
    processes = controller.processes
    assert processes is not None
    dock = processes.dock
    await dock.load_run_commands()
    server = await dock.run_saved(dock.run_commands[0])
    watch = await dock.run_saved(dock.run_commands[1])
    assert server is not None and watch is not None
    url = await until(lambda: engine.background_task(server.ref, session.id).url)
    for path in ("/", "/index.html", "/web/", "/favicon.ico"):
        with contextlib.suppress(OSError):
            await asyncio.to_thread(urllib.request.urlopen, f"{url}{path.lstrip('/')}", None, 5)
    window.resizeDocks([dock], [430], Qt.Orientation.Vertical)
    stale = engine.background_task(vite.ref, checkout.id)
    await asyncio.sleep(2.5)  # usage samples, and lines in the watcher's log
    if scene == "running":
        dock.select(engine.background_task(server.ref, session.id))
    elif scene == "stale":
        dock.select(stale)
        dock.open_url(stale)
    else:
        dock.select(engine.background_task(watch.ref, session.id))
        await asyncio.sleep(1.5)
        dock.log.open_search()
        dock.log.search_edit.setText("error")
        dock.log.find_previous()
    dock.view.setFocus()
    print(f"scene {scene} ready", flush=True)
    try:
        await running
    finally:  # fxdesk does not signal what it cannot verify: this script started it, it ends it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(vite.pid, signal.SIGKILL)


if __name__ == "__main__":
    os.environ.setdefault("FXDESK_LOG_LEVEL", "WARNING")
    create_qapplication(sys.argv)
    qasync.run(main(sys.argv[1] if len(sys.argv) > 1 else "running"))
