"""``fxdesk mcp list|trust``: the MCP tool servers, their state and tools; trusting a workspace's.

``list`` starts the servers this process may start (the person's own, and those of trusted
workspaces), waits until each is running or has failed, prints them with their tools, and stops
them: what an agent would be offered. ``trust`` trusts a workspace's configuration as it is now
(its hash is stored; a later change asks again), makes the folder a workspace if it was not one,
and shows its servers starting.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.domain.mcp import ServerStatus
    from fxdesk.engine.facade import Engine

SETTLE_S = 60.0  # how long ``list`` waits for servers to start (npx may download first)


def register(commands: Any) -> None:
    mcp = commands.add_parser(
        "mcp",
        help="MCP tool servers: list them, trust a workspace's",
        description="MCP servers give agents more tools (mcp__server__tool). Yours are in "
        "mcp.json in the config folder; a workspace's in .fxdesk/mcp.json or .mcp.json, "
        "started only once you trust that configuration.",
    )
    mcp.set_defaults(handler=cmd_mcp)
    actions = mcp.add_subparsers(dest="mcp_command", metavar="ACTION")
    listing = actions.add_parser("list", help="start the servers, list them and their tools")
    listing.add_argument("--json", action="store_true")
    trust = actions.add_parser("trust", help="trust a workspace's MCP configuration as it is")
    trust.add_argument("workspace", metavar="WORKSPACE", help="the workspace's folder")


def cmd_mcp(args: argparse.Namespace, paths: DataPaths) -> int:
    action = args.mcp_command or "list"
    folder = getattr(args, "workspace", None)
    where = Path(folder).expanduser().absolute() if folder else None

    async def body(engine: Engine) -> int:
        if engine.mcp is None:
            raise CommandError("MCP servers did not start")
        if action == "trust":
            assert where is not None
            return await _trust(engine, where)
        return await _list(engine, bool(getattr(args, "json", False)))

    return execute(paths, body, recover=False, background=False, mcp=True)


async def _settled(engine: Engine, workspace: str | None = None) -> list[ServerStatus]:
    from fxdesk.domain.mcp import ServerState

    assert engine.mcp is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_S
    while True:
        found = [s for s in engine.mcp.statuses() if workspace is None or s.workspace == workspace]
        if loop.time() > deadline or all(s.state is not ServerState.STARTING for s in found):
            return found
        await asyncio.sleep(0.05)


async def _list(engine: Engine, as_json: bool) -> int:
    statuses = await _settled(engine)
    if as_json:
        print(json.dumps([s.to_json() for s in statuses], indent=2))
        return ExitCode.OK
    if not statuses:
        print("No MCP servers are configured.")
    for status in statuses:
        print_status(status)
    return ExitCode.OK


async def _trust(engine: Engine, where: Path) -> int:
    from fxdesk.engine.facade import InvalidWorkspace

    assert engine.mcp is not None
    try:  # a workspace from now on, so its servers start wherever fxdesk runs its sessions
        workspace = await engine.ensure_workspace(where)
    except InvalidWorkspace as exc:
        raise CommandError(f"cannot use that workspace: {exc}") from exc
    config = await engine.mcp.trust(Path(workspace.path))
    if not config.servers:
        raise CommandError(f"{where} has no MCP configuration (.fxdesk/mcp.json or .mcp.json)")
    print(f"fxdesk: trusted the MCP configuration of {where}", file=sys.stderr)
    for status in await _settled(engine, workspace.path):
        print_status(status)
    return ExitCode.OK


def print_status(status: ServerStatus) -> None:
    where = status.workspace or "global"
    print(f"{status.name} ({where}, {status.transport.value}): {status.state.value}")
    print(f"  runs: {status.target}")
    if status.detail:
        print(f"  {status.detail}")
    for tool in status.tools:
        print(
            f"  - {tool.qualified}: {tool.description.splitlines()[0] if tool.description else ''}"
        )
    if status.log_path:
        print(f"  log: {status.log_path}")
