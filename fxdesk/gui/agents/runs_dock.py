"""The Runs dock: every agent run of the selected session's tree, with Cancel, Open and Stop all.

It shows one root session at a time (the selected session's root) and forwards what the person
asks to ``AgentsController``, which asks the engine. Enter or double-click on a row opens the
run's child session in the tree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QStackedWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.agent_inbox import InboxEvent
from fxdesk.domain.agent_runs import AgentRun
from fxdesk.domain.usage import money
from fxdesk.gui.agents.runs_model import (
    COL_AGENT,
    COL_MODEL,
    COL_RESULT,
    COL_SIGNALS,
    COL_STATUS,
    COL_TASK,
    COL_TOKENS,
    RunsModel,
)
from fxdesk.gui.widgets import bold_label, fit_columns, hint_label, problem_label, push_button

EMPTY_TEXT = "No sub-agents have run in this session's tree yet."
NO_SESSION_TEXT = "Select a session to see the runs of its tree."
TICK_MS = 1_000


def runs_summary(runs: Sequence[AgentRun]) -> str:
    """ "3 runs · 1 active · $0.012" ('' for none)."""
    if not runs:
        return ""
    active = sum(not run.status.terminal for run in runs)
    parts = [f"{len(runs)} run{'' if len(runs) == 1 else 's'}"]
    if active:
        parts.append(f"{active} active")
    costs = [run.cost for run in runs if run.cost is not None]
    if costs:
        parts.append(money(sum(costs)))
    return " · ".join(parts)


class RunsDock(QDockWidget):
    """The "Runs" dock.

    Signals:
        cancel_requested(str): cancel this run (its id).
        open_requested(str): select this child session in the tree.
        stop_all_requested(str): cancel every run of this root session's tree.
    """

    cancel_requested = Signal(str)
    open_requested = Signal(str)
    stop_all_requested = Signal(str)

    def __init__(self, now_ms: Callable[[], int], parent: QWidget | None = None) -> None:
        super().__init__("Runs", parent)
        self.setObjectName("runs-dock")
        self.root_id = ""
        self.model = RunsModel(now_ms, self)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.title = bold_label("")
        self.summary = hint_label()
        top.addWidget(self.title)
        top.addWidget(self.summary, 1)
        column.addLayout(top)
        self.stack = QStackedWidget()
        self.empty_label = hint_label(NO_SESSION_TEXT, wrap=True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack.addWidget(self.empty_label)
        self.view = self._build_view()
        self.stack.addWidget(self.view)
        column.addWidget(self.stack, 1)
        self.notice = problem_label("Runs notice")
        column.addWidget(self.notice)
        buttons = QHBoxLayout()
        self.cancel_button = push_button("&Cancel run", "Cancel run", self._on_cancel_clicked)
        self.cancel_button.setToolTip("Stop the selected run and the runs it started")
        self.open_button = push_button("&Open session", "Open session", self._on_open_clicked)
        self.open_button.setToolTip("Show the selected run's sub-agent session (Enter)")
        self.stop_all_button = push_button(
            "Stop &all agents…", "Stop all agents", self._on_stop_all_clicked
        )
        self.stop_all_button.setToolTip("Cancel every unfinished run of this session's tree")
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        buttons.addWidget(self.stop_all_button)
        column.addLayout(buttons)
        self.setWidget(body)
        self._ticker = QTimer(self)
        self._ticker.setInterval(TICK_MS)
        self._ticker.timeout.connect(self.model.tick)
        self._update()

    def _build_view(self) -> QTreeView:
        view = QTreeView()
        view.setAccessibleName("Agent runs")
        view.setModel(self.model)
        view.setRootIsDecorated(False)
        view.setUniformRowHeights(True)
        view.setAlternatingRowColors(True)
        view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setAllColumnsShowFocus(True)
        view.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = view.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(36)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(COL_RESULT, QHeaderView.ResizeMode.Stretch)
        view.activated.connect(self._on_view_activated)
        view.selectionModel().selectionChanged.connect(self._update)
        return view

    # --- contents ------------------------------------------------------------------------

    def show_runs(
        self,
        root_id: str,
        root_name: str,
        runs: list[AgentRun],
        signals: Sequence[InboxEvent] = (),
    ) -> None:
        """Show the runs of ``root_id``'s tree (keeping the selection on the same run)."""
        selected = self.selected()
        if root_id != self.root_id:
            self.model.set_runs([])
        self.root_id = root_id
        self.title.setText(f"Runs of “{root_name}”" if root_id else "Runs")
        self.model.set_runs(runs, signals)
        self.summary.setText(runs_summary(runs))
        self.empty_label.setText(EMPTY_TEXT if root_id else NO_SESSION_TEXT)
        fit_columns(
            self.view,
            {
                COL_TASK: 260,
                COL_AGENT: 140,
                COL_MODEL: 140,
                COL_STATUS: 150,
                COL_TOKENS: 150,
                COL_SIGNALS: 140,
            },
        )
        if selected is not None and root_id == selected.root_session_id:
            self.select(selected.id)
        if self.selected() is None and self.model.rowCount():
            self.select(self.model.run(self.model.rowCount() - 1).id)
        active = any(not run.status.terminal for run in runs)
        if active and not self._ticker.isActive():
            self._ticker.start()
        elif not active:
            self._ticker.stop()
        self._update()

    def selected(self) -> AgentRun | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.run(rows[0].row()) if rows else None

    def select(self, run_id: str) -> bool:
        row = self.model.row_of(run_id)
        if row is None:
            return False
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    def say(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.setVisible(bool(text))

    @Slot()
    def _update(self) -> None:
        run = self.selected()
        self.stack.setCurrentWidget(self.view if self.model.rowCount() else self.empty_label)
        self.cancel_button.setEnabled(run is not None and not run.status.terminal)
        self.open_button.setEnabled(run is not None and run.child_session_id is not None)
        active = any(not r.status.terminal for r in self.model.runs())
        self.stop_all_button.setEnabled(bool(self.root_id) and active)

    # --- slots ---------------------------------------------------------------------------

    def _on_cancel_clicked(self) -> None:
        run = self.selected()
        if run is not None and not run.status.terminal:
            self.cancel_requested.emit(run.id)

    def _on_open_clicked(self) -> None:
        run = self.selected()
        if run is not None and run.child_session_id:
            self.open_requested.emit(run.child_session_id)

    def _on_stop_all_clicked(self) -> None:
        if self.root_id:
            self.stop_all_requested.emit(self.root_id)

    @Slot(QModelIndex)
    def _on_view_activated(self, index: QModelIndex) -> None:
        run = self.model.run(index.row())
        if run.child_session_id:
            self.open_requested.emit(run.child_session_id)
