"""The first tools: ``echo`` and ``write_file`` (a real side effect, inside the workspace)."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from fxdesk.tools.base import (
    Tool,
    ToolAccess,
    ToolContext,
    ToolFacts,
    ToolResult,
    run_in_thread,
)
from fxdesk.tools.textfiles import reach, reachable, unified_diff
from fxdesk.tools.workspace import display_path, no_follow


class EchoTool(Tool):
    name = "echo"
    description = "Return the given text unchanged."
    parameters = {  # noqa: RUF012 - a schema, read only
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to return."}},
        "required": ["text"],
        "additionalProperties": False,
    }
    facts = ToolFacts(ToolAccess.NONE)

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
    facts = ToolFacts(ToolAccess.WRITE, path_argument="path")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        content = str(args["content"])
        append = bool(args.get("append", False))

        def write() -> ToolResult:
            target = _target(args, ctx)
            target.parent.mkdir(parents=True, exist_ok=True)
            mode = "a" if append else "w"
            with open(target, mode, encoding="utf-8", opener=no_follow) as handle:
                written = handle.write(content)
            root = Path(ctx.workspace).resolve()
            shown = target.relative_to(root) if root in target.parents else target
            return ToolResult(
                True, f"{'appended' if append else 'wrote'} {written} characters to {shown}"
            )

        return await run_in_thread(write, f"write {args['path']}")

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult | None:
        """The file's text before and after as a diff (None when the file holds no UTF-8
        text to compare with), or the refusal ``run`` would give for the path."""
        content = str(args["content"])
        append = bool(args.get("append", False))

        def dry_run() -> ToolResult | None:
            target = _target(args, ctx)
            if target.is_dir():
                # What opening it for writing in ``run`` raises, so the message is the same.
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(target))
            before = ""
            if target.is_file():
                with open(target, "rb", opener=no_follow) as handle:
                    data = handle.read()
                try:
                    before = data.decode("utf-8")
                except UnicodeDecodeError:
                    return None
            after = before + content if append else content
            name = display_path(target, reach(ctx))
            return ToolResult(True, unified_diff(before, after, name), data={"path": name})

        return await run_in_thread(dry_run, f"write {args['path']}")


def _target(args: dict[str, Any], ctx: ToolContext) -> Path:
    """The file a call writes, resolved and checked as ``run`` and ``preview`` both need it
    (inside the workspace unless allowed, not hidden, not protected unless allowed)."""
    return reachable(ctx, str(args["path"]), write=True)


def basic_tools() -> list[Tool]:
    return [EchoTool(), WriteFileTool()]
