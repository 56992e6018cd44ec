"""The coordinator as the agent's delegation tools see it (``tools.agents.port``)."""

from __future__ import annotations

from collections.abc import Sequence

from fxdesk.domain.agent_inbox import SignalAccepted, SignalInput
from fxdesk.domain.agent_runs import AgentRun, RunMode
from fxdesk.domain.child_agents import ChildInfo, ChildWait
from fxdesk.engine.agents.children import ChildAgents
from fxdesk.engine.agents.coordinator import AgentCoordinator
from fxdesk.tools.agents.port import DelegateRequest, RunResult, SpawnRequest


class CoordinatorPort:
    """``AgentsPort`` over the one ``AgentCoordinator`` of this fxdesk."""

    def __init__(self, coordinator: AgentCoordinator) -> None:
        self._coordinator = coordinator
        self._children = ChildAgents(coordinator)

    async def delegate(
        self,
        session_id: str,
        work_id: str,
        call_id: str,
        requests: Sequence[DelegateRequest],
        mode: RunMode,
    ) -> list[RunResult] | list[AgentRun]:
        if mode is RunMode.BACKGROUND:
            return await self._coordinator.delegate_background(
                session_id, work_id, call_id, requests
            )
        return await self._coordinator.delegate_foreground(session_id, work_id, call_id, requests)

    async def emit_signal(self, session_id: str, signal: SignalInput) -> SignalAccepted:
        return await self._coordinator.emit_signal(session_id, signal)

    async def list_runs(self, session_id: str) -> list[AgentRun]:
        caller = await self._coordinator.caller_of(session_id)
        return await self._coordinator.list_runs(caller)

    async def cancel_run(self, session_id: str, run_id: str, reason: str) -> bool:
        caller = await self._coordinator.caller_of(session_id)
        return await self._coordinator.cancel_run(caller, run_id, reason, suppress=False)

    async def spawn_agent(self, session_id: str, call_id: str, spec: SpawnRequest) -> ChildInfo:
        return await self._children.spawn(session_id, call_id, spec)

    async def send_to_agent(self, session_id: str, child_id: str, message: str) -> ChildInfo:
        return await self._children.send(session_id, child_id, message)

    async def wait_for_agent(self, session_id: str, child_id: str, timeout_s: float) -> ChildWait:
        return await self._children.wait(session_id, child_id, timeout_s)

    async def close_agent(self, session_id: str, child_id: str) -> ChildWait:
        return await self._children.close(session_id, child_id)

    async def list_agents(self, session_id: str) -> list[ChildInfo]:
        return await self._children.list(session_id)
