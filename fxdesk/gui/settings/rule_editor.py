"""Editing one permission rule: the rule dialog of Settings → Rules, the base the approval's
"Always allow…" editor shares with it, and the words rules are shown in (``tool_text``,
``scope_text``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.gui.widgets import hint_label, problem_label, select_data, show_problem

Workspaces = Callable[[], Mapping[str, str]]
"""Known workspaces: id (as rules store it in ``scope_key``) -> folder path."""

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


def match_combo_box(name: str) -> QComboBox:
    """A combo box of the ways a command rule matches (exact, prefix, glob)."""
    combo = QComboBox()
    combo.setAccessibleName(name)
    for match, label in MATCH_LABELS.items():
        combo.addItem(label, match.value)
    return combo


class RuleEditor(QDialog):
    """What the two rule dialogs share: a problem line under the fields, shown when Save is
    pressed and kept up to date afterwards; ``problem()`` says what is wrong."""

    def _problem_label(self) -> QLabel:
        self.message = problem_label("Problem")
        return self.message

    def problem(self) -> str | None:
        return None

    def _check(self) -> bool:
        problem = self.problem()
        show_problem(self.message, problem or "")
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
