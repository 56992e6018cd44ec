"""An MCP server's tool as an agent tool: ``mcp__<server>__<tool>``.

Its facts say it acts through another program (``ToolAccess.EXTERNAL``): the permission check
judges it by its name, the rules and the mode, like any tool that names no path or command, so
ask mode asks, a rule ``mcp__files__delete`` or ``*`` allows or denies it, and yolo allows it.
The call itself goes through the port (the engine's ``McpService``), which knows which server
of which workspace offers the name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol

from fxdesk.domain.mcp import ToolInfo
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolFacts, ToolResult


class McpPort(Protocol):
    """What an MCP tool asks the engine."""

    async def call(self, workspace: Path, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool ``name`` offered to ``workspace``; expected failures as error results."""
        ...

    def unavailable_note(self, workspace: Path, name: str) -> str:
        """Why ``name`` is not available to ``workspace`` now ('' when unknown)."""
        ...


class McpTool(Tool):
    """One server's tool, named and described as the server lists it."""

    facts: ClassVar[ToolFacts] = ToolFacts(ToolAccess.EXTERNAL)

    def __init__(self, server: str, info: ToolInfo, port: McpPort) -> None:
        self.name = info.qualified
        self.server = server
        self.remote_name = info.name
        self.description = (
            f"{info.description}\n(Tool “{info.name}” of the MCP server “{server}”.)".strip()
        )
        parameters = dict(info.parameters)
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        self.parameters = parameters
        self.port = port

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.port.call(ctx.workspace, self.name, args)

    def unavailable_note(self, workspace: Path) -> str:
        return self.port.unavailable_note(workspace, self.name)
