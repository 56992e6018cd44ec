"""Finding a workspace's named agents: the definition files, in lookup order, and the built-ins.

The order (the first definition of an id wins; the others are listed as what it overrides):

1. ``<workspace>/.fxdesk/agents/*.md`` (fxdesk's format);
2. ``<workspace>/.claude/agents/*.md`` (Claude Code's format);
3. the person's own folder, ``DataPaths.user_agents`` (fxdesk's format);
4. Claude Code's user folder, ``$CLAUDE_CONFIG_DIR/agents`` or ``~/.claude/agents``;
5. the built-ins: ``general`` and ``explorer``.

A file that cannot be used is listed as broken with its error and keeps its id (its declared
one, else its file name), so a broken workspace agent never lets a same-named one from further
down run in its place; it never hides agents of other ids either. The parsing itself is pure
(``fxdesk.domain.agent_definitions``); this module reads folders, so callers run it in a worker
thread.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from fxdesk.domain.agent_definitions import (
    AgentDefinitionError,
    AgentEntry,
    DefinitionFormat,
    DefinitionOrigin,
)
from fxdesk.domain.agent_files import parse_definition
from fxdesk.tools.registry import all_tools

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024  # a role prompt is a page or two; anything bigger is a mistake

GENERAL = """---
id: general
description: >-
  A general-purpose helper for one self-contained task: it reads, edits files and runs commands
  in the workspace as its caller may, then reports what it did.
---
You are a general-purpose helper working on one task handed to you by another agent. Work in the
workspace with the tools you have. Keep to the task: do not start unrelated changes.

When you are done, answer with a short report: what you did, what you found, the files you
changed, and anything left undone or uncertain. That report is all your caller sees.
"""

EXPLORER = """---
id: explorer
description: >-
  A read-only explorer: finds files and code and answers questions about the workspace. It
  never changes anything and runs no commands.
tools: [read_file, list_dir, glob, grep]
permission_mode: ask
---
You are a read-only explorer. Find what your caller asks about in the workspace: search with
glob and grep, list folders, read the files that matter. You cannot change files or run
commands, and you do not need to.

Answer with what you found, citing each place as path:line, and say plainly what you looked
for and did not find.
"""

BUILT_INS = {"general": GENERAL, "explorer": EXPLORER}


@dataclass(frozen=True)
class AgentFolder:
    """One folder of definition files.

    Attributes:
        path: The folder.
        origin: Where it sits in the lookup order.
        format: fxdesk's fields or Claude Code's.
        shown: How its files are named in messages (``.fxdesk/agents``, ``~/.claude/agents``).
    """

    path: Path
    origin: DefinitionOrigin
    format: DefinitionFormat
    shown: str


def _shown(path: Path) -> str:
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except (ValueError, RuntimeError):  # not under home, or no home at all
        return str(path)


def claude_user_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """Claude Code's user agents: ``$CLAUDE_CONFIG_DIR/agents``, else ``~/.claude/agents``."""
    env = os.environ if environ is None else environ
    configured = env.get("CLAUDE_CONFIG_DIR", "")
    if configured:
        return Path(configured).expanduser() / "agents"
    try:
        return Path.home() / ".claude" / "agents"
    except RuntimeError:
        return None


def agent_folders(
    workspace: Path, user_agents: Path | None, claude_user: Path | None
) -> list[AgentFolder]:
    """The folders to look in, in lookup order (missing ones are simply empty)."""
    fxdesk, claude = DefinitionFormat.FXDESK, DefinitionFormat.CLAUDE
    folders = [
        AgentFolder(workspace / ".fxdesk" / "agents", DefinitionOrigin.WORKSPACE, fxdesk, ""),
        AgentFolder(workspace / ".claude" / "agents", DefinitionOrigin.CLAUDE, claude, ""),
    ]
    folders = [replace(f, shown=str(f.path.relative_to(workspace))) for f in folders]
    if user_agents is not None:
        folders.append(AgentFolder(user_agents, DefinitionOrigin.USER, fxdesk, _shown(user_agents)))
    if claude_user is not None:
        folders.append(
            AgentFolder(claude_user, DefinitionOrigin.CLAUDE, claude, _shown(claude_user))
        )
    return folders


@functools.cache
def tool_names() -> frozenset[str]:
    """The names of every tool an agent can have (a definition naming another is broken)."""
    return frozenset(tool.name for tool in all_tools())


def built_in_entries(known_tools: Collection[str] | None = None) -> list[AgentEntry]:
    """The built-in agents; their hash is that of their text, like a file's."""
    entries = []
    for agent_id, text in BUILT_INS.items():
        definition = parse_definition(
            text, f"built-in:{agent_id}", default_id=agent_id, known_tools=known_tools
        )
        entries.append(AgentEntry(agent_id, DefinitionOrigin.BUILT_IN, None, definition))
    return entries


def read_file(path: Path, folder: AgentFolder, known_tools: Collection[str]) -> AgentEntry:
    """One file as an entry: its definition, or broken with the reason."""
    shown = f"{folder.shown}/{path.name}"
    stem = path.name.removesuffix(".md")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        error = f"{shown}: cannot be read: {exc.strerror or exc}"
        return AgentEntry(stem, folder.origin, str(path), error=error)
    if len(data) > MAX_FILE_BYTES:
        error = f"{shown}: larger than {MAX_FILE_BYTES // 1024} KiB; is it an agent definition?"
        return AgentEntry(stem, folder.origin, str(path), error=error)
    try:
        definition = parse_definition(
            data, shown, format=folder.format, default_id=stem, known_tools=known_tools
        )
    except AgentDefinitionError as exc:
        return AgentEntry(stem, folder.origin, str(path), error=str(exc))
    return AgentEntry(definition.id, folder.origin, str(path), definition)


def read_folder(folder: AgentFolder, known_tools: Collection[str]) -> list[AgentEntry]:
    """Every ``*.md`` file of the folder, by file name; a second file of an id is broken."""
    try:
        paths = sorted(p for p in folder.path.glob("*.md") if p.is_file())
    except OSError as exc:
        log.warning("cannot list the agent folder %s: %s", folder.path, exc)
        return []
    entries: list[AgentEntry] = []
    seen: dict[str, str] = {}
    for path in paths:
        entry = read_file(path, folder, known_tools)
        if entry.id in seen:
            first = seen[entry.id]
            error = f"{folder.shown}/{path.name}: id {entry.id!r} is already defined by {first}"
            entry = AgentEntry(entry.id, folder.origin, str(path), error=error)
        else:
            seen[entry.id] = path.name
        entries.append(entry)
    return entries


def lookup(
    folders: Iterable[AgentFolder], known_tools: Collection[str] | None = None
) -> list[AgentEntry]:
    """The agents by id: for each id the first definition in lookup order (built-ins last),
    with the files of the same id it overrides; then, so they get fixed, the broken files it
    overrides. ``find`` takes the first entry of an id."""
    known = tool_names() if known_tools is None else known_tools
    found: list[AgentEntry] = []
    for folder in folders:
        found.extend(read_folder(folder, known))
    found.extend(built_in_entries(known))
    winners: dict[str, AgentEntry] = {}
    losers: dict[str, list[AgentEntry]] = {}
    for entry in found:
        if entry.id not in winners:
            winners[entry.id] = entry
        else:
            losers.setdefault(entry.id, []).append(entry)
    listing: list[AgentEntry] = []
    for agent_id in sorted(winners):
        hidden = losers.get(agent_id, [])
        overrides = tuple(e.path or f"built-in:{agent_id}" for e in hidden)
        listing.append(replace(winners[agent_id], overrides=overrides))
        listing.extend(e for e in hidden if e.broken)
    return listing


def find(entries: Iterable[AgentEntry], agent_id: str) -> AgentEntry | None:
    """The entry that decides what ``agent_id`` is (the first of that id)."""
    return next((e for e in entries if e.id == agent_id), None)
