"""Another process holding the database's write lock, for tests of a busy store."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path

from fxdesk.store import Store
from tests.helpers import python_child

LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@contextlib.contextmanager
def write_locked_by_another_process(path: Path) -> Iterator[None]:
    """While inside, a child process holds ``path``'s write lock (``BEGIN IMMEDIATE``)."""
    child = python_child(LOCKER.replace("sys.argv[1]", repr(str(path))))
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        yield
    finally:
        child.communicate("\n", timeout=30)


async def shorten_busy_wait(store: Store, ms: int = 200) -> None:
    """Make the store's writer give up on a held lock after ``ms`` (its default is seconds)."""
    await asyncio.to_thread(store.execute_for_tests, f"PRAGMA busy_timeout = {ms}")
