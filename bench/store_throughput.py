"""Single-row commits per second: raw sqlite3 vs the fxdesk store's writer thread, same file kind.

Run: python -m bench.store_throughput [N]
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from fxdesk.store import Store, repo


def raw_commits(path: Path, count: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute("PRAGMA synchronous = normal")
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT, at INTEGER)")
    began = time.perf_counter()
    for i in range(count):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?, ?, ?)", (f"k{i}", "x" * 64, i))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - began
    conn.close()
    return count / elapsed


async def store_commits(path: Path, count: int, writers: int) -> tuple[float, float]:
    """``writers`` tasks each await their own writes in turn (think: sessions)."""
    store = await Store.aopen(path)

    async def one_writer(offset: int) -> None:
        for i in range(offset, count, writers):
            await store.write(lambda i=i: repo.set_setting(f"k{i}", "x" * 64))

    try:
        began = time.perf_counter()
        await asyncio.gather(*(one_writer(n) for n in range(writers)))
        rate = count / (time.perf_counter() - began)
        stats = store.writer_stats
        return rate, stats.jobs / max(stats.batches, 1)
    finally:
        store.close()


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as folder:
        raw = raw_commits(Path(folder) / "raw.sqlite3", count)
        print(f"single-row writes, {count} each, WAL + synchronous=NORMAL")
        print(f"  raw sqlite3, one commit each, calling thread : {raw:9.0f} /s")
        for writers in (1, 8, 64):
            ours, per_batch = asyncio.run(
                store_commits(Path(folder) / f"store{writers}.sqlite3", count, writers)
            )
            print(
                f"  Store.write, {writers:2d} concurrent writer(s)        : {ours:9.0f} /s"
                f"  ratio {ours / raw:4.2f}, {per_batch:4.1f} writes per commit"
            )


if __name__ == "__main__":
    main()
