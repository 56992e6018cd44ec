"""Worst stall of the Qt thread while the store writes rows (offscreen Qt, qasync loop).

Run: python -m bench.loop_stall [ROWS] [BATCH]
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from fxdesk.store import Store
from fxdesk.store.schema import SettingRow


async def probe(path: Path, rows: int, batch: int) -> tuple[float, list[float]]:
    store = await Store.aopen(path)
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    try:
        await asyncio.sleep(0.05)
        began = time.perf_counter()
        for start in range(0, rows, batch):
            chunk = [
                {"key": f"k{i}", "value_json": '"' + "x" * 200 + '"', "updated_at_ms": i}
                for i in range(start, min(start + batch, rows))
            ]
            await store.write(lambda chunk=chunk: SettingRow.insert_many(chunk).execute())
        elapsed = time.perf_counter() - began
        await asyncio.sleep(0.05)
    finally:
        timer.stop()
        store.close()
    return elapsed, [b - a for a, b in itertools.pairwise(ticks)]


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    app = QApplication([])
    loop = qasync.QEventLoop(app)
    with tempfile.TemporaryDirectory() as folder, loop:
        elapsed, gaps = loop.run_until_complete(probe(Path(folder) / "db.sqlite3", rows, batch))
    gaps_ms = sorted(g * 1000 for g in gaps)
    print(f"{rows} rows in batches of {batch}: {elapsed:.2f} s ({rows / elapsed:.0f} rows/s)")
    print(
        f"  5 ms timer gaps: median {statistics.median(gaps_ms):.1f} ms, "
        f"p99 {gaps_ms[int(len(gaps_ms) * 0.99)]:.1f} ms, worst {gaps_ms[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
