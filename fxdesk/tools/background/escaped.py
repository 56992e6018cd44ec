"""Processes a background task started that left its process group (``setsid``, a double fork).

A stop signals the task's process group, so a process that made a session of its own is not
reached, and nothing in the group tree leads to it any more (init is its parent). Every task's
wrapper is started with ``FXDESK_BACKGROUND_TASK=<its log's name>`` in its environment, which
whatever it starts inherits, through ``setsid`` and double forks alike; ``left_running`` finds
the processes still carrying it. Read only: fxdesk never signals what it finds here (it has no
token for it and did not start it directly), it says so, naming the PIDs.

A process that clears or rewrites its environment is not found; nor is another user's. In the
sandbox none escapes at all: bubblewrap gives the task a PID namespace, and when the wrapper
exits the kernel kills everything left in it. Blocking (a scan of every process): off the loop.
"""

from __future__ import annotations

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
