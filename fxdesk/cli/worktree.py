"""``fxdesk worktree status|commit|merge|patch|discard SESSION`` and ``fxdesk worktree default``
(issue 18 item 2, docs/worktrees.md): the Session menu's worktree actions on the command line.

Each reads or acts on the worktree of the session's tree; none runs the session. Refusals (not a
worktree session, nothing to merge, a main checkout with changes of its own) print git's reason
and exit 2.
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
    from fxdesk.engine.facade import Engine


def register(commands: Any) -> None:
    group = commands.add_parser(
        "worktree",
        help="a worktree session's branch: status, commit, merge back, patch, discard",
        description="Act on the git worktree a session runs in (fxdesk run --worktree).",
    )
    actions = group.add_subparsers(dest="action", required=True, metavar="ACTION")
    status = actions.add_parser("status", help="branch, base, commits ahead, uncommitted files")
    status.add_argument("session", metavar="SESSION", help="session id or unique prefix")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=cmd_status)
    commit = actions.add_parser("commit", help="commit everything changed in the worktree")
    commit.add_argument("session", metavar="SESSION")
    commit.add_argument("-m", "--message", required=True, help="the commit message")
    commit.set_defaults(handler=cmd_commit)
    merge = actions.add_parser("merge", help="merge the branch into the main checkout's branch")
    merge.add_argument("session", metavar="SESSION")
    how = merge.add_mutually_exclusive_group()
    how.add_argument("--squash", action="store_true", help="as one commit (default: fast-forward)")
    how.add_argument("--ff", action="store_true", help="fast-forward only (the default)")
    merge.add_argument("-m", "--message", default="", help="the squashed commit's message")
    merge.set_defaults(handler=cmd_merge)
    patch = actions.add_parser("patch", help="everything changed since the base, as a patch")
    patch.add_argument("session", metavar="SESSION")
    patch.add_argument("-o", "--output", metavar="FILE", help="write it there (default: stdout)")
    patch.set_defaults(handler=cmd_patch)
    discard = actions.add_parser(
        "discard", help="close the session and remove its worktree and branch, work and all"
    )
    discard.add_argument("session", metavar="SESSION")
    discard.add_argument("--yes", action="store_true", help="do not ask")
    discard.set_defaults(handler=cmd_discard)
    default = actions.add_parser(
        "default", help="whether new sessions in a workspace get a worktree unless told"
    )
    default.add_argument("-w", "--workspace", metavar="DIR", required=True)
    default.add_argument("value", nargs="?", choices=["on", "off"], help="set it (else: show)")
    default.set_defaults(handler=cmd_default)


def _store_only(paths: DataPaths, body: Any) -> int:
    return execute(paths, body, with_engine=False)


def cmd_status(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        status = await engine.worktree_status(session.id)
        if args.json:
            print(json.dumps(status.to_value(), indent=2, sort_keys=True))
            return ExitCode.OK
        tree = status.worktree
        print(f"branch   {tree.branch} (from {tree.base[:12]})")
        print(f"folder   {tree.folder}{'' if status.exists else '  (gone)'}")
        print(f"merges   into {status.target or '(no branch)'} in {tree.repository}")
        if status.exists:
            print(f"commits  {status.ahead} since the base")
            print(f"changes  {len(status.changed)} uncommitted")
            for line in status.changed:
                print(f"  {line}")
        return ExitCode.OK

    return _store_only(paths, body)


def cmd_commit(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        made = await engine.worktree_commit(session.id, args.message)
        print(f"committed {made[:12]}")
        return ExitCode.OK

    return _store_only(paths, body)


def cmd_merge(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        how = "squash" if args.squash else "fast-forward"
        done = await engine.worktree_merge(session.id, how, args.message)
        print(
            f"merged {done.commits} commit(s) into {done.target} ({done.how}): {done.commit[:12]}"
        )
        return ExitCode.OK

    return _store_only(paths, body)


def cmd_patch(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        if args.output:
            await engine.worktree_patch(session.id, Path(args.output))
            print(f"wrote {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(await engine.worktree_patch(session.id))
        return ExitCode.OK

    return _store_only(paths, body)


def cmd_discard(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        status = await engine.worktree_status(session.id)
        if not args.yes:
            if not sys.stdin.isatty():
                raise CommandError("discard throws the work away; confirm with --yes")
            print(
                f"Discard {status.worktree.branch}: {status.ahead} commit(s) and "
                f"{len(status.changed)} uncommitted change(s) are lost, and the session closes.",
                file=sys.stderr,
            )
            answer = await asyncio.to_thread(input, "Discard? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("kept", file=sys.stderr)
                return ExitCode.FAILED
        print(await engine.worktree_discard(session.id))
        return ExitCode.OK

    return _store_only(paths, body)


def cmd_default(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        workspace = await engine.ensure_workspace(args.workspace)
        if args.value is not None:
            await engine.set_worktree_default(workspace.id, args.value == "on")
        on = await engine.worktree_default(workspace.id)
        print(f"{workspace.path}: new sessions {'get' if on else 'do not get'} a worktree")
        return ExitCode.OK

    return _store_only(paths, body)
