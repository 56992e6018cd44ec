"""The Rules page of Settings: every stored permission rule, with Add…, Edit… and Delete (one
rule is edited in ``rule_editor.RuleDialog``).

Everything is read and written through a ``RuleBook`` (``rules``, ``add_rule``, ``remove_rule``;
the engine facade is one). The page re-reads the rules when it is first shown, after each change
made here, and when ``reload`` is called (the main window does when rules change elsewhere: an
approval answered with "always", ``fxdesk rules`` in a terminal).
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.permissions import PermissionRule, Scope, Verdict
from fxdesk.engine.facade import StoreError
from fxdesk.gui.settings.rule_editor import (
    ACTION_LABELS,
    EXPLANATION,
    MATCH_LABELS,
    RuleDialog,
    Workspaces,
    scope_text,
    tool_text,
)
from fxdesk.gui.tasks import WidgetTasks, alive, run_dialog
from fxdesk.gui.theme import Role, color
from fxdesk.gui.widgets import confirm, fit_columns, push_button, show_outcome

COL_ACTION, COL_TOOL, COL_PATTERN, COL_MATCH, COL_SCOPE = range(5)
HEADERS = ("Action", "Tool", "Pattern", "Match", "Scope")
ROLE_RULE = Qt.ItemDataRole.UserRole  # the PermissionRule of a row (on COL_ACTION)


class RuleBook(Protocol):
    """Where the page reads and writes rules: the engine facade (or, in tests, the service)."""

    async def rules(self, scope: Scope | None = None) -> list[PermissionRule]: ...

    async def add_rule(self, rule: PermissionRule, note: str = "") -> PermissionRule: ...

    async def remove_rule(self, rule_id: int) -> bool: ...


class RulesPage(QWidget):
    """Every stored permission rule, with Add…, Edit… and Delete.

    Signals:
        rules_changed(): a rule was added, edited or deleted here.
    """

    rules_changed = Signal()

    def __init__(
        self,
        service: RuleBook,
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
        self.add_button = push_button("&Add…", "Add a rule", self._on_add_button_clicked)
        self.edit_button = push_button("&Edit…", "Edit rule", self._on_edit_button_clicked)
        self.delete_button = push_button("De&lete", "Delete rule", self._on_delete_button_clicked)
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
                item.setForeground(COL_ACTION, color(Role.FAILURE))
            elif rule.action == Verdict.ALLOW:
                item.setForeground(COL_ACTION, color(Role.SUCCESS))
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
        show_outcome(self.status, ok, text)

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
