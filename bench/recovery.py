"""Start-up recovery time with many unfinished work items.

Builds a database with SESSIONS sessions holding ITEMS work items each (one running, the rest
pending, every session with some committed history), then times ``SessionOwner.recover()``:
session locks, one transaction, events published.

Run: python -m bench.recovery [SESSIONS] [ITEMS]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from fxdesk.engine.bus import EventBus
from fxdesk.engine.owner import SessionOwner
from fxdesk.engine.providers import FixedResolver
from fxdesk.engine.turn import TurnRunner
from fxdesk.providers.scripted import ScriptedProvider
from fxdesk.store import Store
from fxdesk.store.locks import SessionLock
from fxdesk.tools.base import ToolRegistry


def build(store: Store, sessions: int, items: int) -> None:
    db = store._db

    def job() -> None:
        db.execute_sql("INSERT INTO workspace VALUES (1, '/tmp/ws', 'ws', 0)")
        for s in range(sessions):
            sid = f"s{s:06d}"
            db.execute_sql(
                "INSERT INTO session (id, workspace_id, root_id, is_child, name, mode, "
                "permission_mode, state, generation, next_event_sequence, created_at_ms, "
                "updated_at_ms) "
                "VALUES (?, 1, ?, 0, ?, 'persistent', 'auto', 'running', 1, 1, 0, 0)",
                (sid, sid, sid),
            )
            for i in range(items):
                status = "running" if i == 0 else "pending"
                db.execute_sql(
                    "INSERT INTO work_item (id, session_id, position, source_id, kind, content, "
                    "status, created_at_ms, updated_at_ms) VALUES (?, ?, ?, 'p', 'prompt', 'x', "
                    "?, 0, 0)",
                    (f"{sid}-{i}", sid, i + 1, status),
                )
            db.execute_sql(
                "INSERT INTO history_entry (session_id, seq, work_id, kind, content, "
                "created_at_ms) VALUES (?, 1, ?, 'user', 'x', 0)",
                (sid, f"{sid}-0"),
            )

    store._writer.write(job, "build").result()


async def recover(root: Path, exclusive: bool = True) -> tuple[float, object]:
    store = await Store.aopen(root / "fxdesk.sqlite3")
    bus = EventBus()
    owner = SessionOwner(
        store,
        bus,
        lock_dir=root / "locks",
        providers=FixedResolver(ScriptedProvider([])),
        runner=TurnRunner(store, ToolRegistry(), bus),
    )
    began = time.perf_counter()
    # as at start-up: exclusive when this is the only fxdesk process
    report = await owner.recover(publish_sessions=False, exclusive=exclusive)
    elapsed = time.perf_counter() - began
    store.close()
    return elapsed, report


def main() -> None:
    sessions = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    items = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    for exclusive in (True, False):
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            store = Store.open(root / "fxdesk.sqlite3")
            build(store, sessions, items)
            store.close()
            if not exclusive:  # sessions that ran before have their lock files already
                _touch_locks(root, sessions)
            elapsed, report = asyncio.run(recover(root, exclusive))
        how = "the only fxdesk process" if exclusive else "proving every session lock"
        print(
            f"recovery of {sessions * items} work items in {sessions} sessions, {how}: "
            f"{elapsed * 1000:.0f} ms"
        )
        print(f"  {report}")


def _touch_locks(root: Path, sessions: int) -> None:
    for s in range(sessions):
        lock = SessionLock(root / "locks", f"s{s:06d}")
        lock.acquire(0)
        lock.release()


if __name__ == "__main__":
    main()
