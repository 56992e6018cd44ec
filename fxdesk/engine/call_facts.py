"""What one tool call touches, as the permission check reads it, and its dry run.

``understand`` turns a call into the pure ``Request`` of ``domain.permissions``: what the tool
declares it touches (``ToolFacts``), its paths resolved as the tool resolves them (symlinks
followed), a command analysed as bash will read it, the git folders its git subcommands write
(``engine.git_writes``), and what it will run in (``Confinement``). ``edit_preview`` is the
tool's own dry run, shown with the approval.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from fxdesk.domain import shell
from fxdesk.domain.conversation import ToolCall
from fxdesk.domain.permissions import Access, Confinement, KnownTools, Request, Target
from fxdesk.engine.git_writes import written_git_folders
from fxdesk.logs import redact
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolRegistry
from fxdesk.tools.workspace import is_inside, resolve_path

log = logging.getLogger(__name__)

# How a tool's declared access is judged for its path.
TARGET_ACCESS = {ToolAccess.READ: Access.READ, ToolAccess.WRITE: Access.WRITE}


def leaves(request: Request) -> bool:
    return any(not place.inside for place in request.directories)


def parse_arguments(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (TypeError, ValueError):
        return arguments


def known_tools(tools: ToolRegistry) -> KnownTools:
    """Every registered tool by its declared access: a path rule for one tool then covers the
    others that read (or write) too, and the tools that touch nothing are always allowed."""

    def having(access: ToolAccess) -> frozenset[str]:
        return frozenset(tool.name for tool in tools if tool.facts.access is access)

    return KnownTools(having(ToolAccess.READ), having(ToolAccess.WRITE), having(ToolAccess.NONE))


def understand(
    found: Tool | None,
    tool: str,
    arguments: str,
    workspace: Path,
    known: KnownTools,
    confinement: Confinement | None = None,
) -> tuple[Request, str, dict[str, str]]:
    """The pure request for a tool call, the label the person sees, and why some targets are
    written (a git folder: the git command that writes it). Runs in a thread: resolving paths
    touches the file system. What it touches is what ``found`` declares; ``known`` is what every
    registered tool declares. A command's git subcommands that write a repository
    (``domain.git_commands``) write its git folder (``engine.git_writes``)."""
    root = workspace.resolve()
    home = os.path.expanduser("~")
    args = parse_arguments(arguments)
    if not isinstance(args, dict):
        args = {}
    facts = found.facts if found is not None else None
    none: dict[str, str] = {}
    bare = Request(tool, str(root), home=home, known=known), tool, none  # by name: rules, mode
    if facts is None:
        return bare
    command = facts.command(args)
    if facts.access is ToolAccess.EXECUTE and command is not None:
        # CDPATH as fxdesk has it. run_command's environment never carries it (the allow-list
        # of tools/sandbox.py), so following it into every place it could lead only asks more.
        cdpath = os.environ.get("CDPATH")
        start = facts.cwd(args)  # a background command may start in a folder of its own
        cwd = root if start is None else resolve_path(root, start)
        analysis = shell.analyse(command, cwd=str(cwd), home=home, cdpath=cdpath)
        git = written_git_folders(analysis.commands, home)
        files = (
            *(_target(root, path, Access.WRITE) for path in analysis.writes),
            *(_target(root, path, Access.WRITE) for path in git),
            *(_target(root, path, Access.READ) for path in analysis.reads),
        )
        places = tuple(_target(root, path, Access.READ) for path in analysis.directories)
        wants = facts.wants_network(args)
        request = Request(tool, str(root), files, analysis, home, known, places, confinement, wants)
        return request, command, git
    raw = facts.path(args)
    access = TARGET_ACCESS.get(facts.access)
    if access is None or raw is None:
        return bare
    target = _target(root, raw, access)
    return Request(tool, str(root), (target,), home=home, known=known), target.path, none


def _target(root: Path, raw: str, access: Access) -> Target:
    path = resolve_path(root, raw)
    return Target(str(path), access, is_inside(path, root))


PREVIEW_LINES = 400


async def edit_preview(call: ToolCall, ctx: ToolContext, tools: ToolRegistry) -> str:
    """What a call would do, for the approval: the tool's own dry run (``Tool.preview``).

    For ``edit_file`` / ``write_file`` the unified diff they would apply; when the tool would
    refuse the call (``edit_file`` with text that does not occur exactly once, a path it may not
    reach), that refusal in the tool's words, so approving is not mistaken for the change
    happening. '' for tools with nothing to show.

    Args:
        call: The tool call as the model made it.
        ctx: The context it would run in (``outside_ok`` as the check found it).
        tools: The registry it would run from.
    """
    try:
        result = await tools.preview(call.name, call.arguments, ctx)
    except Exception:  # a bug in a preview must not keep the person from being asked
        log.exception("preview of %s failed", call.name)
        return ""
    if result is None:
        return ""
    if not result.ok:
        return redact(f"{call.name} will refuse this call: {result.output}")
    lines = (result.full_output or result.output).splitlines(keepends=True)
    if len(lines) > PREVIEW_LINES:
        lines = [*lines[:PREVIEW_LINES], f"... {len(lines) - PREVIEW_LINES} more lines\n"]
    # A diff shows the file's text, and a file may hold a key (.env): like any tool output.
    return redact("".join(lines))
