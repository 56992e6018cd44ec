"""Which process a PID names now, and signals that reach only the process a token names.

A token (``fxdesk.domain.process_identity``) is the boot id and the process's start time. On
Linux both come from ``/proc``: ``/proc/sys/kernel/random/boot_id`` and field 22 of
``/proc/PID/stat`` (start ticks since boot), read after the *last* ``)``, because the command
name in parentheses may itself hold spaces and parentheses. Elsewhere psutil's boot time and
create time stand in.

A zombie (exited, not yet reaped) still matches: its PID cannot be given to another process
until it is reaped, so a signal to its group cannot reach a stranger.

``signal_group`` checks the token again right before it signals. Where the kernel has it (Linux
6.9 and later), the check and the signal go through one pidfd, opened *before* the check: a
PID whose token still matches after the pidfd was opened was that process when it was opened
(it held the PID since it started), and ``pidfd_send_signal(PIDFD_SIGNAL_PROCESS_GROUP)``
then signals exactly the group that process leads, even if it exits meanwhile. Elsewhere it is
``os.killpg`` right after the check; a PID is not handed out again while a process group still
has that id, so only a wrapper that exits, is reaped and has its PID reused by a new group
leader in the microseconds between the check and the signal could be missed that way.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import sys
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from fxdesk.domain.process_identity import ProcessToken, TokenMatch
from fxdesk.tools.background.provider import (
    ProcessIdentityIndeterminate,
    ProcessIdentityUnavailable,
)

PROC = Path("/proc")
BOOT_ID = PROC / "sys/kernel/random/boot_id"
_START_TICKS_FIELD = 22  # in /proc/PID/stat, counting the PID as field 1
_FIELDS_BEFORE_STATE = 2  # the PID and the command name, before the last ')'
PIDFD_SIGNAL_PROCESS_GROUP = 1 << 2  # <linux/pidfd.h>, Linux 6.9

_group_flag_works = True  # until the kernel says EINVAL (before Linux 6.9)


def read_stat(pid: int) -> str:
    """``/proc/PID/stat`` (a seam for the tests that make it unreadable)."""
    return (PROC / str(pid) / "stat").read_text(encoding="ascii", errors="replace")


@functools.cache
def boot_id() -> str:
    """This boot's id, 32 lower-case hex digits (it cannot change while fxdesk runs)."""
    return BOOT_ID.read_text(encoding="ascii").strip().replace("-", "").lower()


def capture_token(pid: int) -> ProcessToken:
    """The identity of the process with this PID now.

    Raises:
        ProcessLookupError: No process has this PID.
        ProcessIdentityUnavailable: It could not be read (permissions, a partial read, no
            ``/proc``): transient, the caller may try again.
    """
    if pid <= 0:
        raise ProcessLookupError(f"no process has the PID {pid}")
    if sys.platform.startswith("linux"):
        return _linux_token(pid)
    return _psutil_token(pid)


def _linux_token(pid: int) -> ProcessToken:
    try:
        stat = read_stat(pid)
        boot = boot_id()
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessLookupError(f"no process has the PID {pid}") from None
    except OSError as exc:
        raise ProcessIdentityUnavailable(f"cannot read PID {pid}: {exc.strerror}") from exc
    try:
        fields = stat[stat.rindex(")") + 1 :].split()
        ticks = fields[_START_TICKS_FIELD - 1 - _FIELDS_BEFORE_STATE]
        return ProcessToken(f"linux:{boot}:{int(ticks)}")
    except (ValueError, IndexError) as exc:
        raise ProcessIdentityUnavailable(f"unreadable /proc/{pid}/stat") from exc


def _psutil_token(pid: int) -> ProcessToken:
    try:
        created = psutil.Process(pid).create_time()
        booted = psutil.boot_time()
    except psutil.NoSuchProcess:
        raise ProcessLookupError(f"no process has the PID {pid}") from None
    except (psutil.Error, OSError) as exc:
        raise ProcessIdentityUnavailable(f"cannot read PID {pid}: {exc}") from exc
    return ProcessToken(f"psutil:{int(booted):032x}:{round(created * 1_000_000)}")


def match_token(pid: int, token: ProcessToken) -> TokenMatch:
    """How the process with this PID compares with ``token`` now (never raises)."""
    try:
        current = capture_token(pid)
    except ProcessLookupError:
        return TokenMatch.MISSING
    except ProcessIdentityUnavailable:
        return TokenMatch.UNAVAILABLE
    except Exception:
        return TokenMatch.UNAVAILABLE
    return TokenMatch.MATCHED if current == token else TokenMatch.MISMATCHED


def signal_group(pid: int, token: ProcessToken, signal_number: int) -> None:
    """Send ``signal_number`` to the process group ``pid`` leads, if ``pid`` is still ``token``.

    A group that is gone by the time the signal is sent is not an error: what the signal was
    for has happened (the caller confirms with ``match_token``).

    Raises:
        ProcessIdentityIndeterminate: ``pid`` did not match ``token`` right before the
            signal (missing, mismatched or unreadable); nothing was sent.
        PermissionError: The group may not be signalled by this user (unchanged).
    """
    pidfd = _open_pidfd(pid)
    try:
        found = match_token(pid, token)
        if found is not TokenMatch.MATCHED:
            raise ProcessIdentityIndeterminate(f"PID {pid} is {found.value}: no signal sent")
        try:
            if pidfd is None or not _pidfd_signal_group(pidfd, signal_number):
                os.killpg(pid, signal_number)
        except ProcessLookupError:
            pass  # the whole group ended between the check and the signal
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _open_pidfd(pid: int) -> int | None:
    """A pidfd for ``pid``, or None where there is none (no such process, or no pidfd)."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return int(pidfd_open(pid))
    except OSError:
        return None  # gone (the check says so) or not supported (killpg after the check)


def _pidfd_signal_group(pidfd: int, signal_number: int) -> bool:
    """Signal the group the pidfd's process leads; False where the kernel cannot (before 6.9)."""
    global _group_flag_works
    send = getattr(signal, "pidfd_send_signal", None)
    if send is None or not _group_flag_works:
        return False
    try:
        send(pidfd, signal_number, None, PIDFD_SIGNAL_PROCESS_GROUP)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            _group_flag_works = False
            return False
        raise  # ProcessLookupError, PermissionError: as os.killpg would
    return True
