"""What the parts of the background runtime share: the provider, the store, the table, timings.

The parts (``launching``, ``stopping``, ``monitor``, ``restore``, ``records``) are functions of
one ``Context``, built by ``runtime.BackgroundRuntime``; all of them run on the event loop and
send every blocking call (the provider, file reads) to a worker thread, and every database call
through the store's own threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain.background import TaskState
from fxdesk.engine.background.table import Task, TaskTable
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import Clock
from fxdesk.engine.events import BackgroundChanged
from fxdesk.store import Store
from fxdesk.tools.background.provider import LaunchSpec, ProcessProvider

log = logging.getLogger("fxdesk.engine.background")


@dataclass(frozen=True)
class Timings:
    """The spec's numbers (§7); tests shorten the waits, never the logic."""

    capture_attempts: int = 3
    capture_delay_s: float = 0.02
    cleanup_timeout_s: float = 2.0  # each phase of a held-back wrapper's cleanup
    stop_grace_s: float = 2.0  # SIGTERM, then this long for the identity to go
    kill_grace_s: float = 2.0  # after the deliberate SIGKILL
    poll_s: float = 0.01
    escape_settle_s: float = 1.0  # after a stop, what left the group may still end on its own
    refresh_s: float = 1.0  # the monitor's period
    refresh_throttle_s: float = 0.5


@dataclass(frozen=True)
class SessionPlace:
    """Where a session's tasks run: its workspace and permission mode."""

    session_id: str
    workspace_id: int
    workspace: Path  # resolved
    permission_mode: str
    writable: tuple[str, ...] = ()  # the workspace's sandbox settings (``~`` not expanded)
    extra_env: tuple[str, ...] = ()


# (place, cwd, log path, durable) -> how to start the wrapper (blocking: called off the loop)
SpecBuilder = Callable[[SessionPlace, Path, Path, bool], LaunchSpec]


@dataclass
class Context:
    provider: ProcessProvider
    store: Store
    bus: EventBus
    clock: Clock
    timings: Timings
    durable_logs: Path  # <data>/background/<session>/fx-cmd-*.log
    local_logs: Path  # the temp folder, for process-local tasks
    build_spec: SpecBuilder
    instance_id: str | None  # this fxdesk process: the owner of the records it writes
    owner_alive: Callable[[str], bool]  # is that fxdesk process alive (blocking)
    table: TaskTable = field(default_factory=TaskTable)
    stop_requested: bool = False
    locks: dict[int, asyncio.Lock] = field(default_factory=dict)

    def lock_for(self, task: Task) -> asyncio.Lock:
        """One stop at a time per task."""
        return self.locks.setdefault(id(task), asyncio.Lock())

    def publish(self, task: Task, previous: TaskState | None, *, removed: bool = False) -> None:
        self.bus.publish(BackgroundChanged(task.snapshot(), previous, removed))
