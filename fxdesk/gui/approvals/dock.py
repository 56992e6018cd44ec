"""The Approvals dock: every pending approval across all sessions, answerable from the list; and
what answering needs in both the dock and the approval dialog (the "Always allow…" rule editor).

``ApprovalsModel`` holds immutable ``Approval`` snapshots and turns each ``set_approvals`` into
precise row removals, insertions and changes (so the selection survives a refresh). The dock's
buttons answer the selected row through the same ``answer`` callback as the approval dialog;
double-click or Enter asks the main window to show the row in the dialog (``open_requested``).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFormLayout,
    QGridLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.approvals import Approval, ApprovalNotPending, Choice
from fxdesk.domain.permissions import Match, PermissionRule, Scope
from fxdesk.engine.permissions import suggested_rules
from fxdesk.gui.settings.profile_form import FAIL_COLOR, WidgetTasks, alive, hint_label
from fxdesk.gui.settings.rules_page import (
    EXPLANATION,
    RuleEditor,
    bold_label,
    fit_columns,
    match_combo_box,
    select_data,
    tool_text,
)
from fxdesk.gui.tasks import run_dialog
from fxdesk.store import StoreError

Answer = Callable[[Approval, Choice, str, list[PermissionRule] | None], Awaitable[None]]
"""Resolves an approval: (approval, choice, deny reason, edited rules or None)."""
Describe = Callable[[Approval], tuple[str, str]]
"""(session name, workspace path) of an approval, for display."""

NOT_PENDING = "This approval is no longer pending: it was answered elsewhere or its work stopped."
CHOICE_TIPS = {
    Choice.ONCE: "Allow this one action; the next one like it asks again",
    Choice.SESSION: "Allow exactly this until the session ends",
    Choice.ALWAYS: "Store a rule (you can edit it first) so this is never asked again",
    Choice.DENY: "Refuse; the agent is told, with your reason if you give one",
}

AnyIndex = QModelIndex | QPersistentModelIndex

COL_SESSION, COL_TOOL, COL_LABEL, COL_AGE = range(4)
HEADERS = ("Session", "Tool", "What", "Waiting")
ROLE_APPROVAL_ID = Qt.ItemDataRole.UserRole + 1  # str
ROLE_APPROVAL = Qt.ItemDataRole.UserRole + 2  # the frozen Approval

EMPTY_TEXT = "Nothing is waiting for you."
SHORT_TOOLS = {  # the dock is narrow; the tooltip says it in full
    "run_command": "Run",
    "read_file": "Read",
    "list_dir": "List",
    "glob": "Find",
    "grep": "Search",
    "edit_file": "Edit",
    "write_file": "Write",
}
TOOLTIP_WIDTH = 100  # characters per line of a label's tooltip (Qt does not wrap plain text)
AGE_REFRESH_MS = 30_000


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


# --- "Always allow…" ---------------------------------------------------------------------------


class AlwaysAllowDialog(RuleEditor):
    """The rules "Always allow" stores for one approval, each editable; ``rules()`` after Save.

    Save is deliberately not a default button: Enter in a pattern field saves (and so approves)
    nothing.
    """

    def __init__(
        self,
        approval: Approval,
        rules: list[PermissionRule],
        *,
        workspace: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.approval = approval
        self._suggested = list(rules)
        self._command = approval.tool == "run_command"
        self.setWindowTitle("Always allow")
        self.setMinimumWidth(640)
        layout = QVBoxLayout(self)
        what = "commands" if self._command else "paths"
        intro = QLabel(
            f"fxdesk will allow these {what} from now on without asking. Narrow them if you like."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        self.pattern_edits: list[QLineEdit] = []
        self.match_combos: list[QComboBox] = []
        self.scope_combos: list[QComboBox] = []
        here = f"this workspace ({workspace})" if workspace else "this workspace"
        for row, rule in enumerate(rules, start=1):
            number = f" {row}" if len(rules) > 1 else ""
            if number:
                layout.addSpacing(6)
                layout.addWidget(bold_label(f"Rule{number}"))
            form = QFormLayout()
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)
            first = row == 1  # mnemonics on the first rule only: the same key twice is ambiguous
            edit = QLineEdit(rule.pattern)
            edit.setAccessibleName(f"Pattern{number}")
            edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
            edit.setCursorPosition(0)
            edit.textChanged.connect(self._on_field_changed)
            form.addRow("&Pattern:" if first else "Pattern:", edit)
            match = match_combo_box(f"Match{number}")
            select_data(match, rule.match.value)
            form.addRow("&Match:" if first else "Match:", match)
            form.setRowVisible(match, self._command)
            scope = QComboBox()
            scope.setAccessibleName(f"Where{number}")
            scope.addItem(here, Scope.WORKSPACE.value)
            scope.addItem("everywhere", Scope.GLOBAL.value)
            select_data(scope, Scope.GLOBAL.value if rule.scope == Scope.GLOBAL else "workspace")
            form.addRow("&Where:" if first else "Where:", scope)
            layout.addLayout(form)
            self.pattern_edits.append(edit)
            self.match_combos.append(match)
            self.scope_combos.append(scope)
        layout.addSpacing(6)
        layout.addWidget(hint_label(EXPLANATION, wrap=True))
        layout.addWidget(self._problem_label())
        layout.addStretch(1)
        buttons = QDialogButtonBox()
        self.save_button = buttons.addButton(
            "&Save and allow", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.save_button.setAccessibleName("Save the rules and allow")
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.setAccessibleName("Cancel")
        for button in (self.save_button, self.cancel_button):
            button.setAutoDefault(False)
            button.setDefault(False)
        self.save_button.clicked.connect(self._on_save_button_clicked)
        self.cancel_button.clicked.connect(self.reject)
        layout.addWidget(buttons)
        if self.pattern_edits:
            self.pattern_edits[0].setFocus()

    def problem(self) -> str | None:
        if any(not edit.text().strip() for edit in self.pattern_edits):
            return "Every rule needs a pattern."
        return None

    def rules(self) -> list[PermissionRule]:
        """The rules as edited; "everywhere" rules are global, the others keep the workspace."""
        workspace_key = str(self.approval.detail.get("workspace_id", ""))
        edited = []
        for rule, edit, match, scope in zip(
            self._suggested, self.pattern_edits, self.match_combos, self.scope_combos, strict=True
        ):
            everywhere = scope.currentData() == Scope.GLOBAL.value
            edited.append(
                dataclasses.replace(
                    rule,
                    pattern=edit.text().strip(),
                    match=Match(match.currentData()) if self._command else rule.match,
                    scope=Scope.GLOBAL if everywhere else Scope.WORKSPACE,
                    scope_key="" if everywhere else (rule.scope_key or workspace_key),
                )
            )
        return edited


async def choose_rules(
    parent: QWidget, approval: Approval, workspace: str = ""
) -> list[PermissionRule] | None:
    """Let the person edit the "always" rules suggested for ``approval`` window-modally; None
    when cancelled."""
    suggested = suggested_rules(approval, Choice.ALWAYS)
    dialog = AlwaysAllowDialog(approval, suggested, workspace=workspace, parent=parent)
    try:
        if await run_dialog(dialog) != QDialog.DialogCode.Accepted:
            return None
        return dialog.rules()
    finally:
        if alive(dialog):
            dialog.deleteLater()


def _now_ms() -> int:
    return int(time.time() * 1000)


class ApprovalsModel(QAbstractTableModel):
    """Pending approvals as rows of snapshots, in the order given."""

    def __init__(
        self,
        describe: Describe,
        now_ms: Callable[[], int] = _now_ms,
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
                return _wrapped(approval.label)
            if column == COL_AGE:
                waited = self._now_ms() - approval.created_at_ms
                return f"Waiting for {age_text(waited)}" if waited >= 60_000 else None
        return None

    def _short_label(self, approval: Approval) -> str:
        label = " ".join(approval.label.split())
        workspace = self._describe(approval)[1].rstrip("/")
        if approval.tool != "run_command" and workspace and label.startswith(workspace + "/"):
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


class ApprovalsDock(QDockWidget):
    """The "Approvals" dock: every pending approval, answerable from here.

    Args:
        answer: resolves an approval with (approval, choice, deny reason, edited rules or None);
            the dock never gives a deny reason ("").
        describe: (session name, workspace path) of an approval.
        parent: the main window.
        now_ms: the clock the ages are computed with (tests give a fixed one).

    Signals:
        open_requested(str): show this approval (its id) in the approval dialog.
    """

    open_requested = Signal(str)

    def __init__(
        self,
        answer: Answer,
        describe: Describe,
        parent: QWidget | None = None,
        *,
        now_ms: Callable[[], int] = _now_ms,
    ) -> None:
        super().__init__("Approvals", parent)
        self.setObjectName("approvals-dock")
        self._answer = answer
        self._describe = describe
        self.tasks = WidgetTasks(self)
        self._busy = False
        self.model = ApprovalsModel(describe, now_ms, self)
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
        self.stack.addWidget(self.view)
        column.addWidget(self.stack, 1)
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.setAccessibleName("Approvals notice")
        self.notice.setStyleSheet(f"color: {FAIL_COLOR};")
        self.notice.hide()
        column.addWidget(self.notice)
        grid = QGridLayout()
        self.buttons: dict[Choice, QPushButton] = {}
        texts = (
            (Choice.ONCE, "Allow once", "Allow once"),
            (Choice.SESSION, "For this session", "Allow for this session"),
            (Choice.ALWAYS, "Always allow…", "Always allow"),
            (Choice.DENY, "Deny", "Deny"),
        )
        for position, (choice, text, name) in enumerate(texts):
            button = QPushButton(text)
            button.setAccessibleName(name)
            button.setToolTip(CHOICE_TIPS[choice])
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, c=choice: self._on_choice_clicked(c))
            grid.addWidget(button, position // 2, position % 2)
            self.buttons[choice] = button
        self.button_box = QWidget()
        self.button_box.setLayout(grid)
        grid.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.button_box)
        self.setWidget(body)
        self._ages = QTimer(self)
        self._ages.setInterval(AGE_REFRESH_MS)
        self._ages.timeout.connect(self.model.refresh_ages)
        self._ages.start()
        self._update()

    # --- contents ------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return self.model.rowCount()

    def set_approvals(self, approvals: list[Approval]) -> None:
        """Show ``approvals`` (all pending ones), keeping the selection if it is still there."""
        self.model.set_approvals(approvals)
        fit_columns(self.view, {COL_SESSION: 140})
        if self.selected() is None and self.model.rowCount():
            self.select(self.model.approval(0).id)
        self._update()

    def selected(self) -> Approval | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.approval(rows[0].row()) if rows else None

    def select(self, approval_id: str) -> bool:
        row = self.model.row_of(approval_id)
        if row is None:
            return False
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    # --- answering -----------------------------------------------------------------------

    async def choose(self, choice: Choice) -> None:
        """Answer the selected approval with ``choice`` (as its button does)."""
        approval = self.selected()
        if approval is None or self._busy:
            return
        self._set_busy(True)
        await self._choose(approval, choice)

    async def _choose(self, approval: Approval, choice: Choice) -> None:
        try:
            rules: list[PermissionRule] | None = None
            if choice == Choice.ALWAYS:
                _, workspace = self._describe(approval)
                rules = await choose_rules(self, approval, workspace)
                if rules is None or not alive(self):
                    return
            try:
                await self._answer(approval, choice, "", rules)
            except ApprovalNotPending:
                if alive(self):
                    self._show_notice(NOT_PENDING)
                    self._forget(approval.id)
                return
            except StoreError as exc:
                if alive(self):
                    self._show_notice(exc.user_message)
                return
            if alive(self):
                self._show_notice("")
                self._forget(approval.id)
        finally:
            if alive(self):
                self._set_busy(False)

    def _forget(self, approval_id: str) -> None:
        """Drop an answered row now; the next ``set_approvals`` agrees."""
        rows = [self.model.approval(i) for i in range(self.model.rowCount())]
        self.set_approvals([a for a in rows if a.id != approval_id])

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update()

    def _show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.setVisible(bool(text))

    def _update(self) -> None:
        empty = self.model.rowCount() == 0
        self.stack.setCurrentWidget(self.empty_label if empty else self.view)
        self.button_box.setVisible(not empty)
        enabled = self.selected() is not None and not self._busy
        for button in self.buttons.values():
            button.setEnabled(enabled)

    # --- slots ---------------------------------------------------------------------------

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
