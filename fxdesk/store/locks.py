"""Cross-process session locks: one writer per session, across every fxdesk process.

Each session has a lock file ``<data>/locks/<session>.lock`` locked with ``flock(2)``. The kernel
drops the lock when the holder's file descriptor closes, so a process that dies (even ``kill -9``)
frees it at once. ``flock`` locks belong to an open file description, so two ``SessionLock``
objects in one process also exclude each other. The holder writes its pid into the file so a
"busy" report can say who holds it.

The same kind of lock says which fxdesk processes live (``InstanceLock``: ``instance.lock`` and
one ``instances/<id>.lock`` per process) and whether a window picks up handed-off work
(``HandoffLock``).

Written with ``fcntl`` rather than the ``filelock`` package: we need the holder's pid in the file
(``filelock`` truncates it on open) and no per-thread re-entrancy.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import time
import uuid
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
    """Who else runs: every fxdesk engine holds ``<data>/locks/instance.lock`` shared, and its
    own ``<data>/locks/instances/<instance_id>.lock`` exclusively for as long as it lives.

    A process that can take ``instance.lock`` exclusively is the only one. It keeps it exclusive
    until ``share``, which ``App`` calls once start-up recovery has committed: another fxdesk
    starting meanwhile waits in ``acquire`` instead of running work that recovery, believing
    itself alone, would then interrupt (issue 10 item 11).

    The per-instance lock names a process that queued work (``work_item.owner_instance``): its
    pending work is abandoned only once ``instance_alive`` says it is gone. Ids are random and
    never reused, so "dead" stays true.

    Attributes:
        instance_id: this process's identity, recorded on the work it queues.
        alone: whether ``acquire`` found no other fxdesk running.
    """

    def __init__(self, lock_dir: Path, instance_id: str | None = None) -> None:
        self.path = lock_dir / "instance.lock"
        self.instance_id = instance_id or uuid.uuid4().hex
        self.alone = False
        self._fd: int | None = None
        self._mine: int | None = None
        self._exclusive = False

    def acquire(self) -> bool:
        """Take the lock: exclusively if no other fxdesk runs (returns True), else shared.

        Blocks while another process holds it exclusively (it is recovering alone); call it off
        the event loop.
        """
        if self._fd is not None:
            raise RuntimeError("the instance lock is already held")
        self._mine = _hold_instance_file(self.path.parent, self.instance_id)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except BaseException:
            self._release_mine()
            raise
        try:
            self.alone = _try_flock(fd, fcntl.LOCK_EX)
            if not self.alone:
                fcntl.flock(fd, fcntl.LOCK_SH)  # waits while another process recovers alone
        except BaseException:
            os.close(fd)
            self._release_mine()
            raise
        self._fd = fd
        self._exclusive = self.alone
        return self.alone

    def share(self) -> None:
        """Let other fxdesk processes start (after this one's recovery has committed).

        ``flock`` converts by dropping and re-taking, so a process may slip in with an
        exclusive lock between the two; this call then waits until that one has recovered,
        before anything of ours runs."""
        if self._fd is not None and self._exclusive:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            self._exclusive = False

    def hold_shared(self) -> bool:
        """``acquire`` then ``share`` at once (a process that recovers nothing); True if alone."""
        alone = self.acquire()
        self.share()
        return alone

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        self._exclusive = False
        self._release_mine()

    def _release_mine(self) -> None:
        fd, self._mine = self._mine, None
        if fd is not None:
            # Unlinked while still locked: a prober that opens the name now finds no file,
            # which means "dead", and that is what we are about to be.
            with contextlib.suppress(OSError):
                _instance_file(self.path.parent, self.instance_id).unlink()
            os.close(fd)


def instance_alive(lock_dir: Path, instance_id: str) -> bool:
    """Whether the fxdesk process ``instance_id`` still runs (it holds its instance file).

    A dead instance's file is removed on the way (it is never needed again)."""
    path = _instance_file(lock_dir, instance_id)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        if not _try_flock(fd, fcntl.LOCK_EX):
            return True
        with contextlib.suppress(OSError):
            path.unlink()
        return False
    finally:
        os.close(fd)


def prune_dead_instances(lock_dir: Path) -> int:
    """Remove the files of fxdesk instances that are gone (killed ones leave theirs behind);
    how many. Safe at any time: a missing file means "dead" to ``instance_alive`` too."""
    folder = lock_dir / "instances"
    try:
        names = [p.stem for p in folder.iterdir() if p.suffix == ".lock"]
    except FileNotFoundError:
        return 0
    return sum(1 for name in names if _SAFE_ID.match(name) and not instance_alive(lock_dir, name))


class HandoffLock:
    """Held shared by every process that runs work handed to "whichever fxdesk runs next"
    (the window), so ``fxdesk send --no-wait`` can say whether one will pick its message up."""

    def __init__(self, lock_dir: Path) -> None:
        self.path = lock_dir / "handoff.lock"
        self._fd: int | None = None

    def hold(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)  # never waits: nobody takes it exclusively for long
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @staticmethod
    def held_elsewhere(lock_dir: Path) -> bool:
        """Whether some process holds it (a probe: taken and dropped at once)."""
        try:
            fd = os.open(lock_dir / "handoff.lock", os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            return not _try_flock(fd, fcntl.LOCK_EX)
        finally:
            os.close(fd)


def _instance_file(lock_dir: Path, instance_id: str) -> Path:
    if not _SAFE_ID.match(instance_id):
        raise ValueError(f"unsafe instance id for a lock file: {instance_id!r}")
    return lock_dir / "instances" / f"{instance_id}.lock"


def _hold_instance_file(lock_dir: Path, instance_id: str) -> int:
    path = _instance_file(lock_dir, instance_id)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        if not _try_flock(fd, fcntl.LOCK_EX):
            raise RuntimeError(f"fxdesk instance {instance_id} is already running")
        os.pwrite(fd, f"{os.getpid():>10}\n".encode(), 0)  # for people reading the folder
    except BaseException:
        os.close(fd)
        raise
    return fd


def _try_flock(fd: int, operation: int) -> bool:
    """``flock`` without waiting; False if another holder conflicts."""
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        return False
    return True
