"""What a tool is, and the registry the engine runs them from.

A tool has a name, a description and a JSON schema for its arguments, and an async ``run``. Its
result has a short ``output`` for the model (bounded) and, when that was cut, the ``full_output``
kept for the person. Bad arguments never raise: they become a failed result the model can read.
"""

from __future__ import annotations

import abc
import errno
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODEL_OUTPUT_CAP = 16 * 1024


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


class Tool(abc.ABC):
    name: str
    description: str
    parameters: dict[str, Any]

    @abc.abstractmethod
    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Do the work. Raise nothing for expected failures: return ``ToolResult.error``."""


class ToolRegistry:
    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tools[name] for name in self.names)

    async def invoke(self, name: str, arguments: str, ctx: ToolContext) -> ToolResult:
        """Parse and check the arguments, then run the tool. Never raises for bad input."""
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
        return await tool.run(args, ctx)


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
        expected = _TYPES.get(spec.get("type", ""))
        if expected is None:
            continue
        if isinstance(value, bool) and spec.get("type") in ("integer", "number"):
            return f"argument {key!r} must be a {spec['type']}"
        if not isinstance(value, expected):
            return f"argument {key!r} must be a {spec['type']}"
    return ""


class PathOutsideWorkspace(ValueError):
    pass


def resolve_in_workspace(workspace: Path, path: str, *, outside_ok: bool = False) -> Path:
    """``path`` (relative to the workspace, or absolute) resolved with symlinks, refused when it
    lands outside the workspace unless ``outside_ok``."""
    root = workspace.resolve()
    candidate = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
    resolved = Path(os.path.realpath(candidate))
    if not outside_ok and resolved != root and root not in resolved.parents:
        raise PathOutsideWorkspace(f"{path} is outside the workspace {root}")
    return resolved


def no_follow(path: str, flags: int) -> int:
    """An ``opener`` for ``open()`` on a path ``resolve_in_workspace`` returned: the last part
    must still not be a symbolic link. One created since the check (a process swapping the file
    for a link out of the workspace) is refused instead of followed."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(
                errno.ELOOP,
                "it became a symbolic link after it was checked; fxdesk did not follow it",
                path,
            ) from None
        raise
