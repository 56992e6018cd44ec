"""Durable work-item transitions per second through the engine vs raw single-row commits.

Each work item goes pending → running → completed (3 durable transitions, each its own
transaction, plus the turn's own history commits) with an instant scripted model. Sessions run
concurrently, as they would in the app. The raw baseline commits one row per transaction on the
same database file, in the same run.

Run: python -m bench.engine_transitions [SESSIONS] [ITEMS_PER_SESSION]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from fxdesk.domain.model import PermissionMode
from fxdesk.engine.bus import EventBus
from fxdesk.engine.owner import SessionOwner
from fxdesk.engine.providers import FixedResolver
from fxdesk.engine.sessions import SessionService
from fxdesk.engine.turn import TurnRunner
from fxdesk.providers.scripted import Reply, ScriptedProvider
from fxdesk.store import Store
from fxdesk.tools.base import ToolRegistry


async def engine_rate(root: Path, sessions: int, items: int) -> tuple[float, float, float]:
    store = await Store.aopen(root / "fxdesk.sqlite3")
    bus = EventBus()
    provider = ScriptedProvider([Reply(text="ok")], when_done="repeat_last")
    runner = TurnRunner(store, ToolRegistry(), bus)
    owner = SessionOwner(
        store, bus, lock_dir=root / "locks", providers=FixedResolver(provider), runner=runner
    )
    service = SessionService(store, bus, owner)
    workspace = root / "ws"
    workspace.mkdir()
    ids = []
    for n in range(sessions):
        session = await service.create_root(
            workspace, name=f"s{n}", permission_mode=PermissionMode.YOLO
        )
        ids.append(session.id)

    async def drive(session_id: str) -> None:
        for i in range(items):
            await service.send(session_id, f"message {i}")
            owner.start(session_id)
            await owner.join(session_id)

    async def count() -> int:
        return int(
            await store.read(
                lambda: store._db.execute_sql(
                    "SELECT count(*) FROM control_event WHERE kind = 'work_transition'"
                ).fetchone()[0]
            )
        )

    began = time.perf_counter()
    await asyncio.gather(*(drive(session_id) for session_id in ids))
    turns_rate = await count() / (time.perf_counter() - began)

    # Queue transitions alone: every session's messages queued concurrently, one durable
    # transition (item, event, session state) per message.
    before = await count()
    began = time.perf_counter()
    await asyncio.gather(
        *(service.send(session_id, f"queued {i}") for session_id in ids for i in range(items))
    )
    queue_rate = (await count() - before) / (time.perf_counter() - began)
    await owner.shutdown()
    raw = await asyncio.to_thread(raw_rate, store)
    store.close()
    return turns_rate, queue_rate, raw


def raw_rate(store: Store, count: int = 5000) -> float:
    """Single-row commits on the same file, through the same writer connection."""
    db = store._db  # the bench measures the bare connection on the writer thread

    def job() -> float:
        db.execute_sql("CREATE TABLE IF NOT EXISTS bench_raw (k INTEGER, v TEXT)")
        began = time.perf_counter()
        for i in range(count):
            db.execute_sql("BEGIN IMMEDIATE")
            db.execute_sql("INSERT INTO bench_raw VALUES (?, ?)", (i, "x" * 64))
            db.execute_sql("COMMIT")
        return count / (time.perf_counter() - began)

    return float(store._writer.call(job).result())


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    with tempfile.TemporaryDirectory() as folder:
        turns, queued, raw = asyncio.run(engine_rate(Path(folder), sessions, items))
    print(f"{sessions} sessions x {items} items, instant scripted model")
    print(f"  raw single-row commits, same file            : {raw:9.0f} /s")
    print(
        f"  transitions with whole turns (3 per item)     : {turns:9.0f} /s"
        f"  ratio {turns / raw:.3f}"
    )
    print(
        f"  queue transitions alone (send, concurrent)    : {queued:9.0f} /s"
        f"  ratio {queued / raw:.3f}"
    )


if __name__ == "__main__":
    main()
