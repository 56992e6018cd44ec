"""Migration 5 rebuilds the session table (its CHECK now admits ``unrestricted``) the SQLite
way. A real schema-4 database, made by the engine of that schema (sessions, a child, work,
history, approvals, deliveries), comes through with every row of every table unchanged, the
foreign keys still enforced, and the new mode storable; a database whose rows already break a
foreign key is refused and left at schema 4."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import PermissionMode
from fxdesk.store import Store, attachments, history, migrations
from tests.engine.harness import Engine, append_line, say


@pytest.fixture(autouse=True)
def close_leftover_store() -> Iterator[None]:
    yield
    leftover = Store._open_instance
    if leftover is not None:
        leftover.close()


def at_schema_4(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process an fxdesk of schema 4 (one without attached images: their table
    came with schema 10)."""
    monkeypatch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:4])
    monkeypatch.setattr(migrations, "LATEST_VERSION", 4)
    monkeypatch.setattr(history, "user_entry_data", lambda _work_id: {})
    monkeypatch.setattr(attachments, "user_entry_data", lambda _work_id: {})


async def make_v4_database(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions, a child, work items, history, an answered approval, as a schema-4 engine
    leaves them."""
    with monkeypatch.context() as patched:
        at_schema_4(patched)
        engine = await Engine.create(
            root,
            [append_line("notes.txt", "from the root"), say("root done"), say("child done")],
            permissions=True,
        )
        try:
            service = engine.permissions
            assert service is not None
            root_session = await engine.sessions.create_root(
                engine.workspace, name="root", permission_mode=PermissionMode.ASK,
                first_message="write a note",
            )  # fmt: skip
            engine.owner.start(root_session.id)
            done = asyncio.ensure_future(engine.owner.join(root_session.id))
            while not done.done():  # ask mode asks before the write: allow it once
                for approval in await service.pending(root_session.id):
                    await service.resolve(approval.id, Choice.ONCE)
                await asyncio.wait({done}, timeout=0.01)
            child = await engine.child(root_session, "a task for the child")
            await engine.run(child.id)
        finally:
            await engine.close()


def dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (rowid order), read from a separate connection; the full-text
    index's tables are left out (derived from the history, and some have no rowid)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'history_fts%' ORDER BY name"
            )
        ]
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        db.close()


def version(path: Path) -> int:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(db.execute("PRAGMA user_version").fetchone()[0])
    finally:
        db.close()


def test_a_real_v4_database_comes_through_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(make_v4_database(tmp_path, monkeypatch))
    path = tmp_path / "fxdesk.sqlite3"
    assert version(path) == 4
    before = dump(path)
    for table in ("session", "work_item", "history_entry", "approval", "delivery"):
        assert before[table], f"the v4 database has no {table} rows to carry"
    assert any(row[2] is not None for row in before["session"])  # a child (parent_id set)

    store = Store.open(path)
    try:
        assert store.schema_version == migrations.LATEST_VERSION and store.migrated_from == 4
        checks = store.execute_for_tests("PRAGMA integrity_check")
        assert checks == [("ok",)]
        assert store.execute_for_tests("PRAGMA foreign_key_check") == []
        assert store.execute_for_tests("PRAGMA foreign_keys") == [(1,)]
        indexes = store.execute_for_tests(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'session'"
        )
        assert {"session_workspace", "session_parent", "session_root"} <= {n for (n,) in indexes}
    finally:
        store.close()
    after = dump(path)
    assert {table: after[table] for table in before} == before
    assert all(not rows for table, rows in after.items() if table not in before)  # new, empty

    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA foreign_keys = ON")
        root_id = next(row[0] for row in before["session"] if row[2] is None)
        db.execute("UPDATE session SET permission_mode = 'unrestricted' WHERE id = ?", (root_id,))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            db.execute("UPDATE session SET permission_mode = 'bogus' WHERE id = ?", (root_id,))
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            db.execute(
                "INSERT INTO work_item (id, session_id, position, source_id, kind, content, "
                "status, created_at_ms, updated_at_ms) VALUES "
                "('w-x', 'no-such-session', 1, 'p', 'prompt', 'x', 'pending', 1, 1)"
            )
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            db.execute("DELETE FROM session WHERE id = ?", (root_id,))  # its child restricts
    finally:
        db.close()


def test_a_database_whose_rows_break_a_foreign_key_is_refused_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(make_v4_database(tmp_path, monkeypatch))
    path = tmp_path / "fxdesk.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    try:  # foreign keys off (sqlite3's default): an orphan, as a damaged file may hold
        db.execute(
            "INSERT INTO history_entry (session_id, seq, kind, content, created_at_ms) "
            "VALUES ('gone', 1, 'notice', 'orphan', 1)"
        )
    finally:
        db.close()
    before = dump(path)
    with pytest.raises(migrations.MigrationError, match="history_entry"):
        Store.open(path)
    assert version(path) == 4
    after = dump(path)
    assert {table: after[table] for table in before} == before
    assert all(not rows for table, rows in after.items() if table not in before)  # new, empty
