"""What the agent's background tools need from the engine: a port the engine implements.

The tools layer sits below the engine, so the tools cannot reach the background runtime; the
engine hands each call a ``BackgroundPort`` in its ``ToolContext``
(``engine.background.port.RuntimePort``). Every method acts for one session: the agent sees,
reads and stops only the tasks its own session started.
"""

from __future__ import annotations

from typing import Protocol

from fxdesk.domain.background import BackgroundTask, StopOutcome
from fxdesk.tools.background.logs import LogSummary


class BackgroundPort(Protocol):
    async def start(
        self, session_id: str, command: str, cwd: str | None, expect_url: bool
    ) -> BackgroundTask:
        """Start ``command`` in the session's sandbox; ``BackgroundError`` says why not."""
        ...

    async def reusable(
        self, session_id: str, command: str, cwd: str | None
    ) -> BackgroundTask | None:
        """A running task of the same command in the same folder, if any."""
        ...

    async def refresh(self) -> None:
        """Look for tasks that ended now (at most twice a second)."""
        ...

    def tasks(self, session_id: str) -> list[BackgroundTask]:
        """The session's tasks, oldest first."""
        ...

    def task(self, session_id: str, ref: str) -> BackgroundTask:
        """One of the session's tasks (``TaskNotFound`` otherwise)."""
        ...

    async def log(self, session_id: str, ref: str) -> LogSummary:
        """The head and tail of one of the session's tasks' log."""
        ...

    async def stop(self, session_id: str, ref: str) -> StopOutcome:
        """Stop one of the session's tasks."""
        ...
