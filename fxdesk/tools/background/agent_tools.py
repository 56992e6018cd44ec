"""The agent's background tools: start a server or watcher, list, read its log, stop it.

``start_background`` declares itself as ``run_command`` does (``ToolAccess.EXECUTE`` on its
``command``): the permission check reads the line as bash will, the same rules apply (a rule
for ``run_command`` covers it), and the person is asked as for a command. A background task
always has the host's network (a server must be reachable from the person's browser), so in
auto mode starting one is asked about, as a command that needs the network is.

The other three act only on tasks the session itself started, and change nothing but those
tasks: they touch nothing outside the conversation, so no approval is needed (a rule naming
the tool can still deny it).

The tools reach the engine's background runtime through ``ctx.background``
(``tools.background.port``); where it is missing (a process that runs no background tasks),
each says so.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from fxdesk.domain.background import BackgroundError, BackgroundTask, TaskState
from fxdesk.tools.background.port import BackgroundPort
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolFacts, ToolResult, bounded, schema

UNAVAILABLE = "background tasks are not available in this fxdesk process"
REF_SCHEMA = {
    "type": ["string", "integer"],
    "description": "The task: its number (1 or '#1', as start_background and list_background "
    "say) or its id.",
}


def _port(ctx: ToolContext) -> BackgroundPort | None:
    return ctx.background


def _ref(args: dict[str, Any]) -> str | None:
    given = args.get("task")
    if isinstance(given, bool):
        return None
    if isinstance(given, int):
        return f"#{given}"
    if isinstance(given, str) and given.strip():
        return given.strip()
    return None


def _task_and_port(
    args: dict[str, Any], ctx: ToolContext
) -> tuple[str, BackgroundPort] | ToolResult:
    """The task a call names and the runtime to ask, or the error to give the model."""
    ref = _ref(args)
    if ref is None:
        return ToolResult.error("task must be a task number (1 or '#1') or a task id")
    port = _port(ctx)
    if port is None:
        return ToolResult.error(UNAVAILABLE)
    return ref, port


def describe(task: BackgroundTask, *, now_ms: int | None = None) -> str:
    """One line about a task, as the model reads it."""
    state = task.state.value
    if task.exit_code is not None and not task.state.running:
        state = f"{state} (exit code {task.exit_code})"
    line = f"{task.ref} {state}: `{task.command}`"
    if task.cwd != task.workspace:
        line += f" in {task.cwd}"
    if task.url:
        line += f" at {task.url}"
    elif task.expect_url and task.state.running:
        line += ", waiting for its URL"
    elif task.url_note:
        line += f" ({task.url_note})"
    if task.state.running and now_ms is not None and task.started_at_ms:
        line += f", up {_duration((now_ms - task.started_at_ms) / 1000)}"
    if task.persistence_warning:
        line += f". {task.persistence_warning}"
    return line


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


class StartBackgroundTool(Tool):
    name = "start_background"
    description = (
        "Start a long-running command in the background (a dev server, a watcher, "
        "`npm run dev`, `python -m http.server 8000`) and return at once with its task number. "
        "It runs in the same sandbox as run_command, with the network on so a browser can "
        "reach a server; its output goes to a log (read_background_log). Set expect_url when "
        "it is a server: its URL is looked for in its output and returned when printed within "
        "a few seconds. If the same command already runs in the same folder, nothing new is "
        "started and that task is returned. Stop it with stop_background when done. Use "
        "run_command instead for anything that finishes on its own."
    )
    parameters = schema(
        {
            "command": {"type": "string", "description": "The shell command to run (bash)."},
            "cwd": {
                "type": "string",
                "description": "Folder to run it in, relative to the workspace (default: the "
                "workspace).",
            },
            "expect_url": {
                "type": "boolean",
                "description": "true for a server that prints the URL it serves at.",
            },
        },
        ["command"],
    )
    facts = ToolFacts(
        ToolAccess.EXECUTE, command_argument="command", cwd_argument="cwd", network_always=True
    )

    url_wait_s: float = 8.0  # how long a call waits for a server's URL
    settle_s: float = 1.0  # how long a call waits to see a command fail at once
    poll_s: float = 0.05

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args.get("command")
        cwd = args.get("cwd")
        expect_url = args.get("expect_url", False)
        if not isinstance(command, str) or not command.strip():
            return ToolResult.error("command must be a non-empty string")
        if cwd is not None and not isinstance(cwd, str):
            return ToolResult.error("cwd must be a folder path relative to the workspace")
        if not isinstance(expect_url, bool):
            return ToolResult.error("expect_url must be true or false")
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        try:
            running = await port.reusable(ctx.session_id, command, cwd)
            if running is not None:
                return self._reused(running, ctx)
            task = await port.start(ctx.session_id, command, cwd, expect_url)
        except BackgroundError as exc:
            return ToolResult.error(str(exc))
        task = await self._settle(port, ctx.session_id, task)
        return self._started(task)

    def _reused(self, task: BackgroundTask, ctx: ToolContext) -> ToolResult:
        whose = "" if task.session_id == ctx.session_id else " (started by another session)"
        text = (
            f"Not started again: the same command already runs in this folder as "
            f"{describe(task)}{whose}. Use it."
        )
        return ToolResult(True, text, data={"task": task.number, "reused": True, "url": task.url})

    async def _settle(
        self, port: BackgroundPort, session_id: str, task: BackgroundTask
    ) -> BackgroundTask:
        """The task once its URL is known (a server), it ended, or the wait is over."""
        wait = self.url_wait_s if task.expect_url else self.settle_s
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            await asyncio.sleep(self.poll_s)
            await port.refresh()
            try:
                task = port.task(session_id, task.stable_id)
            except BackgroundError:
                break
            if task.url or not task.state.running or (task.expect_url and task.url_note):
                break
        return task

    def _started(self, task: BackgroundTask) -> ToolResult:
        data = {"task": task.number, "id": task.stable_id, "url": task.url}
        if task.state.running:
            text = f"Started {describe(task)}."
            if task.expect_url and not task.url:
                text += " No URL printed yet: list_background shows it once it is."
            return ToolResult(True, text, data=data)
        text = (
            f"{describe(task)}: it ended at once. "
            f"read_background_log with task {task.number} shows its output."
        )
        return ToolResult(task.state is TaskState.EXITED, text, data=data)


class ListBackgroundTool(Tool):
    name = "list_background"
    description = (
        "List this session's background tasks (started with start_background): number, state, "
        "exit code, command, folder and server URL."
    )
    parameters = schema({}, [])
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        port = _port(ctx)
        if port is None:
            return ToolResult.error(UNAVAILABLE)
        await port.refresh()
        tasks = port.tasks(ctx.session_id)
        if not tasks:
            return ToolResult(True, "No background tasks in this session.", data={"tasks": 0})
        now = int(time.time() * 1000)
        text = "\n".join(describe(task, now_ms=now) for task in tasks)
        output, full = bounded(text)
        return ToolResult(True, output, full, data={"tasks": len(tasks)})


class ReadBackgroundLogTool(Tool):
    name = "read_background_log"
    description = (
        "Read the output of one of this session's background tasks: the start and the end of "
        "its log (the middle of a long log is left out and counted), and its exit code once "
        "it has ended."
    )
    parameters = schema({"task": REF_SCHEMA}, ["task"])
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        found = _task_and_port(args, ctx)
        if isinstance(found, ToolResult):
            return found
        ref, port = found
        try:
            summary = await port.log(ctx.session_id, ref)
        except BackgroundError as exc:
            return ToolResult.error(str(exc))
        output, full = bounded(summary.text())
        return ToolResult(True, output, full, data={"bytes": summary.size})


class StopBackgroundTool(Tool):
    name = "stop_background"
    description = (
        "Stop one of this session's background tasks: its whole process group is asked to "
        "end, then killed if it does not within a few seconds."
    )
    parameters = schema({"task": REF_SCHEMA}, ["task"])
    facts = ToolFacts(ToolAccess.NONE)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        found = _task_and_port(args, ctx)
        if isinstance(found, ToolResult):
            return found
        ref, port = found
        try:
            outcome = await port.stop(ctx.session_id, ref)
        except BackgroundError as exc:
            return ToolResult.error(str(exc))
        ok = outcome.result.ended
        return ToolResult(ok, outcome.message, data={"result": outcome.result.value})


def background_tools() -> list[Tool]:
    return [
        StartBackgroundTool(),
        ListBackgroundTool(),
        ReadBackgroundLogTool(),
        StopBackgroundTool(),
    ]
