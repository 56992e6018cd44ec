"""The first tools: ``echo`` and ``write_file`` (a real side effect, inside the workspace)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fxdesk.tools.base import (
    PathOutsideWorkspace,
    Tool,
    ToolContext,
    ToolResult,
    no_follow,
    resolve_in_workspace,
)


class EchoTool(Tool):
    name = "echo"
    description = "Return the given text unchanged."
    parameters = {  # noqa: RUF012 - a schema, read only
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to return."}},
        "required": ["text"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(True, str(args["text"]))


class WriteFileTool(Tool):
    name = "write_file"
    description = "Write text to a file in the workspace, creating folders as needed."
    parameters = {  # noqa: RUF012 - a schema, read only
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the workspace."},
            "content": {"type": "string", "description": "The whole new content."},
            "append": {"type": "boolean", "description": "Append instead of replacing."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        content = str(args["content"])
        append = bool(args.get("append", False))

        def write() -> str:
            target = resolve_in_workspace(
                ctx.workspace, str(args["path"]), outside_ok=ctx.outside_ok
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            mode = "a" if append else "w"
            with open(target, mode, encoding="utf-8", opener=no_follow) as handle:
                written = handle.write(content)
            root = Path(ctx.workspace).resolve()
            shown = target.relative_to(root) if root in target.parents else target
            return f"{'appended' if append else 'wrote'} {written} characters to {shown}"

        try:
            return ToolResult(True, await asyncio.to_thread(write))
        except PathOutsideWorkspace as exc:
            return ToolResult.error(str(exc))
        except OSError as exc:
            return ToolResult.error(f"cannot write {args['path']}: {exc.strerror or exc}")


def basic_tools() -> list[Tool]:
    return [EchoTool(), WriteFileTool()]
