"""A 2 MB answer and a 50,000-line command output in the real window: open, then scroll through.

The data folder (``bench.datasets``: 20 sessions; ``s000000`` holds one question and a ~2 MB
Markdown answer, ``s000001`` one command whose result has 50,000 lines, the model having seen
its last 16 KiB) is opened by the real App and window on a qasync loop, as ``fxdesk`` runs them.
A 5 ms timer on the Qt thread records the longest gap (the worst frame) of each step. Each
round, alternating with its reference:

- answer, fxdesk: another session is shown, then ``s000000`` is selected (timed until the
  transcript's viewport paints its rows); then the transcript is scrolled from the bottom to
  the top in 50 steps; then "Show the whole answer…" (timed to that window's first paint).
- output, fxdesk: ``s000001`` is selected (timed to its first paint), its card opened as a click
  does (the 40-line preview), then "Show full output…" (the whole output in its window, timed to
  that window's first paint) and that text scrolled from top to bottom in 50 steps.
- reference, each: a plain ``QPlainTextEdit`` in a window of the same size given the same
  text (``setPlainText``), timed to its first paint, then scrolled through in 50 steps.

Prints one JSON line. Run: python -m bench.transcript_big DATA_DIR [--rounds N]
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication, QMainWindow, QPlainTextEdit, QScrollBar

from bench.transcript_open import FirstPaint, Gaps, until, window_bench_main
from fxdesk.app import App
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController
from fxdesk.gui.transcript.full_text import FullTextWindow
from fxdesk.gui.transcript.model import RowKind
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider

ANSWER = "s000000"
OUTPUT = "s000001"
OTHER = "s000002"
STEPS = 50


async def scroll_through(bar: QScrollBar, *, down: bool) -> None:
    """From one end to the other in ``STEPS`` steps, letting each paint."""
    for step in range(1, STEPS + 1):
        span = bar.maximum() - bar.minimum()
        offset = span * step // STEPS
        bar.setValue(bar.minimum() + offset if down else bar.maximum() - offset)
        await asyncio.sleep(0.02)


async def select(controller: GuiController, session_id: str) -> float:
    """Show another session, then ``session_id``: ms to the transcript's first paint of it."""
    window = controller.window
    model = controller.transcript
    view = window.panel.transcript
    window.select_session(OTHER)
    await until(lambda: model.session_id == OTHER)
    await asyncio.sleep(0.2)
    watch = FirstPaint(
        view.viewport(), lambda: model.session_id == session_id and model.rowCount() > 0
    )
    began = time.perf_counter()
    window.select_session(session_id)
    await until(lambda: watch.at is not None, within=300)
    assert watch.at is not None
    watch.remove()
    return (watch.at - began) * 1000


async def answer_round(controller: GuiController) -> tuple[float, float, float, float]:
    """(open ms, worst frame while opening, worst frame while scrolling to the top, the whole
    answer's window: ms to its first paint)."""
    view = controller.window.panel.transcript
    with Gaps() as opening:
        opened = await select(controller, ANSWER)
        await asyncio.sleep(0.2)
    with Gaps() as scrolling:
        await scroll_through(view.verticalScrollBar(), down=False)
    model = controller.transcript
    answer = next(n for n in range(model.rowCount()) if model.row_at(n).kind == RowKind.ASSISTANT)
    whole = next(a for a in view.row_actions(answer) if a[1] == "full_output")
    began = time.perf_counter()
    view.trigger(answer, whole[1], whole[2])  # "Show the whole answer…"
    dialog = await until_dialog()
    watch = FirstPaint(dialog.text.viewport(), lambda: True)
    await until(lambda: watch.at is not None, within=300)
    assert watch.at is not None
    watch.remove()
    dialog.close()
    dialog.deleteLater()
    await asyncio.sleep(0.1)
    return opened, opening.worst_ms, scrolling.worst_ms, (watch.at - began) * 1000


async def output_round(controller: GuiController) -> tuple[float, float, float, float]:
    """(open ms, full output's first paint ms, worst frame of open + card + full output,
    worst frame while scrolling the full output)."""
    model = controller.transcript
    view = controller.window.panel.transcript
    with Gaps() as opening:
        opened = await select(controller, OUTPUT)
        await asyncio.sleep(0.1)
        card = next(n for n in range(model.rowCount()) if model.row_at(n).kind == RowKind.TOOL)
        view.trigger(card, "toggle", None)  # as a click on its header does
        await asyncio.sleep(0.2)
        began = time.perf_counter()
        view.trigger(card, "full_output", model.row_at(card))
        dialog = await until_dialog()
        watch = FirstPaint(dialog.text.viewport(), lambda: True)
        await until(lambda: watch.at is not None, within=300)
        assert watch.at is not None
        watch.remove()
        full = (watch.at - began) * 1000
        await until(lambda: dialog.complete, within=300)  # the rest, a piece a frame
        await asyncio.sleep(0.2)
    with Gaps() as scrolling:
        await scroll_through(dialog.text.verticalScrollBar(), down=True)
    dialog.close()
    dialog.deleteLater()
    view.trigger(card, "toggle", None)
    await asyncio.sleep(0.1)
    return opened, full, opening.worst_ms, scrolling.worst_ms


async def until_dialog() -> FullTextWindow:
    found: list[FullTextWindow] = []

    def shown() -> bool:
        found[:] = [
            w
            for w in QApplication.topLevelWidgets()
            if isinstance(w, FullTextWindow) and w.isVisible()
        ]
        return bool(found)

    await until(shown, within=300)
    return found[0]


async def reference_round(text: str, size: tuple[int, int]) -> tuple[float, float, float]:
    """A plain QPlainTextEdit given ``text``: (first paint ms, worst frame opening, scrolling)."""
    window = QMainWindow()
    edit = QPlainTextEdit()
    edit.setReadOnly(True)
    window.setCentralWidget(edit)
    window.resize(*size)
    window.show()
    await asyncio.sleep(0.2)
    with Gaps() as opening:
        watch = FirstPaint(edit.viewport(), lambda: edit.document().characterCount() > 1)
        began = time.perf_counter()
        edit.setPlainText(text)
        await until(lambda: watch.at is not None, within=300)
        assert watch.at is not None
        watch.remove()
        await asyncio.sleep(0.2)
    with Gaps() as scrolling:
        await scroll_through(edit.verticalScrollBar(), down=True)
    window.close()
    window.deleteLater()
    return (watch.at - began) * 1000, opening.worst_ms, scrolling.worst_ms


async def measure(data: Path, rounds: int) -> dict[str, list[float]]:
    paths = DataPaths(data, "bench")
    app = App(paths, providers=FixedResolver(ScriptedProvider([Reply("ok")])))
    controller = GuiController(app)
    main = asyncio.ensure_future(controller.main())
    conn = sqlite3.connect(paths.database)
    answer = conn.execute(
        "SELECT content FROM history_entry WHERE session_id = ? AND kind = 'assistant'", (ANSWER,)
    ).fetchone()[0]
    output = conn.execute(
        "SELECT full_text FROM history_entry WHERE session_id = ? AND full_text IS NOT NULL",
        (OUTPUT,),
    ).fetchone()[0]
    conn.close()
    names = [
        "answer_open_ms",
        "answer_open_worst_ms",
        "answer_scroll_worst_ms",
        "answer_whole_ms",
        "ref_answer_open_ms",
        "ref_answer_open_worst_ms",
        "ref_answer_scroll_worst_ms",
        "output_open_ms",
        "output_full_ms",
        "output_open_worst_ms",
        "output_scroll_worst_ms",
        "ref_output_open_ms",
        "ref_output_open_worst_ms",
        "ref_output_scroll_worst_ms",
    ]
    result: dict[str, list[float]] = {name: [] for name in names}

    def keep(prefix: str, values: tuple[float, ...], keys: list[str]) -> None:
        for key, value in zip(keys, values, strict=True):
            result[f"{prefix}{key}"].append(value)

    try:
        await until(lambda: controller.ready.is_set() or main.done())
        window = controller.window
        window.resize(1280, 860)
        await asyncio.sleep(0.3)
        view = window.panel.transcript.viewport()
        size = (view.width(), view.height())
        for n in range(rounds):
            jobs = [
                lambda: answer_round(controller),
                lambda: reference_round(answer, size),
                lambda: output_round(controller),
                lambda: reference_round(output, (720, 420)),
            ]
            keys = [
                ("answer_", ["open_ms", "open_worst_ms", "scroll_worst_ms", "whole_ms"]),
                ("ref_answer_", ["open_ms", "open_worst_ms", "scroll_worst_ms"]),
                ("output_", ["open_ms", "full_ms", "open_worst_ms", "scroll_worst_ms"]),
                ("ref_output_", ["open_ms", "open_worst_ms", "scroll_worst_ms"]),
            ]
            order = [0, 1, 2, 3] if n % 2 == 0 else [1, 0, 3, 2]
            for which in order:
                prefix, names_of = keys[which]
                keep(prefix, await jobs[which](), names_of)
    finally:
        controller.request_quit()
        await asyncio.wait_for(main, 60)
    return result


def main() -> None:
    window_bench_main("python -m bench.transcript_big", __doc__, measure)


if __name__ == "__main__":
    main()
