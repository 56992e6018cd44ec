"""Claude Code's sub-agent files (``.claude/agents/*.md``) read as fxdesk definitions.

Claude Code's front matter has ``name``, ``description``, ``tools`` (a comma-separated text),
``disallowedTools``, ``model`` (``sonnet``, ``opus``, ``haiku``, ``inherit`` or a model id) and
``permissionMode``. The mapping (docs/agents.md says the same):

- ``name`` → id (the file name when absent); ``description`` → description.
- ``tools`` and ``disallowedTools``: Claude Code's tool names become fxdesk's (``TOOL_NAMES``);
  ``Bash(git diff:*)`` becomes run_command, whose commands fxdesk's permission rules decide;
  a tool fxdesk has no counterpart for (WebFetch, Task, mcp__…) is left out, with a warning.
  Leaving tools out never gives the agent more than it asked for.
- ``model``: ``inherit`` and the aliases ``sonnet``/``opus``/``haiku`` run on the caller's
  model (the alias names no model of fxdesk's profiles; a warning says so); a full model id is
  kept as the model.
- ``permissionMode``: ``default`` and ``plan`` → ask, ``acceptEdits`` → auto,
  ``bypassPermissions`` → yolo, ``dontAsk`` → ask (fxdesk has no deny-everything mode; a
  warning says so). Clamped to the caller's mode like every definition's.
- Every other field (``color``, ``skills``, ``hooks``, …) is kept as a warning, not an error.
"""

from __future__ import annotations

from typing import Any

from fxdesk.domain.agent_definitions import (
    Reader,
    agent_id,
    description,
)
from fxdesk.domain.model import PermissionMode

TOOL_NAMES = {
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Bash": "run_command",
    "Glob": "glob",
    "Grep": "grep",
    "LS": "list_dir",
    "BashOutput": "read_background_log",
    "KillShell": "stop_background",
    "KillBash": "stop_background",
}
MODES = {
    "default": PermissionMode.ASK,
    "plan": PermissionMode.ASK,
    "acceptEdits": PermissionMode.AUTO,
    "bypassPermissions": PermissionMode.YOLO,
    "dontAsk": PermissionMode.ASK,
}
MODEL_ALIASES = ("sonnet", "opus", "haiku")
FIELDS = ("name", "description", "tools", "disallowedTools", "model", "permissionMode")


def _tools(reader: Reader, name: str) -> tuple[str, ...] | None:
    entries = reader.names(name)
    if entries is None:
        return None
    item = reader.fields[name]
    known = reader.known_tools
    chosen: list[str] = []
    for given, _node in entries:
        base, _, pattern = given.partition("(")
        base = base.strip()
        tool = TOOL_NAMES.get(base)
        if tool is None and (known is None or base in known) and base.islower():
            tool = base  # fxdesk's own name
        if tool is None or (known is not None and tool not in known):
            reader.warn(item, f"{given!r} has no fxdesk counterpart; left out")
            continue
        if pattern:
            reader.warn(
                item,
                f"{given!r}: the pattern is not kept; fxdesk's permission rules decide "
                f"what {tool} may do",
            )
        if tool not in chosen:
            chosen.append(tool)
    return tuple(chosen)


def _model(reader: Reader) -> str | None:
    value = reader.text("model")
    if value is None or value == "inherit":
        return None
    if value in MODEL_ALIASES:
        reader.warn(
            reader.fields["model"],
            f"{value!r} is a Claude Code alias; the agent runs on its caller's model "
            "(give a model id to choose one)",
        )
        return None
    return value


def _mode(reader: Reader) -> PermissionMode | None:
    value = reader.text("permissionMode")
    if value is None:
        return None
    if value not in MODES:
        reader.fail(
            reader.fields["permissionMode"],
            "permissionMode",
            f"{value!r} is not one of {', '.join(MODES)}",
        )
    if value in ("plan", "dontAsk"):
        reader.warn(
            reader.fields["permissionMode"],
            f"fxdesk has no {value!r} mode; the agent runs in ask mode (reads in the "
            "workspace run, everything else asks the person)",
        )
    return MODES[value]


def claude_fields(reader: Reader, default_id: str | None) -> dict[str, Any]:
    """The definition's values from Claude Code's fields (see the module's mapping)."""
    for name, item in reader.fields.items():
        if name not in FIELDS:
            reader.warn(item, "ignored (fxdesk does not use this Claude Code field)")
    return {
        "id": agent_id(reader, "name", default_id),
        "description": description(reader),
        "tools": _tools(reader, "tools"),
        "disallowed_tools": _tools(reader, "disallowedTools") or (),
        "model": _model(reader),
        "permission_mode": _mode(reader),
    }
