"""A 10,000-message session in the real window: select → first paint, then scroll to the top.

The data folder (``bench.datasets``: 20 sessions, ``s000000`` with 10,000 history entries) is
opened by the real App and window on a qasync loop, as ``fxdesk`` runs them. Each round:

- fxdesk: another session is shown, then ``s000000`` is selected; timed until the transcript's
  viewport gets its first paint event with the session's rows. Then the scroll bar is set to the
  top again and again (each time the view reads the page before, 200 rows) until the first
  message is loaded; a 5 ms timer on the Qt thread records the longest gap (the longest frame).
- reference, alternating with it: a plain ``QListView`` on a ``QStringListModel`` of the same
  texts (read with bare sqlite3), same size: the latest 200 (the page fxdesk reads) set as its
  model → first paint; then all 10,000, scrolled to the top in 50 steps.

Prints one JSON line. Run: python -m bench.transcript_open DATA_DIR [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import psutil
import qasync
from PySide6.QtCore import QEvent, QObject, QStringListModel, QTimer
from PySide6.QtWidgets import QAbstractItemView, QListView

from fxdesk.app import App
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import (
    GuiController,
    MainThreadGarbageCollector,
    create_qapplication,
    qt_thread_first,
)
from fxdesk.logs import loop_exception_handler
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider

T = TypeVar("T")
LONG = "s000000"
OTHER = "s000001"


async def until(condition: Callable[[], object], within: float = 60) -> None:
    deadline = time.perf_counter() + within
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("the window did not get there")
        await asyncio.sleep(0.002)


class FirstPaint(QObject):
    """The time of the first paint event of ``widget`` once ``armed()`` holds."""

    def __init__(self, widget: QObject, armed: Callable[[], bool]) -> None:
        super().__init__()
        self.at: float | None = None
        self.armed = armed
        self.widget = widget
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if self.at is None and event.type() == QEvent.Type.Paint and self.armed():
            self.at = time.perf_counter()
        return False

    def remove(self) -> None:
        self.widget.removeEventFilter(self)


class Gaps:
    """The longest gap between ticks of a 5 ms timer on the Qt thread."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def __enter__(self) -> Gaps:
        self.ticks = [time.perf_counter()]
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.stop()
        self.ticks.append(time.perf_counter())

    @property
    def worst_ms(self) -> float:
        return max((b - a) * 1000 for a, b in itertools.pairwise(self.ticks))


async def fxdesk_round(controller: GuiController) -> tuple[float, float, int]:
    window = controller.window
    model = controller.transcript
    view = window.panel.transcript
    window.select_session(OTHER)
    await until(lambda: model.session_id == OTHER and model.rowCount() >= 0)
    await asyncio.sleep(0.2)
    watch = FirstPaint(view.viewport(), lambda: model.session_id == LONG and model.rowCount() > 0)
    began = time.perf_counter()
    window.select_session(LONG)
    await until(lambda: watch.at is not None)
    assert watch.at is not None
    opened = (watch.at - began) * 1000
    watch.remove()
    await asyncio.sleep(0.2)
    bar = view.verticalScrollBar()
    pages = 0
    with Gaps() as gaps:
        while not (model.complete and bar.value() == bar.minimum()):
            fetched = model.fetched
            bar.setValue(bar.minimum())
            if not model.complete:
                await until(lambda fetched=fetched: model.fetched > fetched or model.complete)
                pages += 1
                # the view keeps its place above the new rows once it has laid them out
                await until(lambda: bar.value() > bar.minimum() or model.complete)
            await asyncio.sleep(0.02)  # the view paints the new rows
    return opened, gaps.worst_ms, pages


async def reference_round(texts: list[str]) -> tuple[float, float]:
    view = QListView()
    view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    view.setWordWrap(True)
    view.resize(900, 700)
    view.show()
    await asyncio.sleep(0.2)
    model = QStringListModel()
    watch = FirstPaint(view.viewport(), lambda: model.rowCount() > 0)
    began = time.perf_counter()
    model.setStringList(texts[-200:])  # what fxdesk reads to show a session: one page
    view.setModel(model)
    view.scrollToBottom()
    await until(lambda: watch.at is not None)
    assert watch.at is not None
    opened = (watch.at - began) * 1000
    watch.remove()
    await asyncio.sleep(0.2)
    model.setStringList(texts)  # all of it, for the scroll
    view.scrollToBottom()
    await asyncio.sleep(0.2)
    bar = view.verticalScrollBar()
    with Gaps() as gaps:
        for _ in range(50):  # as many steps as fxdesk's pages
            bar.setValue(bar.minimum() + (bar.value() - bar.minimum()) // 2)
            await asyncio.sleep(0.02)
        bar.setValue(bar.minimum())
        await asyncio.sleep(0.02)
    view.close()
    view.deleteLater()
    return opened, gaps.worst_ms


async def measure(data: Path, rounds: int) -> dict[str, object]:
    paths = DataPaths(data, "bench")
    provider = ScriptedProvider([Reply("ok")], when_done="repeat_last")
    app = App(paths, providers=FixedResolver(provider))
    controller = GuiController(app)
    main = asyncio.ensure_future(controller.main())
    conn = sqlite3.connect(paths.database)
    texts = [
        row[0]
        for row in conn.execute(
            "SELECT content FROM history_entry WHERE session_id = ? ORDER BY seq", (LONG,)
        )
    ]
    conn.close()
    result: dict[str, list[float]] = {
        "open_ms": [],
        "scroll_worst_ms": [],
        "ref_open_ms": [],
        "ref_scroll_worst_ms": [],
        "rss_mib": [],  # after each fxdesk round: all 10,000 messages loaded and laid out
    }
    pages = 0
    try:
        await until(lambda: controller.ready.is_set() or main.done())
        controller.window.resize(1280, 860)
        await asyncio.sleep(0.3)
        for n in range(rounds):
            order = [0, 1] if n % 2 == 0 else [1, 0]
            for which in order:
                if which == 0:
                    opened, worst, pages = await fxdesk_round(controller)
                    result["rss_mib"].append(psutil.Process().memory_info().rss / 2**20)
                    result["open_ms"].append(opened)
                    result["scroll_worst_ms"].append(worst)
                else:
                    opened, worst = await reference_round(texts)
                    result["ref_open_ms"].append(opened)
                    result["ref_scroll_worst_ms"].append(worst)
    finally:
        controller.request_quit()
        await asyncio.wait_for(main, 30)
    return {**result, "pages": pages}


def run_on_window_loop(make: Callable[[], Awaitable[T]]) -> T:
    """Run a benchmark's coroutine on a qasync loop as fxdesk runs its window (exception
    handler, garbage collected on the GUI thread only); its result."""
    qapp = create_qapplication(["fxdesk-bench"])
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(loop_exception_handler)
    collector = MainThreadGarbageCollector()
    collector.start()
    try:
        with loop, qt_thread_first():  # as fxdesk runs its window
            return loop.run_until_complete(make())
    finally:
        collector.stop()
        asyncio.set_event_loop(None)


def window_bench_main(
    prog: str, doc: str | None, measure: Callable[[Path, int], Awaitable[object]]
) -> None:
    """A window benchmark's command line: ``DATA [--rounds N]``; ``measure(DATA, N)`` on the
    window's loop, its result printed as one JSON line."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("data", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = run_on_window_loop(lambda: measure(args.data, args.rounds))
    print(json.dumps(result))
    sys.stdout.flush()


def main() -> None:
    window_bench_main("python -m bench.transcript_open", __doc__, measure)


if __name__ == "__main__":
    main()
