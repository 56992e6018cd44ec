"""Connects sub-agents to the window: the tree's run marks, the Runs and Inbox docks, Stop all.

``AgentsController`` follows the engine's ``AgentRunChanged`` and ``InboxChanged`` events (via
the bridge), re-reads the runs and the inbox of the root session concerned (once per burst),
and then:

- marks each run's child session in the tree with its run (agent, foreground/background, how it
  ended) and, while it runs, the seconds left to its deadline (ticking once a second);
- puts each root's usage with its sub-agents into the root's tooltip;
- shows the selected session's root in the Runs dock and the Inbox dock;
- offers Runs… and Stop all agents… in the Session menu and the tree's context menu.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from fxdesk import messages
from fxdesk.domain.agent_runs import AgentRun, AgentRunError
from fxdesk.domain.model import Session, SessionState
from fxdesk.engine.agents.events import AgentRunChanged
from fxdesk.engine.facade import Engine, StoreError
from fxdesk.gui.agents.inbox_dock import InboxDock
from fxdesk.gui.agents.runs_dock import RunsDock
from fxdesk.gui.agents.text import seconds_left
from fxdesk.gui.bridge import EngineBridge
from fxdesk.gui.sessions.model import (
    ROLE_AGENT_RUN,
    ROLE_RUN_LEFT,
    ROLE_SNAPSHOT,
    ROLE_TREE_USAGE,
    SessionTreeModel,
)
from fxdesk.gui.tasks import TaskGroup
from fxdesk.gui.window.main_window import MainWindow

log = logging.getLogger(__name__)

RUNS_SHORTCUT = "Ctrl+Shift+R"  # View → Runs
INBOX_SHORTCUT = "Ctrl+Shift+I"  # View → Inbox
BURST_MS = 100
TICK_MS = 1_000

Confirm = Callable[[str, str, str, str], Awaitable[bool]]  # title, text, do, keep


class AgentsController(QObject):
    """Owns the Runs and Inbox docks and what follows agent runs elsewhere in the window."""

    def __init__(
        self,
        engine: Engine,
        bridge: EngineBridge,
        window: MainWindow,
        tree: SessionTreeModel,
        tasks: TaskGroup,
        confirm: Confirm,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.engine = engine
        self.window = window
        self.tree = tree
        self.tasks = tasks
        self.confirm = confirm
        tree.now_ms = engine.now_ms
        self.runs: dict[str, list[AgentRun]] = {}  # root session id -> its runs
        self._dirty: set[str] = set()
        self._burst = QTimer(self)
        self._burst.setSingleShot(True)
        self._burst.setInterval(BURST_MS)
        self._burst.timeout.connect(self._on_burst_timeout)
        self._ticker = QTimer(self)
        self._ticker.setInterval(TICK_MS)
        self._ticker.timeout.connect(self._on_ticker_timeout)
        self.runs_dock = RunsDock(engine.now_ms, window)
        self.inbox_dock = InboxDock(engine.now_ms(), window)
        self._dock_into(window)
        self._build_actions(window)
        self.runs_dock.cancel_requested.connect(self._on_runs_dock_cancel_requested)
        self.runs_dock.open_requested.connect(window.select_session)
        self.runs_dock.stop_all_requested.connect(self._on_stop_all_requested)
        self.inbox_dock.open_requested.connect(self._on_inbox_dock_open_requested)
        bridge.agent_run_changed.connect(self._on_bridge_agent_run_changed)
        bridge.inbox_changed.connect(self._on_bridge_inbox_changed)
        bridge.session_changed.connect(self._on_bridge_session_changed)
        window.session_selected.connect(self._on_window_session_selected)
        window.tree.installEventFilter(self)

    # --- construction ---------------------------------------------------------------------

    def _dock_into(self, window: MainWindow) -> None:
        """Runs at the bottom (a wide table; tabbed with Processes), Inbox on the right; both
        hidden at first. View → Runs (Ctrl+Shift+R) and View → Inbox (Ctrl+Shift+I)."""
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.runs_dock)
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.inbox_dock)
        self.runs_dock.hide()
        self.inbox_dock.hide()
        for dock, text, keys in (
            (self.runs_dock, "&Runs", RUNS_SHORTCUT),
            (self.inbox_dock, "&Inbox", INBOX_SHORTCUT),
        ):
            toggle = dock.toggleViewAction()
            toggle.setText(text)
            toggle.setShortcut(QKeySequence(keys))
            window.view_menu.addAction(toggle)
            window.addAction(toggle)
        self.runs_toggle = self.runs_dock.toggleViewAction()
        self.inbox_toggle = self.inbox_dock.toggleViewAction()
        self.runs_toggle.triggered.connect(self._on_runs_toggle_triggered)

    def _build_actions(self, window: MainWindow) -> None:
        """Session → Runs of this session… and Stop all agents… (and in the tree's menu)."""
        self.show_runs_action = QAction("Sub-agent r&uns…", window)
        self.show_runs_action.setToolTip("The agent runs of this session's tree")
        self.show_runs_action.triggered.connect(self.show_runs)
        self.stop_all_action = QAction("Stop all a&gents…", window)
        self.stop_all_action.setToolTip("Cancel every unfinished sub-agent run of this tree")
        self.stop_all_action.triggered.connect(self._on_stop_all_action_triggered)
        self.actions = [self.show_runs_action, self.stop_all_action]
        menu = _menu_with(window, window.cancel_action)
        if menu is not None:
            _insert_after(menu, window.cancel_action, self.actions)
        self._update_actions()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The tree's context menu is built when it opens: add Runs… and Stop all agents…
        to it just before it shows (it is polished then, with its own actions in place)."""
        if event.type() == QEvent.Type.ChildPolished and watched is self.window.tree:
            child = event.child()  # type: ignore[attr-defined]
            if isinstance(child, QMenu) and self.window.cancel_action in child.actions():
                _insert_after(child, self.window.cancel_action, self.actions)
        return super().eventFilter(watched, event)

    # --- loading --------------------------------------------------------------------------

    def load(self) -> None:
        """After the tree's first load: read the runs of every root that has sub-sessions."""
        for row in range(self.tree.rowCount()):
            workspace = self.tree.index(row, 0)
            for child_row in range(self.tree.rowCount(workspace)):
                index = self.tree.index(child_row, 0, workspace)
                session = index.data(ROLE_SNAPSHOT)
                if isinstance(session, Session) and self.tree.rowCount(index):
                    self._dirty.add(session.id)
        selected = self._selected_root()
        if selected:
            self._dirty.add(selected)
        if self._dirty:
            self._burst.start()

    def refresh_now(self, root_id: str) -> Coroutine[object, object, None]:
        """Re-read ``root_id``'s runs, inbox and usage now (tests await it)."""
        return self._refresh(root_id)

    async def _refresh(self, root_id: str) -> None:
        try:
            runs = await self.engine.runs(root_id)
            inbox = await self.engine.inbox(root_id)
            usage = await self.engine.usage_summary(root_id)
        except (StoreError, AgentRunError) as exc:
            log.warning("agent runs of %s not read: %s", root_id, exc)
            return
        self.runs[root_id] = runs
        self.tree.set_mark(root_id, ROLE_TREE_USAGE, usage.tree)
        now = self.engine.now_ms()
        for run in runs:
            if run.child_session_id:
                self.tree.set_mark(run.child_session_id, ROLE_AGENT_RUN, run)
                self.tree.set_mark(run.child_session_id, ROLE_RUN_LEFT, seconds_left(run, now))
        if any(not run.status.terminal for run in runs) and not self._ticker.isActive():
            self._ticker.start()
        if root_id == self._selected_root():
            signals = [e for e in inbox.events if e.kind.value == "signal"]
            self.runs_dock.show_runs(root_id, self.tree.session_name(root_id), runs, signals)
            self.inbox_dock.show_inbox(inbox)
        self._update_actions()

    # --- actions --------------------------------------------------------------------------

    def _selected_root(self) -> str:
        session = self.window.selected_session()
        return session.root_id if session is not None else ""

    def _update_actions(self) -> None:
        root = self._selected_root()
        active = any(not run.status.terminal for run in self.runs.get(root, ()))
        self.show_runs_action.setEnabled(bool(root))
        self.stop_all_action.setEnabled(active)

    @Slot()
    def show_runs(self) -> None:
        """Show the Runs dock with the keyboard in its table."""
        self.runs_dock.show()
        self.runs_dock.raise_()
        self.runs_dock.view.setFocus(Qt.FocusReason.ShortcutFocusReason)
        root = self._selected_root()
        if root:
            self.tasks.spawn(self._refresh(root), "runs-refresh")

    async def stop_all(self, root_id: str) -> int:
        """Ask, then cancel every unfinished run of ``root_id``'s tree; how many were."""
        name = self.tree.session_name(root_id)
        active = sum(not run.status.terminal for run in self.runs.get(root_id, ()))
        runs = f"{active} unfinished sub-agent run{'' if active == 1 else 's'}"
        if not await self.confirm(
            "Stop all agents?",
            f"Cancel {runs} of “{name}” and everything they started? Their sessions stop; "
            "what they did so far stays.",
            "Stop all agents",
            "Keep them running",
        ):
            return 0
        try:
            count = await self.engine.stop_all_agents(root_id)
        except (StoreError, AgentRunError, RuntimeError) as exc:
            messages.warning(f"The sub-agents were not stopped: {exc}", key="agents")
            return 0
        messages.info(f"Stopped {count} sub-agent run{'' if count == 1 else 's'} of “{name}”.")
        await self._refresh(root_id)
        return count

    async def cancel_run(self, run_id: str) -> bool:
        """Ask, then cancel one run (and the runs it started)."""
        run = next((r for runs in self.runs.values() for r in runs if r.id == run_id), None)
        what = f"{run.agent_id}: {' '.join(run.task.split())[:80]}" if run else run_id
        if not await self.confirm(
            "Cancel this run?",
            f"Cancel the sub-agent run “{what}” and the runs it started?",
            "Cancel run",
            "Keep running",
        ):
            return False
        try:
            cancelled = await self.engine.cancel_run(run_id)
        except (StoreError, AgentRunError, RuntimeError) as exc:
            self.runs_dock.say(f"Not cancelled: {exc}")
            return False
        self.runs_dock.say("" if cancelled else "That run had already finished.")
        if run is not None:
            await self._refresh(run.root_session_id)
        return cancelled

    # --- slots ----------------------------------------------------------------------------

    def _mark_dirty(self, root_id: str) -> None:
        self._dirty.add(root_id)
        if not self._burst.isActive():
            self._burst.start()

    @Slot()
    def _on_burst_timeout(self) -> None:
        dirty, self._dirty = self._dirty, set()
        for root_id in dirty:
            self.tasks.spawn(self._refresh(root_id), "agents-refresh")

    @Slot()
    def _on_ticker_timeout(self) -> None:
        now = self.engine.now_ms()
        active = False
        for runs in self.runs.values():
            for run in runs:
                if run.child_session_id and not run.status.terminal:
                    active = True
                    self.tree.set_mark(run.child_session_id, ROLE_RUN_LEFT, seconds_left(run, now))
        if not active:
            self._ticker.stop()

    @Slot(object)
    def _on_bridge_agent_run_changed(self, event: AgentRunChanged) -> None:
        self._mark_dirty(event.root_session_id)

    @Slot(str)
    def _on_bridge_inbox_changed(self, root_id: str) -> None:
        self._mark_dirty(root_id)

    @Slot(object)
    def _on_bridge_session_changed(self, session: Session) -> None:
        """A sub-session's turn ended: its root's usage with its sub-agents changed. Not when
        a turn is queued or starts (or goes on after an approval): no model call was made since
        the change before, so the runs and usage are as they were read then (a refresh is six
        store reads: the session's root three times, its runs, inbox and usage)."""
        if session.state in (SessionState.QUEUED, SessionState.RUNNING):
            return
        if session.is_child or session.id in self.runs:
            self._mark_dirty(session.root_id)

    @Slot(str)
    def _on_window_session_selected(self, _session_id: str) -> None:
        root = self._selected_root()
        self._update_actions()
        if root and root != self.runs_dock.root_id:
            self.tasks.spawn(self._refresh(root), "agents-refresh")
        elif not root:
            self.runs_dock.show_runs("", "", [])

    @Slot()
    def _on_runs_toggle_triggered(self) -> None:
        root = self._selected_root()
        if self.runs_dock.isVisible() and root:
            self.tasks.spawn(self._refresh(root), "runs-refresh")

    @Slot()
    def _on_stop_all_action_triggered(self) -> None:
        root = self._selected_root()
        if root:
            self.tasks.spawn(self.stop_all(root), "stop-all-agents")

    @Slot(str)
    def _on_stop_all_requested(self, root_id: str) -> None:
        self.tasks.spawn(self.stop_all(root_id), "stop-all-agents")

    @Slot(str)
    def _on_runs_dock_cancel_requested(self, run_id: str) -> None:
        self.tasks.spawn(self.cancel_run(run_id), "cancel-run")

    @Slot(str)
    def _on_inbox_dock_open_requested(self, run_id: str) -> None:
        for runs in self.runs.values():
            for run in runs:
                if run.id == run_id and run.child_session_id:
                    self.window.select_session(run.child_session_id)
                    return


def _menu_with(window: MainWindow, action: QAction) -> QMenu | None:
    """The menu bar's menu that holds ``action``."""
    for item in window.menuBar().actions():
        menu = item.menu()
        if isinstance(menu, QMenu) and action in menu.actions():
            return menu
    return None


def _insert_after(menu: QMenu, action: QAction, actions: list[QAction]) -> None:
    """Put ``actions`` right after ``action`` in ``menu``."""
    present = menu.actions()
    position = present.index(action)
    if position + 1 < len(present):
        menu.insertActions(present[position + 1], actions)
    else:
        menu.addActions(actions)
