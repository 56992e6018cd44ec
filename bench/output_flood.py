"""A background task floods its output (200 MB), then prints its server's URL: what fxdesk pays.

The real App and window on a fresh data folder, as ``fxdesk`` runs them; the task is started
through the engine (``Engine.start_background``, expecting a URL: the real wrapper, in
bubblewrap where the machine has it), so its output goes straight into its log file and fxdesk
only watches that file for the URL. The command writes build-log lines (``bench.background_logs``'
writer: colours, links, NUL and invalid UTF-8) until MEGABYTES are written, then a Vite banner,
and stamps when it printed it. Measured, each round:

- fxdesk: from the call to the banner printed; this process's CPU time over that wall time and
  its RSS peak above what it was before; the worst gap of a 5 ms timer on the Qt thread; from
  the banner printed to the URL published (``BackgroundChanged``); then the log view
  (``LogView.follow`` on the 200 MB log, as the Processes dock does) to its first paint.
- reference, alternating with it: the same command started by this process with its output
  redirected to a file (``cmd > file``), fxdesk idle beside it: the same clock, CPU and RSS;
  and a bare ``QPlainTextEdit`` given the log's last 256 KiB (what the log view reads).

Prints one JSON line. Run: python -m bench.output_flood [--megabytes N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import psutil
from PySide6.QtWidgets import QMainWindow, QPlainTextEdit

from bench.background_logs import BANNER, WRITER
from bench.stream_probe import CpuClock
from bench.transcript_open import FirstPaint, Gaps, run_on_window_loop, until
from fxdesk.app import App
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.events import BackgroundChanged
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController
from fxdesk.gui.processes.log_view import TAIL_BYTES, LogView
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import ScriptedProvider

# background_logs' writer, with the time it printed the banner written to a stamp file (the
# task's stderr goes to its log too) and no 10-minute sleep at the end.
STAMPED = WRITER.replace(
    'sys.stderr.write(f"{time.monotonic()} {written} {wrote}\\n")\nsys.stderr.flush()\n'
    "time.sleep(600)",
    'open(sys.argv[2], "w").write(f"{time.monotonic()} {written} {wrote}")\ntime.sleep(600)',
).replace(
    "megabytes, banner = int(sys.argv[1]), sys.argv[2]",
    f"megabytes, banner = int(sys.argv[1]), {BANNER!r}",
)
assert "sys.argv[3]" not in STAMPED and "time.sleep(600)" in STAMPED and "stderr" not in STAMPED


class Watch:
    """This process's CPU and RSS peak while something runs (RSS sampled every 50 ms)."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.cpu = CpuClock(self.process)
        self.rss_before = self.process.memory_info().rss
        self.peak = self.rss_before
        self._task: asyncio.Task[None] | None = None

    async def _sample(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> Watch:
        self.cpu.start()
        self._task = asyncio.ensure_future(self._sample())
        return self

    def __exit__(self, *exc: object) -> None:
        self.percent = self.cpu.percent()
        if self._task is not None:
            self._task.cancel()

    @property
    def grew_mib(self) -> float:
        return (self.peak - self.rss_before) / 2**20


def _stamped(path: Path) -> bool:
    return path.exists() and path.stat().st_size > 0


async def stamp_of(
    path: Path, within: float = 600, ended: Callable[[], bool] = lambda: False
) -> float:
    """The monotonic time the writer printed its banner (it writes the stamp file then)."""
    await until(lambda: _stamped(path) or ended(), within=within)
    if not _stamped(path):
        raise RuntimeError(f"the writer ended without printing its banner ({path})")
    return float((await asyncio.to_thread(path.read_text)).split()[0])


def _tail(log: Path) -> str:
    with open(log, "rb") as file:
        file.seek(max(0, log.stat().st_size - TAIL_BYTES))
        return file.read().decode("utf-8", "replace")


async def fxdesk_round(
    app: App, project: Path, session_id: str, megabytes: int
) -> dict[str, float]:
    engine = app.engine
    stamp = project / "stamp-fxdesk"
    stamp.unlink(missing_ok=True)
    script = project / "writer.py"
    # The system's python3: the sandbox gives the command a fresh /tmp, where a venv of a clone
    # under /tmp (as CI makes it) is not.
    command = f"python3 {script} {megabytes} {stamp}"
    url_at: list[float] = []
    ref: list[str] = []

    def on_background(event: BackgroundChanged) -> None:
        if ref and event.task.stable_id == ref[0] and event.task.url and not url_at:
            url_at.append(time.monotonic())

    unsubscribe = app.bus.subscribe(BackgroundChanged, on_background)
    try:
        with Gaps() as gaps, Watch() as watch:
            began = time.monotonic()
            task = await engine.start_background(session_id, command, expect_url=True)
            ref.append(task.stable_id)
            printed = await stamp_of(
                stamp, ended=lambda: not engine.background_task(ref[0]).state.running
            )
            await until(lambda: bool(url_at) or engine.background_task(ref[0]).url_note != "")
        if not url_at:
            raise RuntimeError(f"no URL: {engine.background_task(ref[0]).url_note}")
        log = Path(task.log_path)
        opened = await open_log(log)
        await engine.stop_background(ref[0])
    finally:
        unsubscribe()
    size = (await asyncio.to_thread(log.stat)).st_size
    await asyncio.to_thread(log.unlink)
    return {
        "banner_s": printed - began,
        "url_ms": (url_at[0] - printed) * 1000,
        "cpu_percent": watch.percent,
        "rss_grew_mib": watch.grew_mib,
        "worst_frame_ms": gaps.worst_ms,
        "log_open_ms": opened,
        "log_mib": size / 2**20,
    }


async def open_log(log: Path) -> float:
    """The log view, as the Processes dock shows it, following ``log``: ms to its first paint
    with text."""
    window = QMainWindow()
    view = LogView()
    window.setCentralWidget(view)
    window.resize(900, 420)
    window.show()
    await asyncio.sleep(0.2)
    watch = FirstPaint(view.text.viewport(), lambda: view.text.document().characterCount() > 1)
    began = time.perf_counter()
    view.follow(log, "flood")
    await until(lambda: watch.at is not None, within=60)
    assert watch.at is not None
    watch.remove()
    view.follow(None)
    window.close()
    window.deleteLater()
    return (watch.at - began) * 1000


async def reference_round(folder: Path, megabytes: int) -> dict[str, float]:
    script = folder / "writer.py"
    stamp = folder / "stamp-ref"
    stamp.unlink(missing_ok=True)
    log = folder / "ref.log"
    with Watch() as watch:
        began = time.monotonic()
        with open(log, "wb") as sink:  # noqa: ASYNC230 - cmd > file, as a shell opens it
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                str(script),
                str(megabytes),
                str(stamp),
                stdout=sink,
                stderr=sink,
                start_new_session=True,
            )
        printed = await stamp_of(stamp)
    process.kill()
    await process.wait()
    window = QMainWindow()
    edit = QPlainTextEdit()
    edit.setReadOnly(True)
    window.setCentralWidget(edit)
    window.resize(900, 420)
    window.show()
    await asyncio.sleep(0.2)
    first = FirstPaint(edit.viewport(), lambda: edit.document().characterCount() > 1)
    opened = time.perf_counter()
    edit.setPlainText(_tail(log))  # read on the Qt thread, as a bare program would
    await until(lambda: first.at is not None, within=60)
    assert first.at is not None
    first.remove()
    window.close()
    window.deleteLater()
    await asyncio.to_thread(log.unlink)
    return {
        "banner_s": printed - began,
        "cpu_percent": watch.percent,
        "rss_grew_mib": watch.grew_mib,
        "log_open_ms": (first.at - opened) * 1000,
    }


async def measure(root: Path, megabytes: int, rounds: int) -> dict[str, list[float]]:
    project = root / "project"
    project.mkdir()
    (project / "writer.py").write_text(STAMPED)
    app = App(DataPaths(root / "data", "bench"), providers=FixedResolver(ScriptedProvider([])))
    controller = GuiController(app)
    main = asyncio.ensure_future(controller.main())
    result: dict[str, list[float]] = {}
    try:
        await until(lambda: controller.ready.is_set() or main.done())
        if main.done():
            raise RuntimeError("the window did not start")
        session = await app.engine.create_session(
            project, start=False, permission_mode=PermissionMode.AUTO
        )
        await asyncio.sleep(1.0)  # start-up's own work settles
        for n in range(rounds):
            for which in [0, 1] if n % 2 == 0 else [1, 0]:
                if which == 0:
                    values = await fxdesk_round(app, project, session.id, megabytes)
                    prefix = ""
                else:
                    values = await reference_round(project, megabytes)
                    prefix = "ref_"
                for key, value in values.items():
                    result.setdefault(prefix + key, []).append(value)
    finally:
        controller.request_quit()
        await asyncio.wait_for(main, 60)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.output_flood", description=__doc__)
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fxdesk-flood-") as folder:
        result = run_on_window_loop(lambda: measure(Path(folder), args.megabytes, args.rounds))
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
