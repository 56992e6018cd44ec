"""The cross-process session lock: busy at once for a second process, freed when the holder dies."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from fxdesk.store.locks import SessionLock, SessionLockBusy, is_locked_elsewhere
from tests.helpers import python_child

HOLDER = """
import sys
from pathlib import Path
from fxdesk.store.locks import SessionLock
lock = SessionLock(Path({folder!r}), "s1")
lock.acquire(0)
print("held", flush=True)
line = sys.stdin.readline()
lock.release()
print("released", flush=True)
sys.stdin.readline()
"""

TRY = """
import time
from pathlib import Path
from fxdesk.store.locks import SessionLock, SessionLockBusy
lock = SessionLock(Path({folder!r}), "s1")
start = time.monotonic()
try:
    lock.acquire({deadline})
except SessionLockBusy as busy:
    print("busy", busy.holder_pid, round(time.monotonic() - start, 3), flush=True)
else:
    print("acquired", flush=True)
"""


def _try_in_child(folder: Path, deadline: float) -> list[str]:
    child = python_child(TRY.format(folder=str(folder), deadline=deadline))
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    return out.split()


def test_a_second_process_is_busy_at_once(tmp_path: Path) -> None:
    lock = SessionLock(tmp_path, "s1")
    lock.acquire(0)
    try:
        words = _try_in_child(tmp_path, 0)
        assert words[0] == "busy"
        assert int(words[1]) == os.getpid()  # the report names the holder
        assert float(words[2]) < 5  # "at once": no waiting with a zero deadline
    finally:
        lock.release()
    assert _try_in_child(tmp_path, 0) == ["acquired"]


def test_the_lock_is_freed_when_its_holder_is_killed(tmp_path: Path) -> None:
    holder = python_child(HOLDER.format(folder=str(tmp_path)))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert is_locked_elsewhere(tmp_path, "s1") == holder.pid
        with pytest.raises(SessionLockBusy):
            SessionLock(tmp_path, "s1").acquire(0)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.communicate()
    lock = SessionLock(tmp_path, "s1")
    lock.acquire(0)
    lock.release()
    assert is_locked_elsewhere(tmp_path, "s1") is None


def test_a_deadline_waits_for_the_holder_to_let_go(tmp_path: Path) -> None:
    holder = python_child(HOLDER.format(folder=str(tmp_path)))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        lock = SessionLock(tmp_path, "s1")
        started = time.monotonic()
        assert holder.stdin is not None
        holder.stdin.write("go\n")
        holder.stdin.flush()
        lock.acquire(60)
        assert lock.held and time.monotonic() - started < 60
        lock.release()
    finally:
        holder.communicate("\n", timeout=30)


def test_two_locks_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    first, second = SessionLock(tmp_path, "s1"), SessionLock(tmp_path, "s1")
    with first:
        assert not second.try_acquire()
        assert SessionLock(tmp_path, "s2").try_acquire()  # other sessions are independent
    assert second.try_acquire()
    second.release()
    second.release()  # idempotent


def test_unsafe_session_ids_are_refused(tmp_path: Path) -> None:
    for bad in ("../etc", "a/b", "", "x" * 200, "a b"):
        with pytest.raises(ValueError):
            SessionLock(tmp_path, bad)
