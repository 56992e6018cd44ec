"""The agent's tools for persistent sub-agents it manages: ``spawn_agent``, ``send_to_agent``,
``wait_for_agent``, ``close_agent``, ``list_agents``.

Like ``delegate`` they touch nothing outside the conversation (``ToolAccess.NONE``): what the
sub-agent then does is judged call by call in its own session, whose mode never exceeds its
parent's, and its approvals reach the same approval inbox. They reach the engine through
``ctx.agents`` (``tools.agents.port``). A sub-agent's results come back to its parent once:
in a ``wait_for_agent``/``close_agent`` result (listed in the result's data, which is how the
engine knows they were read), else at the parent's next step boundary.
"""

from __future__ import annotations

from typing import Any

from fxdesk.domain.agent_runs import AgentRunError
from fxdesk.domain.child_agents import CHILD_RESULTS_KEY, ChildInfo, ChildWait, describe_result
from fxdesk.tools.agents.port import AgentsPort, SpawnRequest
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolFacts, ToolResult, bounded, schema

UNAVAILABLE = "sub-agents are not available in this fxdesk process"
_CHILD_ID = {"type": "string", "description": "The sub-agent's id (from spawn_agent)."}


def _port(ctx: ToolContext) -> AgentsPort | None:
    return ctx.agents


def describe_child(child: ChildInfo) -> str:
    agent = f", agent {child.agent_id}" if child.agent_id else ""
    queued = f", {child.queued} queued" if child.queued else ""
    return f"{child.id} {child.name}{agent}: {child.state} (mode {child.permission_mode}{queued})"


def describe_wait(wait: ChildWait) -> str:
    lines = [f"Sub-agent {describe_child(wait.child)}"]
    if wait.note:
        lines.append(wait.note)
    if wait.results:
        lines.append(f"{len(wait.results)} new result(s):")
        lines += [describe_result(r) for r in wait.results]
    elif wait.last is not None and wait.finished:
        lines.append("No new result; its last one (already reported):")
        lines.append(describe_result(wait.last))
    elif wait.finished:
        lines.append("It has no result yet (it was given no work).")
    return "\n".join(lines)


def _wait_result(wait: ChildWait) -> ToolResult:
    output, full = bounded(describe_wait(wait))
    data = {
        "child_id": wait.child.id,
        "state": wait.child.state,
        "finished": wait.finished,
        CHILD_RESULTS_KEY: wait.delivery_ids,
    }
    return ToolResult(True, output, full, data=data)


def _text(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


class SpawnAgentTool(Tool):
    name = "spawn_agent"
    description = (
        "Start a persistent sub-agent you keep and talk to over several messages (unlike "
        "delegate's one task). Give a named agent ('general', 'explorer', or one of "
        ".fxdesk/agents) or a plain role text, and optionally its first task (it starts at "
        "once). Returns its id. It does not see this conversation. Its finished results come "
        "back to you once: from wait_for_agent, or as a message at your next step. Its "
        "permission mode never exceeds yours."
    )
    parameters = schema(
        {
            "name": {"type": "string", "description": "A short name for it (shown to the person)."},
            "agent": {"type": "string", "description": "A named agent's id (optional)."},
            "role": {
                "type": "string",
                "description": "Its role, as instructions, when no named agent is given.",
            },
            "task": {"type": "string", "description": "Its first message (optional)."},
            "permission_mode": {
                "type": "string",
                "enum": ["ask", "auto", "yolo"],
                "description": "At most yours; the stricter one applies (optional).",
            },
        },
        [],
    )
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        spec = SpawnRequest(
            name=_text(args, "name"),
            agent=_text(args, "agent"),
            role=_text(args, "role"),
            task=_text(args, "task"),
            permission_mode=_text(args, "permission_mode"),
        )
        try:
            child = await port.spawn_agent(ctx.session_id, ctx.call_id, spec)
        except AgentRunError as exc:
            return ToolResult.error(f"Not spawned: {exc}", code=exc.code)
        asked = spec.permission_mode
        clamp = ""
        if asked and asked != child.permission_mode:
            clamp = f" (asked for {asked}; a sub-agent never has more than you)"
        text = (
            f"Spawned sub-agent {child.id} ({child.name}), permission mode "
            f"{child.permission_mode}{clamp}; state {child.state}."
        )
        return ToolResult(True, text, data={"child_id": child.id})


class SendToAgentTool(Tool):
    name = "send_to_agent"
    description = (
        "Queue a message (a task or a follow-up) to one of your sub-agents; it runs after "
        "what it already has. Returns at once: use wait_for_agent for the answer."
    )
    parameters = schema(
        {
            "agent_id": _CHILD_ID,
            "message": {"type": "string", "description": "What to tell it."},
        },
        ["agent_id", "message"],
    )
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        message = args.get("message")
        if not isinstance(message, str) or not message.strip():
            return ToolResult.error("message is required")
        try:
            child = await port.send_to_agent(ctx.session_id, str(args.get("agent_id", "")), message)
        except AgentRunError as exc:
            return ToolResult.error(f"Not sent: {exc}", code=exc.code)
        return ToolResult(True, f"Sent. Sub-agent {describe_child(child)}.")


class WaitForAgentTool(Tool):
    name = "wait_for_agent"
    description = (
        "Wait until one of your sub-agents has finished its current work (at most "
        "timeout_seconds, default 60, at most 600), and get its new answers; 'still working' "
        "when the time ran out (call again, or carry on and its result reaches you later)."
    )
    parameters = schema(
        {
            "agent_id": _CHILD_ID,
            "timeout_seconds": {
                "type": "number",
                "description": "How long to wait at most (default 60, at most 600).",
            },
        },
        ["agent_id"],
    )
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        timeout = args.get("timeout_seconds", 60)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
            return ToolResult.error("timeout_seconds must be a number of seconds ≥ 0")
        try:
            wait = await port.wait_for_agent(
                ctx.session_id, str(args.get("agent_id", "")), float(timeout)
            )
        except AgentRunError as exc:
            return ToolResult.error(str(exc), code=exc.code)
        return _wait_result(wait)


class CloseAgentTool(Tool):
    name = "close_agent"
    description = (
        "Close one of your sub-agents for good: its queued and running work is cancelled. "
        "Returns any answers of it you had not read yet."
    )
    parameters = schema({"agent_id": _CHILD_ID}, ["agent_id"])
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        try:
            wait = await port.close_agent(ctx.session_id, str(args.get("agent_id", "")))
        except AgentRunError as exc:
            return ToolResult.error(f"Not closed: {exc}", code=exc.code)
        return _wait_result(wait)


class ListAgentsTool(Tool):
    name = "list_agents"
    description = (
        "List the persistent sub-agents you spawned: id, name, agent, state, permission mode."
    )
    parameters = schema({}, [])
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        try:
            children = await port.list_agents(ctx.session_id)
        except AgentRunError as exc:
            return ToolResult.error(str(exc), code=exc.code)
        if not children:
            return ToolResult(True, "You have no sub-agents (spawn_agent starts one).")
        output, full = bounded("\n".join(describe_child(c) for c in children))
        return ToolResult(True, output, full, data={"ids": [c.id for c in children]})


def child_tools() -> list[Tool]:
    return [
        SpawnAgentTool(),
        SendToAgentTool(),
        WaitForAgentTool(),
        CloseAgentTool(),
        ListAgentsTool(),
    ]
