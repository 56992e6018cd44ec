"""The Approvals dock: every pending approval across all sessions, answerable from the list.

It is a view of the ``ApprovalsPresenter`` the approval dialog shows too: its buttons answer the
selected row through the presenter's one answering routine, and a row answered in either view
leaves both at once. ``ApprovalsModel`` holds immutable ``Approval`` snapshots and turns each
change into precise row removals, insertions and changes (so the selection survives a refresh).
Below the list, a preview shows what the selected row is about as the dialog does (the command
or path, why it asks, the sandbox, the agent's words, the change); keys 1–4 in the list answer
it as the dialog's keys do. Double-click or Enter asks to show the row in the dialog
(``open_requested``). The dock opens when
approvals start waiting and closes once none are left, unless the person showed or hid it
themselves (View → Approvals): then it stays so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSize,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QFrame,
    QGridLayout,
    QHeaderView,
    QMainWindow,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.gui.approvals.inline import ApprovalContent, choice_for_key
from fxdesk.gui.approvals.presenter import CHOICES, ApprovalsPresenter, Describe, Outcome
from fxdesk.gui.settings.rule_editor import tool_text
from fxdesk.gui.tasks import WidgetTasks, alive
from fxdesk.gui.widgets import (
    fit_columns,
    hint_label,
    problem_label,
    show_problem,
    widen_dock,
)

AnyIndex = QModelIndex | QPersistentModelIndex

COL_SESSION, COL_TOOL, COL_LABEL, COL_AGE = range(4)
HEADERS = ("Session", "Tool", "What", "Waiting")
ROLE_APPROVAL_ID = Qt.ItemDataRole.UserRole + 1  # str
ROLE_APPROVAL = Qt.ItemDataRole.UserRole + 2  # the frozen Approval

EMPTY_TEXT = "Nothing is waiting for you."
SHORT_TOOLS = {  # the dock is narrow; the tooltip says it in full
    "run_command": "Run",
    "start_background": "Start",
    "read_file": "Read",
    "list_dir": "List",
    "glob": "Find",
    "grep": "Search",
    "edit_file": "Edit",
    "write_file": "Write",
}
TOOLTIP_WIDTH = 100  # characters per line of a label's tooltip (Qt does not wrap plain text)
AGE_REFRESH_MS = 30_000
PREFERRED_WIDTH_PX = 440  # opened by itself where the window has room for it
PREVIEW_HINT = (160, 180)  # px: the preview's size hint (it scrolls)


def age_text(ms: int) -> str:
    """How long something has waited, briefly: "just now", "4 min", "2 h", "3 d"."""
    seconds = max(0, ms) // 1000
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


def _wrapped(text: str, width: int = TOOLTIP_WIDTH) -> str:
    lines: list[str] = []
    for line in text.splitlines() or [""]:
        lines.extend(line[i : i + width] for i in range(0, max(len(line), 1), width))
    return "\n".join(lines)


class ApprovalsModel(QAbstractTableModel):
    """Pending approvals as rows of snapshots, in the order given."""

    def __init__(
        self,
        describe: Describe,
        now_ms: Callable[[], int],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._describe = describe
        self._now_ms = now_ms
        self._rows: list[Approval] = []

    def set_approvals(self, approvals: list[Approval]) -> None:
        """Replace the rows with ``approvals``, removing, inserting and updating rows in place."""
        wanted = {a.id: a for a in approvals}
        for row in range(len(self._rows) - 1, -1, -1):
            if self._rows[row].id not in wanted:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._rows[row]
                self.endRemoveRows()
        kept = [a.id for a in self._rows]
        if kept != [a.id for a in approvals if a.id in set(kept)]:  # reordered: rare
            self.beginResetModel()
            self._rows = list(approvals)
            self.endResetModel()
            return
        for row, approval in enumerate(approvals):
            if row < len(self._rows) and self._rows[row].id == approval.id:
                if self._rows[row] != approval:
                    self._rows[row] = approval
                    self.dataChanged.emit(self.index(row, 0), self.index(row, COL_AGE))
                continue
            self.beginInsertRows(QModelIndex(), row, row)
            self._rows.insert(row, approval)
            self.endInsertRows()

    def approval(self, row: int) -> Approval:
        return self._rows[row]

    def row_of(self, approval_id: str) -> int | None:
        return next((i for i, a in enumerate(self._rows) if a.id == approval_id), None)

    def refresh_ages(self) -> None:
        if self._rows:
            top, bottom = self.index(0, COL_AGE), self.index(len(self._rows) - 1, COL_AGE)
            self.dataChanged.emit(top, bottom, [Qt.ItemDataRole.DisplayRole])

    # --- Qt ------------------------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(HEADERS)
        ):
            return HEADERS[section]
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        approval = self._rows[index.row()]
        column = index.column()
        if role == ROLE_APPROVAL_ID:
            return approval.id
        if role == ROLE_APPROVAL:
            return approval
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_SESSION:
                return self._describe(approval)[0]
            if column == COL_TOOL:
                return SHORT_TOOLS.get(approval.tool, approval.tool)
            if column == COL_LABEL:
                return self._short_label(approval)  # one line; the view elides it
            if column == COL_AGE:
                return age_text(self._now_ms() - approval.created_at_ms)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == COL_SESSION:
                return self._describe(approval)[1] or None
            if column == COL_TOOL:
                return f"{tool_text(approval.tool)} ({approval.tool})"
            if column == COL_LABEL:
                sandbox = approval.sandbox  # what its sandbox would let through (commands)
                lines = sandbox.lines() if sandbox is not None else []
                return "\n".join([_wrapped(approval.label), *map(_wrapped, lines)])
            if column == COL_AGE:
                waited = self._now_ms() - approval.created_at_ms
                return f"Waiting for {age_text(waited)}" if waited >= 60_000 else None
        return None

    def _short_label(self, approval: Approval) -> str:
        label = " ".join(approval.label.split())
        workspace = self._describe(approval)[1].rstrip("/")
        if not approval.runs_command and workspace and label.startswith(workspace + "/"):
            return label[len(workspace) + 1 :]  # a path in the workspace: the part that differs
        return label

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return (
            Qt.ItemFlag.ItemIsEnabled
            | Qt.ItemFlag.ItemIsSelectable
            | Qt.ItemFlag.ItemNeverHasChildren
        )


class _Preview(QScrollArea):
    """The preview's scroll area asks for little room: the dock's width is the list's (the
    wrapped text of the preview would otherwise widen the dock and squeeze the transcript)."""

    def sizeHint(self) -> QSize:
        return QSize(PREVIEW_HINT[0], PREVIEW_HINT[1])


class ApprovalsDock(QDockWidget):
    """The "Approvals" dock: every pending approval, answerable from here.

    Args:
        presenter: the pending approvals, shared with the approval dialog; it answers them.
        parent: the main window.
        now_ms: the engine's clock, which the ages are computed with (tests give a fixed one).

    Signals:
        open_requested(str): show this approval (its id) in the approval dialog.
    """

    open_requested = Signal(str)

    def __init__(
        self,
        presenter: ApprovalsPresenter,
        parent: QWidget | None = None,
        *,
        now_ms: Callable[[], int],
    ) -> None:
        super().__init__("Approvals", parent)
        self.setObjectName("approvals-dock")
        self.presenter = presenter
        self.tasks = WidgetTasks(self)
        self._busy = False
        self._waiting = 0
        self._shown_for_approvals = False
        self._previewed: Approval | None = None
        self.model = ApprovalsModel(presenter.describe, now_ms, self)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(4, 4, 4, 4)
        self.stack = QStackedWidget()
        self.empty_label = hint_label(EMPTY_TEXT, wrap=True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setAccessibleName("No approvals")
        self.stack.addWidget(self.empty_label)
        self.view = QTreeView()
        self.view.setAccessibleName("Pending approvals")
        self.view.setModel(self.model)
        self.view.setRootIsDecorated(False)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.view.setAllColumnsShowFocus(True)
        self.view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(24)
        for col in (COL_TOOL, COL_AGE):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COL_SESSION, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(COL_LABEL, QHeaderView.ResizeMode.Stretch)
        self.view.activated.connect(self._on_view_activated)
        self.view.selectionModel().selectionChanged.connect(self._on_view_selection_changed)
        self.view.installEventFilter(self)  # keys 1–4 answer the selected row
        self.stack.addWidget(self.view)
        # Below the list, what the selected row is about (as the dialog and the inline approval
        # show it), so an answer from here is never an answer given blind.
        self.preview = ApprovalContent(diff_lines=6)
        self.preview.setAccessibleName("The selected approval")
        preview_scroll = _Preview()
        preview_scroll.setWidget(self.preview)
        preview_scroll.setWidgetResizable(True)
        preview_scroll.setFrameShape(QFrame.Shape.NoFrame)
        preview_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self.stack)
        self.splitter.addWidget(preview_scroll)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 1)
        self.preview_scroll = preview_scroll
        column.addWidget(self.splitter, 1)
        self.notice = problem_label("Approvals notice")
        column.addWidget(self.notice)
        grid = QGridLayout()
        self.buttons: dict[Choice, QPushButton] = {}
        for position, label in enumerate(CHOICES):
            button = QPushButton(f"{label.key} {label.short}")
            button.setAccessibleName(label.name)
            button.setToolTip(f"{label.tip} (key {label.key} in the list)")
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, c=label.choice: self._on_choice_clicked(c))
            grid.addWidget(button, position // 2, position % 2)
            self.buttons[label.choice] = button
        self.button_box = QWidget()
        self.button_box.setLayout(grid)
        grid.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.button_box)
        self.setWidget(body)
        self._ages = QTimer(self)
        self._ages.setInterval(AGE_REFRESH_MS)
        self._ages.timeout.connect(self.model.refresh_ages)
        self._ages.start()
        self.toggleViewAction().triggered.connect(self._on_toggle_action_triggered)
        presenter.changed.connect(self._on_presenter_changed)
        self._show_approvals(presenter.approvals())

    # --- contents ------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return self.model.rowCount()

    def selected(self) -> Approval | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.approval(rows[0].row()) if rows else None

    def select(self, approval_id: str) -> bool:
        row = self.model.row_of(approval_id)
        if row is None:
            return False
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    def _show_approvals(self, approvals: list[Approval]) -> None:
        """Show ``approvals``, keeping the selection if it is still there."""
        self.model.set_approvals(approvals)
        fit_columns(self.view, {COL_SESSION: 110})  # "What" gets the rest
        if self.selected() is None and self.model.rowCount():
            self.select(self.model.approval(0).id)
        self._update()

    def _has_room(self) -> bool:
        """Whether the window can show the dock beside what it shows without growing: in a
        narrow window the open session's approval is in its transcript, the others in the
        dialog, and the status line counts them (View → Approvals still opens it)."""
        window = self.parentWidget()
        central = window.centralWidget() if isinstance(window, QMainWindow) else None
        if window is None or central is None:
            return True
        spare = window.width() - central.minimumSizeHint().width()
        return spare >= self.minimumSizeHint().width() + 40

    def _fit(self, waiting: int) -> None:
        """Open when approvals start waiting (where the window has room for it), close again
        once none are left, unless the person showed or hid the dock themselves."""
        if waiting and not self._waiting and self.isHidden() and self._has_room():
            self.show()
            self.raise_()  # the front tab where it shares the right side with the Inbox
            self._shown_for_approvals = True
            widen_dock(self, PREFERRED_WIDTH_PX)  # the list's "What" and the preview want room
        elif not waiting and self._shown_for_approvals:
            self.hide()
            self._shown_for_approvals = False
        self._waiting = waiting

    # --- answering -----------------------------------------------------------------------

    async def choose(self, choice: Choice) -> None:
        """Answer the selected approval with ``choice`` (as its button does)."""
        approval = self.selected()
        if approval is None or self._busy:
            return
        self._set_busy(True)
        await self._choose(approval, choice)

    async def _choose(self, approval: Approval, choice: Choice) -> None:
        """Runs with the buttons disabled (``_busy``); enables them again when done."""
        try:
            # The dock has no reason field: a deny from here tells the agent no reason.
            answered = await self.presenter.answer(approval, choice, parent=self)
            if alive(self) and answered.outcome is not Outcome.CANCELLED:
                self._show_notice(answered.notice)
        finally:
            if alive(self):
                self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update()

    def _show_notice(self, text: str) -> None:
        show_problem(self.notice, text)

    def _update(self) -> None:
        empty = self.model.rowCount() == 0
        self.stack.setCurrentWidget(self.empty_label if empty else self.view)
        self.button_box.setVisible(not empty)
        selected = self.selected()
        enabled = selected is not None and not self._busy
        for button in self.buttons.values():
            button.setEnabled(enabled)
        self.preview_scroll.setVisible(selected is not None)
        if selected is not None and selected != self._previewed:
            self.preview.show_approval(selected)
        self._previewed = selected

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Keys 1–4 in the list answer the selected row, as in the dialog."""
        if watched is self.view and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            choice = choice_for_key(event)
            if choice is not None and self.selected() is not None:
                self._on_choice_clicked(choice)
                return True
        return super().eventFilter(watched, event)

    # --- slots ---------------------------------------------------------------------------

    @Slot()
    def _on_presenter_changed(self) -> None:
        approvals = self.presenter.approvals()
        self._show_approvals(approvals)
        self._fit(len(approvals))

    @Slot(bool)
    def _on_toggle_action_triggered(self, _checked: bool) -> None:
        self._shown_for_approvals = False  # the person's choice from now on

    def _on_choice_clicked(self, choice: Choice) -> None:
        approval = self.selected()
        if approval is None or self._busy:
            return
        self._set_busy(True)
        self.tasks.spawn(self._choose(approval, choice), f"approvals-dock-{choice.value}")

    @Slot(QModelIndex)
    def _on_view_activated(self, index: QModelIndex) -> None:
        approval_id = index.data(ROLE_APPROVAL_ID)
        if approval_id:
            self.open_requested.emit(str(approval_id))

    @Slot()
    def _on_view_selection_changed(self) -> None:
        self._update()
