"""The store: pragmas, the single writer thread, reads, and its guard rails."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import peewee
import pytest

from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.store import Store, repo
from fxdesk.store.db import CACHE_SIZE_KIB, WRITER_CACHE_SIZE_KIB
from fxdesk.store.errors import ReadOnlyError, StoreClosedError
from fxdesk.store.schema import SessionRow, SettingRow


def _pragma(store: Store, name: str) -> object:
    return store.execute_for_tests(f"PRAGMA {name}")[0][0]


def test_fresh_database_has_wal_and_the_required_pragmas(store: Store) -> None:
    assert store.journal_mode == "wal"
    assert _pragma(store, "journal_mode") == "wal"
    assert _pragma(store, "foreign_keys") == 1
    assert _pragma(store, "synchronous") == 1  # NORMAL
    assert _pragma(store, "busy_timeout") == 5000
    cache = _pragma(store, "cache_size")
    assert isinstance(cache, int) and cache < 0
    # the writer's page cache is smaller than a reader's (it mostly appends pages)
    assert cache == -WRITER_CACHE_SIZE_KIB
    reader_cache = store.read_blocking(lambda: store._db.pragma("cache_size"))
    assert reader_cache == -CACHE_SIZE_KIB and CACHE_SIZE_KIB > WRITER_CACHE_SIZE_KIB
    assert store.schema_version >= 1


def test_wal_is_what_the_file_says_to_another_connection(store: Store) -> None:
    import sqlite3

    store.write_blocking(lambda: repo.set_setting("x", 1))
    other = sqlite3.connect(store.path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def test_writes_run_on_the_writer_thread_and_reads_on_the_reader(store: Store) -> None:
    seen: dict[str, str] = {}

    def write() -> None:
        seen["write"] = threading.current_thread().name
        repo.set_setting("greeting", {"text": "hello", "n": 1})

    def read() -> object:
        seen["read"] = threading.current_thread().name
        return repo.get_setting("greeting")

    store.write_blocking(write)
    assert store.read_blocking(read) == {"text": "hello", "n": 1}
    assert seen["write"].startswith("fxdesk-db-writer")
    assert seen["read"].startswith("fxdesk-db-reader")
    assert threading.current_thread().name not in seen.values()


async def test_async_round_trip_does_not_run_on_the_loop_thread(store: Store) -> None:
    loop_thread = threading.get_ident()
    threads = []

    def write() -> int:
        threads.append(threading.get_ident())
        return int(SettingRow.insert(key="k", value_json="1", updated_at_ms=1).execute() or 0)

    await store.write(write)
    value = await store.read(lambda: repo.get_setting("k"))
    assert value == 1
    assert threads and loop_thread not in threads


async def test_a_cancelled_caller_does_not_drop_its_write(store: Store) -> None:
    gate = threading.Event()
    await store.write(lambda: None)  # writer thread warmed up

    def slow_write() -> None:
        gate.wait(10)
        repo.set_setting("late", True)

    task = asyncio.create_task(store.write(slow_write))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.set()
    # the write still lands: the next write queues behind it on the single writer
    await store.write(lambda: None)
    assert await store.read(lambda: repo.get_setting("late")) is True


async def test_blocking_calls_are_refused_on_a_running_loop(store: Store) -> None:
    with pytest.raises(RuntimeError, match="block the event loop"):
        store.write_blocking(lambda: None)
    with pytest.raises(RuntimeError, match="block the event loop"):
        store.read_blocking(lambda: None)


def test_the_reader_cannot_write(store: Store) -> None:
    with pytest.raises(ReadOnlyError):
        store.read_blocking(lambda: repo.set_setting("sneaky", 1))
    assert store.read_blocking(lambda: repo.get_setting("sneaky")) is None


def test_foreign_keys_are_enforced(store: Store) -> None:
    def orphan() -> None:
        SessionRow.create(
            id="s1",
            workspace=999,
            root_id="s1",
            is_child=False,
            name="x",
            mode="persistent",
            permission_mode="ask",
            state="idle",
            created_at_ms=1,
            updated_at_ms=1,
        )

    with pytest.raises(peewee.IntegrityError, match="FOREIGN KEY"):
        store.write_blocking(orphan)
    assert store.read_blocking(lambda: SessionRow.select().count()) == 0


def test_a_failing_write_rolls_back_everything_it_did(store: Store) -> None:
    def half() -> None:
        repo.set_setting("first", 1)
        raise ValueError("boom")

    with pytest.raises(ValueError):
        store.write_blocking(half)
    assert store.read_blocking(lambda: repo.get_setting("first")) is None


def test_create_session_writes_session_and_created_event(store: Store) -> None:
    def create() -> object:
        workspace, created = repo.ensure_workspace("/tmp/project", "project", 10)
        assert created
        return repo.create_session(
            session_id="abc",
            workspace=workspace,
            name="first",
            mode=SessionMode.PERSISTENT,
            permission_mode=PermissionMode.ASK,
            at_ms=10,
        )

    session = store.write_blocking(create)
    assert session.root_id == "abc" and session.next_event_sequence == 2
    events = store.execute_for_tests("SELECT sequence, revision, kind FROM control_event")
    assert events == [(1, 1, "created")]


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "db.sqlite3")
    store.close()
    store.close()  # idempotent
    with pytest.raises(StoreClosedError):
        store.write_blocking(lambda: None)


def test_only_one_store_per_process(store: Store, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="already open"):
        Store.open(tmp_path / "other.sqlite3")


def test_closing_checkpoints_and_removes_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    store = Store.open(path)
    store.write_blocking(lambda: repo.set_setting("x", 1))
    store.close()
    assert not Path(f"{path}-wal").exists()
