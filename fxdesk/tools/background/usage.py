"""CPU and memory of background tasks' process groups, for the Processes dock (read only).

A task's usage is the sum over its wrapper (the group leader) and every process below it. CPU
percentages need two looks at the same process, so ``UsageSampler`` keeps the ``psutil.Process``
objects it saw last time; the first look at a process counts 0 % for it. A PID whose process
started after the task did is not the task's (the PID was reused): it is skipped, never reported
as the task's usage. Nothing here signals anything.

Sampling walks ``/proc`` (psutil builds the parent map from every process's ``stat``), so callers
run ``sample`` in a worker thread, at most about once a second; ``bench/`` and the dock's tests
measure it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

import psutil  # type: ignore[import-untyped]

REUSE_SLACK_MS = 2_000  # a wrapper starts just before its task is registered


@dataclass(frozen=True)
class TaskUsage:
    """What a task's process group uses now.

    Attributes:
        cpu_percent: Sum over its processes, 100 per busy core.
        memory_bytes: Sum of their resident set sizes.
        processes: How many processes were counted.
    """

    cpu_percent: float
    memory_bytes: int
    processes: int


@dataclass(frozen=True)
class UsageRequest:
    """One task to sample: the wrapper's PID and when the task was registered (ms)."""

    key: str
    pid: int
    started_at_ms: int


class UsageSampler:
    """Samples process groups; keeps the processes it saw so CPU percentages mean something.

    Thread-safe: one sample at a time (a lock), so a slow one and the next cannot overlap.
    """

    def __init__(self) -> None:
        self._seen: dict[int, psutil.Process] = {}
        self._lock = threading.Lock()

    def sample(self, requests: Iterable[UsageRequest]) -> dict[str, TaskUsage]:
        """Usage per request key; tasks whose process is gone or reused are left out."""
        with self._lock:
            found: dict[str, TaskUsage] = {}
            alive: dict[int, psutil.Process] = {}
            for request in requests:
                usage = self._one(request, alive)
                if usage is not None:
                    found[request.key] = usage
            self._seen = alive
            return found

    def _one(self, request: UsageRequest, alive: dict[int, psutil.Process]) -> TaskUsage | None:
        try:
            leader = self._process(request.pid)
            if leader.create_time() * 1000 > request.started_at_ms + REUSE_SLACK_MS:
                return None  # another process has this PID now
            members = [leader, *leader.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None
        cpu = 0.0
        memory = 0
        counted = 0
        for member in members:
            process = self._seen.get(member.pid, member)
            try:
                if process is not member and process.create_time() != member.create_time():
                    process = member  # a new process under an old PID: start afresh
                cpu += process.cpu_percent(interval=None)
                memory += process.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            alive[member.pid] = process
            counted += 1
        return TaskUsage(cpu, memory, counted)

    def _process(self, pid: int) -> psutil.Process:
        known = self._seen.get(pid)
        return known if known is not None else psutil.Process(pid)
