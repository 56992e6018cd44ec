"""Permission rules in the GUI: the Rules page of Settings and the dialog that adds or edits one
rule (the "Always allow…" editor of an approval is in ``approvals_dock``).

Everything is read and written through ``PermissionService`` (``rules``, ``add_rule``,
``remove_rule``). The page re-reads the rules when it is first shown, after each change made here,
and when ``reload`` is called (the main window does when rules change elsewhere: an approval
answered with "always", ``fxdesk rules`` in a terminal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QColor, QFont, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTreeView,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.permissions import PermissionService
from fxdesk.gui.settings.profile_form import FAIL_COLOR, OK_COLOR, WidgetTasks, alive, hint_label
from fxdesk.gui.tasks import run_dialog
from fxdesk.store import StoreError

Workspaces = Callable[[], Mapping[str, str]]
"""Known workspaces: id (as rules store it in ``scope_key``) -> folder path."""

COL_ACTION, COL_TOOL, COL_PATTERN, COL_MATCH, COL_SCOPE = range(5)
HEADERS = ("Action", "Tool", "Pattern", "Match", "Scope")
ROLE_RULE = Qt.ItemDataRole.UserRole  # the PermissionRule of a row (on COL_ACTION)

ACTION_LABELS = {Verdict.ALLOW: "Allow", Verdict.ASK: "Ask", Verdict.DENY: "Deny"}
MATCH_LABELS = {
    Match.EXACT: "exact",
    Match.PREFIX: "prefix — also longer commands starting with this",
    Match.GLOB: "glob — * and ? match anything",
}
RUN_COMMAND = "run_command"
ANY_TOOL = "*"
TOOL_LABELS = {
    "run_command": "Run a command",
    "read_file": "Read a file",
    "list_dir": "List a folder",
    "glob": "Find files by name",
    "grep": "Search in files",
    "edit_file": "Edit a file",
    "write_file": "Write a file",
}
EXPLANATION = (
    "Deny always wins. Command rules match the exact command unless marked prefix or glob."
)


def tool_text(tool: str) -> str:
    """A tool in the person's words ("Run a command"), or its own name when unknown."""
    return "Any tool" if tool == ANY_TOOL else TOOL_LABELS.get(tool, tool)


def scope_text(rule: PermissionRule, workspaces: Mapping[str, str]) -> str:
    """Where a rule applies: "this session", "workspace /path" or "everywhere"."""
    if rule.scope == Scope.SESSION:
        return "this session"
    if rule.scope == Scope.WORKSPACE:
        return f"workspace {workspaces.get(rule.scope_key) or rule.scope_key}"
    return "everywhere"


async def confirm(parent: QWidget, title: str, text: str, action: str) -> bool:
    """Ask a yes/no question window-modally; True when ``action`` is chosen."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    yes = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    try:
        await run_dialog(box)
        return box.clickedButton() is yes
    finally:
        if alive(box):
            box.deleteLater()


def match_combo_box(name: str) -> QComboBox:
    combo = QComboBox()
    combo.setAccessibleName(name)
    for match, label in MATCH_LABELS.items():
        combo.addItem(label, match.value)
    return combo


def bold_label(text: str) -> QLabel:
    label = QLabel(text)
    font = QFont(label.font())
    font.setBold(True)
    label.setFont(font)
    return label


def fit_columns(view: QTreeView | QTreeWidget, caps: Mapping[int, int]) -> None:
    """Size columns to their contents, but no wider than ``caps`` (column -> pixels), so one
    long value cannot push the stretching column out of sight."""
    for column, cap in caps.items():
        view.setColumnWidth(column, min(cap, max(view.sizeHintForColumn(column), 40) + 12))


def select_data(combo: QComboBox, value: object) -> None:
    combo.setCurrentIndex(max(0, combo.findData(value)))


# --- one rule ----------------------------------------------------------------------------------


class RuleEditor(QDialog):
    """What the two rule dialogs share: a problem line under the fields, shown when Save is
    pressed and kept up to date afterwards; ``problem()`` says what is wrong."""

    def _problem_label(self) -> QLabel:
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Problem")
        self.message.setStyleSheet(f"color: {FAIL_COLOR};")
        self.message.hide()
        return self.message

    def problem(self) -> str | None:
        return None

    def _check(self) -> bool:
        problem = self.problem()
        self.message.setText(problem or "")
        self.message.setVisible(problem is not None)
        return problem is None

    @Slot()
    def _on_save_button_clicked(self) -> None:
        if self._check():
            self.accept()

    @Slot()
    def _on_field_changed(self) -> None:
        if self.message.isVisible():
            self._check()


class RuleDialog(RuleEditor):
    """Adds a rule, or edits a copy of one (``rule`` given); ``rule()`` is the result after Save."""

    def __init__(
        self,
        rule: PermissionRule | None = None,
        *,
        workspaces: Mapping[str, str] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._original = rule
        self.setWindowTitle("Edit rule" if rule else "Add a rule")
        self.setMinimumWidth(560)
        layout = QVBoxLayout(self)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.action_combo = QComboBox()
        self.action_combo.setAccessibleName("Action")
        for verdict, label in ACTION_LABELS.items():
            self.action_combo.addItem(label, verdict.value)
        form.addRow("&Action:", self.action_combo)
        self.tool_combo = QComboBox()
        self.tool_combo.setAccessibleName("Tool")
        self.tool_combo.setEditable(True)
        self.tool_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        for tool, label in [*TOOL_LABELS.items(), (ANY_TOOL, "Any tool")]:
            self.tool_combo.addItem(tool, tool)
            self.tool_combo.setItemData(
                self.tool_combo.count() - 1, label, Qt.ItemDataRole.ToolTipRole
            )
        self.tool_combo.currentTextChanged.connect(self._on_tool_combo_changed)
        form.addRow("&Tool:", self.tool_combo)
        self.pattern_edit = QLineEdit()
        self.pattern_edit.setAccessibleName("Pattern")
        self.pattern_edit.textChanged.connect(self._on_field_changed)
        form.addRow("&Pattern:", self.pattern_edit)
        self.match_combo = match_combo_box("Match")
        form.addRow("&Match:", self.match_combo)
        self._form = form
        self.scope_combo = QComboBox()
        self.scope_combo.setAccessibleName("Where the rule applies")
        self.scope_combo.addItem("everywhere", (Scope.GLOBAL.value, ""))
        for key, path in (workspaces or {}).items():
            self.scope_combo.addItem(f"workspace {path}", (Scope.WORKSPACE.value, key))
        form.addRow("&Where:", self.scope_combo)
        layout.addLayout(form)
        layout.addWidget(hint_label(EXPLANATION, wrap=True))
        layout.addWidget(self._problem_label())
        layout.addStretch(1)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setAccessibleName("Save")
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName("Cancel")
        buttons.accepted.connect(self._on_save_button_clicked)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        if rule is None:
            self.tool_combo.setCurrentText("run_command")
        else:
            self._show(rule, workspaces or {})
        self._on_tool_combo_changed()
        self.pattern_edit.setFocus()

    def _show(self, rule: PermissionRule, workspaces: Mapping[str, str]) -> None:
        select_data(self.action_combo, rule.action.value)
        self.tool_combo.setCurrentText(rule.tool)
        self.pattern_edit.setText(rule.pattern)
        select_data(self.match_combo, rule.match.value)
        where = (rule.scope.value, rule.scope_key)
        if self.scope_combo.findData(where) < 0:  # a session, or a workspace not known here
            self.scope_combo.addItem(scope_text(rule, workspaces), where)
        select_data(self.scope_combo, where)

    def problem(self) -> str | None:
        """What keeps the rule from being saved, in one sentence; None when it can be."""
        if not self.tool_combo.currentText().strip():
            return "A tool is needed."
        if not self.pattern_edit.text().strip():
            return "A pattern is needed: the command, or the path."
        return None

    def rule(self) -> PermissionRule:
        """The rule as the dialog shows it (a new rule: no id)."""
        scope, key = self.scope_combo.currentData()
        return PermissionRule(
            tool=self.tool_combo.currentText().strip(),
            pattern=self.pattern_edit.text().strip(),
            action=Verdict(self.action_combo.currentData()),
            scope=Scope(scope),
            match=Match(self.match_combo.currentData()) if self._commands() else Match.GLOB,
            scope_key=key,
        )

    @Slot()
    def _on_tool_combo_changed(self) -> None:
        command = self._commands()
        self.pattern_edit.setPlaceholderText(
            "a command, e.g. npm test"
            if command
            else "a path glob: src/* (in the workspace), ~/notes/*, /tmp/* — * crosses folders"
        )
        self._form.setRowVisible(self.match_combo, command)  # path rules are always globs
        self._on_field_changed()

    def _commands(self) -> bool:
        return self.tool_combo.currentText().strip() in (RUN_COMMAND, ANY_TOOL)


# --- the page ----------------------------------------------------------------------------------


class RulesPage(QWidget):
    """Every stored permission rule, with Add…, Edit… and Delete.

    Signals:
        rules_changed(): a rule was added, edited or deleted here.
    """

    rules_changed = Signal()

    def __init__(
        self,
        service: PermissionService,
        *,
        workspaces: Workspaces | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self._workspaces = workspaces or dict
        self.tasks = WidgetTasks(self)
        self._load_started = False
        column = QVBoxLayout(self)
        intro = QLabel(EXPLANATION)
        intro.setWordWrap(True)
        column.addWidget(intro)
        row = QHBoxLayout()
        self.table = QTreeWidget()
        self.table.setAccessibleName("Rules")
        self.table.setColumnCount(len(HEADERS))
        self.table.setHeaderLabels(list(HEADERS))
        self.table.setRootIsDecorated(False)
        self.table.setAlternatingRowColors(True)
        self.table.setUniformRowHeights(True)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        header = self.table.header()
        header.setStretchLastSection(False)
        for col in (COL_ACTION, COL_TOOL, COL_MATCH):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COL_PATTERN, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(COL_SCOPE, QHeaderView.ResizeMode.Interactive)
        self.table.itemSelectionChanged.connect(self._on_table_selection_changed)
        self.table.itemActivated.connect(self._on_table_activated)
        row.addWidget(self.table, 1)
        buttons = QVBoxLayout()
        self.add_button = self._button("&Add…", "Add a rule", self._on_add_button_clicked)
        self.edit_button = self._button("&Edit…", "Edit rule", self._on_edit_button_clicked)
        self.delete_button = self._button("De&lete", "Delete rule", self._on_delete_button_clicked)
        for button in (self.add_button, self.edit_button, self.delete_button):
            buttons.addWidget(button)
        buttons.addStretch(1)
        row.addLayout(buttons)
        column.addLayout(row, 1)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Rules status")
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.status)
        delete = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.table)
        delete.activated.connect(self._on_delete_button_clicked)
        self._update_buttons()

    def _button(self, text: str, name: str, slot: Callable[[], None]) -> QPushButton:
        button = QPushButton(text)
        button.setAccessibleName(name)
        button.setAutoDefault(False)
        button.clicked.connect(slot)
        return button

    # --- reading -------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._load_started:
            self._load_started = True
            self.tasks.spawn(self.reload(), "rules-load")

    async def reload(self, select: int | None = None) -> None:
        """Re-read the rules, keeping (or moving to rule id ``select``) the selection."""
        self._load_started = True
        try:
            rules = await self.service.rules()
        except StoreError as exc:
            if alive(self):
                self._show_status(False, exc.user_message)
            return
        if not alive(self):
            return
        current = self.selected_rule()
        keep = select if select is not None else (current.id if current else None)
        workspaces = self._workspaces()
        self.table.clear()
        for rule in rules:
            item = QTreeWidgetItem(
                [
                    ACTION_LABELS.get(rule.action, rule.action.value),
                    rule.tool,
                    rule.pattern,
                    rule.match.value,
                    scope_text(rule, workspaces),
                ]
            )
            item.setData(COL_ACTION, ROLE_RULE, rule)
            item.setToolTip(COL_TOOL, tool_text(rule.tool))
            item.setToolTip(COL_PATTERN, rule.pattern)
            item.setToolTip(COL_MATCH, MATCH_LABELS.get(rule.match, rule.match.value))
            where = f"only in session {rule.scope_key}" if rule.scope == Scope.SESSION else ""
            item.setToolTip(COL_SCOPE, where or scope_text(rule, workspaces))
            if rule.action == Verdict.DENY:
                item.setForeground(COL_ACTION, QColor(FAIL_COLOR))
            elif rule.action == Verdict.ALLOW:
                item.setForeground(COL_ACTION, QColor(OK_COLOR))
            self.table.addTopLevelItem(item)
            if rule.id is not None and rule.id == keep:
                self.table.setCurrentItem(item)
        fit_columns(self.table, {COL_SCOPE: 280})
        if not rules:
            self._show_status(
                None, "No rules yet: “Always allow…” in an approval adds one, or add one here."
            )
        elif self.status.text().startswith("No rules yet"):
            self._show_status(None, "")
        self._update_buttons()

    def selected_rule(self) -> PermissionRule | None:
        item = self.table.currentItem()
        if item is None or not item.isSelected():
            return None
        rule = item.data(COL_ACTION, ROLE_RULE)
        return rule if isinstance(rule, PermissionRule) else None

    # --- changing ------------------------------------------------------------------------

    async def add_rule(self) -> PermissionRule | None:
        """Ask for a new rule in a sub-dialog and store it; the stored rule, or None."""
        rule = await self._ask_rule(None)
        if rule is None:
            return None
        stored = await self._store(rule)
        if stored is not None and alive(self):
            self._show_status(True, "Added the rule.")
            await self.reload(select=stored.id)
            self.rules_changed.emit()
        return stored

    async def edit_rule(self, rule: PermissionRule) -> PermissionRule | None:
        """Edit ``rule`` in a sub-dialog: the edited rule is added, then the old one removed."""
        edited = await self._ask_rule(rule)
        if edited is None:
            return None
        stored = await self._store(edited)
        if stored is None:
            return None
        problem = None
        try:
            # Saving it unchanged finds the same stored rule: nothing to remove then.
            if stored.id != rule.id and rule.id is not None:
                await self.service.remove_rule(rule.id)
        except StoreError as exc:
            problem = f"Saved the new rule, but the old one is still there: {exc.user_message}"
        if alive(self):
            self._show_status(problem is None, problem or "Saved the rule.")
            await self.reload(select=stored.id)
            self.rules_changed.emit()
        return stored

    async def delete_rule(self, rule: PermissionRule) -> bool:
        """Delete ``rule`` after asking; True when deleted."""
        action = ACTION_LABELS.get(rule.action, rule.action.value).lower()
        question = (
            f"Delete the rule “{action} {rule.tool} {rule.pattern}” "
            f"({scope_text(rule, self._workspaces())})?"
        )
        if rule.action == Verdict.DENY:
            question += " What it denies will be asked about, or allowed by other rules."
        else:
            question += " What it allows will be asked about again."
        if not await confirm(self, "Delete rule", question, "Delete") or rule.id is None:
            return False
        try:
            removed = await self.service.remove_rule(rule.id)
        except StoreError as exc:
            if alive(self):
                self._show_status(False, exc.user_message)
            return False
        if alive(self):
            self._show_status(True, "Deleted the rule." if removed else "It was gone already.")
            await self.reload()
            self.rules_changed.emit()
        return removed

    async def _ask_rule(self, rule: PermissionRule | None) -> PermissionRule | None:
        dialog = RuleDialog(rule, workspaces=self._workspaces(), parent=self)
        try:
            accepted = await run_dialog(dialog) == QDialog.DialogCode.Accepted
            return dialog.rule() if accepted and alive(self) else None
        finally:
            if alive(dialog):
                dialog.deleteLater()

    async def _store(self, rule: PermissionRule) -> PermissionRule | None:
        try:
            return await self.service.add_rule(rule)
        except StoreError as exc:
            if alive(self):
                self._show_status(False, exc.user_message)
            return None

    def _show_status(self, ok: bool | None, text: str) -> None:
        color = "" if ok is None else f"color: {OK_COLOR if ok else FAIL_COLOR};"
        mark = "" if ok is None or not text else ("✓ " if ok else "✗ ")
        self.status.setStyleSheet(color)
        self.status.setText(mark + text)

    def _update_buttons(self) -> None:
        selected = self.selected_rule() is not None
        self.edit_button.setEnabled(selected)
        self.delete_button.setEnabled(selected)

    # --- slots ---------------------------------------------------------------------------

    @Slot()
    def _on_table_selection_changed(self) -> None:
        self._update_buttons()

    @Slot(QTreeWidgetItem, int)
    def _on_table_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        rule = item.data(COL_ACTION, ROLE_RULE)
        if isinstance(rule, PermissionRule):
            self.tasks.spawn(self.edit_rule(rule), "rules-edit")

    @Slot()
    def _on_add_button_clicked(self) -> None:
        self.tasks.spawn(self.add_rule(), "rules-add")

    @Slot()
    def _on_edit_button_clicked(self) -> None:
        if rule := self.selected_rule():
            self.tasks.spawn(self.edit_rule(rule), "rules-edit")

    @Slot()
    def _on_delete_button_clicked(self) -> None:
        if rule := self.selected_rule():
            self.tasks.spawn(self.delete_rule(rule), "rules-delete")
