"""How a stdio MCP server's program is started: in the command sandbox where there is one.

A stdio server is a long-lived program, but nothing about it needs more than a command gets: it
runs under bubblewrap with the policy of the workspace's commands (``tools.sandbox``: the
workspace writable, ``.git`` and ``.fxdesk`` read-only, the data folder and credential stores
hidden, its own PID namespace, the allow-listed environment), ``--die-with-parent`` so it never
outlives fxdesk, and its own ``/tmp`` under the data folder. Unlike a command it has the network:
most servers exist to reach a service, and what it may touch on disk is what the sandbox holds.
The variables its configuration names (``env``) are passed on: the person wrote them for it.

A global server (the person's own configuration) has no workspace: its writable folder is one
of its own under the data folder. Where there is no sandbox (no bubblewrap; macOS, whose
Seatbelt profile is made for one command, not yet a server) the program runs unsandboxed, and
only because its configuration is trusted (global, or a workspace's the person trusted); the
server's status says so.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from fxdesk.domain.mcp import ServerConfig, safe_name
from fxdesk.logs import environment_without_secrets
from fxdesk.tools.base import ToolContext
from fxdesk.tools.mcp.client import Launch
from fxdesk.tools.sandbox import allowed_environment, bwrap_arguments
from fxdesk.tools.sandbox_placeholders import make_fxdesk_folder
from fxdesk.tools.sandbox_probe import BUBBLEWRAP, SandboxStatus, sandbox_status
from fxdesk.tools.shell import command_policy, no_sandbox
from fxdesk.tools.workspace import is_inside

MCP_TEMP = "mcp-tmp"  # under the data folder: each sandboxed server's /tmp
MCP_HOMES = "mcp-home"  # under the data folder: a global server's writable folder


def stdio_launch(
    config: ServerConfig,
    workspace: Path | None,
    data_dir: Path,
    status: SandboxStatus | None = None,
) -> Launch:
    """The launch of ``config``'s program for ``workspace`` (None: a global server). Blocking:
    probes the sandbox and reads the file system."""
    status = status or sandbox_status()
    suffix = "" if workspace is None else hashlib.sha256(str(workspace).encode()).hexdigest()[:12]
    key = safe_name(config.name) + (f"-{suffix}" if suffix else "")
    place = workspace if workspace is not None else data_dir / MCP_HOMES / safe_name(config.name)
    place.mkdir(mode=0o700, parents=True, exist_ok=True)
    cwd = (place / config.cwd) if config.cwd else place
    own = dict(config.env)
    argv = (config.command, *config.args)
    if not status.available or status.kind != BUBBLEWRAP:
        why = no_sandbox(status) if not status.available else "the sandbox runs no servers here"
        env = allowed_environment(environment_without_secrets()) | own
        return Launch(argv, env, cwd, sandboxed=False, outside=why)
    temp = data_dir / MCP_TEMP / key
    return sandboxed_launch(argv, own, place, cwd, f"mcp-{key}", temp, status, data_dir=data_dir)


def sandboxed_launch(
    argv: tuple[str, ...],
    own: Mapping[str, str],
    place: Path,
    cwd: Path,
    name: str,
    temp_dir: Path | None,
    status: SandboxStatus,
    *,
    data_dir: Path | None = None,
    home_writable: Sequence[Path] = (),
    extra_env: Sequence[str] = (),
) -> Launch:
    """A long-lived program (a stdio MCP server, an external ACP agent) under bubblewrap with
    the policy of ``place``'s commands, the network on, its own program readable, and
    ``own`` variables passed on. Blocking (reads the file system). ``status`` must be
    bubblewrap's.

    Args:
        argv: The program and its arguments.
        own: Variables its configuration names (the person wrote them for it).
        place: The writable folder (the workspace).
        cwd: Where it starts.
        name: Whose it is, for the policy's context (``mcp-<server>``, ``acp-<profile>``).
        temp_dir: What it sees as ``/tmp`` (None: an empty one).
        status: The sandbox found here (bubblewrap).
        data_dir: fxdesk's data folder: hidden (None: not known here).
        home_writable: Existing paths (resolved) it may write besides ``place``: an agent's
            own configuration folders. Its credential files inside them (``~/.codex/auth.json``)
            are then not hidden from it: they are its own login.
        extra_env: Variable names of fxdesk's environment passed on beyond the allow-list.
    """
    make_fxdesk_folder(place)  # bubblewrap keeps only what exists read-only
    context = ToolContext(
        place,
        name,
        name.split("-", 1)[0],
        name.split("-", 1)[0],
        network=True,
        data_dir=data_dir,
        temp_dir=temp_dir,
        extra_env=tuple(extra_env),
    )
    policy = command_policy(context)
    homes = tuple(home_writable)
    policy = replace(
        policy,
        readable=program_paths(argv),
        grants=tuple(dict.fromkeys((*policy.grants, *homes))),
        hidden=tuple(h for h in policy.hidden if not any(is_inside(h, p) for p in homes)),
    )
    arguments = bwrap_arguments(policy, argv, cwd, disable_userns=status.disable_userns)
    return Launch((status.bwrap, *arguments), dict(policy.environment) | dict(own), cwd, True)


def program_paths(argv: tuple[str, ...]) -> tuple[Path, ...]:
    """What of the server's own program lives under ``/tmp``, which the sandbox replaces with
    a fresh folder: the command (a virtual environment's program: the whole environment) and
    the files its arguments name. Bound read-only, so a server a person configured there still
    starts; nothing else of the host's ``/tmp`` shows."""
    found: list[Path] = []
    for word in argv:
        if not word.startswith("/tmp/"):
            continue
        path = Path(word)
        if not path.exists():
            continue
        if path.parent.name == "bin" and (path.parent.parent / "pyvenv.cfg").is_file():
            path = path.parent.parent  # a virtual environment: its packages too
        elif path.is_file():
            path = path.parent
        resolved = path.resolve()
        if resolved.is_relative_to("/tmp") and resolved not in found:
            found.append(resolved)
    return tuple(found)
