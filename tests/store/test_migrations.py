"""Schema versions and migrations: from an empty file and from every earlier version."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fxdesk.store import Store, migrations
from fxdesk.store.schema import ALL_MODELS


def _build_at_version(path: Path, version: int) -> None:
    """A database exactly as an fxdesk at schema ``version`` would have left it."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = wal")
        for migration in migrations.MIGRATIONS[:version]:
            conn.execute("BEGIN IMMEDIATE")
            migration.apply(conn.execute)
            conn.execute(f"PRAGMA user_version = {migration.version}")
            conn.execute("COMMIT")
    finally:
        conn.close()


def _seed(path: Path, version: int) -> None:
    """Rows a user of that version would have, so migrations must carry data forward."""
    if version < 1:
        return
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(
            "INSERT INTO workspace (id, path, name, created_at_ms) VALUES (1, '/p', 'p', 1)"
        )
        conn.execute(
            "INSERT INTO session (id, workspace_id, root_id, is_child, name, mode, "
            "permission_mode, state, created_at_ms, updated_at_ms) VALUES "
            "('s1', 1, 's1', 0, 'kept', 'persistent', 'ask', 'idle', 1, 1)"
        )
        conn.execute("INSERT INTO setting VALUES ('theme', '\"dark\"', 1)")
    finally:
        conn.close()


def test_migrates_a_new_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    path.touch()
    store = Store.open(path)
    try:
        assert store.schema_version == migrations.LATEST_VERSION
        assert store.migrated_from == 0
    finally:
        store.close()


@pytest.mark.parametrize("version", range(migrations.LATEST_VERSION))
def test_migrates_from_every_earlier_version(tmp_path: Path, version: int) -> None:
    path = tmp_path / "db.sqlite3"
    _build_at_version(path, version)
    _seed(path, version)
    store = Store.open(path)
    try:
        assert store.schema_version == migrations.LATEST_VERSION
        assert store.migrated_from == version
        app_id = store.execute_for_tests("PRAGMA application_id")[0][0]
        assert app_id == migrations.APPLICATION_ID
        if version >= 1:
            assert store.execute_for_tests("SELECT name FROM session") == [("kept",)]
            assert store.execute_for_tests("SELECT value_json FROM setting") == [('"dark"',)]
    finally:
        store.close()


def test_reopening_a_current_database_runs_no_migration(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    Store.open(path).close()
    store = Store.open(path)
    try:
        assert store.migrated_from is None
    finally:
        store.close()


def test_models_describe_exactly_the_migrated_tables(store: Store) -> None:
    for model in ALL_MODELS:
        table = model._meta.table_name
        columns = {row[1] for row in store.execute_for_tests(f"PRAGMA table_info({table})")}
        fields = {f.column_name for f in model._meta.sorted_fields}
        assert columns == fields, table


def test_a_failing_migration_leaves_the_previous_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "db.sqlite3"
    Store.open(path).close()
    before = path.read_bytes()
    broken = migrations.Migration(
        migrations.LATEST_VERSION + 1,
        "broken",
        [
            "CREATE TABLE half_done (x INTEGER)",
            "THIS IS NOT SQL",
        ],
    )
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, broken))
    monkeypatch.setattr(migrations, "LATEST_VERSION", broken.version)
    with pytest.raises(Exception, match="syntax error"):
        Store.open(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == broken.version - 1
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "half_done" not in tables
    finally:
        conn.close()
    assert path.read_bytes() == before


def test_migrations_are_numbered_in_order() -> None:
    assert [m.version for m in migrations.MIGRATIONS] == list(
        range(1, len(migrations.MIGRATIONS) + 1)
    )
