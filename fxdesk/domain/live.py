"""The bounded live view of a running turn (spec child-sessions §8, scenario 1).

It holds the streamed assistant text (at most 64 KiB), tool activity (at most 32 entries, names cut
to 128 bytes) and worker events (at most 256, costing at most 128 KiB together). Whatever does not
fit is dropped and a ``*_truncated`` flag set. ``revision`` moves on every accepted append, every
truncation and the clear, so a viewer redraws only when it changed. Snapshots are immutable copies.

Text is a prefix of the stream: once a chunk did not fit, everything after it is dropped too (a
later small chunk would leave a hole). Each chunk's ``assistant_text`` event carries only the
bytes the text kept, so text the cap dropped costs nothing of the event budget (spec §8: "its
retained bytes"); a chunk dropped whole leaves no event. The view never changes execution: an
append that cannot get memory drops what it carried and sets its flag, and the turn carries on.
"""

from __future__ import annotations

from dataclasses import dataclass

from fxdesk.domain.reasons import truncate_utf8

TEXT_CAP_BYTES = 64 * 1024
TOOLS_CAP = 32
TOOL_NAME_CAP_BYTES = 128
EVENTS_CAP = 256
EVENTS_BUDGET_BYTES = 128 * 1024
_REVISION_WRAP = 2**64

# Event kinds and what they cost; kinds not listed here are not retained at all.
_RETAINED = frozenset(
    {
        "assistant_text",
        "status",
        "error",
        "tool_started",
        "tool_progress",
        "tool_finished",
        "command_output",
        "diff",
        "usage",
        "turn_finished",
    }
)
_UNIT_COST = frozenset({"usage", "turn_finished"})


@dataclass(frozen=True)
class LiveTool:
    name: str
    phase: str  # started | succeeded | failed | denied
    call_id: str = ""


@dataclass(frozen=True)
class LiveEvent:
    kind: str
    text: str = ""
    call_id: str = ""
    detail: str = ""

    @property
    def cost(self) -> int:
        if self.kind in _UNIT_COST:
            return 1
        return len(self.text.encode()) + len(self.call_id.encode()) + len(self.detail.encode())


@dataclass(frozen=True)
class LiveSnapshot:
    work_id: str
    revision: int
    text: str
    text_truncated: bool
    tools: tuple[LiveTool, ...]
    tools_truncated: bool
    events: tuple[LiveEvent, ...]
    events_truncated: bool


class LivePresentation:
    """The live state of one session's running item. Not thread-safe (loop thread only)."""

    def __init__(self) -> None:
        self.work_id: str | None = None
        self.revision = 0
        self._text: list[str] = []
        self._text_bytes = 0
        self.text_truncated = False
        self._tools: list[LiveTool] = []
        self.tools_truncated = False
        self._events: list[LiveEvent] = []
        self._events_cost = 0
        self.events_truncated = False

    @property
    def active(self) -> bool:
        return self.work_id is not None

    def _bump(self) -> None:
        self.revision = (self.revision + 1) % _REVISION_WRAP

    def begin(self, work_id: str) -> None:
        self.clear()
        self.work_id = work_id
        self._bump()

    def clear(self) -> None:
        was_active = self.work_id is not None or self._text or self._tools or self._events
        self.work_id = None
        self._text, self._text_bytes, self.text_truncated = [], 0, False
        self._tools, self.tools_truncated = [], False
        self._events, self._events_cost, self.events_truncated = [], 0, False
        if was_active:
            self._bump()

    def append_text(self, text: str) -> None:
        """Streamed assistant text; the part the text cap kept also becomes an event."""
        if self.work_id is None or not text:
            return
        try:
            kept = self._keep_text(text)
        except MemoryError:  # presentation only: the turn carries on (spec §8)
            self.text_truncated = True
            self._bump()
            return
        if kept:
            self.append_event(LiveEvent("assistant_text", kept))

    def _keep_text(self, text: str) -> str:
        """Append what fits of ``text``; returns that part. State changes only at the end, so
        a ``MemoryError`` on the way leaves the view as it was."""
        if self.text_truncated:
            return ""  # the stream already lost a piece: later text would follow a hole
        room = TEXT_CAP_BYTES - self._text_bytes
        size = len(text.encode())
        cut = size > room
        kept = truncate_utf8(text, room) if cut else text
        total = self._text_bytes + (len(kept.encode()) if cut else size)
        if kept:
            self._text.append(kept)
        self._text_bytes = total
        if cut:
            self.text_truncated = True
        self._bump()
        return kept

    def append_tool(self, name: str, phase: str, call_id: str = "") -> None:
        if self.work_id is None:
            return
        if len(self._tools) >= TOOLS_CAP:
            self.tools_truncated = True
            self._bump()
            return
        try:
            self._tools.append(LiveTool(truncate_utf8(name, TOOL_NAME_CAP_BYTES), phase, call_id))
        except MemoryError:
            self.tools_truncated = True
            self._bump()
            return
        self._bump()

    def append_event(self, event: LiveEvent) -> None:
        if self.work_id is None or event.kind not in _RETAINED:
            return
        try:
            cost = event.cost
            total = self._events_cost + cost
            if len(self._events) >= EVENTS_CAP or total > EVENTS_BUDGET_BYTES:
                self.events_truncated = True
                self._bump()
                return
            self._events.append(event)
        except MemoryError:
            self.events_truncated = True
            self._bump()
            return
        self._events_cost = total
        self._bump()

    def snapshot(self) -> LiveSnapshot | None:
        if self.work_id is None:
            return None
        return LiveSnapshot(
            work_id=self.work_id,
            revision=self.revision,
            text="".join(self._text),
            text_truncated=self.text_truncated,
            tools=tuple(self._tools),
            tools_truncated=self.tools_truncated,
            events=tuple(self._events),
            events_truncated=self.events_truncated,
        )
