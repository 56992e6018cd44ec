"""Each bad database gets its clear message and stays byte-for-byte unchanged."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.store import Store, migrations, repo
from fxdesk.store.errors import (
    CorruptDatabaseError,
    DatabaseLockedError,
    DiskFullError,
    NewerSchemaError,
    NotADatabaseError,
    ReadOnlyError,
)
from tests.helpers import python_child


def _make_db(path: Path, rows: int = 3) -> None:
    store = Store.open(path)
    try:
        for i in range(rows):
            store.write_blocking(lambda i=i: repo.set_setting(f"k{i}", i))
    finally:
        store.close()


def _digest(path: Path) -> str:
    """The file's hash, read by another process: opening and closing a database file in this
    process would drop the POSIX locks SQLite holds on it (fcntl semantics)."""
    return subprocess.run(
        ["sha256sum", str(path)], capture_output=True, text=True, check=True
    ).stdout.split()[0]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    _make_db(path)
    newer = migrations.LATEST_VERSION + 3
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {newer}")
    conn.commit()
    conn.close()
    before = _snapshot(tmp_path)
    with pytest.raises(NewerSchemaError) as caught:
        Store.open(path)
    assert (
        f"created by a newer fxdesk (schema {newer}); upgrade fxdesk or use --data-dir"
        in caught.value.user_message
    )
    assert _snapshot(tmp_path) == before  # no -wal/-shm left behind either


def test_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    path.write_bytes(os.urandom(4096))
    before = path.read_bytes()
    with pytest.raises(NotADatabaseError, match="is not an fxdesk database"):
        Store.open(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fxdesk.sqlite3"]


def test_an_sqlite_database_of_another_program(tmp_path: Path) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE bookmarks (url TEXT)")
    conn.execute("INSERT INTO bookmarks VALUES ('https://example.org')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotADatabaseError, match="another program"):
        Store.open(path)
    assert path.read_bytes() == before


def test_a_corrupt_database(tmp_path: Path) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    _make_db(path)
    data = bytearray(path.read_bytes())
    # Page 1 holds the schema table right after the 100-byte file header: garble it.
    data[100:1024] = os.urandom(924)
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    with pytest.raises(CorruptDatabaseError, match="is damaged"):
        Store.open(path)
    assert path.read_bytes() == before


@contextlib.contextmanager
def _tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextlib.contextmanager
def _read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a valid database that this process cannot write."""
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        _make_db(folder / "fxdesk.sqlite3")
        (folder / "fxdesk.sqlite3").chmod(0o444)
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    # root ignores permission bits: use a read-only mount instead
    with _tmpfs(tmp_path / "ro", "8m") as folder:
        _make_db(folder / "fxdesk.sqlite3")
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        yield folder


def test_a_read_only_database(tmp_path: Path) -> None:
    with _read_only_folder(tmp_path) as folder:
        before = _snapshot(folder)
        with pytest.raises(ReadOnlyError, match="cannot write"):
            Store.open(folder / "fxdesk.sqlite3")
        assert _snapshot(folder) == before


def test_disk_full_on_a_write_saves_nothing_and_recovers(store: Store) -> None:
    # SQLite's own limit raises the same SQLITE_FULL a full disk does.
    pages = store.execute_for_tests("PRAGMA page_count")[0][0]
    store.execute_for_tests(f"PRAGMA max_page_count = {pages}")
    rows_before = store.read_blocking(lambda: repo.get_setting("big"))
    with pytest.raises(DiskFullError, match="is full; nothing was saved"):
        store.write_blocking(lambda: repo.set_setting("big", "x" * 200_000))
    assert store.read_blocking(lambda: repo.get_setting("big")) == rows_before
    store.execute_for_tests("PRAGMA max_page_count = 1073741823")
    store.write_blocking(lambda: repo.set_setting("big", "x" * 200_000))
    assert len(store.read_blocking(lambda: repo.get_setting("big"))) == 200_000


def test_a_really_full_disk(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "small", "512k") as folder:
        path = folder / "fxdesk.sqlite3"
        store = Store.open(path)
        try:
            store.write_blocking(lambda: repo.set_setting("kept", "safe"))
            with pytest.raises(DiskFullError):
                for i in range(200):
                    store.write_blocking(lambda i=i: repo.set_setting(f"fill{i}", "y" * 8192))
            assert store.read_blocking(lambda: repo.get_setting("kept")) == "safe"
        finally:
            store.close()


LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
conn.execute("BEGIN EXCLUSIVE")
conn.execute("PRAGMA user_version")
if len(sys.argv) > 2:
    conn.execute("CREATE TABLE IF NOT EXISTS intruder (x)")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


@contextlib.contextmanager
def _locked_by_another_process(path: Path, write: bool = True) -> Iterator[int]:
    code = LOCKER.replace("sys.argv[1]", repr(str(path)))
    if write:
        code = code.replace("len(sys.argv) > 2", "True")
    child = python_child(code)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        yield child.pid
    finally:
        child.communicate("\n", timeout=30)


def test_a_write_blocked_past_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    _make_db(path)
    store = Store.open(path, busy_timeout_s=0.3)
    try:
        before = _digest(path)
        with (
            _locked_by_another_process(path) as holder,
            pytest.raises(DatabaseLockedError) as caught,
        ):
            store.write_blocking(lambda: repo.set_setting("blocked", 1))
        # the holder is named (issue 16 item 2: "in use by …", not "another program")
        message = caught.value.user_message
        assert f"locked by process {holder} (python" in message and ") for 0.3 s" in message
        assert _digest(path) == before
        # once the other program lets go, writing works again
        store.write_blocking(lambda: repo.set_setting("after", 1))
        assert store.read_blocking(lambda: repo.get_setting("blocked")) is None
    finally:
        store.close()


def test_opening_a_database_locked_past_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 0")  # an empty SQLite file: needs every migration
    conn.execute("CREATE TABLE t (x)")
    conn.execute("DROP TABLE t")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with (
        _locked_by_another_process(path, write=False),
        pytest.raises(DatabaseLockedError, match="stayed locked"),
    ):
        Store.open(path, busy_timeout_s=0.3)
    assert path.read_bytes() == before
