"""Worst stall of the Qt thread while 20 sessions stream at once through the whole window.

The real App (SQLite file, engine, bus) runs under the GUI controller on a qasync loop, as
``fxdesk`` runs it; only the model is scripted. Every session streams a ~4,000-character Markdown
answer in 8-character deltas 5 ms apart, all at once; one of them is selected, so its transcript
renders live, and the window is grabbed every 100 ms so it is really painted. Meanwhile a 5 ms
``QTimer`` records its ticks, and a thread "types" a letter into the composer every 50 ms
(``postEvent``), timed until the composer's text changes.

Run: python -m bench.gui_stall [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import psutil
import qasync
from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QMessageLogContext,
    Qt,
    QTimer,
    QtMsgType,
    qInstallMessageHandler,
)
from PySide6.QtGui import QGuiApplication, QInputDevice, QKeyEvent

from bench.stream_probe import (
    CpuClock,
    PaintLatency,
    StreamResult,
    bare_stream,
    nominal_percent,
    nth,
    slope_mib_per_hour,
)
from fxdesk.app import App
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.engine.events import HistoryAppended, TextStreamed
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import (
    GuiController,
    MainThreadGarbageCollector,
    Outcome,
    create_qapplication,
    qt_thread_first,
)
from fxdesk.gui.sessions.composer import MessageEdit
from fxdesk.gui.transcript.model import RowKind, TranscriptModel
from fxdesk.logs import loop_exception_handler
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider

SESSIONS = 20
WORKSPACES = 2
CHUNK = 8  # characters per streamed delta
DELAY_S = 0.005  # pause between deltas
TICK_MS = 5
RATE = SESSIONS / DELAY_S  # deltas a second when every session streams at full pace
GRAB_MS = 100
KEY_EVERY_S = 0.050
TIMEOUT_S = 60.0


def _reply(size: int = 4000) -> str:
    """A Markdown answer of about ``size`` characters: headings, prose, a list, a code block."""
    part = (
        "## Step {n}: the parser\n\n"
        "The tokenizer reads **one line at a time** and hands `Token` objects to the parser, "
        "which keeps a small stack of open blocks. Nothing is copied twice.\n\n"
        "- read the header, then the body\n"
        "- keep *offsets*, not slices\n"
        "- report errors with `line:column`\n\n"
        "```python\n"
        "def parse(lines: list[str]) -> list[Block]:\n"
        "    stack: list[Block] = []\n"
        "    for number, line in enumerate(lines, 1):\n"
        "        stack = step(stack, line, number)\n"
        "    return close(stack)\n"
        "```\n\n"
    )
    text = ""
    while len(text) < size:
        text += part.format(n=text.count("## Step") + 1)
    return text + "That is the whole plan."


REPLY = _reply()


@dataclass(frozen=True)
class Result:
    wall_s: float
    ticks: int
    gap_median: float  # ms between ticks of the 5 ms timer
    gap_p95: float
    gap_p99: float
    gap_worst: float
    key_median: float  # ms from a posted key press to the composer's text changing
    key_worst: float
    keys_seen: int
    keys_posted: int
    rss_mib: float
    repaints: int  # live-text pushes to the transcript (coalesced by the bridge)
    layouts: int  # transcript rows laid out (Markdown documents built)
    done: int  # sessions whose history holds the whole answer
    paint_p50: float  # ms from a delta of the shown session reaching the GUI to its paint
    paint_p99: float
    paint_max: float
    painted: int  # deltas of the shown session seen painted
    cpu_percent: float  # this process's CPU time over the streaming's wall time, % of a core
    cpu_nominal: float  # % of a core its CPU time per delta needs at 20 × 200 deltas a second


def _nth(values: list[float], fraction: float) -> float:
    return values[min(int(len(values) * fraction), len(values) - 1)] if values else float("nan")


async def until(condition: Callable[[], object], within: float = TIMEOUT_S) -> bool:
    deadline = time.perf_counter() + within
    while not condition():
        if time.perf_counter() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


class Typist(threading.Thread):
    """Posts a letter key press to ``edit`` every ``KEY_EVERY_S``, from outside the Qt thread,
    as the window system would: a stalled Qt thread cannot delay the typing, only its effect."""

    def __init__(self, edit: MessageEdit) -> None:
        super().__init__(name="bench-typist", daemon=True)
        self.edit = edit
        self.posted: list[float] = []
        self.seen: list[float] = []
        self.stop = threading.Event()
        # A key event needs the keyboard device, which Qt creates on first use as a child of
        # the application: create it here, on the Qt thread, not on this thread.
        QInputDevice.primaryKeyboard()
        edit.textChanged.connect(self._on_text_changed)

    def _on_text_changed(self) -> None:
        self.seen.append(time.perf_counter())

    def run(self) -> None:
        for n in itertools.count():
            if self.stop.wait(KEY_EVERY_S):
                return
            key = Qt.Key(Qt.Key.Key_A.value + n % 26)
            letter = chr(ord("a") + n % 26)
            self.posted.append(time.perf_counter())
            for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
                event = QKeyEvent(kind, key, Qt.KeyboardModifier.NoModifier, letter)
                QCoreApplication.postEvent(self.edit, event)

    def latencies_ms(self) -> list[float]:
        return sorted((b - a) * 1000 for a, b in zip(self.posted, self.seen, strict=False))


def shown_chars(model: TranscriptModel) -> int:
    """How much of the streaming answer the transcript shows: its live row's text, or all of
    it once the committed answer replaced the live row."""
    for position in range(model.rowCount() - 1, max(-1, model.rowCount() - 4), -1):
        row = model.row_at(position)
        if row.kind == RowKind.LIVE:
            return len(row.text)
        if row.kind == RowKind.ASSISTANT:
            return sys.maxsize
    return 0


async def once(root: Path, body: Callable[..., Any] | None = None) -> Any:
    """One measurement (``body``, ``stream`` unless told) of the app and its window started
    on ``root``, shut down in order."""
    paths = DataPaths(root / "data", "bench")
    paths.ensure()
    provider = ScriptedProvider(
        [Reply(REPLY, chunk=CHUNK, delay_s=DELAY_S)], when_done="repeat_last"
    )
    app = App(paths, providers=FixedResolver(provider))
    controller = GuiController(app)
    main = asyncio.ensure_future(controller.main())
    global _provider
    _provider = provider
    try:
        await until(lambda: controller.ready.is_set() or main.done())
        if main.done():
            raise RuntimeError("the window did not start")
        result = await (body or stream)(app, controller, root)
    finally:
        controller.request_quit()
        code = await asyncio.wait_for(main, 30)
    if code is not Outcome.CLOSED:
        raise RuntimeError(f"the window ended with {code}")
    return result


async def new_sessions(app: App, root: Path) -> list[str]:
    """``SESSIONS`` root sessions over ``WORKSPACES`` folders under ``root``; their ids."""
    ids = []
    for n in range(SESSIONS):
        folder = root / f"workspace{n % WORKSPACES}"
        folder.mkdir(exist_ok=True)
        session = await app.sessions.create_root(
            folder, name=f"Session {n + 1}", permission_mode=PermissionMode.AUTO
        )
        ids.append(session.id)
    return ids


def answered(entries: Iterable[HistoryEntry]) -> bool:
    """Whether ``entries`` hold the scripted model's whole answer."""
    return any(e.kind == EntryKind.ASSISTANT and e.content == REPLY for e in entries)


async def ask(app: App, session_id: str) -> None:
    """As the composer does it: queue the message, then start the session."""
    await app.sessions.send(session_id, "Plan the parser work, with an example.")
    app.owner.start(session_id)


def tick_timer(ticks: list[float]) -> QTimer:
    """A ``TICK_MS`` timer (not started) that notes the time of each of its ticks."""
    ticker = QTimer()
    ticker.setInterval(TICK_MS)
    ticker.timeout.connect(lambda: ticks.append(time.perf_counter()))
    return ticker


async def stream(app: App, controller: GuiController, root: Path) -> Result:
    window = controller.window
    window.resize(1280, 860)
    bridge = controller.bridge
    assert bridge is not None
    ids = await new_sessions(app, root)
    shown = ids[SESSIONS // 2]
    window.select_session(shown)
    await until(
        lambda: (
            controller.transcript.session_id == shown
            and window.panel.session is not None
            and window.panel.session.id == shown
        )
    )

    finished: set[str] = set()

    def on_history(event: HistoryAppended) -> None:
        if answered(event.entries):
            finished.add(event.session_id)

    process = psutil.Process()
    peak = process.memory_info().rss

    def on_grab() -> None:
        nonlocal peak
        window.grab()  # paints the whole window, the shown transcript included
        peak = max(peak, process.memory_info().rss)

    ticks: list[float] = []
    ticker, grabber = tick_timer(ticks), QTimer()
    grabber.setInterval(GRAB_MS)
    grabber.timeout.connect(on_grab)
    typist = Typist(window.panel.composer.edit)
    repaints = bridge.repaints
    layouts = window.panel.transcript.delegate.layouts_built
    unsubscribe = app.bus.subscribe(HistoryAppended, on_history)
    latency = PaintLatency(
        window.panel.transcript.viewport(), lambda: shown_chars(controller.transcript)
    )

    streamed = 0  # characters: the turn may hand the bus several deltas at once when busy

    def on_text(event: TextStreamed) -> None:  # the bus hands the delta to the GUI now
        nonlocal streamed
        streamed += len(event.text)
        if event.session_id == shown:
            latency.arrived(len(event.text))

    unsubscribe_text = app.bus.subscribe(TextStreamed, on_text)
    cpu = CpuClock()
    ticker.start()
    if GRAB_MS > 0:
        grabber.start()
    try:
        await asyncio.sleep(0.05)
        began = time.perf_counter()
        cpu.start()
        typist.start()
        for session_id in ids:
            await ask(app, session_id)
        await until(lambda: len(finished) == SESSIONS)
        wall = time.perf_counter() - began
        cpu_percent = cpu.percent()
        cpu_nominal = nominal_percent(cpu.seconds(), streamed // CHUNK, RATE)
        typist.stop.set()
        typist.join()
        await asyncio.sleep(0.1)  # the last key press lands
    finally:
        typist.stop.set()
        ticker.stop()
        grabber.stop()
        unsubscribe()
        unsubscribe_text()
        latency.remove()
    peak = max(peak, process.memory_info().rss)

    done = 0
    for session_id in ids:
        done += answered(await app.sessions.history_page(session_id))
    gaps = sorted((b - a) * 1000 for a, b in itertools.pairwise(ticks))
    keys = typist.latencies_ms()
    return Result(
        wall_s=wall,
        ticks=len(ticks),
        gap_median=_nth(gaps, 0.5),
        gap_p95=_nth(gaps, 0.95),
        gap_p99=_nth(gaps, 0.99),
        gap_worst=_nth(gaps, 1.0),
        key_median=_nth(keys, 0.5),
        key_worst=_nth(keys, 1.0),
        keys_seen=len(keys),
        keys_posted=len(typist.posted),
        rss_mib=peak / 2**20,
        repaints=bridge.repaints - repaints,
        layouts=window.panel.transcript.delegate.layouts_built - layouts,
        done=done,
        paint_p50=nth(latency.latencies_ms, 0.5),
        paint_p99=nth(latency.latencies_ms, 0.99),
        paint_max=nth(latency.latencies_ms, 1.0),
        painted=len(latency.latencies_ms),
        cpu_percent=cpu_percent,
        cpu_nominal=cpu_nominal,
    )


async def measure(runs: int, *, references: bool = False) -> tuple[list[Result], list[Any]]:
    """``runs`` measurements; with ``references``, each followed by the bare program streaming
    the same deltas for as long (``bench.stream_probe.bare_stream``)."""
    results = []
    bare: list[StreamResult] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            results.append(await once(Path(folder)))
        if references:
            bare.append(await bare_stream(REPLY, results[-1].wall_s, chunk=CHUNK, delay_s=DELAY_S))
    return results, bare


SOAK_SAMPLE_S = 5.0
_provider: ScriptedProvider | None = None  # the running measurement's model
SOAK_SWITCH_S = 30.0


async def soak(app: App, controller: GuiController, root: Path, minutes: float) -> StreamResult:
    """20 sessions streaming without a pause for ``minutes`` (each starts its next answer when
    one ends), the shown one switched to the next every 30 s as a person would; this process's
    RSS sampled every 5 s."""
    window = controller.window
    window.resize(1280, 860)
    ids = await new_sessions(app, root)
    seconds = minutes * 60
    answers = 0
    restart: asyncio.Queue[str] = asyncio.Queue()

    def on_history(event: HistoryAppended) -> None:
        nonlocal answers
        if answered(event.entries):
            answers += 1
            restart.put_nowait(event.session_id)

    unsubscribe = app.bus.subscribe(HistoryAppended, on_history)
    process = psutil.Process()
    samples: list[tuple[float, float]] = []
    every = min(SOAK_SAMPLE_S, seconds / 20)  # a short run (the smoke test) still has a slope
    cpu = CpuClock(process)
    cpu.start()
    began = time.perf_counter()

    async def sender() -> None:
        while True:
            await ask(app, await restart.get())

    async def sampler() -> None:
        shown = 0
        next_switch = SOAK_SWITCH_S
        while (elapsed := time.perf_counter() - began) < seconds:
            if _provider is not None:
                # The scripted model records every request it was sent (tests read them): each
                # holds the whole conversation so far. That is the fake's memory, not fxdesk's.
                _provider.requests.clear()
            samples.append((elapsed, process.memory_info().rss / 2**20))
            if elapsed >= next_switch:
                shown = (shown + 1) % SESSIONS
                window.select_session(ids[shown])
                next_switch += SOAK_SWITCH_S
            await asyncio.sleep(min(every, seconds - elapsed))

    window.select_session(ids[0])
    restarter = asyncio.ensure_future(sender())
    try:
        for session_id in ids:
            await ask(app, session_id)
        await sampler()
    finally:
        restarter.cancel()
        unsubscribe()
    wall = time.perf_counter() - began
    percent = cpu.percent()
    # the answers under way end before the window closes
    await asyncio.gather(*(app.engine.cancel(session_id) for session_id in ids))
    return StreamResult([], percent, answers, wall, samples)


HEADER = (
    f"{'run':>5} {'wall s':>6} {'ticks':>5} {'median':>6} {'p95':>6} {'p99':>6} {'worst':>6}"
    f" {'key med':>7} {'key max':>7} {'keys':>7} {'RSS MiB':>7} {'repaints':>8} {'layouts':>7}"
    f" {'done':>5}"
)


def row(label: str, r: Result) -> str:
    return (
        f"{label:>5} {r.wall_s:6.2f} {r.ticks:5d} {r.gap_median:6.1f} {r.gap_p95:6.1f}"
        f" {r.gap_p99:6.1f} {r.gap_worst:6.1f} {r.key_median:7.1f} {r.key_worst:7.1f}"
        f" {f'{r.keys_seen}/{r.keys_posted}':>7} {r.rss_mib:7.0f} {r.repaints:8d} {r.layouts:7d}"
        f" {f'{r.done}/{SESSIONS}':>5}"
    )


def worst(results: list[Result]) -> Result:
    """Each column's worst over the runs (the runs' worst values need not share a run)."""
    lossiest = max(results, key=lambda r: r.keys_posted - r.keys_seen)
    return Result(
        wall_s=max(r.wall_s for r in results),
        ticks=min(r.ticks for r in results),
        gap_median=max(r.gap_median for r in results),
        gap_p95=max(r.gap_p95 for r in results),
        gap_p99=max(r.gap_p99 for r in results),
        gap_worst=max(r.gap_worst for r in results),
        key_median=max(r.key_median for r in results),
        key_worst=max(r.key_worst for r in results),
        keys_seen=lossiest.keys_seen,
        keys_posted=lossiest.keys_posted,
        rss_mib=max(r.rss_mib for r in results),
        repaints=min(r.repaints for r in results),
        layouts=max(r.layouts for r in results),
        done=min(r.done for r in results),
        paint_p50=max(r.paint_p50 for r in results),
        paint_p99=max(r.paint_p99 for r in results),
        paint_max=max(r.paint_max for r in results),
        painted=min(r.painted for r in results),
        cpu_percent=max(r.cpu_percent for r in results),
        cpu_nominal=max(r.cpu_nominal for r in results),
    )


async def bare_timer(seconds: float) -> list[float]:
    """The reference: the same 5 ms timer with one empty main window shown and nothing else."""
    from PySide6.QtWidgets import QMainWindow

    window = QMainWindow()
    window.resize(1280, 860)
    window.show()
    ticks: list[float] = []
    ticker = tick_timer(ticks)
    ticker.start()
    await asyncio.sleep(seconds)
    ticker.stop()
    window.close()
    window.deleteLater()
    return sorted((b - a) * 1000 for a, b in itertools.pairwise(ticks))


def _qt_message(mode: QtMsgType, context: QMessageLogContext, message: str) -> None:
    """Qt's messages to stderr, but for the offscreen plugin's note that it has no window
    system to pass a window's size hints to (printed whenever the window's layout changes)."""
    if message != "This plugin does not support propagateSizeHints()":
        print(f"Qt: {message}", file=sys.stderr)


def soak_json(loop: asyncio.AbstractEventLoop, minutes: float, reference_minutes: float) -> None:
    """The soak and then its reference; one JSON line."""

    async def run() -> tuple[StreamResult, StreamResult]:
        with tempfile.TemporaryDirectory() as folder:
            ours = await once(
                Path(folder), lambda app, controller, root: soak(app, controller, root, minutes)
            )
        seconds = reference_minutes * 60
        bare = await bare_stream(REPLY, seconds, sample_every_s=min(SOAK_SAMPLE_S, seconds / 20))
        return ours, bare

    ours, bare = loop.run_until_complete(run())
    print(
        json.dumps(
            {
                "minutes": ours.seconds / 60,
                "answers": ours.deltas,
                "cpu_percent": ours.cpu_percent,
                "rss": ours.rss_samples,
                "slope_mib_per_hour": slope_mib_per_hour(ours.rss_samples),
                "ref_minutes": bare.seconds / 60,
                "ref_cpu_percent": bare.cpu_percent,
                "ref_rss": bare.rss_samples,
                "ref_slope_mib_per_hour": slope_mib_per_hour(bare.rss_samples),
            }
        )
    )


def main() -> None:
    global GRAB_MS
    parser = argparse.ArgumentParser(prog="python -m bench.gui_stall", description=__doc__)
    parser.add_argument(
        "--runs", type=int, default=3, help="measurements, each on a fresh data dir"
    )
    parser.add_argument(
        "--grab-ms",
        type=int,
        default=GRAB_MS,
        help="grab (repaint) the whole window this often; 0: never (under a real X server the "
        "window paints itself)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON line (the worst of the runs, and the same 5 ms timer in a bare "
        "window for as long, measured right after) instead of the table",
    )
    parser.add_argument(
        "--soak-minutes",
        type=float,
        default=0,
        help="instead: stream without a pause for this long and print one JSON line with the "
        "RSS samples and their slope, then the bare program's for --soak-reference-minutes",
    )
    parser.add_argument("--soak-reference-minutes", type=float, default=2.0)
    args = parser.parse_args()
    runs = args.runs
    GRAB_MS = args.grab_ms
    qInstallMessageHandler(_qt_message)
    qapp = create_qapplication(["fxdesk-bench"])
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(loop_exception_handler)
    collector = MainThreadGarbageCollector()  # as fxdesk runs: collect on the Qt thread only
    collector.start()
    try:
        with loop, qt_thread_first():  # as fxdesk runs its window
            if args.soak_minutes:
                soak_json(loop, args.soak_minutes, args.soak_reference_minutes)
                return
            results, bare = loop.run_until_complete(measure(runs, references=args.json))
            if args.json:
                seconds = max(r.wall_s for r in results)
                reference = loop.run_until_complete(bare_timer(seconds))
    finally:
        collector.stop()
        asyncio.set_event_loop(None)
    if args.json:
        summary = worst(results)
        bare_latencies = [ms for run in bare for ms in run.latencies_ms]
        print(
            json.dumps(
                {
                    **summary.__dict__,
                    "ref_gap_p99": _nth(reference, 0.99),
                    "ref_gap_worst": _nth(reference, 1.0),
                    "ref_paint_p50": max(nth(run.latencies_ms, 0.5) for run in bare),
                    "ref_paint_p99": max(nth(run.latencies_ms, 0.99) for run in bare),
                    "ref_paint_max": max(bare_latencies, default=float("nan")),
                    "ref_painted": min(len(run.latencies_ms) for run in bare),
                    "ref_cpu_percent": max(run.cpu_percent for run in bare),
                    "cpu_percent_runs": [r.cpu_percent for r in results],
                    "ref_cpu_percent_runs": [run.cpu_percent for run in bare],
                    "cpu_nominal_runs": [r.cpu_nominal for r in results],
                    "ref_cpu_nominal_runs": [
                        nominal_percent(run.cpu_s, run.all_deltas, RATE) for run in bare
                    ],
                }
            )
        )
        return
    print(
        f"{SESSIONS} sessions streaming {len(REPLY):,} characters each ({CHUNK}-character deltas "
        f"every {DELAY_S * 1000:.0f} ms), one shown"
        + (f" and grabbed every {GRAB_MS} ms" if GRAB_MS else "")
        + f" ({QGuiApplication.platformName()}); "
        f"{TICK_MS} ms timer gaps and key-press-to-text latencies in ms"
    )
    print(HEADER)
    for n, result in enumerate(results, 1):
        print(row(str(n), result))
    print(row("worst", worst(results)))
    print(
        "  repaints: live-text pushes to the shown transcript (EngineBridge.repaints); layouts: "
        "rows laid out (TranscriptDelegate.layouts_built); worst: each column's worst of the runs"
    )


if __name__ == "__main__":
    main()
