"""The transcript of one session as a list model, loaded in pages from the newest backwards.

Rows are frozen snapshots built from committed history rows: the person's messages, assistant
text, tool cards (a call and its result together), turn footers (usage and cost), notices for
work that failed or was interrupted, and one live row for the text streaming in right now.
Nothing is read until asked: ``load_latest`` fetches one page, ``load_older`` the page before.
"""

from __future__ import annotations

import enum
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from fxdesk.domain import reasons
from fxdesk.domain.approvals import Approval, ApprovalStatus
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.images import refs_of
from fxdesk.domain.model import EntryKind, WorkStatus
from fxdesk.domain.work import WorkItem

AnyIndex = QModelIndex | QPersistentModelIndex
ROLE_ROW = Qt.ItemDataRole.UserRole + 1
PAGE_SIZE = 200
LIVE_OUTPUT_MAX = 8000  # characters of a running command's output kept for its card

HistoryFetch = Callable[[str, int | None, int], Awaitable[list[HistoryEntry]]]
Warm = Callable[[list["Row"]], Awaitable[None]]  # lays rows out before they are shown


class RowKind(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    TURN = "turn"
    NOTICE = "notice"
    LIVE = "live"


@dataclass(frozen=True)
class Row:
    key: str
    kind: RowKind
    seq: int = 0
    text: str = ""
    work_id: str | None = None
    # tool cards
    tool: str = ""
    arguments: str = ""
    output: str = ""
    full_output: str | None = None
    ok: bool | None = None  # None: still running
    duration_ms: int | None = None
    interrupted: bool = False
    # What the call's work is doing while the call has no result: waiting for the person's
    # approval, or ended (cancelled, failed, interrupted…) without one: a history written
    # before cancels were recorded, or a result that could not be saved. "" while it runs.
    ended: str = ""
    expanded: bool = False
    arguments_shown: bool = False  # an open card shows the call's raw arguments too
    live_output: str = ""  # the last lines a running command printed (until its result)
    started_ms: int = 0  # when the call was made (a running card counts from it)
    answered: str = ""  # who answered its approval, how and when ("" when none was asked)
    at_ms: int = 0  # when it was said (messages) or ended (turn footers); 0: unknown
    # notices and footers
    level: str = ""  # failed | interrupted | cancelled
    action: str = ""  # retry | resume
    action2: str = ""  # edit_profile: a provider failure the profile's settings can mend
    # Left out of the hash (a dict cannot be hashed) but still compared, so equal rows hash
    # alike and the delegate's layout cache can key on the row itself.
    data: dict[str, Any] = field(default_factory=dict, hash=False)
    steer: bool = False


class ToolState(enum.StrEnum):
    """How a tool card ended, each with its own look (denied and failed differ)."""

    RUNNING = "running"
    WAITING = "waiting"  # for the person's approval
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"  # refused by a rule or the person: nothing ran
    STOPPED = "stopped"  # started, then stopped by a cancel
    NOT_RUN = "not run"  # cancelled while it waited for approval
    INTERRUPTED = "interrupted"  # fxdesk stopped while it ran: outcome unknown


def tool_state(row: Row) -> ToolState:
    """The final (or current) state of a tool card."""
    if row.ok is None:
        if row.ended == WorkStatus.AWAITING_APPROVAL:
            return ToolState.WAITING
        if row.ended == WorkStatus.CANCELLED:
            return ToolState.STOPPED
        if row.ended:
            return ToolState.INTERRUPTED
        return ToolState.RUNNING
    if row.ok:
        return ToolState.SUCCEEDED
    if row.interrupted:
        return ToolState.INTERRUPTED
    if row.data.get("cancelled"):
        return ToolState.NOT_RUN if row.data.get("not_run") else ToolState.STOPPED
    if row.data.get("denied"):
        return ToolState.DENIED
    return ToolState.FAILED


FIRST_SHOWN = 24  # rows of a newly opened session shown before the rest of its page


class TranscriptModel(QAbstractListModel):
    """One session's transcript. ``fetched`` counts history rows read from the database."""

    def __init__(self, fetch: HistoryFetch, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._fetch = fetch
        self.session_id: str | None = None
        self._rows: list[Row] = []
        self._index: dict[str, int] = {}
        self.oldest_seq: int | None = None
        self.complete = False  # the first history row is loaded
        self.fetched = 0
        self._loading = False
        self._answers: dict[str, str] = {}  # call id -> who answered its approval, how, when

    # --- loading -------------------------------------------------------------------------

    def clear(self, session_id: str | None = None) -> None:
        self.beginResetModel()
        self.session_id = session_id
        self._answers = {}
        self._rows, self._index = [], {}
        self.oldest_seq, self.complete, self.fetched = None, False, 0
        self._loading = False
        self.endResetModel()

    async def load_latest(
        self, session_id: str, warm: Warm | None = None, prepare: Warm | None = None
    ) -> None:
        """Fetch the newest page. With ``warm``, the newest ``FIRST_SHOWN`` rows are shown at
        once and the rest of the page is laid out between frames, then inserted above them:
        the person sees the end of a long session without waiting for a whole page's layout.
        ``prepare`` lays out the rows shown at once, between frames, before they are (a very
        long answer among them would hold the Qt thread for a frame of a quarter second)."""
        self.clear(session_id)
        self._loading = True  # no older page while this one is still coming in
        try:
            entries = await self._fetch(session_id, None, PAGE_SIZE)
            if self.session_id != session_id:
                return  # the person moved on meanwhile
            self.fetched += len(entries)
            self.complete = len(entries) < PAGE_SIZE
            self.oldest_seq = entries[0].seq if entries else None
            rows = build_rows(entries)
            first = rows if warm is None or len(rows) <= FIRST_SHOWN else rows[-FIRST_SHOWN:]
            if prepare is not None:
                await prepare(first)
                if self.session_id != session_id:
                    return
            self._prepend(first)
            if warm is None or len(first) == len(rows):
                return
            rest = [self._with_answer(row) for row in rows[:-FIRST_SHOWN]]
            await warm(rest)
            if self.session_id == session_id:
                self._prepend(rest)
        finally:
            if self.session_id == session_id:
                self._loading = False

    async def load_older(self, warm: Warm | None = None) -> int:
        """Fetch the page before the oldest loaded row; how many history rows came.

        ``warm`` (the delegate's) lays the new rows out before they are inserted."""
        session_id = self.session_id
        if session_id is None or self.complete or self._loading or self.oldest_seq is None:
            return 0
        self._loading = True
        try:
            entries = await self._fetch(session_id, self.oldest_seq, PAGE_SIZE)
            rows = [self._with_answer(row) for row in build_rows(entries)]
            if warm is not None and self.session_id == session_id:
                await warm(rows)
        finally:
            self._loading = False
        if self.session_id != session_id:
            return 0
        self.fetched += len(entries)
        self.complete = len(entries) < PAGE_SIZE
        if entries:
            self.oldest_seq = entries[0].seq
            self._prepend(rows)
        return len(entries)

    async def reveal(self, seq: int) -> int | None:
        """Load older pages until the message at ``seq`` is loaded; its row, or None when the
        session has no such message (or the person opened another one meanwhile)."""
        session_id = self.session_id
        while self.session_id == session_id:
            for position, row in enumerate(self._rows):
                if row.seq == seq and row.kind in (RowKind.USER, RowKind.ASSISTANT):
                    return position
            if self.complete or (self.oldest_seq is not None and self.oldest_seq <= seq):
                return None
            if not await self.load_older():
                return None
        return None

    def _prepend(self, rows: list[Row]) -> None:
        # A tool result at the top of the loaded part may belong to a call in the older page.
        fresh = []
        for row in map(self._with_answer, rows):
            existing = self._index.get(row.key)
            if existing is not None:
                self._replace(existing, _merge(row, self._rows[existing]))
            else:
                fresh.append(row)
        if not fresh:
            return
        self.beginInsertRows(QModelIndex(), 0, len(fresh) - 1)
        self._rows[0:0] = fresh
        self._reindex()
        self.endInsertRows()

    # --- live updates --------------------------------------------------------------------

    def append_entries(self, entries: tuple[HistoryEntry, ...]) -> None:
        """Committed rows arrived; the live text they replace goes away."""
        if self.session_id is None:
            return
        if any(e.kind == EntryKind.ASSISTANT for e in entries):
            self.clear_live()
        for row in map(self._with_answer, build_rows(list(entries))):
            existing = self._index.get(row.key)
            if existing is not None:
                self._replace(existing, _merge(self._rows[existing], row))
            else:
                self._insert_before_live(row)

    def set_answers(self, answers: dict[str, str]) -> None:
        """Who answered each call's approval, how and when, by call id (``answer_text``)."""
        self._answers = dict(answers)
        for position, row in enumerate(self._rows):
            answered = self._with_answer(row)
            if answered is not row:
                self._replace(position, answered)

    def _with_answer(self, row: Row) -> Row:
        if row.kind != RowKind.TOOL:
            return row
        text = self._answers.get(row.key.rsplit(":", 1)[-1], row.answered)
        return row if text == row.answered else replace(row, answered=text)

    def set_live_text(self, text: str) -> None:
        position = self._index.get("live")
        if position is None:
            self._insert_before_live(Row("live", RowKind.LIVE, text=text))
        elif self._rows[position].text != text:
            self._replace(position, replace(self._rows[position], text=text))

    def clear_live(self) -> None:
        position = self._index.get("live")
        if position is not None:
            self.beginRemoveRows(QModelIndex(), position, position)
            del self._rows[position]
            self._reindex()
            self.endRemoveRows()

    def apply_items(self, items: list[tuple[WorkItem, str | None]]) -> None:
        """Show a notice after work that failed, was interrupted or cancelled, and end the
        cards of its calls left without a result."""
        for item, reason in items:
            self._end_tools(item.id, item.status if item.status in _ENDED else "")
            notice = _notice_for(item, reason)
            key = f"notice:{item.id}"
            existing = self._index.get(key)
            if notice is None:
                if existing is not None:
                    self.beginRemoveRows(QModelIndex(), existing, existing)
                    del self._rows[existing]
                    self._reindex()
                    self.endRemoveRows()
                continue
            if existing is not None:
                self._replace(existing, notice)
            elif self._has_work(item.id):
                self._insert_after_work(notice)

    def _end_tools(self, work_id: str, status: str) -> None:
        for position, row in enumerate(self._rows):
            mine = row.kind == RowKind.TOOL and row.work_id == work_id
            if mine and row.ok is None and row.ended != status:
                self._replace(position, replace(row, ended=status))

    def toggle(self, row: int) -> None:
        current = self._rows[row]
        if current.kind == RowKind.TOOL:
            self._replace(row, replace(current, expanded=not current.expanded))

    def append_tool_output(self, call_id: str, text: str) -> None:
        """Lines a running command printed: kept (the last ``LIVE_OUTPUT_MAX`` characters)
        until its result replaces them."""
        for position, row in enumerate(self._rows):
            if row.kind == RowKind.TOOL and row.key.endswith(f":{call_id}") and row.ok is None:
                kept = (row.live_output + text)[-LIVE_OUTPUT_MAX:]
                self._replace(position, replace(row, live_output=kept))
                return

    def running_tools(self, start: int = 0, end: int | None = None) -> bool:
        """Whether a card (of rows ``start`` to ``end``) still counts its time (the view
        repaints those in view each second)."""
        return any(
            row.kind == RowKind.TOOL and row.ok is None and not row.ended
            for row in itertools.islice(self._rows, start, end)
        )

    def toggle_arguments(self, row: int) -> None:
        """Show or hide a tool card's raw arguments (the card opens to show them)."""
        current = self._rows[row]
        if current.kind == RowKind.TOOL:
            shown = not current.arguments_shown
            self._replace(row, replace(current, arguments_shown=shown, expanded=True))

    # --- Qt model ------------------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if role == ROLE_ROW:
            return row
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return _describe(row)
        return None

    def row_at(self, position: int) -> Row:
        return self._rows[position]

    def position_of(self, key: str) -> int | None:
        """Where the row with ``key`` is now, or None when it is not loaded."""
        return self._index.get(key)

    # --- internals -----------------------------------------------------------------------

    def _reindex(self) -> None:
        self._index = {row.key: position for position, row in enumerate(self._rows)}

    def _replace(self, position: int, row: Row) -> None:
        self._rows[position] = row
        index = self.index(position, 0)
        self.dataChanged.emit(index, index)

    def _insert_at(self, position: int, row: Row) -> None:
        self.beginInsertRows(QModelIndex(), position, position)
        self._rows.insert(position, row)
        self._reindex()
        self.endInsertRows()

    def _insert_before_live(self, row: Row) -> None:
        live = self._index.get("live")
        self._insert_at(len(self._rows) if live is None or row.key == "live" else live, row)

    def _has_work(self, work_id: str) -> bool:
        return any(row.work_id == work_id for row in self._rows)

    def _insert_after_work(self, row: Row) -> None:
        last = max(i for i, r in enumerate(self._rows) if r.work_id == row.work_id)
        self._insert_at(last + 1, row)


def build_rows(entries: list[HistoryEntry]) -> list[Row]:
    """Transcript rows for committed history rows, in order."""
    rows: list[Row] = []
    tools: dict[str, int] = {}
    for entry in entries:
        if entry.kind == EntryKind.USER:
            rows.append(
                Row(
                    f"e{entry.id}",
                    RowKind.USER,
                    entry.seq,
                    entry.content,
                    entry.work_id,
                    steer=bool(entry.data.get("steer")),
                    at_ms=entry.created_at_ms,
                    data={"images": refs} if (refs := refs_of(entry.data)) else {},
                )
            )
        elif entry.kind == EntryKind.ASSISTANT:
            thought = entry.data.get("thought")
            if isinstance(thought, str) and thought.strip():  # an external agent's reasoning
                rows.append(
                    Row(
                        f"e{entry.id}:thought",
                        RowKind.ASSISTANT,
                        entry.seq,
                        thought_markdown(thought),
                        entry.work_id,
                        data={"thought": True},
                        at_ms=entry.created_at_ms,
                    )
                )
            plan = entry.data.get("plan")
            if isinstance(plan, list):  # an external agent's plan: the newest one of the turn
                row = Row(
                    f"plan:{entry.work_id}",
                    RowKind.ASSISTANT,
                    entry.seq,
                    plan_markdown(plan),
                    entry.work_id,
                    data={"plan": plan},
                    at_ms=entry.created_at_ms,
                )
                if row.key in tools:
                    rows[tools[row.key]] = replace(
                        rows[tools[row.key]], text=row.text, data=row.data
                    )
                else:
                    tools[row.key] = len(rows)
                    rows.append(row)
            if entry.content.strip():
                rows.append(
                    Row(
                        f"e{entry.id}",
                        RowKind.ASSISTANT,
                        entry.seq,
                        entry.content,
                        entry.work_id,
                        data=entry.data,
                        at_ms=entry.created_at_ms,
                    )
                )
        elif entry.kind in (EntryKind.TOOL_CALL, EntryKind.TOOL_RESULT):
            row = _tool_row(entry)
            if row.key in tools:
                rows[tools[row.key]] = _merge_tool(rows[tools[row.key]], row)
            else:
                tools[row.key] = len(rows)
                rows.append(row)
        elif entry.kind == EntryKind.TURN_END:
            rows.append(
                Row(
                    f"e{entry.id}",
                    RowKind.TURN,
                    entry.seq,
                    "",
                    entry.work_id,
                    data=entry.data,
                    at_ms=entry.created_at_ms,
                )
            )
    return rows


PLAN_MARKS = {"completed": "✓", "in_progress": "▶", "pending": "○"}


def thought_markdown(thought: str) -> str:
    """An external agent's reasoning, set apart as a quote."""
    lines = ["*Thinking*", "", *thought.strip().splitlines()]
    return "\n".join(f"> {line}" if line else ">" for line in lines)


def plan_markdown(plan: list[object]) -> str:
    """An external agent's plan as a list, each step with its status."""
    lines = ["**Plan**", ""]
    for step in plan:
        if isinstance(step, dict):
            mark = PLAN_MARKS.get(str(step.get("status")), "○")
            lines.append(f"- {mark} {step.get('content', '')}")
    return "\n".join(lines)


def _tool_row(entry: HistoryEntry) -> Row:
    key = f"tool:{entry.work_id}:{entry.call_id}"
    if entry.kind == EntryKind.TOOL_CALL:
        return Row(
            key,
            RowKind.TOOL,
            entry.seq,
            work_id=entry.work_id,
            tool=entry.tool_name or "",
            arguments=entry.content,
            started_ms=entry.created_at_ms,
        )
    return Row(
        key,
        RowKind.TOOL,
        entry.seq,
        work_id=entry.work_id,
        tool=entry.tool_name or "",
        output=entry.content,
        full_output=entry.full_text,
        ok=bool(entry.data.get("ok")),
        duration_ms=entry.data.get("duration_ms"),
        interrupted=bool(entry.data.get("interrupted")),
        data=entry.data,
    )


def _merge(first: Row, second: Row) -> Row:
    """Two rows of one key: a tool call and its result, or an agent's plan and a later one
    (whose text replaces it in place)."""
    if first.kind == RowKind.TOOL:
        return _merge_tool(first, second)
    newer, older = (first, second) if first.seq >= second.seq else (second, first)
    return replace(older, text=newer.text, data=newer.data)


def _merge_tool(first: Row, second: Row) -> Row:
    """A call row and a result row of one tool call, whichever came first."""
    call, result = (first, second) if second.ok is not None else (second, first)
    return replace(
        call if call.arguments else result,
        seq=min(first.seq, second.seq) if first.seq and second.seq else first.seq or second.seq,
        tool=call.tool or result.tool,
        arguments=call.arguments or result.arguments,
        output=result.output,
        full_output=result.full_output,
        ok=result.ok,
        duration_ms=result.duration_ms,
        interrupted=result.interrupted,
        data=result.data,
        expanded=first.expanded or second.expanded,
        arguments_shown=first.arguments_shown or second.arguments_shown,
        answered=first.answered or second.answered,
        live_output="",
        started_ms=call.started_ms or result.started_ms,
    )


# What a finished item that did not complete says: (level, words without a reason, action).
_NOTICES = {
    WorkStatus.FAILED: ("failed", "The turn failed.", "retry"),
    WorkStatus.INTERRUPTED: ("interrupted", "The turn was interrupted.", "resume"),
    WorkStatus.CANCELLED: ("cancelled", "Cancelled.", ""),
}


_ENDED = frozenset(  # and waiting: what a call without a result shows
    {
        WorkStatus.AWAITING_APPROVAL,
        WorkStatus.COMPLETED,
        WorkStatus.FAILED,
        WorkStatus.INTERRUPTED,
        WorkStatus.CANCELLED,
    }
)


def _notice_for(item: WorkItem, reason: str | None) -> Row | None:
    if item.status not in _NOTICES:
        return None
    level, fallback, action = _NOTICES[item.status]
    text = reasons.explain(reason) or fallback
    said = reasons.provider_said(reason)
    if said and reasons.provider_failure_kind(reason) in reasons.PROVIDER_ADVICE_KINDS:
        text += f"\nThe provider said: {said}"
    fixable = reasons.provider_failure_kind(reason) in reasons.PROFILE_FIXES
    return Row(
        f"notice:{item.id}",
        RowKind.NOTICE,
        text=text,
        work_id=item.id,
        level=level,
        action=action,
        action2="edit_profile" if fixable and action else "",
    )


def _describe(row: Row) -> str:
    if row.kind == RowKind.USER:
        return f"You: {row.text}"
    if row.kind in (RowKind.ASSISTANT, RowKind.LIVE):
        return row.text
    if row.kind == RowKind.TOOL:
        return f"Tool {row.tool} ({tool_state(row)})"
    if row.kind == RowKind.NOTICE:
        return f"{row.level.capitalize()}: {row.text}"
    return "Turn finished"


_ANSWERS = {
    ApprovalStatus.ALLOWED_ONCE: "You allowed it once",
    ApprovalStatus.ALLOWED_SESSION: "You allowed it for this session",
    ApprovalStatus.ALLOWED_ALWAYS: "You allowed it always (a rule was added)",
    ApprovalStatus.DENIED: "You denied it",
    ApprovalStatus.CANCELLED: "The question was withdrawn: the work stopped",
    ApprovalStatus.STALE: "The question went stale",
}


def answer_text(approval: Approval) -> str:
    """ "You allowed it once, from the window, at 14:02" — or '' while it is pending."""
    said = _ANSWERS.get(approval.status, "")
    if not said:
        return ""
    resolution = approval.resolution
    if resolution.get("unsandboxed"):
        said += ", outside the sandbox"
    by = resolution.get("by")
    if isinstance(by, str) and by:
        said += f", from {by}"
    if approval.resolved_at_ms:
        at = time.strftime("%H:%M", time.localtime(approval.resolved_at_ms / 1000))
        said += f", at {at}"
    reason = resolution.get("reason")
    if approval.status is ApprovalStatus.DENIED and isinstance(reason, str) and reason:
        said += f": “{reason}”"
    return said


def answers_by_call(approvals: list[Approval]) -> dict[str, str]:
    """``answer_text`` of each call's latest answered approval, by call id."""
    found: dict[str, str] = {}
    for approval in sorted(approvals, key=lambda a: a.created_at_ms):
        text = answer_text(approval)
        if text and approval.call_id:
            found[approval.call_id] = text
    return found
