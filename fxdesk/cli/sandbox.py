"""``fxdesk sandbox show|set``: what the sandbox gives a workspace's commands, and the
workspace's own additions (writable paths, variables, the network in auto mode).

The same settings as Settings → Permissions in the window, so they can be scripted: ``set``
changes only what it is given and saves nothing when any of it cannot be used.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine, SandboxOverview


def register(commands: Any) -> None:
    sandbox = commands.add_parser(
        "sandbox",
        help="what the sandbox lets commands do, per workspace",
        description="Show what the sandbox gives the agent's commands, or change what one "
        "workspace adds to it: folders its commands may write (a tool's cache, e.g. "
        "~/.cache/pip), variables passed on, the network in auto mode.",
    )
    sandbox.set_defaults(handler=cmd_sandbox)
    actions = sandbox.add_subparsers(dest="sandbox_command", metavar="ACTION")
    show = actions.add_parser("show", help="whether commands run sandboxed, and what they get")
    show.add_argument("-w", "--workspace", metavar="DIR", help="a workspace's folder")
    show.add_argument("--json", action="store_true")
    change = actions.add_parser(
        "set",
        help="change what one workspace's commands may do",
        description="Change one workspace's additions to the sandbox; what is not given is "
        "kept. --writable and --env replace their list (repeat them for several); --clear-* "
        "empties it. Nothing is saved when any value cannot be used.",
    )
    change.add_argument("-w", "--workspace", metavar="DIR", required=True)
    change.add_argument(
        "--writable",
        metavar="PATH",
        action="append",
        help="a folder commands may write (absolute, or ~/...); missing ones under the home "
        "folder are made",
    )
    change.add_argument("--clear-writable", action="store_true", help="no writable paths")
    change.add_argument(
        "--env", metavar="NAME", action="append", help="a variable passed on to commands"
    )
    change.add_argument("--clear-env", action="store_true", help="no extra variables")
    change.add_argument(
        "--network",
        choices=["on", "off"],
        help="whether commands get the network in auto mode without asking",
    )


def cmd_sandbox(args: argparse.Namespace, paths: DataPaths) -> int:
    action = args.sandbox_command or "show"
    problem = _set_problem(args) if action == "set" else ""
    if problem:  # refused before opening anything
        print(f"fxdesk: {problem}", file=sys.stderr)
        return ExitCode.USAGE
    folder = getattr(args, "workspace", None)
    where = Path(folder).expanduser().absolute() if folder else None

    async def body(engine: Engine) -> int:
        if action == "set":
            assert where is not None
            return await _set(engine, where, args)
        return await _show(engine, where, bool(getattr(args, "json", False)))

    return execute(paths, body, with_engine=False)


def _set_problem(args: argparse.Namespace) -> str:
    """Why a ``set`` cannot be done as given: it changes nothing or contradicts itself."""
    if args.writable and args.clear_writable:
        return "--writable and --clear-writable contradict each other"
    if args.env and args.clear_env:
        return "--env and --clear-env contradict each other"
    given = (args.writable, args.clear_writable, args.env, args.clear_env, args.network)
    if not any(value for value in given):
        return "nothing to set: give --writable, --env, --network or a --clear-* option"
    return ""


async def _show(engine: Engine, where: Path | None, as_json: bool) -> int:
    workspace_id = None if where is None else (await engine.find_workspace(where)).id
    print_overview(await engine.sandbox_overview(workspace_id), as_json)
    return ExitCode.OK


async def _set(engine: Engine, where: Path, args: argparse.Namespace) -> int:
    from fxdesk.engine.facade import InvalidWorkspace, SandboxSettingsError, WorkspaceSandbox

    try:
        workspace = await engine.ensure_workspace(where)
    except InvalidWorkspace as exc:
        raise CommandError(f"cannot use that workspace: {exc}") from exc
    old = await engine.workspace_sandbox(workspace.id)
    try:
        new = WorkspaceSandbox.make(
            _listed(old.writable, args.writable, args.clear_writable),
            _listed(old.extra_env, args.env, args.clear_env),
            old.network if args.network is None else args.network == "on",
        )
        await engine.set_workspace_sandbox(workspace.id, new)
    except SandboxSettingsError as exc:
        raise CommandError(f"nothing saved: {exc}") from exc
    print(f"fxdesk: saved the sandbox settings of {workspace.path}", file=sys.stderr)
    print_overview(await engine.sandbox_overview(workspace.id), as_json=False)
    return ExitCode.OK


def _listed(old: tuple[str, ...], given: list[str] | None, clear: bool) -> tuple[str, ...]:
    if clear:
        return ()
    return tuple(given) if given else old


def print_overview(view: SandboxOverview, as_json: bool) -> None:
    """The overview as a few titled lists (or as JSON)."""
    from fxdesk.engine.health import status_text

    if as_json:
        data = asdict(view) | {"warnings": list(view.warnings())}
        data["key_variables"] = sorted(view.key_variables)
        print(json.dumps(data, indent=2, default=str))
        return
    print(status_text(view.status))
    if view.workspace:
        print(f"Workspace: {view.workspace}")
    _section("Writable", view.writable)
    _section("Read-only inside", view.read_only)
    _section("Hidden", view.hidden)
    print(f"Network: {view.network}")
    if view.settings.extra_env:
        print(f"Variables passed on besides the usual ones: {', '.join(view.settings.extra_env)}")
    _section("Not made writable", view.refused)
    for warning in view.warnings():
        print(f"Warning: {warning}")


def _section(title: str, lines: tuple[str, ...]) -> None:
    if lines:
        print(f"{title}:")
        for line in lines:
            print(f"  {line}")
