"""The agent's delegation tools: ``delegate``, ``emit_signal``, ``list_runs``, ``cancel_run``.

They touch nothing outside the conversation (``ToolAccess.NONE``): what a sub-agent then does is
judged call by call in its own session, whose mode never exceeds its caller's (the permission
check clamps a child to its ancestors), and its approvals reach the same approval inbox. A rule
naming one of these tools can still deny it.

The tools reach the engine's coordinator through ``ctx.agents`` (``tools.agents.port``); a
refusal (budget, depth, inbox full, unknown agent...) comes back as a tool error with the
coordinator's sentence, so the model can read why and do the work itself.
"""

from __future__ import annotations

from typing import Any

from fxdesk.domain.agent_inbox import InvalidSignal, validate_signal
from fxdesk.domain.agent_runs import AgentRun, AgentRunError, RunMode
from fxdesk.tools.agents.children import UNAVAILABLE, child_tools
from fxdesk.tools.agents.port import AgentsPort, DelegateRequest, RunResult
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolFacts, ToolResult, bounded, schema

MAX_REQUESTS = 16


def _port(ctx: ToolContext) -> AgentsPort | None:
    return ctx.agents


def _seconds(ms: int) -> str:
    return f"{ms / 1000:.1f} s"


def describe_result(index: int, result: RunResult) -> str:
    """One foreground result as the caller's model reads it."""
    head = (
        f"[{index}] {result.agent_id} (run {result.run_id}): {result.status} in "
        f"{_seconds(result.duration_ms)}, {result.tool_calls} tool calls"
    )
    body = result.result if result.status == "completed" else (result.error or "")
    return f"{head}\n{body}".rstrip()


def describe_run(run: AgentRun) -> str:
    """One run in a list, as the model reads it."""
    line = f"{run.id} {run.agent_id} [{run.mode}] {run.status}: {run.task.splitlines()[0][:80]}"
    if run.status.terminal and (run.summary or run.error):
        line += f" -> {run.summary or run.error}"
    return line


class DelegateTool(Tool):
    name = "delegate"
    description = (
        "Hand tasks to named sub-agents (built-in: 'general', a general-purpose helper, and "
        "'explorer', a read-only code searcher; more may be defined in .fxdesk/agents). Each "
        "runs as its own sub-agent session the person can open. mode 'foreground' (default) "
        "waits for all of them and returns their answers in request order; mode 'background' "
        "returns run ids at once, and each result later arrives as a message from your inbox. "
        "Give each task everything the sub-agent needs: it does not see this conversation. "
        "Budgets limit how many and how deep; a refusal says why (do the work yourself then)."
    )
    parameters = schema(
        {
            "requests": {
                "type": "array",
                "description": "The tasks, one sub-agent each.",
                "items": {
                    "type": "object",
                    "properties": {
                        "agent": {"type": "string", "description": "The agent's id."},
                        "task": {"type": "string", "description": "What it should do."},
                        "context": {
                            "type": "string",
                            "description": "Extra context for it (optional).",
                        },
                    },
                    "required": ["agent", "task"],
                    "additionalProperties": False,
                },
            },
            "mode": {
                "type": "string",
                "enum": ["foreground", "background"],
                "description": "foreground: wait for the results; background: results arrive "
                "in your inbox later.",
            },
        },
        ["requests"],
    )
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        parsed = _requests(args.get("requests"))
        if isinstance(parsed, ToolResult):
            return parsed
        mode_text = args.get("mode", "foreground")
        if mode_text not in ("foreground", "background"):
            return ToolResult.error("mode must be 'foreground' or 'background'")
        mode = RunMode(mode_text)
        try:
            answer = await port.delegate(ctx.session_id, ctx.work_id, ctx.call_id, parsed, mode)
        except AgentRunError as exc:
            return ToolResult.error(f"Not delegated: {exc}", code=exc.code)
        if mode is RunMode.BACKGROUND:
            runs = [r for r in answer if isinstance(r, AgentRun)]
            lines = [f"- {r.id} ({r.agent_id}): {r.task.splitlines()[0][:80]}" for r in runs]
            text = (
                f"Started {len(runs)} background run(s):\n"
                + "\n".join(lines)
                + "\nTheir results arrive as a message from your inbox when they finish; "
                "do not wait for them here."
            )
            return ToolResult(True, text, data={"run_ids": [r.id for r in runs]})
        results = [r for r in answer if isinstance(r, RunResult)]
        text = "\n\n".join(describe_result(i, r) for i, r in enumerate(results, 1))
        output, full = bounded(text)
        ok = any(r.status == "completed" for r in results)
        data = {"run_ids": [r.run_id for r in results], "statuses": [r.status for r in results]}
        return ToolResult(ok, output, full, data=data)


def _requests(given: object) -> list[DelegateRequest] | ToolResult:
    if not isinstance(given, list) or not given:
        return ToolResult.error("requests must be a non-empty list of {agent, task}")
    if len(given) > MAX_REQUESTS:
        return ToolResult.error(f"at most {MAX_REQUESTS} requests in one delegate call")
    out: list[DelegateRequest] = []
    for index, item in enumerate(given, 1):
        if not isinstance(item, dict):
            return ToolResult.error(f"request {index} must be an object with agent and task")
        agent, task, context = item.get("agent"), item.get("task"), item.get("context")
        if not isinstance(agent, str) or not agent.strip():
            return ToolResult.error(f"request {index}: agent is required (an agent id)")
        if not isinstance(task, str) or not task.strip():
            return ToolResult.error(f"request {index}: task is required")
        if context is not None and not isinstance(context, str):
            return ToolResult.error(f"request {index}: context must be text")
        out.append(DelegateRequest(agent.strip(), task.strip(), context))
    return out


class EmitSignalTool(Tool):
    name = "emit_signal"
    description = (
        "Only inside a sub-agent run whose agent may signal: raise an alert to the root "
        "agent's inbox without ending your task (an error rate climbing, a finding that cannot "
        "wait). A repeat with the same dedupe_key within 5 minutes is counted, not repeated."
    )
    parameters = schema(
        {
            "key": {"type": "string", "description": "A short identifier, e.g. 'err-rate'."},
            "severity": {
                "type": "string",
                "enum": ["info", "warning", "error", "critical"],
                "description": "How bad it is.",
            },
            "summary": {"type": "string", "description": "One line: what happened."},
            "details": {"type": "object", "description": "Optional: the particulars."},
            "dedupe_key": {"type": "string", "description": "Repeats of it are folded."},
        },
        ["key", "severity", "summary"],
    )
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        try:
            signal = validate_signal(
                args.get("key"),
                args.get("severity"),
                args.get("summary"),
                args.get("details"),
                args.get("dedupe_key"),
            )
            accepted = await port.emit_signal(ctx.session_id, signal)
        except InvalidSignal as exc:
            return ToolResult.error(str(exc))
        except AgentRunError as exc:
            return ToolResult.error(f"Signal not raised: {exc}", code=exc.code)
        text = (
            f"Signal {accepted.signal_id} {accepted.status} (lane {accepted.lane}"
            + (f", seen {accepted.count} times" if accepted.count > 1 else "")
            + ")."
        )
        return ToolResult(True, text, data={"signal_id": accepted.signal_id})


class ListRunsTool(Tool):
    name = "list_runs"
    description = (
        "List the sub-agent runs you may see (all of this session's when you are the root "
        "agent; your own and those below you otherwise), oldest first, with their status."
    )
    parameters = schema({}, [])
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        try:
            runs = await port.list_runs(ctx.session_id)
        except AgentRunError as exc:
            return ToolResult.error(str(exc), code=exc.code)
        if not runs:
            return ToolResult(True, "No sub-agent runs.")
        output, full = bounded("\n".join(describe_run(r) for r in runs))
        return ToolResult(True, output, full)


class CancelRunTool(Tool):
    name = "cancel_run"
    description = (
        "Cancel one of your sub-agent runs (and the runs below it). A background run's "
        "cancellation is reported in your inbox like any result."
    )
    parameters = schema(
        {
            "run_id": {"type": "string", "description": "The run's id."},
            "reason": {"type": "string", "description": "Why (shown to the person)."},
        },
        ["run_id"],
    )
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        run_id = str(args.get("run_id", "")).strip()
        reason = str(args.get("reason") or "cancelled by its caller").strip()
        try:
            changed = await port.cancel_run(ctx.session_id, run_id, reason)
        except AgentRunError as exc:
            return ToolResult.error(str(exc), code=exc.code)
        if not changed:
            return ToolResult(True, f"Run {run_id} had already finished; nothing to cancel.")
        return ToolResult(True, f"Run {run_id} cancelled.")


def agent_tools() -> list[Tool]:
    return [DelegateTool(), EmitSignalTool(), ListRunsTool(), CancelRunTool(), *child_tools()]
