"""The same statements without fxdesk: record what the store's writer runs, then replay it raw.

``Trace(store)`` records every statement the writer thread executes through the store's peewee
database (all of the store's SQL, including the ``BEGIN``/``SAVEPOINT``/``COMMIT`` it wraps work
in, so a replay keeps the transactions and group commits) with its parameters. ``snapshot``
copies the database as it was before the measured work, and ``replay`` runs the recorded
statements on that copy through bare ``sqlite3`` on one thread, with the store's pragmas,
fetching every result as the engine does: what remains is SQLite's own cost of exactly that
work. Reads the engine makes on other connections (``Store.read``) are not in it, so the
reference is, if anything, a little quick.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fxdesk.store import Store
from fxdesk.store.db import WRITER_CACHE_SIZE_KIB

Statement = tuple[str, Any, bool]  # sql, parameters, executemany


class _RecordingCursor:
    def __init__(self, cursor: sqlite3.Cursor, into: list[Statement]) -> None:
        self._cursor = cursor
        self._into = into

    def execute(self, sql: str, params: Sequence[Any] = ()) -> _RecordingCursor:
        self._into.append((sql, tuple(params), False))
        self._cursor.execute(sql, params)
        return self

    def executemany(self, sql: str, rows: Any) -> _RecordingCursor:
        rows = [tuple(row) for row in rows]
        self._into.append((sql, rows, True))
        self._cursor.executemany(sql, rows)
        return self

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


class Trace:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.statements: list[Statement] = []

    def __enter__(self) -> Trace:
        db = self.store._db  # the bench reaches into the store to watch its writer
        writer = self.store._writer.ident
        plain = db.cursor

        def cursor(*args: Any, **kwargs: Any) -> Any:
            real = plain(*args, **kwargs)
            if threading.get_ident() != writer:
                return real
            return _RecordingCursor(real, self.statements)

        db.cursor = cursor  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store._db.cursor  # the class's method again


def snapshot(store: Store, to: Path) -> None:
    """A consistent copy of the store's database at this moment (SQLite's backup API)."""
    db = store._db

    def job() -> None:
        db.connect(reuse_if_open=True)
        target = sqlite3.connect(to)
        try:
            db.connection().backup(target)
        finally:
            target.close()

    store._writer.call(job).result()


def replay(path: Path, statements: list[Statement]) -> float:
    """Run ``statements`` on ``path`` with bare sqlite3; returns the seconds it took."""
    conn = sqlite3.connect(path, isolation_level=None, cached_statements=256)
    try:
        for pragma in (
            "journal_mode = wal",
            "synchronous = normal",
            "foreign_keys = 1",
            f"cache_size = -{WRITER_CACHE_SIZE_KIB}",  # the writer's, whose statements these are
            "temp_store = memory",
        ):
            conn.execute(f"PRAGMA {pragma}")
        began = time.perf_counter()
        for sql, params, many in statements:
            if many:
                conn.executemany(sql, params)
            else:
                conn.execute(sql, params).fetchall()
        return time.perf_counter() - began
    finally:
        conn.close()
