"""Connects the Processes dock to the engine and the rest of the window.

``ProcessesController`` builds the dock, feeds it the engine's ``BackgroundChanged`` events (via
the bridge), tells it which workspace "Run ▸" serves (the selected session's), keeps the session
tree's "▶ N" badges and the tray's count of running commands in step, and words the quit
question from the engine's quit plan (``quit_text``).
"""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtGui import QKeySequence

from fxdesk.engine.events import BackgroundChanged
from fxdesk.engine.facade import BackgroundTask, Engine
from fxdesk.gui.bridge import EngineBridge
from fxdesk.gui.desktop.notifications import NotificationCenter
from fxdesk.gui.processes.dock import Place, ProcessesDock
from fxdesk.gui.sessions.model import ROLE_BACKGROUND, ROLE_SNAPSHOT, SessionTreeModel
from fxdesk.gui.window.main_window import MainWindow

PROCESSES_SHORTCUT = "Ctrl+Shift+P"  # View → Processes
QUIT_LISTED = 3  # commands named in the quit question; the others are counted


def _commands(count: int) -> str:
    return f"{count} background command{'' if count == 1 else 's'}"


def _listed(tasks: list[BackgroundTask]) -> str:
    named = ", ".join(f"{t.ref} {' '.join(t.command.split())}" for t in tasks[:QUIT_LISTED])
    more = len(tasks) - QUIT_LISTED
    return f"{named}, and {more} more" if more > 0 else named


def quit_text(stopped: list[BackgroundTask], kept: list[BackgroundTask]) -> str:
    """What quitting does to background commands, from ``Engine.background_quit_plan``:
    "2 background commands will be stopped (#2 pytest --watch, #3 tsc -w); 1 durable command
    keeps running (#1 npm run dev)." ('' when nothing runs)."""
    parts = []
    if stopped:
        verb = "will be stopped"
        parts.append(f"{_commands(len(stopped))} {verb} ({_listed(stopped)})")
    if kept:
        noun = "durable command keeps" if len(kept) == 1 else "durable commands keep"
        parts.append(f"{len(kept)} {noun} running ({_listed(kept)})")
    return "; ".join(parts) + "." if parts else ""


class ProcessesController(QObject):
    """Owns the Processes dock and what follows background tasks elsewhere in the window."""

    def __init__(
        self,
        engine: Engine,
        bridge: EngineBridge,
        window: MainWindow,
        tree: SessionTreeModel,
        notifications: NotificationCenter,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.engine = engine
        self.window = window
        self.tree = tree
        self.notifications = notifications
        self.dock = ProcessesDock(engine, tree.session_name, window)
        self._dock_into(window)
        self._marked: set[str] = set()
        bridge.background_changed.connect(self._on_bridge_background_changed)
        window.session_selected.connect(self._on_window_session_selected)
        self._on_window_session_selected(self._selected_id())
        self.recount()

    def _dock_into(self, window: MainWindow) -> None:
        """At the bottom (a wide table beside a log); View → Processes (Ctrl+Shift+P) shows or
        hides it. Hidden until the first command appears. View → Edit saved run commands… is
        the Run ▸ menu's item."""
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        if not self.dock.model.rowCount():
            self.dock.hide()
        toggle = self.dock.toggleViewAction()
        toggle.setText("&Processes")
        toggle.setShortcut(QKeySequence(PROCESSES_SHORTCUT))
        window.view_menu.addAction(toggle)
        window.addAction(toggle)
        self.toggle_action = toggle
        # Also here: the dock (and its Run ▸) stays hidden until a first command runs.
        window.view_menu.addAction(self.dock.edit_action)

    def recount(self) -> None:
        """The tree's per-session badges and the tray's total, from the dock's rows."""
        running = Counter(t.session_id for t in self.dock.model.tasks() if t.state.running)
        for session_id in self._marked | set(running):
            self.tree.set_mark(session_id, ROLE_BACKGROUND, running.get(session_id, 0))
        self._marked = set(running)
        self.notifications.set_background_running(sum(running.values()))

    def quit_question(self) -> str:
        """The quit dialog's sentence about background commands ('' when none run)."""
        if not self.engine.runs_background:
            return ""
        stopped, kept = self.engine.background_quit_plan()
        return quit_text(stopped, kept)

    def _selected_id(self) -> str:
        session = self.window.selected_session()
        return session.id if session is not None else ""

    @Slot(object)
    def _on_bridge_background_changed(self, event: BackgroundChanged) -> None:
        self.dock.apply(event)
        self.recount()

    @Slot(str)
    def _on_window_session_selected(self, session_id: str) -> None:
        session = self.tree.session_index(session_id).data(ROLE_SNAPSHOT) if session_id else None
        workspace = (
            self.tree.workspace_index(session.workspace_id).data(ROLE_SNAPSHOT)
            if session is not None
            else None
        )
        if session is None or workspace is None:
            self.dock.set_place(None)
            return
        self.dock.set_place(Place(session.id, session.workspace_id, workspace.path))
