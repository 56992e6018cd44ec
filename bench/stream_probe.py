"""What a person sees of streaming: each delta's arrival → the paint that shows it, and CPU use.

``PaintLatency`` is told each delta of the shown stream as it arrives (fxdesk: when the bus
delivers its ``TextStreamed`` to the GUI) and watches the paint events of the widget that shows
it (the transcript's viewport; an event filter, so the time is when the paint starts). At each
paint it asks how many characters the widget shows now; every delta that ends within them is
painted, and its latency is the paint's time minus its arrival.

``bare_stream`` is the reference: a bare PySide6 program, one ``QMainWindow`` with a
``QPlainTextEdit``, fed the same deltas at the same pace (20 streams, 8 characters every 5 ms,
one of them appended to the text as it arrives), measured the same way.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QMainWindow, QPlainTextEdit, QWidget


def nth(values: list[float], fraction: float) -> float:
    """The value at ``fraction`` of the sorted ``values`` (nan when there are none)."""
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)] if ordered else float("nan")


class PaintLatency(QObject):
    """Arrival → paint of each delta shown by ``widget``.

    Args:
        widget: what paints the shown stream (its paint events are watched).
        shown: how many characters of the stream the widget shows now.
    """

    def __init__(self, widget: QWidget, shown: Callable[[], int]) -> None:
        super().__init__()
        self.widget = widget
        self.shown = shown
        self.arrived_chars = 0
        self.pending: collections.deque[tuple[int, float]] = collections.deque()
        self.latencies_ms: list[float] = []
        self.paints = 0
        widget.installEventFilter(self)

    def arrived(self, chars: int) -> None:
        self.arrived_chars += chars
        self.pending.append((self.arrived_chars, time.perf_counter()))

    def reset(self) -> None:
        """A new stream (the next answer) starts from 0 characters."""
        self.arrived_chars = 0
        self.pending.clear()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self.pending:
            self.paints += 1
            now = time.perf_counter()
            shown = self.shown()
            while self.pending and self.pending[0][0] <= shown:
                self.latencies_ms.append((now - self.pending.popleft()[1]) * 1000)
        return False

    def remove(self) -> None:
        self.widget.removeEventFilter(self)


@dataclass
class CpuClock:
    """This process's CPU time over wall time, as a percentage of one core."""

    process: psutil.Process = field(default_factory=psutil.Process)
    began_cpu: float = 0.0
    began_wall: float = 0.0

    def start(self) -> None:
        times = self.process.cpu_times()
        self.began_cpu = times.user + times.system
        self.began_wall = time.perf_counter()

    def seconds(self) -> float:
        """CPU seconds used since ``start``."""
        times = self.process.cpu_times()
        return times.user + times.system - self.began_cpu

    def percent(self) -> float:
        wall = time.perf_counter() - self.began_wall
        return self.seconds() / wall * 100 if wall > 0 else 0.0


def nominal_percent(cpu_s: float, deltas: int, rate: float) -> float:
    """The share of one core (%) that ``deltas`` deltas for ``cpu_s`` CPU seconds need at
    ``rate`` deltas a second: what streaming at full pace costs, even on a machine too busy to
    give the process that pace (CPU time over wall time is capped by the cores it gets)."""
    return cpu_s / deltas * rate * 100 if deltas else float("nan")


@dataclass
class StreamResult:
    latencies_ms: list[float]
    cpu_percent: float
    deltas: int  # of the shown stream
    seconds: float
    rss_samples: list[tuple[float, float]]  # (seconds since start, MiB)
    cpu_s: float = 0.0
    all_deltas: int = 0  # of every stream


async def bare_stream(
    reply: str,
    seconds: float,
    *,
    streams: int = 20,
    chunk: int = 8,
    delay_s: float = 0.005,
    sample_every_s: float = 0.0,
) -> StreamResult:
    """The reference: ``streams`` answers of ``reply`` arriving in ``chunk``-character deltas
    ``delay_s`` apart for ``seconds``, one of them appended to a ``QPlainTextEdit`` as each delta
    arrives (a new answer starts a new document). ``sample_every_s``: RSS samples that often."""
    window = QMainWindow()
    edit = QPlainTextEdit()
    edit.setReadOnly(True)
    window.setCentralWidget(edit)
    window.resize(1280, 860)
    window.show()
    await asyncio.sleep(0.2)
    shown_chars = 0
    probe = PaintLatency(edit.viewport(), lambda: shown_chars)
    kept: list[list[str]] = [[] for _ in range(streams)]  # what a program keeps of each stream
    deltas = all_deltas = 0
    process = psutil.Process()
    samples: list[tuple[float, float]] = []
    clock = CpuClock(process)
    clock.start()
    began = time.perf_counter()

    async def one(n: int) -> None:
        nonlocal shown_chars, deltas, all_deltas
        while time.perf_counter() - began < seconds:
            kept[n] = []
            if n == 0:
                probe.reset()
                shown_chars = 0
                edit.clear()
            for start in range(0, len(reply), chunk):
                if time.perf_counter() - began >= seconds:
                    return
                delta = reply[start : start + chunk]
                kept[n].append(delta)
                all_deltas += 1
                if n == 0:
                    probe.arrived(len(delta))
                    edit.moveCursor(edit.textCursor().MoveOperation.End)
                    edit.insertPlainText(delta)
                    shown_chars += len(delta)
                    deltas += 1
                await asyncio.sleep(delay_s)

    async def sample() -> None:
        while time.perf_counter() - began < seconds:
            samples.append((time.perf_counter() - began, process.memory_info().rss / 2**20))
            await asyncio.sleep(sample_every_s)

    jobs = [one(n) for n in range(streams)]
    if sample_every_s > 0:
        jobs.append(sample())
    await asyncio.gather(*jobs)
    cpu = clock.percent()
    cpu_s = clock.seconds()
    wall = time.perf_counter() - began
    await asyncio.sleep(0.05)  # the last delta's paint
    probe.remove()
    window.close()
    window.deleteLater()
    return StreamResult(probe.latencies_ms, cpu, deltas, wall, samples, cpu_s, all_deltas)


def slope_mib_per_hour(samples: list[tuple[float, float]], warm_up: float = 0.25) -> float:
    """The least-squares slope of RSS over time after the first ``warm_up`` of the run."""
    if not samples:
        return float("nan")
    start = samples[-1][0] * warm_up
    points = [(t, mib) for t, mib in samples if t >= start]
    if len(points) < 2:
        return float("nan")
    mean_t = sum(t for t, _ in points) / len(points)
    mean_m = sum(m for _, m in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return float("nan")
    slope = sum((t - mean_t) * (m - mean_m) for t, m in points) / spread
    return slope * 3600
