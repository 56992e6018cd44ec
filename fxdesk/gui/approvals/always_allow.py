"""The "Always allow…" editor: the rules an approval answered with "always" would store, each
editable before it is saved (narrower pattern, prefix or glob match, this workspace or
everywhere). ``choose_rules`` shows it window-modally over the dialog or dock answering.
"""

from __future__ import annotations

import dataclasses

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

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.permissions import Match, PermissionRule, Scope
from fxdesk.engine.facade import suggested_rules
from fxdesk.gui.settings.rule_editor import EXPLANATION, RuleEditor, match_combo_box
from fxdesk.gui.tasks import alive, run_dialog
from fxdesk.gui.widgets import bold_label, hint_label, monospace, select_data


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
        self._command = approval.runs_command
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
            edit.setFont(monospace())
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
