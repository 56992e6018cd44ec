"""``fxdesk run-commands``: list, add, change and remove a workspace's saved run commands.

The same commands as the Processes dock's Run ▸ Edit saved run commands… in the window, so they can
be scripted; ``fxdesk start -w DIR --saved NAME`` starts one. Every change goes through
``Engine.set_run_commands``, which checks the whole list again: nothing is saved when any of it
cannot be (no name, a name used twice, an empty command, a folder outside the workspace), and the
domain's sentence says which command and why.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.run_commands import RunCommand, RunCommandError, find
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.domain.model import Workspace
    from fxdesk.engine.facade import Engine

WORKSPACE_HELP = "the workspace's folder"


def register(commands: Any) -> None:
    saved = commands.add_parser(
        "run-commands",
        help="list, add, change or remove a workspace's saved run commands",
        description='The commands saved for a workspace ("dev server" → npm run dev), as in\n'
        "the window's Processes → Run ▸ → Edit saved run commands…. Without an ACTION: list them.\n"
        "Start one with `fxdesk start -w DIR --saved NAME`. Nothing is saved when a change\n"
        "cannot be (exit 2, saying why).",
        epilog="examples:\n"
        "  fxdesk run-commands -w . add 'dev server' --url -C web -- npm run dev\n"
        "  fxdesk run-commands -w . edit 'dev server' --durable\n"
        "  fxdesk run-commands -w . edit tests -- pytest -x --looponfail\n"
        "  fxdesk run-commands -w . remove tests",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    saved.add_argument("-w", "--workspace", metavar="DIR", help=WORKSPACE_HELP)
    saved.add_argument("--json", action="store_true", help="list as JSON")
    saved.set_defaults(handler=cmd_run_commands)
    actions = saved.add_subparsers(
        dest="run_commands_action", metavar="ACTION", parser_class=_CommandAfterDashes
    )

    add = actions.add_parser(
        "add",
        help="save a new command at the end of the list",
        description="Save COMMAND (a bash line, after --) as NAME, at the end of the list.",
        usage="fxdesk run-commands -w DIR add NAME [--url] [--durable] [-C FOLDER] -- COMMAND",
    )
    _workspace(add)
    add.add_argument("name", metavar="NAME", help="what it is called, e.g. 'dev server'")
    add.add_argument(
        "--url", action="store_true", help="it is a server: look for its URL in its output"
    )
    add.add_argument("--durable", action="store_true", help="it keeps running when fxdesk quits")
    add.add_argument(
        "-C",
        "--cwd",
        metavar="FOLDER",
        default="",
        help="where it starts, relative to the workspace (default: the workspace)",
    )

    edit = actions.add_parser(
        "edit",
        help="change a saved command; what is not given is kept",
        description="Change the saved command NAME; what is not given is kept, and it keeps "
        "its place in the list. A new bash line goes after --.",
        usage="fxdesk run-commands -w DIR edit NAME [--name NEW] [--url | --no-url] "
        "[--durable | --no-durable] [-C FOLDER] [-- COMMAND]",
    )
    _workspace(edit)
    edit.add_argument("name", metavar="NAME", help="the saved command (case does not matter)")
    edit.add_argument("--name", dest="new_name", metavar="NEW", help="call it NEW instead")
    edit.add_argument(
        "--url",
        action=argparse.BooleanOptionalAction,
        help="whether it is a server whose URL is looked for",
    )
    edit.add_argument(
        "--durable",
        action=argparse.BooleanOptionalAction,
        help="whether it keeps running when fxdesk quits",
    )
    edit.add_argument(
        "-C",
        "--cwd",
        metavar="FOLDER",
        help="where it starts, relative to the workspace ('.' for the workspace itself)",
    )

    remove = actions.add_parser("remove", help="forget a saved command")
    _workspace(remove)
    remove.add_argument("name", metavar="NAME", help="the saved command (case does not matter)")


class _CommandAfterDashes(argparse.ArgumentParser):
    """An action's parser that takes everything after the first ``--`` as the bash line
    (``args.command``) itself: with a positional COMMAND, argparse hands ``add dev --url --
    npm run dev`` an empty COMMAND, because an option follows NAME."""

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        command: list[str] = []
        if "--" in given:
            at = given.index("--")
            given, command = given[:at], given[at + 1 :]
        parsed, extras = super().parse_known_args(given, namespace)
        words = [word for word in extras if not word.startswith("-")]
        if words:
            self.error(f"put the command after --: … -- {shlex.join(extras)}")
        parsed.command = command
        return parsed, extras


def _workspace(parser: argparse.ArgumentParser) -> None:
    """``-w`` is taken before or after the action (``run-commands add -w DIR …`` reads well too)."""
    parser.add_argument(
        "-w", "--workspace", metavar="DIR", default=argparse.SUPPRESS, help=WORKSPACE_HELP
    )


def _command_line(words: list[str]) -> str:
    """One word is the bash line itself; several are quoted back into one (``-- sh -c 'a'``)."""
    return words[0] if len(words) == 1 else shlex.join(words)


def cmd_run_commands(args: argparse.Namespace, paths: DataPaths) -> int:
    if not args.workspace:
        print("fxdesk: say which workspace: run-commands -w DIR", file=sys.stderr)
        return ExitCode.USAGE
    folder = Path(args.workspace).expanduser().absolute()
    action = args.run_commands_action

    async def body(engine: Engine) -> int:
        workspace = await _workspace_of(engine, folder, make=action == "add")
        if action is None:
            _print(await engine.run_commands(workspace.id), workspace, args.json)
            return ExitCode.OK
        saved = await engine.run_commands(workspace.id)
        if action == "add":
            changed, said = _added(saved, args), f"added {' '.join(args.name.split())!r}"
        else:
            old = find(saved, args.name)
            if old is None:
                names = ", ".join(repr(c.name) for c in saved) or "none saved"
                raise CommandError(f"no run command named {args.name!r} here ({names})")
            if action == "remove":
                changed, said = tuple(c for c in saved if c != old), f"removed {old.name!r}"
            else:
                changed, said = _edited(saved, old, args), f"changed {old.name!r}"
        try:
            await engine.set_run_commands(workspace.id, changed)
        except RunCommandError as exc:
            again = action == "add" and find(saved, args.name) is not None
            raise CommandError(f"nothing saved: {exc}{_hint(again, folder)}") from exc
        print(f"fxdesk: {said} in {workspace.path}", file=sys.stderr)
        _print(await engine.run_commands(workspace.id), workspace, as_json=False)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


async def _workspace_of(engine: Engine, folder: Path, *, make: bool) -> Workspace:
    """The workspace of ``folder``; ``add`` makes it known (as ``sandbox set`` does)."""
    from fxdesk.engine.facade import InvalidWorkspace

    try:
        if make:
            return await engine.ensure_workspace(folder)
        return await engine.workspace_of(folder)
    except InvalidWorkspace as exc:
        raise CommandError(f"cannot use that workspace: {exc}") from exc


def _added(saved: tuple[RunCommand, ...], args: argparse.Namespace) -> tuple[RunCommand, ...]:
    new = RunCommand(
        args.name,
        _command_line(args.command) if args.command else "",
        args.cwd,
        expect_url=args.url,
        durable=args.durable,
    )
    return (*saved, new)


def _edited(
    saved: tuple[RunCommand, ...], old: RunCommand, args: argparse.Namespace
) -> tuple[RunCommand, ...]:
    changes: dict[str, Any] = {}
    if args.new_name is not None:
        changes["name"] = args.new_name
    if args.command:
        changes["command"] = _command_line(args.command)
    if args.cwd is not None:
        changes["folder"] = args.cwd
    if args.url is not None:
        changes["expect_url"] = args.url
    if args.durable is not None:
        changes["durable"] = args.durable
    if not changes:
        raise CommandError(
            "nothing to change: give --name, --url/--no-url, --durable/--no-durable, -C FOLDER "
            "or -- COMMAND"
        )
    return tuple(replace(c, **changes) if c == old else c for c in saved)


def _hint(name_taken: bool, folder: Path) -> str:
    if name_taken:
        return f" (change that one with `fxdesk run-commands -w {shlex.quote(str(folder))} edit`)"
    return ""


def _print(saved: tuple[RunCommand, ...], workspace: Workspace, as_json: bool) -> None:
    if as_json:
        print(json.dumps([c.to_value() for c in saved], indent=2))
    elif not saved:
        print(
            f"no run commands saved for {workspace.path}; add one with "
            "`fxdesk run-commands -w DIR add NAME -- COMMAND` or in the window"
        )
    else:
        for command in saved:
            flags = [
                f for f, on in (("url", command.expect_url), ("durable", command.durable)) if on
            ]
            where = f" (in {command.folder})" if command.folder else ""
            extra = f"  [{', '.join(flags)}]" if flags else ""
            print(f"{command.name}: {command.command}{where}{extra}")
