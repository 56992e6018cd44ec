"""What the agent's delegation tools need from the engine: a port the engine implements.

The tools layer sits below the engine, so the tools cannot reach the coordinator; the engine
hands each call an ``AgentsPort`` in its ``ToolContext`` (``engine.agents.port``), as it does
for background tasks. Every method acts for the session that makes the call: its runs, its
tree, its inbox. Refusals are ``AgentRunError`` (``domain.agent_runs``) with a sentence the
model reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fxdesk.domain.agent_inbox import SignalAccepted, SignalInput
from fxdesk.domain.agent_runs import AgentRun, RunMode
from fxdesk.domain.child_agents import ChildInfo, ChildWait


@dataclass(frozen=True)
class DelegateRequest:
    """One task of a ``delegate`` call: the named agent and what it should do."""

    agent: str
    task: str
    context: str | None = None


@dataclass(frozen=True)
class RunResult:
    """What a foreground run came to, as its caller reads it (spec §2.5)."""

    run_id: str
    agent_id: str
    status: str  # completed, failed, timed_out, cancelled, interrupted
    result: str  # the sub-agent's final answer ('' when it did not complete)
    error: str | None
    tool_calls: int
    iterations: int
    duration_ms: int
    child_session_id: str | None


@dataclass(frozen=True)
class SpawnRequest:
    """A ``spawn_agent`` call: a named agent's definition, or a plain role, or neither."""

    name: str | None = None
    agent: str | None = None
    role: str | None = None
    task: str | None = None
    permission_mode: str | None = None


class AgentsPort(Protocol):
    async def delegate(
        self,
        session_id: str,
        work_id: str,
        call_id: str,
        requests: Sequence[DelegateRequest],
        mode: RunMode,
    ) -> list[RunResult] | list[AgentRun]:
        """Foreground: the batch's results in request order, once all finished. Background:
        the accepted runs at once (their results arrive in the root session's inbox)."""
        ...

    async def emit_signal(self, session_id: str, signal: SignalInput) -> SignalAccepted:
        """Raise a signal from the agent run that ``session_id`` executes."""
        ...

    async def list_runs(self, session_id: str) -> list[AgentRun]:
        """The runs the session may see: all of its root's when it is the root agent, else
        its own run and the runs below it."""
        ...

    async def cancel_run(self, session_id: str, run_id: str, reason: str) -> bool:
        """Cancel a run the session may see (and its sub-runs); False when already finished."""
        ...

    # --- persistent children the agent manages (``tools.agents.children``) -----------------

    async def spawn_agent(self, session_id: str, call_id: str, spec: SpawnRequest) -> ChildInfo:
        """Create a persistent child of the session (its first message queued and started
        when ``spec.task`` is given); its mode never exceeds the caller's. Replaying the same
        ``call_id`` gives the same child (an operation: spec scenario 53)."""
        ...

    async def send_to_agent(self, session_id: str, child_id: str, message: str) -> ChildInfo:
        """Queue a message to one of the session's own children and start it."""
        ...

    async def wait_for_agent(self, session_id: str, child_id: str, timeout_s: float) -> ChildWait:
        """Wait (bounded) until the child's current work ends; its unread results."""
        ...

    async def close_agent(self, session_id: str, child_id: str) -> ChildWait:
        """Close (archive) the child: its queued and running work is cancelled."""
        ...

    async def list_agents(self, session_id: str) -> list[ChildInfo]:
        """The session's own children, oldest first."""
        ...
