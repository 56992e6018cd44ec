"""Processes a background task started that left its process group (``setsid``, a double fork).

A stop signals the task's process group, so a process that made a session of its own is not
reached, and nothing in the group tree leads to it any more (init is its parent). Every task's
wrapper is started with ``FXDESK_BACKGROUND_TASK=<its log's name>`` in its environment, which
whatever it starts inherits, through ``setsid`` and double forks alike; ``left_running`` finds
the processes still carrying it. Read only: fxdesk never signals what it finds here (it has no
token for it and did not start it directly), it says so, naming the PIDs. The exception is a
sandboxed task's own PID namespace, which a stop ends whole (``end_sandbox``).

A process that clears or rewrites its environment is not found; nor is another user's. In the
sandbox none escapes at all: bubblewrap gives the task a PID namespace, and when the wrapper
exits the kernel kills everything left in it. Blocking (a scan of every process): off the loop.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]

TASK_VARIABLE = "FXDESK_BACKGROUND_TASK"


@dataclass(frozen=True)
class Escaped:
    """A process of the task that is outside its process group and still running."""

    pid: int
    name: str

    def text(self) -> str:
        return f"PID {self.pid} ({self.name})" if self.name else f"PID {self.pid}"


def task_tag(log_path: str | Path) -> str:
    """The value of ``TASK_VARIABLE`` for the task logging to ``log_path`` (unique: random)."""
    return Path(log_path).name


def left_running(tag: str) -> list[Escaped]:
    """The running processes (not zombies) whose environment carries the task's ``tag``."""
    found: list[Escaped] = []
    for process in psutil.process_iter(["name"]):
        try:
            if process.environ().get(TASK_VARIABLE) != tag:
                continue
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            found.append(Escaped(process.pid, process.info.get("name") or ""))
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return sorted(found, key=lambda e: e.pid)


def end_sandbox(tag: str) -> list[int]:
    """End the task's own sandbox: SIGKILL to the init of each PID namespace whose init
    carries the task's ``tag``, which makes the kernel end everything in that namespace, what
    left the task's process group included. The PIDs signalled.

    Only a namespace made for this task is touched: its init is bubblewrap's, started by the
    task's wrapper with the tag (random, one per task) in its environment, and it is PID 1 in
    its namespace. The process is pinned with a pidfd before it is checked, so a PID reused in
    the meantime is never signalled (the check reads the new process, which has no tag).
    """
    ended: list[int] = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(TASK_VARIABLE) != tag:
                continue
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
        try:
            pidfd = os.pidfd_open(process.pid)
        except OSError:
            continue
        try:
            if _namespace_init(process.pid) and _carries(process.pid, tag):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                ended.append(process.pid)
        except OSError:
            continue
        finally:
            os.close(pidfd)
    return ended


def _namespace_init(pid: int) -> bool:
    """Whether ``pid`` is PID 1 of a PID namespace below ours (``NSpid: <ours> … 1``)."""
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("NSpid:"):
                ids = line.split()[1:]
                return len(ids) > 1 and ids[-1] == "1"
    return False


def _carries(pid: int, tag: str) -> bool:
    with open(f"/proc/{pid}/environ", "rb") as environ:
        return f"{TASK_VARIABLE}={tag}".encode() in environ.read().split(b"\0")
