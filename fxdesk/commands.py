"""The headless commands: run, sessions, show, send, cancel, resume, recover, profiles.

Each runs the same engine as the window, on plain asyncio, and returns an exit code (see
``fxdesk --help``). Quitting with Ctrl+C never cancels work: it stops, and the work is
interrupted until ``fxdesk resume``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from fxdesk.app import App
from fxdesk.domain.approvals import Approval
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, PermissionMode, Profile, Session
from fxdesk.engine.events import ApprovalChanged, HistoryAppended, TextStreamed
from fxdesk.engine.owner import Result
from fxdesk.engine.sessions import InvalidWorkspace, SessionError, SessionService
from fxdesk.paths import DataPaths
from fxdesk.store import StoreError, control, history, repo
from fxdesk.store.locks import is_locked_elsewhere

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_APPROVAL, EXIT_INTERRUPTED, EXIT_DATA = 0, 1, 2, 3, 4, 5

RESULT_EXIT = {
    Result.IDLE: EXIT_OK,
    Result.COMPLETED: EXIT_OK,
    Result.NO_WORK: EXIT_OK,
    Result.FAILED: EXIT_FAILED,
    Result.CANCELLED: EXIT_FAILED,
    Result.ADMISSION_FAILED: EXIT_FAILED,
    Result.SESSION_FAILED: EXIT_FAILED,
    Result.CONTROL_FAILED: EXIT_FAILED,
    Result.AWAITING_APPROVAL: EXIT_APPROVAL,
    Result.PAUSED: EXIT_INTERRUPTED,
    Result.EXTERNAL_BUSY: EXIT_INTERRUPTED,
    Result.OWNER_STOPPED: EXIT_INTERRUPTED,
}


class CommandError(Exception):
    """A problem the person can fix; printed without a traceback."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def execute(
    paths: DataPaths,
    body: Callable[[App], Awaitable[int]],
    *,
    with_engine: bool = True,
    recover: bool = True,
) -> int:
    """Start the app headless, run ``body``, stop in order; map known errors to exit codes.

    Only commands that run work (``run``, ``send``, ``resume``, ``recover``) recover first.
    """

    async def main() -> int:
        app = App(paths)
        try:
            await (app.start(recover=recover) if with_engine else app.start_store_only())
        except StoreError as exc:
            print(f"fxdesk: {exc.user_message}", file=sys.stderr)
            return EXIT_DATA
        try:
            return await body(app)
        except CommandError as exc:
            print(f"fxdesk: {exc}", file=sys.stderr)
            return exc.code
        except StoreError as exc:
            print(f"fxdesk: {exc.user_message}", file=sys.stderr)
            return EXIT_DATA
        finally:
            await app.stop()

    return asyncio.run(main())


async def resolve_session(app: App, given: str) -> Session:
    """A session by id or unique id prefix."""
    sessions = await app.store.read(lambda: repo.list_sessions(include_archived=True))
    matches = [s for s in sessions if s.id == given] or [
        s for s in sessions if s.id.startswith(given)
    ]
    if not matches:
        raise CommandError(f"no session {given!r} (see `fxdesk sessions`)")
    if len(matches) > 1:
        raise CommandError(f"{given!r} matches {len(matches)} sessions; give more of the id")
    return matches[0]


class Printer:
    """Streams a running session to the terminal: text as it arrives, one line per tool step."""

    def __init__(self, session_id: str, out: TextIO) -> None:
        self.session_id = session_id
        self.out = out
        self._mid_line = False

    def on_text(self, event: TextStreamed) -> None:
        if event.session_id == self.session_id:
            self.out.write(event.text)
            self.out.flush()
            self._mid_line = not event.text.endswith("\n")

    def on_history(self, event: HistoryAppended) -> None:
        if event.session_id != self.session_id:
            return
        for entry in event.entries:
            line = _step_line(entry)
            if line:
                self._newline()
                self.out.write(line + "\n")
            elif entry.kind == EntryKind.ASSISTANT and entry.content:
                self._newline()
        self.out.flush()

    def _newline(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False


def _step_line(entry: HistoryEntry) -> str:
    if entry.kind == EntryKind.TOOL_CALL:
        return f"→ {entry.tool_name} {_short(entry.content)}"
    if entry.kind == EntryKind.TOOL_RESULT:
        mark = "✓" if entry.data.get("ok") else "✗"
        return f"{mark} {entry.tool_name}: {_short(entry.content)}"
    return ""


def _short(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


async def follow(
    app: App,
    session: Session,
    *,
    retry: bool,
    out: TextIO = sys.stdout,
    no_input: bool = False,
) -> int:
    """Run the session's queue to its end, streaming it; Ctrl+C stops without cancelling.

    An approval is asked on the terminal when there is one (and not ``no_input``); otherwise
    the run stops, the approval stays pending, and the exit code is 3."""
    printer = Printer(session.id, out)
    questions: asyncio.Queue[Approval] = asyncio.Queue()

    def on_approval(event: ApprovalChanged) -> None:
        if event.approval.pending and event.approval.root_id == session.root_id:
            questions.put_nowait(event.approval)

    unsubscribe = [
        app.bus.subscribe(TextStreamed, printer.on_text),
        app.bus.subscribe(HistoryAppended, printer.on_history),
        app.bus.subscribe(ApprovalChanged, on_approval),
    ]
    stop = asyncio.Event()
    unanswered: list[Approval] = []
    asking = not no_input and sys.stdin.isatty()

    async def answer_questions() -> None:
        from fxdesk import permission_commands  # it imports this module

        while True:
            approval = await questions.get()
            printer._newline()
            if not asking or not await permission_commands.prompt(app, approval):
                unanswered.append(approval)
                stop.set()
                return

    answerer = asyncio.ensure_future(answer_questions())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        app.owner.start(session.id, retry)
        join = asyncio.ensure_future(app.owner.join(session.id))
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({join, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not join.done():
            await app.owner.shutdown()
            await asyncio.gather(join, return_exceptions=True)
            printer._newline()
            if unanswered:
                waiting = unanswered[0]
                print(
                    f"fxdesk: waiting for approval {waiting.id[:12]}: {waiting.label}\n"
                    f"  answer it with `fxdesk approve {waiting.id[:12]} "
                    f"once|session|always|deny`, then `fxdesk resume {session.id}`.",
                    file=sys.stderr,
                )
                return EXIT_APPROVAL
            print(
                f"fxdesk: stopped; the work is interrupted. Continue it with "
                f"`fxdesk resume {session.id}`.",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
        result = join.result()
    finally:
        answerer.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        for undo in unsubscribe:
            undo()
    printer._newline()
    out.flush()
    await _report(app, session.id, result)
    if result == Result.NO_WORK and not retry:
        items = await app.store.read(lambda: control.list_items(session.id))
        if any(i.status.value in ("interrupted", "awaiting_approval") for i in items):
            print(
                f"fxdesk: earlier work of this session is interrupted and holds the queue; "
                f"continue it with `fxdesk resume {session.id}`.",
                file=sys.stderr,
            )
            return EXIT_INTERRUPTED
    return RESULT_EXIT.get(result, EXIT_FAILED)


async def _report(app: App, session_id: str, result: Result) -> None:
    items = await app.sessions.items(session_id, limit=1)
    detail = ""
    if items and result in (Result.FAILED, Result.PAUSED, Result.CANCELLED):
        item = items[-1]
        reason = item.reason or await app.store.read(lambda: control.failure_reason(item.id))
        detail = f": {reason}" if reason else ""
    if result == Result.EXTERNAL_BUSY:
        pid = app.owner.busy_elsewhere.get(session_id)
        detail = f": in use by process {pid}" if pid else ": in use by another process"
    print(f"fxdesk: session {session_id} {result.value}{detail}", file=sys.stderr)


# --- commands ---------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace, paths: DataPaths) -> int:
    workspace = Path(args.workspace).expanduser().absolute()

    async def body(app: App) -> int:
        profile = await _profile_for(app, args.profile)
        try:
            session = await app.sessions.create_root(
                workspace,
                name=args.name or "",
                permission_mode=PermissionMode(args.mode),
                profile=profile.name,
                first_message=args.prompt,
            )
        except InvalidWorkspace as exc:
            raise CommandError(f"cannot use that workspace: {exc}") from exc
        print(f"fxdesk: session {session.id} in {args.workspace}", file=sys.stderr)
        return await follow(app, session, retry=False, no_input=args.no_input)

    return execute(paths, body)


def cmd_send(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        session = await resolve_session(app, args.session)
        try:
            await app.sessions.send(session.id, args.message)
        except SessionError as exc:
            raise CommandError(str(exc)) from exc
        if args.no_wait:
            return EXIT_OK
        return await follow(app, session, retry=False, no_input=args.no_input)

    return execute(paths, body)


def cmd_resume(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        session = await resolve_session(app, args.session)
        return await follow(app, session, retry=True, no_input=args.no_input)

    return execute(paths, body)


def cmd_cancel(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        session = await resolve_session(app, args.session)
        count = await app.owner.cancel(session.id, args.reason)
        print(f"cancelled {count} work item(s) of session {session.id}")
        return EXIT_OK

    return execute(paths, body, recover=False)


def cmd_recover(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        report = app.recovery  # start-up already recovered; report what it did
        assert report is not None
        if args.json:
            data = asdict(report) | {"fully_reconciled": report.fully_reconciled}
            print(json.dumps(data, indent=2))
        else:
            print(
                f"work interrupted: {report.work_interrupted}, completed: "
                f"{report.work_completed}, sessions changed: {report.sessions_changed}"
            )
            for session_id in report.busy_sessions:
                pid = app.owner.busy_elsewhere.get(session_id)
                who = f"process {pid}" if pid else "another process"
                print(f"busy in {who}: {session_id} (left untouched)")
            if report.work_interrupted:
                print("resume with: fxdesk resume SESSION")
        return EXIT_OK

    return execute(paths, body)


def cmd_sessions(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        catalog = await SessionService(app.store, app.bus).catalog(include_archived=args.all)
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
                "busy_elsewhere": is_locked_elsewhere(app.paths.locks, s.id) is not None,
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
        return EXIT_OK

    return execute(paths, body)


def cmd_show(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(app: App) -> int:
        session = await resolve_session(app, args.session)
        items = await app.store.read(lambda: control.list_items(session.id))

        def read() -> tuple[list[HistoryEntry], dict[str, str | None]]:
            entries = history.page_history(session.id, 0, 100_000)
            reasons = {i.id: i.reason or control.failure_reason(i.id) for i in items}
            return entries, reasons

        entries, reasons = await app.store.read(read)
        usage = _usage(entries)
        if args.json:
            print(json.dumps(_show_json(session, items, reasons, entries, usage), indent=2))
            return EXIT_OK
        print(f"{session.name}  [{session.state.value}]  {session.id}")
        print(
            f"usage: {usage['input_tokens']} input, {usage['output_tokens']} output tokens, "
            f"{usage['model_calls']} model calls{_money(usage['cost_usd'])}"
        )
        print("\nqueue:")
        for item in items:
            reason = f" — {reasons[item.id]}" if reasons.get(item.id) else ""
            print(f"  {item.status.value:<17} {_short(item.content, 80)}{reason}")
        print("\ntranscript:")
        for entry in entries:
            print(_transcript_line(entry))
        return EXIT_OK

    return execute(paths, body, with_engine=False)


def _usage(entries: list[HistoryEntry]) -> dict[str, Any]:
    """Tokens and cost of every model call in the session (failed turns included)."""
    total: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "model_calls": 0}
    cost: float | None = None
    for entry in entries:
        if entry.kind == EntryKind.ASSISTANT:
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
    return "  " + _step_line(entry)


def _show_json(
    session: Session,
    items: list[Any],
    reasons: dict[str, str | None],
    entries: list[HistoryEntry],
    usage: dict[str, Any],
) -> dict[str, Any]:
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
                "reason": reasons.get(i.id),
            }
            for i in items
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
            for e in entries
        ],
    }


async def _profile_for(app: App, name: str | None) -> Profile:
    chosen = name or await app.store.read(lambda: repo.get_setting("default_profile"))
    if not chosen:
        raise CommandError(
            "no model profile; add one with `fxdesk profiles add NAME --kind scripted "
            "--script FILE --default`"
        )
    profile = await app.store.read(lambda: repo.get_profile(chosen))
    if profile is None:
        raise CommandError(f"no profile named {chosen!r} (see `fxdesk profiles list`)")
    return profile
