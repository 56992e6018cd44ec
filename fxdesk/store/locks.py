"""Cross-process session locks: one writer per session, across every fxdesk process.

Each session has a lock file ``<data>/locks/<session>.lock`` locked with ``flock(2)``. The kernel
drops the lock when the holder's file descriptor closes, so a process that dies (even ``kill -9``)
frees it at once. ``flock`` locks belong to an open file description, so two ``SessionLock``
objects in one process also exclude each other. The holder writes its pid into the file so a
"busy" report can say who holds it.

Written with ``fcntl`` rather than the ``filelock`` package: we need the holder's pid in the file
(``filelock`` truncates it on open) and no per-thread re-entrancy.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import time
from pathlib import Path
from types import TracebackType

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_POLL_S = 0.02


class SessionLockBusy(Exception):
    """Another holder has the session lock."""

    def __init__(self, session_id: str, holder_pid: int | None) -> None:
        who = f"process {holder_pid}" if holder_pid else "another process"
        super().__init__(f"session {session_id} is in use by {who}")
        self.session_id = session_id
        self.holder_pid = holder_pid


class SessionLock:
    """An exclusive, non-reentrant lock on one session, held until ``release``."""

    def __init__(self, lock_dir: Path, session_id: str) -> None:
        if not _SAFE_ID.match(session_id):
            raise ValueError(f"unsafe session id for a lock file: {session_id!r}")
        self.session_id = session_id
        self.path = lock_dir / f"{session_id}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, deadline_s: float = 0.0) -> None:
        """Take the lock, trying until ``deadline_s`` seconds have passed (0: try once).

        Raises:
            SessionLockBusy: someone else still holds it at the deadline.
        """
        if self._fd is not None:
            raise RuntimeError(f"session lock {self.session_id} is already held by this object")
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        give_up = time.monotonic() + max(deadline_s, 0.0)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                        raise
                if time.monotonic() >= give_up:
                    raise SessionLockBusy(self.session_id, read_holder_pid(self.path))
                time.sleep(min(_POLL_S, max(give_up - time.monotonic(), 0.001)))
            # Fixed width, so no truncate is needed (it costs more than the lock itself).
            os.pwrite(fd, f"{os.getpid():>10}\n".encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def try_acquire(self) -> bool:
        """Take the lock if it is free right now."""
        try:
            self.acquire(0.0)
        except SessionLockBusy:
            return False
        return True

    def release(self) -> None:
        """Let go (idempotent). The file stays, with the last holder's pid in it: the pid is
        only read while someone holds the lock, and every holder writes its own first."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the flock

    def __enter__(self) -> SessionLock:
        if not self.held:
            self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def read_holder_pid(path: Path) -> int | None:
    """The pid written by the current holder, if any (advisory; for messages only)."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def is_locked_elsewhere(lock_dir: Path, session_id: str) -> int | None:
    """Probe without keeping the lock: the holder's pid (0 if unknown) when busy, else ``None``."""
    probe = SessionLock(lock_dir, session_id)
    try:
        probe.acquire(0.0)
    except SessionLockBusy as busy:
        return busy.holder_pid or 0
    probe.release()
    return None


class InstanceLock:
    """Every running fxdesk process holds ``<data>/locks/instance.lock`` shared.

    A process that can take it exclusively is the only one: start-up recovery may then treat
    *pending* work as abandoned too. With other processes alive, recovery touches only work
    whose session lock is free (its process died).
    """

    def __init__(self, lock_dir: Path) -> None:
        self.path = lock_dir / "instance.lock"
        self._fd: int | None = None

    def hold_shared(self) -> bool:
        """Take the shared lock; True if this process was alone (checked exclusively first)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                os.close(fd)
                raise
            alone = False
        fcntl.flock(fd, fcntl.LOCK_SH)  # converts an exclusive lock in place
        self._fd = fd
        return alone

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
