"""Who holds the database's write lock, so "the database is locked" can name them.

In WAL mode SQLite's unix VFS takes the write lock as a POSIX record lock on byte 120 of the
``-shm`` file (``WALINDEX_LOCK_OFFSET``, lock 0 is ``WAL_WRITE_LOCK``; see SQLite's ``wal.c``).
``fcntl(F_GETLK)`` asks the kernel which process holds a lock that would conflict with ours, and
answers with its pid: the fxdesk, the sqlite3 shell or the backup tool that keeps a transaction
open. Linux's ``/proc`` then says what it is and whether it is stopped (a frozen holder keeps
the lock until it runs again, so the person should know that waiting alone will not help).

Only for messages: any failure means "unknown" (``None``), never an error of its own.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

_WAL_WRITE_LOCK_BYTE = 120
# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid.
_FLOCK = "hhqqi4x"


def write_lock_holder(database: Path) -> int | None:
    """The pid of the process holding ``database``'s WAL write lock, if another one does."""
    try:
        fd = os.open(f"{database}-shm", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        asked = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, _WAL_WRITE_LOCK_BYTE, 1, 0)
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, asked)
        kind, _whence, _start, _length, pid = struct.unpack(_FLOCK, answer)
    except (OSError, struct.error):
        return None
    finally:
        os.close(fd)
    return pid if kind != fcntl.F_UNLCK and pid > 0 else None


def describe_process(pid: int) -> str:
    """``process 1234 (sqlite3)``, with ``stopped`` when it is frozen (SIGSTOP, a debugger)."""
    words = []
    try:
        words.append(Path(f"/proc/{pid}/comm").read_text(encoding="utf-8").strip())
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
        state = stat.rsplit(")", 1)[1].split()[0]  # the name in parentheses may hold spaces
        if state in ("T", "t"):
            words.append("stopped")
    except (OSError, IndexError):
        pass
    return f"process {pid} ({', '.join(words)})" if words else f"process {pid}"


def holder_words(database: Path) -> str:
    """Who holds the write lock, in words for a message ("another program" when unknown)."""
    pid = write_lock_holder(database)
    return describe_process(pid) if pid is not None else "another program"
