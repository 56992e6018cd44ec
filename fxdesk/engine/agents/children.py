"""Persistent sub-agents an agent manages itself (issue 13 item 3, spec child-sessions §2.15).

``spawn_agent`` makes a *persistent* child session of the caller: from a named agent's
definition (its role prompt, tools, profile, model, effort and mode), or from a plain role text.
Its permission mode is the stricter of the caller's, the definition's and the one asked for, so
a child never has more authority than its parent (and the permission check clamps every call to
its ancestors anyway); its approvals are ordinary approvals of its session, in the one inbox.

The child's config names the session that spawned it (``MANAGED_BY_KEY``). Only its current
parent may send to it, wait for it, close it or list it; any other id is refused exactly like an
unknown one. Detach and reparent stay the person's (``SessionService``), refused while the child
has active work.

Results: each finished item of the child has its terminal delivery (written with the item's
outcome); the parent's model gets the unread ones at its next step boundary
(``engine.turn_children``), or in a ``wait_for_agent`` / ``close_agent`` result, once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fxdesk.domain.agent_definitions import AgentDefinition
from fxdesk.domain.agent_runs import AgentRunError
from fxdesk.domain.child_agents import (
    MANAGED_BY_KEY,
    MAX_OPEN_CHILDREN,
    ChildInfo,
    ChildWait,
)
from fxdesk.domain.model import PermissionMode, Session, SessionMode, SessionState, WorkKind
from fxdesk.domain.permissions import stricter
from fxdesk.engine.agents.coordinator import AgentCoordinator
from fxdesk.engine.authority import AGENT_DENIED_TOOLS_KEY, AGENT_TOOLS_KEY
from fxdesk.engine.errors import EngineError
from fxdesk.engine.turn import MAX_ITERATIONS_KEY, ROLE_PROMPT_KEY
from fxdesk.store import child_results, control, repo
from fxdesk.tools.agents.port import DelegateRequest, SpawnRequest
from fxdesk.tools.agents.tools import EmitSignalTool

log = logging.getLogger(__name__)

MAX_WAIT_S = 600.0  # one wait_for_agent call; the model may call it again
DEFAULT_WAIT_S = 60.0
_POLL_S = 1.0  # a waiting child (approval, another process) is looked at this often
_MODES = {"ask": PermissionMode.ASK, "auto": PermissionMode.AUTO, "yolo": PermissionMode.YOLO}
_ACTIVE = ("pending", "running", "awaiting_approval")


def unknown_child(child_id: str) -> AgentRunError:
    """The one answer for an unknown id and for a session that is not the caller's child."""
    return AgentRunError(
        "UNKNOWN_CHILD", f"no sub-agent {child_id!r} of yours (list_agents shows them)"
    )


class ChildAgents:
    """The persistent children the agents of this fxdesk manage."""

    def __init__(self, coordinator: AgentCoordinator) -> None:
        self.coordinator = coordinator
        self.store = coordinator.store
        self.sessions = coordinator.sessions
        self.owner = coordinator.owner

    # --- who asks -----------------------------------------------------------------------------

    async def _caller(self, session_id: str) -> Session:
        if self.coordinator.closing or self.owner.closed:
            raise AgentRunError("SHUTTING_DOWN", "fxdesk is shutting down: nothing was done")
        session = await self.store.read(lambda: repo.get_session(session_id))
        if session is None:
            raise AgentRunError("NO_SESSION", f"no session {session_id}")
        return session

    async def _child(self, caller: Session, child_id: str) -> Session:
        child_id = child_id.strip()
        child = await self.store.read(lambda: child_results.child_of(caller.id, child_id))
        if child is None:
            raise unknown_child(child_id)
        return child

    async def _info(self, child: Session) -> ChildInfo:
        counts = await self.sessions.counts()
        agent_id = child.config.get("agent_id")
        return ChildInfo(
            id=child.id,
            name=child.name,
            agent_id=agent_id if isinstance(agent_id, str) else None,
            state=child.state.value,
            permission_mode=child.permission_mode.value,
            queued=counts.get(child.id, (0, 0))[0],
        )

    # --- spawn --------------------------------------------------------------------------------

    async def spawn(self, session_id: str, call_id: str, spec: SpawnRequest) -> ChildInfo:
        caller = await self._caller(session_id)
        operation = f"spawn:{caller.id}:{call_id}"
        done = await self.store.read(lambda: repo.get_operation(operation))
        if done is not None:  # a replayed call: the same child, nothing started again
            replayed = await self.store.read(lambda: repo.get_session(done[2].session_id))
            if replayed is not None:
                return await self._info(replayed)
        if caller.mode is not SessionMode.PERSISTENT:
            raise AgentRunError(
                "SPAWN_FROM_ONE_OFF",
                "a one-off sub-agent cannot keep persistent sub-agents; use delegate instead",
            )
        limits = self.coordinator.limits

        def census() -> tuple[int, int]:
            depth, current = 0, caller
            while current.parent_id is not None and depth < 1000:
                depth += 1
                parent = repo.get_session(current.parent_id)
                if parent is None:
                    break
                current = parent
            open_children = sum(
                1
                for c in child_results.children_of(caller.id)
                if c.state is not SessionState.ARCHIVED
            )
            return depth, open_children

        depth, open_children = await self.store.read(census)
        if depth + 1 > limits.max_tree_depth:
            raise AgentRunError(
                "DEPTH_EXCEEDED",
                f"a sub-agent here would be {depth + 1} levels deep; the limit is "
                f"{limits.max_tree_depth}",
            )
        if open_children >= MAX_OPEN_CHILDREN:
            raise AgentRunError(
                "TOO_MANY_CHILDREN",
                f"you already keep {open_children} open sub-agents (at most "
                f"{MAX_OPEN_CHILDREN}); close one first",
            )
        definition: AgentDefinition | None = None
        if spec.agent:
            (definition,) = await self.coordinator._definitions(
                caller, [DelegateRequest(spec.agent, spec.task or "spawn")]
            )
        mode = caller.permission_mode
        if definition is not None and definition.permission_mode is not None:
            mode = stricter(mode, definition.permission_mode)
        if spec.permission_mode:
            asked = _MODES.get(spec.permission_mode.strip().lower())
            if asked is None:
                raise AgentRunError(
                    "BAD_MODE", f"permission_mode must be one of {', '.join(_MODES)}"
                )
            mode = stricter(mode, asked)
        # Never a run, so its signals would be refused: emit_signal is not offered.
        config: dict[str, Any] = {
            MANAGED_BY_KEY: caller.id,
            AGENT_DENIED_TOOLS_KEY: [EmitSignalTool.name],
        }
        role = definition.prompt if definition is not None else (spec.role or "").strip()
        if role:
            config[ROLE_PROMPT_KEY] = role
        if definition is not None:
            config["agent_id"] = definition.id
            if definition.tools is not None:
                config[AGENT_TOOLS_KEY] = list(definition.tools)
            config[AGENT_DENIED_TOOLS_KEY] += list(definition.disallowed_tools)
            if definition.max_iterations is not None:
                config[MAX_ITERATIONS_KEY] = definition.max_iterations
        name = (spec.name or "").strip() or (definition.id if definition else "sub-agent")
        task = (spec.task or "").strip() or None
        try:
            receipt = await self.sessions.create_child_once(
                operation,
                caller.id,
                actor_id=caller.id,
                name=name[:60],
                mode=SessionMode.PERSISTENT,
                first_message=task,
                permission_mode=mode,
                profile=definition.profile if definition else None,
                model=definition.model if definition else None,
                effort=definition.effort if definition else None,
                config=config,
            )
        except EngineError as exc:
            raise AgentRunError("NOT_SPAWNED", str(exc)) from exc
        child = await self.store.read(lambda: repo.get_session(receipt.session_id))
        assert child is not None
        if task is not None:
            self.owner.start(child.id)
        log.info("session %s spawned sub-agent %s (%s, %s)", caller.id, child.id, name, mode)
        return await self._info(child)

    # --- send / wait / close / list -----------------------------------------------------------

    async def send(self, session_id: str, child_id: str, message: str) -> ChildInfo:
        caller = await self._caller(session_id)
        child = await self._child(caller, child_id)
        if child.state is SessionState.ARCHIVED:
            raise AgentRunError("CHILD_CLOSED", f"sub-agent {child.id} is closed")
        if not message.strip():
            raise AgentRunError("EMPTY_MESSAGE", "the message is empty")
        try:
            await self.sessions.send(child.id, message, kind=WorkKind.TASK, source_id=caller.id)
        except EngineError as exc:
            raise AgentRunError("NOT_SENT", str(exc)) from exc
        self.owner.start(child.id)
        after = await self.store.read(lambda: repo.get_session(child.id))
        return await self._info(after or child)

    async def _active(self, child_id: str) -> bool:
        """Work the child still has to do (or waits on the person for)."""
        if self.owner.is_running(child_id):
            return True
        items = await self.store.read(lambda: control.list_items(child_id, 50))
        return any(i.status.value in _ACTIVE for i in items)

    async def wait(self, session_id: str, child_id: str, timeout_s: float) -> ChildWait:
        caller = await self._caller(session_id)
        child = await self._child(caller, child_id)
        timeout_s = min(max(0.0, timeout_s), MAX_WAIT_S)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        waiter = self.owner.waiter(child.id)  # before the first look: no signal is lost
        try:
            while await self._active(child.id):
                remaining = deadline - loop.time()
                if remaining <= 0 or self.owner.closed:
                    return await self._answer(caller, child.id, finished=False)
                await waiter.wait(min(remaining, _POLL_S))
        finally:
            waiter.close()
        return await self._answer(caller, child.id, finished=True)

    async def _answer(self, caller: Session, child_id: str, *, finished: bool) -> ChildWait:
        def read() -> tuple[Session | None, list[Any], Any]:
            child = repo.get_session(child_id)
            unread = child_results.unread_results(caller.id, child_id)
            last = None if unread or child is None else child_results.last_result(child)
            return child, unread, last

        child, unread, last = await self.store.read(read)
        assert child is not None
        note = ""
        if not finished:
            note = "still working"
            if child.state is SessionState.AWAITING_APPROVAL:
                note = "still working: waiting for the person to answer an approval"
        elif child.state is SessionState.INTERRUPTED:
            note = "interrupted (fxdesk restarted); only the person can resume it"
        return ChildWait(await self._info(child), finished, tuple(unread), last, note)

    async def close(self, session_id: str, child_id: str) -> ChildWait:
        caller = await self._caller(session_id)
        child = await self._child(caller, child_id)
        if child.state is SessionState.ARCHIVED:
            raise AgentRunError("CHILD_CLOSED", f"sub-agent {child.id} is already closed")
        try:
            await self.sessions.close(child.id, actor_id=caller.id, reason="closed by its parent")
        except EngineError as exc:
            raise AgentRunError("NOT_CLOSED", str(exc)) from exc
        return await self._answer(caller, child.id, finished=True)

    async def list(self, session_id: str) -> list[ChildInfo]:
        caller = await self._caller(session_id)
        children = await self.store.read(lambda: child_results.children_of(caller.id))
        return [await self._info(c) for c in children]
