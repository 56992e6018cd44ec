"""Turns engine events into model updates, coalescing what streams.

The engine's bus publishes on the asyncio loop thread, which under qasync is the Qt GUI thread,
so handlers update models directly. Streaming text is collected per session and shown at once
when it starts, then at most every 33 ms (every 100 ms once the text is long, since re-laying
out long Markdown costs more): each push lays out and repaints the live answer, and 30 a second
is plenty for reading, at half the work of 60. Badge counts are re-read once per burst
of queue changes, not per change.

Signals:
    session_added(str): a session id, after its row exists in the model.
    session_changed(object): a changed ``Session`` snapshot.
    queue_changed(str, object): the selected session's newest work items changed.
    background_changed(object): a ``BackgroundChanged`` (a background task's new snapshot).
    agent_run_changed(object): an ``AgentRunChanged`` (a sub-agent's run moved on).
    inbox_changed(str): the root session whose agent inbox changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.agents.events import AgentRunChanged, InboxChanged
from fxdesk.engine.events import (
    ApprovalChanged,
    BackgroundChanged,
    BusyElsewhere,
    HistoryAppended,
    SessionAdded,
    SessionChanged,
    TextStreamed,
    ToolOutput,
    WorkChanged,
    WorkspaceAdded,
)
from fxdesk.engine.facade import Engine
from fxdesk.gui.sessions.model import (
    ROLE_APPROVALS,
    ROLE_BUSY,
    ROLE_LAST_FAILED,
    ROLE_QUEUED,
    ROLE_UNREAD,
    SessionTreeModel,
)
from fxdesk.gui.tasks import TaskGroup
from fxdesk.gui.transcript.model import TranscriptModel

FRAME_MS = 16  # a running command's new lines
# Streamed text: at most one push this often (issue 17: 20 sessions streaming, pushes every
# 16 ms cost ~25 % of a core in the live answer's layout and paint; a push waits only for the
# rest of this interval since the last one, so text still shows ~16 ms after it came, on
# average, and at once after a pause).
LIVE_TEXT_MS = 33
LONG_TEXT_MS = 100
LONG_TEXT = 8 * 1024


class EngineBridge(QObject):
    session_added = Signal(str)
    session_changed = Signal(object)
    queue_changed = Signal(str, object)  # session id, its newest work items
    approvals_changed = Signal()  # pending approvals may have changed: reload them
    background_changed = Signal(object)  # a BackgroundChanged: a task's new snapshot
    agent_run_changed = Signal(object)  # an AgentRunChanged
    inbox_changed = Signal(str)  # a root session id

    def __init__(
        self,
        engine: Engine,
        tree: SessionTreeModel,
        transcript: TranscriptModel | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._engine = engine
        self._tree = tree
        self._transcript = transcript
        self._tasks = TaskGroup()
        self._live: dict[str, list[str]] = {}
        self._dirty_live: set[str] = set()
        self._tool_output: dict[str, list[str]] = {}  # call id -> lines not shown yet
        self._dirty_counts: set[str] = set()
        self.repaints = 0  # live-text pushes to the transcript (tests count them)
        self.clock: Callable[[], float] = time.monotonic  # seconds (tests set a fake one)
        self._pushed_at = -1e9  # the clock's time of the last push
        self._flush = QTimer(self)
        self._flush.setSingleShot(True)
        self._flush.timeout.connect(self._on_flush_timeout)
        self._counts = QTimer(self)
        self._counts.setSingleShot(True)
        self._counts.setInterval(100)
        self._counts.timeout.connect(self._on_counts_timeout)
        self._unsubscribe: list[Callable[[], None]] = [
            engine.subscribe(WorkspaceAdded, self._on_workspace_added),
            engine.subscribe(SessionAdded, self._on_session_added),
            engine.subscribe(SessionChanged, self._on_session_changed),
            engine.subscribe(WorkChanged, self._on_work_changed),
            engine.subscribe(HistoryAppended, self._on_history_appended),
            engine.subscribe(TextStreamed, self._on_text_streamed),
            engine.subscribe(ToolOutput, self._on_tool_output),
            engine.subscribe(BusyElsewhere, self._on_busy_elsewhere),
            engine.subscribe(ApprovalChanged, self._on_approval_changed),
            engine.subscribe(BackgroundChanged, self.background_changed.emit),
            engine.subscribe(AgentRunChanged, self.agent_run_changed.emit),
            engine.subscribe(InboxChanged, self._on_inbox_changed),
        ]

    async def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        self._flush.stop()
        self._counts.stop()
        await self._tasks.cancel_all()

    @property
    def current(self) -> str | None:
        return self._transcript.session_id if self._transcript is not None else None

    def live_text(self, session_id: str) -> str:
        return "".join(self._live.get(session_id, ()))

    def _on_inbox_changed(self, event: InboxChanged) -> None:
        self.inbox_changed.emit(event.root_session_id)

    # --- tree ----------------------------------------------------------------------------

    def _on_workspace_added(self, event: WorkspaceAdded) -> None:
        self._tree.add_workspace(event.workspace)

    def _on_session_added(self, event: SessionAdded) -> None:
        self._tree.upsert_session(event.session)
        self.session_added.emit(event.session.id)

    def _on_session_changed(self, event: SessionChanged) -> None:
        self._tree.upsert_session(event.session)
        self.session_changed.emit(event.session)

    def _on_busy_elsewhere(self, event: BusyElsewhere) -> None:
        self._tree.set_mark(event.session_id, ROLE_BUSY, event.busy)

    def _on_approval_changed(self, event: ApprovalChanged) -> None:
        self._dirty_counts.add(event.approval.session_id)
        if not self._counts.isActive():
            self._counts.start()
        self.approvals_changed.emit()

    def _on_work_changed(self, event: WorkChanged) -> None:
        if event.items and all(item.status.terminal for item in event.items):
            # The turn is over: its streamed text never carries over into the next answer (a
            # cancelled turn's partial answer comes back from the history, marked).
            self._live.pop(event.session_id, None)
            self._dirty_live.discard(event.session_id)
            if event.session_id == self.current and self._transcript is not None:
                self._transcript.clear_live()
        if event.items:
            newest = max(event.items, key=lambda item: item.position)
            if newest.status in (WorkStatus.FAILED, WorkStatus.RUNNING, WorkStatus.COMPLETED):
                failed = newest.status == WorkStatus.FAILED
                self._tree.set_mark(event.session_id, ROLE_LAST_FAILED, failed)
        self._dirty_counts.add(event.session_id)
        if not self._counts.isActive():
            self._counts.start()

    def _on_counts_timeout(self) -> None:
        if self._transcript is not None:
            self._tasks.spawn(self._refresh_counts(set(self._dirty_counts)), "refresh-counts")
        self._dirty_counts.clear()

    async def _refresh_counts(self, session_ids: set[str]) -> None:
        counts = await self._engine.counts()
        for session_id in session_ids:
            self._tree.set_mark(session_id, ROLE_QUEUED, counts.get(session_id, (0, 0))[0])
        waiting = await self._engine.approval_counts()
        for session_id in session_ids | set(waiting):
            self._tree.set_mark(session_id, ROLE_APPROVALS, waiting.get(session_id, 0))
        self.approvals_changed.emit()  # a cancel or restart may have settled some
        current = self.current
        if current is not None and current in session_ids and self._transcript is not None:
            queue = await self._engine.queue(current)
            if self.current == current:
                self._transcript.apply_items(queue)
                self.queue_changed.emit(current, [item for item, _ in queue])

    # --- transcript ----------------------------------------------------------------------

    def _on_history_appended(self, event: HistoryAppended) -> None:
        if any(e.kind.value == "assistant" for e in event.entries):
            self._live.pop(event.session_id, None)
            self._dirty_live.discard(event.session_id)
        if event.session_id == self.current and self._transcript is not None:
            self._transcript.append_entries(event.entries)
        else:
            self._tree.set_mark(event.session_id, ROLE_UNREAD, True)

    def _on_text_streamed(self, event: TextStreamed) -> None:
        self._live.setdefault(event.session_id, []).append(event.text)
        if event.session_id != self.current:
            return
        self._dirty_live.add(event.session_id)
        if not self._flush.isActive():
            long_text = sum(len(part) for part in self._live[event.session_id]) > LONG_TEXT
            every = LONG_TEXT_MS if long_text else LIVE_TEXT_MS
            since = (self.clock() - self._pushed_at) * 1000
            self._flush.start(max(0, min(every, round(every - since))))

    def _on_tool_output(self, event: ToolOutput) -> None:
        """A running command's lines, shown in its card at most once a frame."""
        if event.session_id != self.current:
            return
        self._tool_output.setdefault(event.call_id, []).append(event.text)
        if not self._flush.isActive():
            self._flush.start(FRAME_MS)

    def _on_flush_timeout(self) -> None:
        current = self.current
        if current in self._dirty_live and self._transcript is not None:
            self._transcript.set_live_text(self.live_text(current))
            self.repaints += 1
            self._pushed_at = self.clock()
        self._dirty_live.clear()
        output, self._tool_output = self._tool_output, {}
        if self._transcript is not None:
            for call_id, parts in output.items():
                self._transcript.append_tool_output(call_id, "".join(parts))
