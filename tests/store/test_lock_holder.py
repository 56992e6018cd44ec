"""Naming who holds the database's write lock (issue 16 item 2: a frozen holder)."""

from __future__ import annotations

import os
import signal
import sqlite3
from pathlib import Path

from fxdesk.store.lock_holder import describe_process, holder_words, write_lock_holder
from tests.engine.locking import LOCKER
from tests.helpers import python_child, wait_for


def _wal_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=wal")
        db.execute("CREATE TABLE t (x)")


def test_the_holder_of_the_write_lock_is_named_and_a_frozen_one_is_called_stopped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fxdesk.sqlite3"
    _wal_database(path)
    reader = sqlite3.connect(path)  # a reader keeps the -shm file, as a running fxdesk does
    reader.execute("SELECT * FROM t").fetchall()
    assert write_lock_holder(path) is None
    assert holder_words(path) == "another program"
    child = python_child(LOCKER.replace("sys.argv[1]", repr(str(path))))
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        assert write_lock_holder(path) == child.pid
        name = Path(f"/proc/{child.pid}/comm").read_text().strip()  # "python", "python3.12"
        assert holder_words(path) == f"process {child.pid} ({name})"
        child.send_signal(signal.SIGSTOP)
        wait_for(lambda: "stopped" in holder_words(path), 30, what="the holder to stop")
        assert holder_words(path) == f"process {child.pid} ({name}, stopped)"
        child.send_signal(signal.SIGCONT)
    finally:
        child.send_signal(signal.SIGCONT)
        child.communicate("\n", timeout=30)
        reader.close()
    assert write_lock_holder(path) is None


def test_no_shared_memory_file_or_no_such_process_is_unknown(tmp_path: Path) -> None:
    assert write_lock_holder(tmp_path / "missing.sqlite3") is None
    assert describe_process(os.getpid()).startswith(f"process {os.getpid()} (")
    assert describe_process(2**22 + 7) == f"process {2**22 + 7}"
