"""The facade's part for agent runs and the inbox (the window's Runs view and Inbox dock, and
``fxdesk runs``/``inbox``/``cancel-run``). ``Engine`` inherits it, so its file stays small."""

from __future__ import annotations

from dataclasses import dataclass

from fxdesk.domain.agent_inbox import InboxEvent
from fxdesk.domain.agent_runs import (
    AgentRun,
    AgentRunError,
    Caller,
    Counters,
    InterruptedRun,
    Limits,
    unknown_run,
)
from fxdesk.domain.model import Session
from fxdesk.engine.agents.coordinator import AgentCoordinator
from fxdesk.store import Store, agent_inbox, agent_runs


@dataclass(frozen=True)
class InboxView:
    """A root session's inbox: its events (oldest first) and its counters."""

    root_session_id: str
    events: list[InboxEvent]
    counters: Counters
    capacity: int


class AgentRunsPart:
    """Agent runs as the person sees and steers them. Needs ``_agents`` and ``session``."""

    _agents: AgentCoordinator | None
    _store: Store

    async def session(self, session_id: str) -> Session | None:  # provided by Engine
        raise NotImplementedError

    def _coordinator(self) -> AgentCoordinator:
        if self._agents is None:
            raise RuntimeError("this fxdesk runs no sub-agents (started without the engine)")
        return self._agents

    async def _root_of(self, session_id: str) -> str:
        session = await self.session(session_id)
        if session is None:
            raise AgentRunError("NO_SESSION", f"no session {session_id!r}")
        return session.root_id

    @property
    def interrupted_runs(self) -> tuple[InterruptedRun, ...]:
        """The sub-agent runs this start's recovery found unfinished and marked interrupted
        (nothing re-ran them); empty when no sub-agents run here."""
        report = self._agents.recovery if self._agents is not None else None
        return report.interrupted if report is not None else ()

    async def runs(self, session_id: str) -> list[AgentRun]:
        """Every agent run of the session's tree (its root's), oldest first."""
        root = await self._root_of(session_id)
        runs, _next = await self._store.read(
            lambda: agent_runs.list_runs(Caller(root), limit=10_000)
        )
        return runs

    async def agent_run(self, run_id: str) -> AgentRun:
        """One run by id or unique id prefix (``AgentRunError`` ``UNKNOWN_RUN`` otherwise)."""
        found = await self._store.read(lambda: agent_runs.get_run(run_id))
        if found is not None:
            return found
        matches = await self._store.read(lambda: agent_runs.runs_by_prefix(run_id))
        if len(matches) != 1:
            raise unknown_run(run_id)
        return matches[0]

    async def inbox(self, session_id: str) -> InboxView:
        """The inbox of the session's root: completions and signals, and its counters."""
        root = await self._root_of(session_id)

        def read() -> tuple[list[InboxEvent], Counters]:
            return agent_inbox.list_inbox(root), agent_inbox.counters(root)

        events, counters = await self._store.read(read)
        limits = self._agents.limits if self._agents is not None else Limits()
        return InboxView(root, events, counters, limits.max_inbox)

    async def cancel_run(self, run_id: str, reason: str = "cancelled by the person") -> bool:
        """Cancel a run and the runs below it; its child session's work stops. The person's
        cancel starts no continuation. False when it had already finished."""
        run = await self.agent_run(run_id)
        return await self._coordinator().cancel_run(
            Caller(run.root_session_id), run.id, reason, suppress=True
        )

    async def stop_all_agents(self, root_session_id: str) -> int:
        """Cancel every unfinished run of a root session's tree (one click: cancel wins
        everywhere); how many were cancelled."""
        root = await self._root_of(root_session_id)
        return await self._coordinator().stop_all(root)
