"""``fxdesk agents list|show``: the named agents a workspace's sessions can hand work to.

Definitions are Markdown files (docs/agents.md); a broken one is listed with its error (file,
line, field), so ``fxdesk agents list`` is also the way to check the files one edits.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.agent_definitions import AgentDefinition, AgentEntry
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine


def register(commands: Any) -> None:
    agents = commands.add_parser(
        "agents",
        help="named agents (definition files) a session can delegate to",
        description="Named agents are Markdown files in <workspace>/.fxdesk/agents, "
        "<workspace>/.claude/agents, the user's fxdesk agents folder and ~/.claude/agents, "
        "the first of an id winning; 'general' and 'explorer' are built in.",
    )
    agents.set_defaults(handler=cmd_agents, agents_command=None, workspace=".", json=False)
    actions = agents.add_subparsers(dest="agents_command", metavar="ACTION")
    listing = actions.add_parser("list", help="list the agents, broken files with their error")
    show = actions.add_parser("show", help="everything about one agent: fields, prompt, hash")
    show.add_argument("id", help="the agent's id")
    for parser in (listing, show):
        parser.add_argument(
            "-w", "--workspace", metavar="DIR", default=".", help="the project folder (default: .)"
        )
        parser.add_argument("--json", action="store_true", help="print JSON")


def _definition_json(definition: AgentDefinition) -> dict[str, Any]:
    return {
        "id": definition.id,
        "description": definition.description,
        "format": definition.format.value,
        "source": definition.source,
        "hash": definition.hash,
        "profile": definition.profile,
        "model": definition.model,
        "effort": definition.effort,
        "tools": list(definition.tools) if definition.tools is not None else None,
        "disallowed_tools": list(definition.disallowed_tools),
        "permission_mode": definition.permission_mode,
        "max_iterations": definition.max_iterations,
        "timeout_s": definition.timeout_s,
        "signals": definition.signal_lane,
        "warnings": list(definition.warnings),
        "prompt": definition.prompt,
    }


def _entry_json(entry: AgentEntry, *, full: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": entry.id,
        "source": entry.origin.value,
        "path": entry.path,
        "broken": entry.broken,
        "error": entry.error,
        "overrides": list(entry.overrides),
    }
    if entry.definition is not None:
        row["description"] = entry.definition.description
        row["hash"] = entry.definition.hash
        row["warnings"] = list(entry.definition.warnings)
        if full:
            row["definition"] = _definition_json(entry.definition)
    return row


def _print_list(entries: list[AgentEntry]) -> None:
    width = max((len(e.id) for e in entries), default=2)
    for entry in entries:
        head = f"{entry.id:<{width}}  {entry.origin.value:<9}  "
        if entry.definition is None:
            print(f"{head}BROKEN: {entry.error}")
            continue
        notes = ""
        if entry.definition.warnings:
            count = len(entry.definition.warnings)
            notes = f"  ({count} warning{'s' if count > 1 else ''}: fxdesk agents show {entry.id})"
        print(f"{head}{entry.definition.description}{notes}")


def _show(value: object, unset: str) -> str:
    if value is None:
        return unset
    if isinstance(value, tuple):
        return ", ".join(value) if value else "(none)"
    return str(value)


def _print_entry(entry: AgentEntry) -> None:
    print(f"id:              {entry.id}")
    print(f"source:          {entry.origin.value}")
    print(f"file:            {entry.path or '(built in)'}")
    for hidden in entry.overrides:
        print(f"overrides:       {hidden}")
    d = entry.definition
    if d is None:
        print(f"BROKEN:          {entry.error}")
        return
    print(f"hash:            sha256:{d.hash}")
    print(f"format:          {d.format.value}")
    print(f"description:     {d.description}")
    callers, profiles = "the caller's", "the profile's"
    print(f"profile:         {_show(d.profile, callers)}")
    print(f"model:           {_show(d.model, profiles + ', else ' + callers)}")
    print(f"effort:          {_show(d.effort, profiles)}")
    print(f"tools:           {_show(d.tools, 'every tool the caller has')}")
    if d.disallowed_tools:
        print(f"disallowed:      {_show(d.disallowed_tools, '')}")
    mode = _show(d.permission_mode, callers)
    print(f"permission mode: {mode} (never more than the caller's)")
    print(f"max iterations:  {_show(d.max_iterations, 'the default')}")
    print(f"timeout:         {_show(d.timeout_s and f'{d.timeout_s} s', 'the default')}")
    print(f"signals:         {_show(d.signal_lane and f'{d.signal_lane} lane', 'no')}")
    for warning in d.warnings:
        print(f"warning:         {warning}")
    print()
    print(d.prompt or "(no role prompt)")


def cmd_agents(args: argparse.Namespace, paths: DataPaths) -> int:
    action = args.agents_command or "list"
    workspace = Path(args.workspace).expanduser().absolute()

    async def body(engine: Engine) -> int:
        from fxdesk.engine.facade import InvalidWorkspace, UnknownAgent

        try:
            if action == "show":
                entry = await engine.agent_entry(workspace, args.id)
            else:
                entries = await engine.agent_definitions(workspace)
        except InvalidWorkspace as exc:
            raise CommandError(f"cannot use that workspace: {exc}") from exc
        except UnknownAgent as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from exc
        if action == "show":
            if args.json:
                print(json.dumps(_entry_json(entry, full=True), indent=2))
            else:
                _print_entry(entry)
            return ExitCode.FAILED if entry.broken else ExitCode.OK
        if args.json:
            print(json.dumps([_entry_json(e, full=False) for e in entries], indent=2))
        else:
            _print_list(entries)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)
