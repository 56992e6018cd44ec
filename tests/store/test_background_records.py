"""Background task records (migration 6, store/background.py) on a real SQLite file."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from fxdesk.domain.background import BackgroundRecord, LaunchPolicy, Origin, TaskState
from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.store import Store, background, repo

TOKEN = "linux:00112233445566778899aabbccddeeff:12345"


def _session(store: Store, session_id: str, folder: str = "/w") -> int:
    def make() -> int:
        workspace, _ = repo.ensure_workspace(folder, "w", 1)
        repo.create_session(
            session_id=session_id,
            workspace=workspace,
            name="s",
            mode=SessionMode.PERSISTENT,
            permission_mode=PermissionMode.YOLO,
            at_ms=1,
        )
        return workspace.id

    return store.write_blocking(make)


def _record(session_id: str, number: int, stable: str, **changes: object) -> BackgroundRecord:
    record = BackgroundRecord(
        session_id=session_id,
        number=number,
        stable_id=stable,
        workspace_id=1,
        policy=LaunchPolicy.DURABLE,
        origin=Origin.AGENT,
        pid=12345,
        token=TOKEN,
        command="vite",
        cwd="/w",
        log_path="/w/log",
        expect_url=True,
        url=None,
        exit_code=None,
        state=TaskState.RUNNING,
        started_at_ms=10,
        updated_at_ms=10,
        owner_instance="me",
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


def test_saved_records_read_back_and_update(store: Store) -> None:
    _session(store, "s1")
    store.write_blocking(lambda: background.save(_record("s1", 42, "a" * 32)))
    assert store.read_blocking(lambda: background.highest_number("s1")) == 42
    changed = _record("s1", 42, "a" * 32, state=TaskState.STOPPED, updated_at_ms=20)
    store.write_blocking(lambda: background.save(changed))
    got = store.read_blocking(lambda: background.by_stable_id("s1", "a" * 32))
    assert got == changed
    assert store.read_blocking(background.running) == []


def test_a_number_holding_another_task_is_a_conflict(store: Store) -> None:
    _session(store, "s1")
    store.write_blocking(lambda: background.save(_record("s1", 1, "a" * 32)))
    with pytest.raises(background.RecordConflict):
        store.write_blocking(lambda: background.save(_record("s1", 1, "b" * 32)))
    with pytest.raises(background.RecordConflict):  # the same task under another number
        store.write_blocking(lambda: background.save(_record("s1", 2, "a" * 32)))


def test_a_record_another_process_owns_is_never_rewritten(store: Store) -> None:
    _session(store, "s1")
    store.write_blocking(lambda: background.save(_record("s1", 1, "a" * 32, owner_instance="p1")))
    with pytest.raises(background.RecordConflict, match="another fxdesk"):
        store.write_blocking(
            lambda: background.save(
                _record("s1", 1, "a" * 32, owner_instance="p2", state=TaskState.STALE)
            )
        )
    # Adoption is conditional on the owner read: only one of two racing processes wins.
    assert store.write_blocking(lambda: background.adopt("s1", "a" * 32, "p1", "p2"))
    assert not store.write_blocking(lambda: background.adopt("s1", "a" * 32, "p1", "p3"))
    got = store.read_blocking(lambda: background.by_stable_id("s1", "a" * 32))
    assert got is not None and got.owner_instance == "p2" and got.state is TaskState.RUNNING


def test_the_table_refuses_bad_rows(tmp_path: Path) -> None:
    Store.open(tmp_path / "db.sqlite3").close()
    db = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    try:
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            db.execute(
                "INSERT INTO background_task VALUES ('nobody', 1, ?, 1, 'durable', 'agent', 1, "
                "NULL, 'x', '/', '/l', 0, NULL, NULL, 'running', NULL, NULL, 1, 1)",
                ("a" * 32,),
            )
    finally:
        db.close()
