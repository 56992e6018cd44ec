"""The background runtime as the agent's tools see it (``tools.background.port``).

Every call acts for the session that makes it: ``#N`` and ids are looked up among its own
tasks, and what it starts is recorded as the agent's.
"""

from __future__ import annotations

from fxdesk.domain.background import BackgroundTask, LaunchPolicy, Origin, StopOutcome
from fxdesk.engine.background.runtime import BackgroundRuntime
from fxdesk.tools.background.logs import LogSummary


class RuntimePort:
    """``BackgroundPort`` over the one ``BackgroundRuntime`` of this fxdesk."""

    def __init__(self, runtime: BackgroundRuntime) -> None:
        self._runtime = runtime

    async def start(
        self, session_id: str, command: str, cwd: str | None, expect_url: bool
    ) -> BackgroundTask:
        return await self._runtime.launch(
            session_id,
            command,
            cwd=cwd,
            expect_url=expect_url,
            policy=LaunchPolicy.DURABLE,
            origin=Origin.AGENT,
        )

    async def reusable(
        self, session_id: str, command: str, cwd: str | None
    ) -> BackgroundTask | None:
        return await self._runtime.reusable(session_id, command, cwd)

    async def refresh(self) -> None:
        await self._runtime.refresh()

    def tasks(self, session_id: str) -> list[BackgroundTask]:
        return self._runtime.tasks(session_id)

    def task(self, session_id: str, ref: str) -> BackgroundTask:
        return self._runtime.task(ref, session_id)

    async def log(self, session_id: str, ref: str) -> LogSummary:
        return await self._runtime.log_summary(ref, session_id)

    async def stop(self, session_id: str, ref: str) -> StopOutcome:
        return await self._runtime.stop(ref, session_id)
