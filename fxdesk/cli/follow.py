"""Following a running session on the terminal: text as it streams, one line per tool step,
approvals asked on the terminal, and an exit code for how the run ended."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING, TextIO

from fxdesk.cli.approvals import prompt
from fxdesk.cli.exit_codes import ExitCode
from fxdesk.domain.approvals import Approval
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, Session, WorkStatus
from fxdesk.engine.events import ApprovalChanged, HistoryAppended, TextStreamed

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine, Result


def result_exit(result: Result) -> ExitCode:
    """The exit code of a finished run."""
    from fxdesk.engine.facade import Result

    return {
        Result.IDLE: ExitCode.OK,
        Result.COMPLETED: ExitCode.OK,
        Result.NO_WORK: ExitCode.OK,
        Result.AWAITING_APPROVAL: ExitCode.APPROVAL,
        Result.PAUSED: ExitCode.INTERRUPTED,
        Result.EXTERNAL_BUSY: ExitCode.INTERRUPTED,
        Result.OWNER_STOPPED: ExitCode.INTERRUPTED,
    }.get(result, ExitCode.FAILED)


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
            line = step_line(entry)
            if line:
                self.end_line()
                self.out.write(line + "\n")
            elif entry.kind == EntryKind.ASSISTANT and entry.content:
                self.end_line()
        self.out.flush()

    def end_line(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self._mid_line = False


def step_line(entry: HistoryEntry) -> str:
    """A tool call or result as one line; empty for other entries."""
    if entry.kind == EntryKind.TOOL_CALL:
        return f"→ {entry.tool_name} {short(entry.content)}"
    if entry.kind == EntryKind.TOOL_RESULT:
        mark = "✓" if entry.data.get("ok") else "✗"
        return f"{mark} {entry.tool_name}: {short(entry.content)}"
    return ""


def short(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


async def follow(
    engine: Engine,
    session: Session,
    *,
    retry: bool,
    out: TextIO = sys.stdout,
    no_input: bool = False,
) -> int:
    """Run the session's queue to its end, streaming it; Ctrl+C stops without cancelling.

    An approval is asked on the terminal when there is one (and not ``no_input``); otherwise
    the run stops, the approval stays pending, and the exit code is 3."""
    from fxdesk.engine.facade import Result

    printer = Printer(session.id, out)
    questions: asyncio.Queue[Approval] = asyncio.Queue()

    def on_approval(event: ApprovalChanged) -> None:
        if event.approval.pending and event.approval.root_id == session.root_id:
            questions.put_nowait(event.approval)

    unsubscribe = [
        engine.subscribe(TextStreamed, printer.on_text),
        engine.subscribe(HistoryAppended, printer.on_history),
        engine.subscribe(ApprovalChanged, on_approval),
    ]
    stop = asyncio.Event()
    unanswered: list[Approval] = []
    asking = not no_input and sys.stdin.isatty()

    async def answer_questions() -> None:
        while True:
            approval = await questions.get()
            printer.end_line()
            if not asking or not await prompt(engine, approval):
                unanswered.append(approval)
                stop.set()
                return

    answerer = asyncio.ensure_future(answer_questions())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        engine.start(session.id, retry=retry)
        join = asyncio.ensure_future(engine.join(session.id))
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({join, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not join.done():
            await engine.shutdown()
            await asyncio.gather(join, return_exceptions=True)
            printer.end_line()
            if unanswered:
                waiting = unanswered[0]
                print(
                    f"fxdesk: waiting for approval {waiting.id[:12]}: {waiting.label}\n"
                    f"  answer it with `fxdesk approve {waiting.id[:12]} "
                    f"once|session|always|deny`, then `fxdesk resume {session.id}`.",
                    file=sys.stderr,
                )
                return ExitCode.APPROVAL
            print(
                f"fxdesk: stopped; the work is interrupted. Continue it with "
                f"`fxdesk resume {session.id}`.",
                file=sys.stderr,
            )
            return ExitCode.INTERRUPTED
        result = join.result()
    finally:
        answerer.cancel()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        for undo in unsubscribe:
            undo()
    printer.end_line()
    out.flush()
    await _report(engine, session.id, result)
    if result == Result.NO_WORK and not retry:
        items = await engine.items(session.id)
        held = (WorkStatus.INTERRUPTED, WorkStatus.AWAITING_APPROVAL)
        if any(i.status in held for i in items):
            print(
                f"fxdesk: earlier work of this session is interrupted and holds the queue; "
                f"continue it with `fxdesk resume {session.id}`.",
                file=sys.stderr,
            )
            return ExitCode.INTERRUPTED
    return result_exit(result)


async def _report(engine: Engine, session_id: str, result: Result) -> None:
    from fxdesk.engine.facade import Result

    items = await engine.items(session_id, limit=1)
    detail = ""
    if items and result in (Result.FAILED, Result.PAUSED, Result.CANCELLED):
        item = items[-1]
        reason = item.reason or await engine.failure_reason(item.id)
        detail = f": {reason}" if reason else ""
    if result == Result.EXTERNAL_BUSY:
        pid = engine.busy_elsewhere().get(session_id)
        who = engine.describe_process(pid) if pid else "another process"
        detail = f": in use by {who}"
    print(f"fxdesk: session {session_id} {result.value}{detail}", file=sys.stderr)
