"""The Qt thread never waits on disk: a loop-stall probe while 20,000 rows are written."""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
import time
from pathlib import Path

from PySide6.QtCore import QTimer

from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.gui.application import MainThreadGarbageCollector
from fxdesk.store import Store, repo
from fxdesk.store.schema import HistoryEntryRow

ROWS = 20_000
BATCH = 100
STALL_LIMIT_S = 0.050


def _session() -> str:
    workspace, _ = repo.ensure_workspace("/tmp/w", "w", 1)
    repo.create_session(
        session_id="s1",
        workspace=workspace,
        name="probe",
        mode=SessionMode.PERSISTENT,
        permission_mode=PermissionMode.ASK,
        at_ms=1,
    )
    return "s1"


async def test_the_qt_thread_never_stalls_while_20000_rows_are_written(tmp_path: Path) -> None:
    store = await Store.aopen(tmp_path / "db.sqlite3")
    writer_threads: set[str] = set()
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    try:
        session_id = await store.write(_session)

        def batch(start: int) -> None:
            writer_threads.add(threading.current_thread().name)
            HistoryEntryRow.insert_many(
                [
                    {
                        "session": session_id,
                        "seq": seq,
                        "kind": "assistant",
                        "content": f"message {seq} " + "lorem ipsum " * 20,
                        "created_at_ms": seq,
                    }
                    for seq in range(start, start + BATCH)
                ]
            ).execute()

        timer.start()
        await asyncio.sleep(0.05)
        began = time.perf_counter()
        for start in range(1, ROWS + 1, BATCH):
            await store.write(lambda start=start: batch(start), label="history")
        elapsed = time.perf_counter() - began
        await asyncio.sleep(0.05)
        timer.stop()
        count = await store.read(lambda: HistoryEntryRow.select().count())
    finally:
        timer.stop()
        await asyncio.get_running_loop().run_in_executor(None, store.close)

    assert count == ROWS
    assert writer_threads and all(n.startswith("fxdesk-db-writer") for n in writer_threads)
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    worst = max(gaps)
    print(f"\n{ROWS} rows in {elapsed:.2f} s; {len(ticks)} ticks; worst gap {worst * 1000:.1f} ms")
    assert len(ticks) > elapsed / 0.05  # the timer kept firing throughout
    assert worst < STALL_LIMIT_S, f"the Qt thread stalled for {worst * 1000:.0f} ms"


def test_garbage_is_collected_on_the_gui_thread_only(qapp: object) -> None:
    collector = MainThreadGarbageCollector()
    collector.start()
    try:
        assert not gc.isenabled()  # no collection can start on a worker thread
        assert collector._timer.isActive()
    finally:
        collector.stop()
    assert gc.isenabled()
