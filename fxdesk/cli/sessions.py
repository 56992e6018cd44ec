"""The session commands: run, sessions, show, send, cancel, resume, recover.

Each runs the same engine as the window, on plain asyncio, and returns an exit code (see
``fxdesk --help``). Quitting with Ctrl+C never cancels work: it stops, and the work is
interrupted until ``fxdesk resume``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.follow import follow, short, step_line
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain import reasons
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.images import ImageAttachment, sniff
from fxdesk.domain.model import EntryKind, PermissionMode, Profile, WorkStatus
from fxdesk.domain.work import WorkItem
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine, Transcript


def register(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="start a session in a workspace and run it to the end",
        description="Create a root session in DIR with PROMPT as its first message, run it, and "
        "stream it here. Exit 0 completed, 1 failed, 3 waiting for an approval, 4 interrupted.",
    )
    run.add_argument("-w", "--workspace", metavar="DIR", required=True, help="the project folder")
    run.add_argument("--profile", metavar="NAME", help="model profile (default: the default one)")
    run.add_argument("--name", help="session name (default: from the prompt)")
    run.add_argument(
        "--mode",
        choices=[mode.value for mode in PermissionMode],
        default="auto",
        help="permission mode (default: auto; unrestricted runs commands without the sandbox, "
        "once turned on in Settings → General)",
    )
    place = run.add_mutually_exclusive_group()
    place.add_argument(
        "--worktree",
        dest="worktree",
        action="store_const",
        const=True,
        help="run in a git worktree of its own, on a new branch from HEAD (docs/worktrees.md); "
        "default: the workspace's setting (fxdesk worktree default)",
    )
    place.add_argument(
        "--no-worktree", dest="worktree", action="store_const", const=False, help="run in DIR"
    )
    run.add_argument("prompt", help="what the agent should do")
    run.add_argument(
        "--no-input",
        action="store_true",
        help="never ask on the terminal: stop with exit 3 when an approval is needed",
    )
    run.set_defaults(handler=cmd_run)

    sessions = commands.add_parser("sessions", help="list sessions")
    sessions.add_argument("--json", action="store_true")
    sessions.add_argument("--all", action="store_true", help="include archived sessions")
    sessions.set_defaults(handler=cmd_sessions)

    show = commands.add_parser("show", help="a session's queue, transcript and usage")
    show.add_argument("session", metavar="ID", help="session id or unique prefix")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=cmd_show)

    send = commands.add_parser("send", help="queue a message to a session and run it")
    send.add_argument("session", metavar="ID")
    send.add_argument("message")
    send.add_argument(
        "--no-wait",
        action="store_true",
        help="queue it for whichever fxdesk runs the session next (an open window runs it at "
        "once) and return",
    )
    send.add_argument("--no-input", action="store_true", help="never ask on the terminal")
    send.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="attach a PNG, JPEG, GIF or WebP image (at most 5 MB; repeat for more) for a "
        "model that takes images",
    )
    send.set_defaults(handler=cmd_send)

    cancel = commands.add_parser("cancel", help="cancel a session's queued and running work")
    cancel.add_argument("session", metavar="ID")
    cancel.add_argument("--reason", default=reasons.CANCELLED_BY_PERSON)
    cancel.set_defaults(handler=cmd_cancel)

    resume = commands.add_parser("resume", help="resume interrupted work and run the queue")
    resume.add_argument("session", metavar="ID")
    resume.add_argument("--no-input", action="store_true", help="never ask on the terminal")
    resume.set_defaults(handler=cmd_resume)

    recover = commands.add_parser(
        "recover",
        help="run start-up recovery and report what it did",
        description="Mark work left unfinished by a stopped fxdesk (running, waiting for an "
        "approval, or queued by it) as interrupted (or completed, when its history proves it), "
        "and name sessions busy in another process. Work a running fxdesk queued, and messages "
        "queued with `send --no-wait`, stay queued.",
    )
    recover.add_argument("--json", action="store_true")
    recover.set_defaults(handler=cmd_recover)


def cmd_run(args: argparse.Namespace, paths: DataPaths) -> int:
    workspace = Path(args.workspace).expanduser().absolute()

    async def body(engine: Engine) -> int:
        from fxdesk.engine.facade import InvalidWorkspace

        profile = await _profile_for(engine, args.profile)
        try:
            session = await engine.create_session(
                workspace,
                name=args.name or "",
                permission_mode=PermissionMode(args.mode),
                profile=profile.name,
                first_message=args.prompt,
                start=False,  # follow() listens first, then starts it
                worktree=args.worktree,
            )
        except InvalidWorkspace as exc:
            raise CommandError(f"cannot use that workspace: {exc}") from exc
        print(f"fxdesk: session {session.id} in {args.workspace}", file=sys.stderr)
        tree = session.config.get("worktree")
        if isinstance(tree, dict):
            print(f"fxdesk: on branch {tree['branch']} in {tree['path']}", file=sys.stderr)
        return await follow(engine, session, retry=False, no_input=args.no_input)

    return execute(paths, body)


def read_images(files: list[str]) -> list[ImageAttachment]:
    """The images named on the command line, as given (the engine checks what they are)."""
    images = []
    for name in files:
        path = Path(name).expanduser()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read the image {path}: {exc.strerror}") from None
        images.append(ImageAttachment(path.name, sniff(data) or "application/octet-stream", data))
    return images


def cmd_send(args: argparse.Namespace, paths: DataPaths) -> int:
    if args.no_wait:
        return _hand_off(args, paths)

    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        images = read_images(args.image)
        item = await engine.send(session.id, args.message, start=False, images=images)
        code = await follow(engine, session, retry=False, no_input=args.no_input)
        if session.id in engine.busy_elsewhere() and await engine.hand_off(item.id):
            # Another process runs the session: the message stays queued, for it or a window
            # (this process, which queued it, ends now: nothing else would run it).
            print(
                f"fxdesk: message {item.id} stays queued; {await _who_runs(engine, item)}",
                file=sys.stderr,
            )
        return code

    return execute(paths, body)


def _hand_off(args: argparse.Namespace, paths: DataPaths) -> int:
    """``send --no-wait``: queue the message for whichever fxdesk runs the session next, and
    say who that will be. No engine starts here, so no recovery runs and the message has no
    owner process: no restart interrupts it (it never started)."""

    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        images = read_images(args.image)
        item = await engine.send(session.id, args.message, start=False, images=images)
        print(f"queued message {item.id} to session {session.id}; {await _who_runs(engine, item)}")
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


async def _who_runs(engine: Engine, queued: WorkItem) -> str:
    ahead = [i for i in await engine.items(queued.session_id) if i.position < queued.position]
    resume = f"`fxdesk resume {queued.session_id}`"
    if any(i.status in (WorkStatus.INTERRUPTED, WorkStatus.AWAITING_APPROVAL) for i in ahead):
        return f"earlier work of the session is interrupted and holds the queue: {resume} runs it."
    if any(i.status == WorkStatus.RUNNING for i in ahead):
        pid = engine.in_use_elsewhere(queued.session_id)
        if pid is not None:
            who = engine.describe_process(pid) if pid else "another fxdesk"
            return f"{who} is running the session and runs it next."
    if engine.handed_off_work_is_picked_up():
        return "the running fxdesk window runs it."
    return (
        f"no fxdesk window is running: it runs when one starts, or now with {resume} "
        "(or the next `fxdesk send` to the session)."
    )


def cmd_resume(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        return await follow(engine, session, retry=True, no_input=args.no_input)

    return execute(paths, body)


def cmd_cancel(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        count = await engine.cancel(session.id, args.reason)
        print(f"cancelled {count} work item(s) of session {session.id}")
        return ExitCode.OK

    return execute(paths, body, recover=False)


def cmd_recover(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        report = engine.recovery  # start-up already recovered; report what it did
        assert report is not None
        if args.json:
            data = asdict(report) | {"fully_reconciled": report.fully_reconciled}
            print(json.dumps(data, indent=2))
        else:
            print(
                f"work interrupted: {report.work_interrupted}, completed: "
                f"{report.work_completed}, sessions changed: {report.sessions_changed}"
            )
            busy = engine.busy_elsewhere()
            for session_id in report.busy_sessions:
                pid = busy.get(session_id)
                who = f"process {pid}" if pid else "another process"
                print(f"busy in {who}: {session_id} (left untouched)")
            if report.work_interrupted:
                print("resume with: fxdesk resume SESSION")
        return ExitCode.OK

    return execute(paths, body)


def cmd_sessions(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        catalog = await engine.catalog(include_archived=args.all)
        paths_by_id = {w.id: w.path for w in catalog.workspaces}
        rows = [
            {
                "id": s.id,
                "name": s.name,
                "state": s.state.value,
                "parent_id": s.parent_id,
                "workspace": paths_by_id.get(s.workspace_id, ""),
                "mode": s.mode.value,
                "permission_mode": s.permission_mode.value,
                "busy_elsewhere": engine.in_use_elsewhere(s.id) is not None,
            }
            for s in catalog.sessions
        ]
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print("no sessions yet; start one with: fxdesk run -w DIR PROMPT")
        else:
            for row in rows:
                indent = "  " if row["parent_id"] else ""
                print(
                    f"{row['id']}  {row['state']:<17} {indent}{row['name']}  ({row['workspace']})"
                )
        return ExitCode.OK

    # Only looks: no engine, so no start-up recovery (it would interrupt work another fxdesk
    # queued, or turn an approval the person is about to answer stale).
    return execute(paths, body, with_engine=False)


def cmd_show(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        shown = await engine.transcript(session.id)
        usage = _usage(shown.entries)
        if args.json:
            print(json.dumps(_show_json(shown, usage), indent=2))
            return ExitCode.OK
        print(f"{session.name}  [{session.state.value}]  {session.id}")
        print(
            f"usage: {usage['input_tokens']} input, {usage['output_tokens']} output tokens, "
            f"{usage['model_calls']} model calls{_money(usage['cost_usd'])}"
        )
        print("\nqueue:")
        for item in shown.items:
            reason = f" — {shown.reasons[item.id]}" if shown.reasons.get(item.id) else ""
            print(f"  {item.status.value:<17} {short(item.content, 80)}{reason}")
        print("\ntranscript:")
        for entry in shown.entries:
            print(_transcript_line(entry))
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def _usage(entries: list[HistoryEntry]) -> dict[str, Any]:
    """Tokens and cost of every model call in the session (failed turns included)."""
    total: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "model_calls": 0}
    cost: float | None = None
    for entry in entries:
        if entry.kind == EntryKind.ASSISTANT and not entry.data.get("acp"):  # not ACP steps
            used = entry.data.get("usage") or [0, 0]
            total["input_tokens"] += int(used[0])
            total["output_tokens"] += int(used[1])
            total["model_calls"] += 1
            if "cost_usd" in entry.data:
                cost = (cost or 0.0) + float(entry.data["cost_usd"])
    total["cost_usd"] = round(cost, 6) if cost is not None else None
    return total


def _money(cost: object) -> str:
    return f", ${float(cost):.4f}" if isinstance(cost, int | float) else ""


def _transcript_line(entry: HistoryEntry) -> str:
    if entry.kind == EntryKind.USER:
        return f"\n> {entry.content}"
    if entry.kind == EntryKind.ASSISTANT:
        return entry.content
    if entry.kind == EntryKind.TURN_END:
        used = entry.data.get("usage") or [0, 0]
        calls = entry.data.get("model_calls", 0)
        return (
            f"  (turn committed: {calls} model calls, {used[0]} in / {used[1]} out"
            f"{_money(entry.data.get('cost_usd'))})"
        )
    return "  " + step_line(entry)


def _show_json(shown: Transcript, usage: dict[str, Any]) -> dict[str, Any]:
    session = shown.session
    return {
        "session": {
            "id": session.id,
            "name": session.name,
            "state": session.state.value,
            "parent_id": session.parent_id,
            "last_work_id": session.last_work_id,
        },
        "usage": usage,
        "queue": [
            {
                "id": i.id,
                "status": i.status.value,
                "content": i.content,
                "reason": shown.reasons.get(i.id),
            }
            for i in shown.items
        ],
        "transcript": [
            {
                "seq": e.seq,
                "kind": e.kind.value,
                "work_id": e.work_id,
                "tool": e.tool_name,
                "call_id": e.call_id,
                "content": e.content,
                "data": e.data,
            }
            for e in shown.entries
        ],
    }


async def _profile_for(engine: Engine, name: str | None) -> Profile:
    chosen = name or await engine.profiles.default_name()
    if not chosen:
        raise CommandError(
            "no model profile; add one with `fxdesk profiles add NAME --kind scripted "
            "--script FILE --default`"
        )
    profile = await engine.profiles.get(chosen)
    if profile is None:
        raise CommandError(f"no profile named {chosen!r} (see `fxdesk profiles list`)")
    return profile
