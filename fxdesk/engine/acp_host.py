"""An external agent's file and terminal requests, served by fxdesk (``AcpHost``).

The agent's ``fs/read_text_file`` and ``fs/write_text_file`` run fxdesk's own ``read_file`` and
``write_file`` tools, and ``terminal/create`` runs ``start_background``: each is a native tool
call of the turn (a ``tool_call`` and ``tool_result`` row), decided by the same permission check
(mode, rules, workspace boundary, protected and hidden paths), asked in the same inbox, run in
the same sandbox; so a write is in the session's Changes, and a terminal is a background task
in the Processes dock. These run on the turn's task, in the order the agent sent them
(``serve``). Where the person (or a rule) already allowed the agent's own permission request
for the tool call they belong to, the check does not ask a second time; a deny still refuses.

``terminal/output``, ``wait_for_exit``, ``kill`` and ``release`` act on that task through the
background runtime, with no rows: they read or stop what the agent itself started (only tasks of
the session, through ``BackgroundPort``). Release stops the task if it still runs, as the
protocol asks.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from fxdesk.domain.conversation import HistoryEntry, ToolCall
from fxdesk.domain.model import EntryKind
from fxdesk.engine.turn_state import TurnRuntime
from fxdesk.engine.turn_tools import Asked, ToolCalls
from fxdesk.providers.acp import HostRefused, TerminalState
from fxdesk.tools.background.port import BackgroundPort

T = TypeVar("T")

WAIT_POLL_S = 0.2  # how often terminal/wait_for_exit looks at the task
NO_RUNTIME = "this fxdesk runs no background tasks, so it cannot open a terminal"


class _Turn(Protocol):
    rt: TurnRuntime
    step: int
    explanation: str
    entries: list[HistoryEntry]
    tools: ToolCalls

    def entry(self, kind: EntryKind, **fields: object) -> HistoryEntry: ...

    async def commit(
        self, rows: list[HistoryEntry], label: str, *, final: bool = False
    ) -> None: ...


class TurnHost:
    """``AcpHost`` for one ACP turn.

    Args:
        turn: The native turn whose rows and tool calls these are.
        serve: Runs a request's work on the turn's task (after the updates before it).
        assistant: Takes the agent's text not yet saved, as the row saved before the call's.
        preallowed: Whether an agent permission request fxdesk allowed covers what comes now.
        background: The background runtime (None: terminals are refused).
    """

    def __init__(
        self,
        turn: _Turn,
        serve: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]],
        assistant: Callable[[], HistoryEntry],
        preallowed: Callable[[], bool],
        background: BackgroundPort | None,
    ) -> None:
        self.turn = turn
        self.serve = serve
        self.assistant = assistant
        self.preallowed = preallowed
        self.background = background
        self.closed = False  # the turn ended: waits stop
        self.limits: dict[str, int | None] = {}

    # --- through the native tools ------------------------------------------------------------

    async def read_text_file(self, path: str, line: int | None, limit: int | None) -> str:
        args: dict[str, object] = {"path": self._relative(path)}
        if line is not None:
            args["start_line"] = max(1, line)
        if limit is not None and limit > 0:
            args["end_line"] = int(args.get("start_line", 1)) + limit - 1  # type: ignore[call-overload]
        row = await self.serve(lambda: self._native("read_file", args))
        _raise_unless_ok(row)
        if (row.data.get("data") or {}).get("lines") == 0:
            return ""
        return _strip_line_numbers(row.full_text or row.content)

    async def write_text_file(self, path: str, content: str) -> None:
        args: dict[str, object] = {"path": self._relative(path), "content": content}
        row = await self.serve(lambda: self._native("write_file", args))
        _raise_unless_ok(row)

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> str:
        if self.background is None:
            raise HostRefused(NO_RUNTIME)
        line = shlex.join([command, *args]) if args else command
        if env:
            exports = " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())
            line = f"export {exports}; {line}"
        arguments: dict[str, object] = {"command": line}
        if cwd:
            arguments["cwd"] = self._relative(cwd)
        row = await self.serve(lambda: self._native("start_background", arguments))
        found = row.data.get("data") or {}
        task_id = found.get("id") if isinstance(found, dict) else None
        if not isinstance(task_id, str):
            raise HostRefused(row.content or "the command did not start")
        self.limits[task_id] = output_byte_limit
        return task_id

    async def _native(self, name: str, arguments: dict[str, object]) -> HistoryEntry:
        """One native tool call for the agent's request: its row, decided, run, recorded."""
        turn = self.turn
        call = ToolCall(f"acpfx-{uuid.uuid4().hex[:20]}", name, json.dumps(arguments))
        turn.step += 1
        said = self.assistant()
        turn.explanation = said.content or f"The external agent asks fxdesk to run {name}."
        rows = [
            said,
            turn.entry(
                EntryKind.TOOL_CALL,
                call_id=call.id,
                tool_name=name,
                content=call.arguments,
                data={"acp_request": True},
            ),
        ]
        await turn.commit(rows, "model_response")
        await turn.tools.run(call, Asked(preallowed=self.preallowed()))
        for entry in reversed(turn.entries):
            if entry.kind == EntryKind.TOOL_RESULT and entry.call_id == call.id:
                return entry
        raise HostRefused(f"{name} left no result")

    def _relative(self, path: str) -> str:
        """ACP paths are absolute: inside the workspace, the native tools get them relative
        (as the model would write them); outside, as they are, for the tools to judge."""
        workspace = self.turn.rt.workspace.resolve()
        candidate = Path(path)
        if not candidate.is_absolute():
            return path
        try:
            return str(candidate.relative_to(workspace)) or "."
        except ValueError:
            return path

    # --- terminals: the background runtime ---------------------------------------------------

    def _port(self) -> BackgroundPort:
        if self.background is None:
            raise HostRefused(NO_RUNTIME)
        return self.background

    async def terminal_output(self, terminal_id: str) -> TerminalState:
        port = self._port()
        session_id = self.turn.rt.session.id
        await port.refresh()
        try:
            task = port.task(session_id, terminal_id)
            summary = await port.log(session_id, terminal_id)
        except Exception as exc:  # TaskNotFound, a log that cannot be read
            raise HostRefused(f"no terminal {terminal_id}: {exc}") from None
        output = summary.tail if summary.omitted_bytes else summary.head + summary.tail
        truncated = bool(summary.omitted_bytes)
        limit = self.limits.get(terminal_id)
        if limit is not None and len(output.encode()) > limit:
            output = output.encode()[-limit:].decode("utf-8", "ignore")
            truncated = True
        if task.state.running:
            return TerminalState(output, truncated)
        code = task.exit_code if task.exit_code is not None else summary.exit_code
        if code is not None and code < 0:  # ended by a signal
            return TerminalState(output, truncated, True, None, f"signal {-code}")
        return TerminalState(output, truncated, True, code)

    async def wait_for_terminal_exit(self, terminal_id: str) -> TerminalState:
        while True:
            state = await self.terminal_output(terminal_id)
            if state.exited:
                return state
            if self.closed:
                raise HostRefused("the turn ended while waiting for the terminal")
            await asyncio.sleep(WAIT_POLL_S)

    async def kill_terminal(self, terminal_id: str) -> None:
        port = self._port()
        try:
            await port.stop(self.turn.rt.session.id, terminal_id)
        except Exception as exc:  # TaskNotFound, not ours
            raise HostRefused(f"no terminal {terminal_id}: {exc}") from None

    async def release_terminal(self, terminal_id: str) -> None:
        state = await self.terminal_output(terminal_id)
        if not state.exited:
            await self.kill_terminal(terminal_id)
        self.limits.pop(terminal_id, None)


def _raise_unless_ok(row: HistoryEntry) -> None:
    if not row.data.get("ok"):
        raise HostRefused(row.content or "refused")


def _strip_line_numbers(text: str) -> str:
    """``read_file`` shows each line as ``<number>\\t<line>``; the agent gets the lines."""
    lines = []
    for shown in text.split("\n"):
        number, tab, line = shown.partition("\t")
        if tab and number.strip().isdigit():
            lines.append(line)
    return "\n".join(lines) + ("\n" if lines else "")
