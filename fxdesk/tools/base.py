"""What a tool is, and the registry the engine runs them from.

A tool has a name, a description and a JSON schema for its arguments, and an async ``run``. Its
result has a short ``output`` for the model (bounded) and, when that was cut, the ``full_output``
kept for the person. Bad arguments never raise: they become a failed result the model can read.

A tool also declares its facts (``ToolFacts``: what it may touch and which argument names it)
and can ``preview`` a call: a dry run through the same code as ``run``, stopping before the
effect. The permission check reads both from the tool, so what the person is asked about and
shown is what the tool then does.
"""

from __future__ import annotations

import abc
import asyncio
import enum
import json
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from fxdesk.tools.agents.port import AgentsPort
from fxdesk.tools.background.port import BackgroundPort
from fxdesk.tools.workspace import PathOutsideWorkspace

MODEL_OUTPUT_CAP = 16 * 1024
Done = TypeVar("Done")  # what a blocking piece of a tool's work returns


@dataclass(frozen=True)
class ToolContext:
    """Where and for whom a tool runs."""

    workspace: Path
    session_id: str
    work_id: str
    call_id: str
    # The permission check allowed this call to reach outside the workspace (the person approved
    # it, a rule allows it, or the session runs in yolo mode). Without it, paths that resolve
    # outside are refused here too, whatever the caller decided.
    outside_ok: bool = False
    # What the sandbox of a command lets through beyond the workspace (fxdesk.tools.sandbox):
    # the paths the permission check allowed this call to write, and the network. The temp
    # folder is what commands see as /tmp, kept between the session's commands (None: an empty
    # /tmp for each command).
    write_grants: tuple[Path, ...] = ()
    network: bool = False
    temp_dir: Path | None = None
    # fxdesk's data folder: hidden from every tool and command like ~/.ssh (tools/protected.py).
    # None when the caller does not know it (tests of something else).
    data_dir: Path | None = None
    # The permission check allowed this call to write a protected path (.git, .fxdesk): the
    # person approved it or a rule naming that path allows it. Without it such writes are
    # refused here too.
    protected_ok: bool = False
    # The workspace's own sandbox settings (domain/sandbox_settings.py): folders its commands
    # may write besides the workspace (``~`` not yet expanded) and variable names passed on.
    extra_writable: tuple[str, ...] = ()
    extra_env: tuple[str, ...] = ()
    # Why a command runs outside the sandbox ('' for inside it): unrestricted mode, or the person
    # chose "run outside the sandbox" for this one call. The tool result says so.
    outside_sandbox: str = ""
    # The engine's background runtime, for the background tools (None: this process runs no
    # background tasks).
    background: BackgroundPort | None = None
    # Where a command's output goes while it runs, whole lines at a time (the window's live
    # view); None: nobody watches.
    on_output: Callable[[str], None] | None = None
    # The engine's agent coordinator, for the delegation tools (None: no sub-agents here).
    agents: AgentsPort | None = None


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    output: str
    full_output: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, message: str, **data: Any) -> ToolResult:
        return cls(False, message, data=data)


def bounded(text: str, cap: int = MODEL_OUTPUT_CAP) -> tuple[str, str | None]:
    """``(output for the model, full text or None)``: long text is cut in the middle."""
    if len(text) <= cap:
        return text, None
    head, tail = text[: cap // 2], text[-cap // 4 :]
    cut = len(text) - len(head) - len(tail)
    return f"{head}\n[... {cut} characters cut; the person can see all of it ...]\n{tail}", text


class ToolAccess(enum.StrEnum):
    """What a tool may touch, as the permission check judges it."""

    NONE = "none"  # nothing outside the conversation (echo)
    READ = "read"  # reads the file or folder its path argument names
    WRITE = "write"  # writes the file its path argument names
    EXECUTE = "execute"  # runs a command line: judged by what the line does (domain.shell)
    # acts through another program (an MCP server's tool): judged by its name, the rules and
    # the mode, as no path or command of it can be seen
    EXTERNAL = "external"


@dataclass(frozen=True)
class ToolFacts:
    """What a tool touches, declared by the tool so nothing else keeps a table of tools.

    Attributes:
        access: What a call may do.
        path_argument: The argument naming the file or folder it reads or writes (READ, WRITE).
        path_default: The path a call that leaves ``path_argument`` out means: ``.`` (the
            workspace) for list_dir, glob and grep. Where the argument is required the call
            fails anyway, and the check judges the workspace itself.
        command_argument: The argument holding the command line (EXECUTE).
        network_argument: The argument by which the model says the command needs the network
            (EXECUTE): in auto mode the person is then asked for it.
        cwd_argument: The argument naming the folder the command starts in, relative to the
            workspace (EXECUTE; absent: the workspace).
        network_always: The command always runs with the network (a background server), so
            it is judged as one that needs it.
    """

    access: ToolAccess
    path_argument: str | None = None
    path_default: str = "."
    command_argument: str | None = None
    network_argument: str | None = None
    cwd_argument: str | None = None
    network_always: bool = False

    def path(self, args: Mapping[str, Any]) -> str | None:
        """The path a call names, as written (None for a tool without one)."""
        if self.path_argument is None:
            return None
        return str(args.get(self.path_argument, self.path_default))

    def command(self, args: Mapping[str, Any]) -> str | None:
        """The command line a call runs (None for a tool that runs none)."""
        if self.command_argument is None:
            return None
        return str(args.get(self.command_argument, ""))

    def wants_network(self, args: Mapping[str, Any]) -> bool:
        """Whether the call says its command needs the network."""
        if self.network_always:
            return True
        return self.network_argument is not None and args.get(self.network_argument) is True

    def cwd(self, args: Mapping[str, Any]) -> str | None:
        """The folder the call's command starts in, as written (None: the workspace)."""
        if self.cwd_argument is None:
            return None
        given = args.get(self.cwd_argument)
        return given if isinstance(given, str) and given.strip() else None


class Tool(abc.ABC):
    name: str
    description: str
    parameters: dict[str, Any]
    facts: ClassVar[ToolFacts]

    @abc.abstractmethod
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Do the work. Raise nothing for expected failures: return ``ToolResult.error``."""

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult | None:
        """What ``run`` would do with these (checked) arguments, without doing it.

        A tool that changes something overrides this with a dry run through the code ``run``
        uses, so the person approves exactly the effect that follows. By default there is
        nothing to show beyond the call itself.

        Returns:
            None when there is nothing to show; else the result ``run`` would give (for
            ``edit_file`` the diff it would apply), or the error it would refuse with.
        """
        return None

    def unavailable_note(self, workspace: Path) -> str:
        """Why this tool is not available in ``workspace`` now, for the model ('' when there
        is nothing to add to "not available": a tool the host revoked says nothing more)."""
        return ""


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def unregister(self, name: str) -> None:
        """Remove a tool (one that came and went: an MCP server's)."""
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools[name] for name in self.names)

    async def invoke(self, name: str, arguments: str, ctx: ToolContext) -> ToolResult:
        """Parse and check the arguments, then run the tool. Never raises for bad input."""
        found = self._parse(name, arguments)
        if isinstance(found, ToolResult):
            return found
        tool, args = found
        if tool.facts.access in _IN_WORKSPACE and not await asyncio.to_thread(
            os.path.isdir, ctx.workspace
        ):
            return ToolResult.error(workspace_gone(ctx.workspace))
        return await tool.run(args, ctx)

    async def preview(self, name: str, arguments: str, ctx: ToolContext) -> ToolResult | None:
        """The tool's dry run of a call (``Tool.preview``), after the checks ``invoke`` makes:
        a call ``invoke`` would refuse previews as that same refusal. None for an unknown tool
        or one with nothing to show."""
        if name not in self._tools:
            return None
        found = self._parse(name, arguments)
        if isinstance(found, ToolResult):
            return found
        tool, args = found
        return await tool.preview(args, ctx)

    def _parse(self, name: str, arguments: str) -> tuple[Tool, dict[str, Any]] | ToolResult:
        """The tool and its arguments, or the error result for the model."""
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult.error(f"unknown tool {name!r}; available: {', '.join(self.names)}")
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return ToolResult.error(f"invalid arguments for {name}: not JSON ({exc.msg})")
        problem = check_arguments(args, tool.parameters)
        if problem:
            return ToolResult.error(f"invalid arguments for {name}: {problem}")
        return tool, args


# Tools that work in the workspace folder: refused, saying why, when it is gone.
_IN_WORKSPACE = frozenset({ToolAccess.READ, ToolAccess.WRITE, ToolAccess.EXECUTE})


def workspace_gone(workspace: str | os.PathLike[str]) -> str:
    """What a tool says when its workspace folder is no longer there."""
    return (
        f"the workspace folder {os.fspath(workspace)} is gone (deleted or renamed while this "
        "session ran); nothing was run. Ask the person to put it back, or to open a session "
        "where it is now."
    )


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}


def check_arguments(args: Any, schema: dict[str, Any]) -> str:
    """A small JSON-schema check (object, required, property types). '' when fine."""
    if not isinstance(args, dict):
        return "expected a JSON object"
    for key in schema.get("required", []):
        if key not in args:
            return f"missing required argument {key!r}"
    properties = schema.get("properties", {})
    for key, value in args.items():
        spec = properties.get(key)
        if spec is None:
            if schema.get("additionalProperties", True) is False:
                return f"unknown argument {key!r}"
            continue
        declared = spec.get("type", "")
        names = [declared] if isinstance(declared, str) else list(declared)
        if any(name not in _TYPES for name in names):
            continue
        if not any(_is_a(value, name) for name in names):
            return f"argument {key!r} must be a {' or '.join(names)}"
    return ""


def _is_a(value: Any, name: str) -> bool:
    """Whether ``value`` is of the JSON type ``name`` (true and false are no numbers)."""
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    return isinstance(value, _TYPES[name])


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A tool's argument schema: an object with these properties and no others."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


class Refused(Exception):
    """An expected failure, carried out of the worker thread as the model's error message."""


async def run_in_thread(work: Callable[[], Done], what: str) -> Done | ToolResult:
    """Run blocking ``work`` in a thread and turn the expected failures into tool errors.

    Args:
        work: Reads or writes files; raises ``Refused``, ``PathOutsideWorkspace`` or
            ``OSError`` for what the model should be told.
        what: The action for an ``OSError`` message, e.g. ``"read notes.txt"``.
    """
    try:
        return await asyncio.to_thread(work)
    except (PathOutsideWorkspace, Refused) as exc:
        return ToolResult.error(str(exc))
    except OSError as exc:
        return ToolResult.error(f"cannot {what}: {exc.strerror or exc}")
