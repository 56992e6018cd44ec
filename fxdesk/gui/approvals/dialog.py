"""The approval window: one non-modal dialog that asks about the pending approvals one at a time.

It shows exactly what would run or change and where, why fxdesk asks, and what the agent said;
the person answers with a button or the keys 1–4. No button is a default button, so a stray Enter
or Return answers nothing. Esc hides the window without answering: the approvals stay pending and
the Approvals dock still lists them.

For a command, a line under it says what its sandbox would let through if allowed (what it may
write, the network). "Run outside the sandbox, once" is its own button, apart from the others,
in the warning colour, with no key: only a deliberate click (or Tab and Space) chooses it, and
only for a command that would run in the sandbox.

The dialog is a view of an ``ApprovalsPresenter`` (shared with the dock): it shows the
presenter's current approval and answers through the presenter's one answering routine. It hides
when the last approval is answered, here or elsewhere; when its own answer finds the approval no
longer pending it stays open with the notice.
"""

from __future__ import annotations

import itertools

from PySide6.QtCore import QKeyCombination, Qt, QTimer, Slot
from PySide6.QtGui import QFont, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.gui.approvals.code_box import CodeBox, DiffView
from fxdesk.gui.approvals.presenter import CHOICES, OUTSIDE, ApprovalsPresenter, Outcome
from fxdesk.gui.settings.rule_editor import tool_text
from fxdesk.gui.tasks import WidgetTasks, alive
from fxdesk.gui.theme import Role, css
from fxdesk.gui.widgets import bold_label, code_spans, hint_label, problem_label, show_problem


class ApprovalDialog(QDialog):
    """Asks about the presenter's pending approvals one at a time.

    Args:
        presenter: the pending approvals, shared with the Approvals dock; it answers them.
        parent: the main window (the dialog stays non-modal).
    """

    def __init__(self, presenter: ApprovalsPresenter, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.presenter = presenter
        self.tasks = WidgetTasks(self)
        self._busy = False
        self._was_empty = presenter.count == 0
        self.setWindowTitle("Approval needed")
        self.setModal(False)
        self.setMinimumWidth(560)
        self._sized = False  # sized to its first approval when first shown
        layout = QVBoxLayout(self)
        layout.addLayout(self._build_top())
        self.body_scroll = QScrollArea()
        self.body_scroll.setWidgetResizable(True)
        self.body_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.body_scroll.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.body_scroll.setWidget(self._build_body())
        layout.addWidget(self.body_scroll, 1)
        self.empty_label = QLabel("Nothing else is waiting for you.")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setAccessibleName("Nothing is waiting")
        layout.addWidget(self.empty_label, 1)
        self.notice = problem_label("Notice")
        layout.addWidget(self.notice)
        form = QHBoxLayout()
        reason_label = QLabel("&Reason for the agent (if you deny):")
        self.reason_edit = QLineEdit()
        self.reason_edit.setAccessibleName("Reason for the agent if you deny")
        self.reason_edit.setPlaceholderText("optional, e.g. use the test database instead")
        self.reason_edit.setClearButtonEnabled(True)
        reason_label.setBuddy(self.reason_edit)
        form.addWidget(reason_label)
        form.addWidget(self.reason_edit, 1)
        layout.addLayout(form)
        layout.addLayout(self._build_outside())
        layout.addLayout(self._build_buttons())
        self._set_tab_order()
        presenter.changed.connect(self._on_presenter_changed)
        presenter.current_changed.connect(self._on_presenter_current_changed)
        self._show_current()

    # --- building ------------------------------------------------------------------------

    def _build_top(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.tool_label = QLabel()
        self.tool_label.setAccessibleName("Tool")
        font = QFont(self.tool_label.font())
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.tool_label.setFont(font)
        row.addWidget(self.tool_label, 1)
        self.counter = QLabel()
        self.counter.setAccessibleName("Approval number")
        row.addWidget(self.counter)
        self.previous_button = QToolButton()
        self.previous_button.setArrowType(Qt.ArrowType.LeftArrow)
        self.previous_button.setAccessibleName("Previous approval")
        self.previous_button.setToolTip("Previous approval")
        self.previous_button.setAutoRaise(True)
        self.previous_button.clicked.connect(self._on_previous_button_clicked)
        row.addWidget(self.previous_button)
        self.next_button = QToolButton()
        self.next_button.setArrowType(Qt.ArrowType.RightArrow)
        self.next_button.setAccessibleName("Next approval")
        self.next_button.setToolTip("Next approval")
        self.next_button.setAutoRaise(True)
        self.next_button.clicked.connect(self._on_next_button_clicked)
        row.addWidget(self.next_button)
        return row

    def _build_body(self) -> QWidget:
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        self.where_label = hint_label(wrap=True)
        self.where_label.setAccessibleName("Session and workspace")
        self.where_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.where_label)
        self.label_box = CodeBox("Command", max_lines=10)
        column.addWidget(self.label_box)
        self.sandbox_label = QLabel()
        self.sandbox_label.setWordWrap(True)
        self.sandbox_label.setTextFormat(Qt.TextFormat.PlainText)
        self.sandbox_label.setAccessibleName("What the sandbox lets through")
        self.sandbox_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.sandbox_label)
        self.outside_label = QLabel("⚠ This reaches outside the workspace.")
        self.outside_label.setStyleSheet(f"color: {css(Role.WARNING)};")
        self.outside_label.setAccessibleName("Outside the workspace")
        column.addWidget(self.outside_label)
        column.addSpacing(4)
        column.addWidget(bold_label("Why it asks"))
        self.reason_label = QLabel()
        self.reason_label.setTextFormat(Qt.TextFormat.RichText)
        self.reason_label.setWordWrap(True)
        self.reason_label.setAccessibleName("Why it asks")
        self.reason_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.reason_label)
        self.uncovered_title = bold_label("Not allowed yet:")
        column.addWidget(self.uncovered_title)
        self.uncovered_box = CodeBox("Not allowed yet", max_lines=6)
        column.addWidget(self.uncovered_box)
        self.explanation_title = bold_label("The agent said:")
        column.addWidget(self.explanation_title)
        self.explanation_label = QLabel()
        self.explanation_label.setWordWrap(True)
        self.explanation_label.setTextFormat(Qt.TextFormat.PlainText)
        self.explanation_label.setAccessibleName("The agent said")
        self.explanation_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.explanation_label)
        self.preview_title = bold_label("The change:")
        column.addWidget(self.preview_title)
        self.preview_box = DiffView("Proposed change")
        column.addWidget(self.preview_box)
        column.addStretch(1)
        return body

    def _build_buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.buttons: dict[Choice, QPushButton] = {}
        self.shortcuts: list[QShortcut] = []  # the digit, on the main keys and the keypad
        for label in CHOICES:
            choice, key = label.choice, label.key
            button = QPushButton(f"&{key} {label.text}")
            button.setAccessibleName(label.name)
            button.setToolTip(f"{label.tip} (key {key})")
            # No default and no auto-default: Enter or Return must never approve anything.
            button.setAutoDefault(False)
            button.setDefault(False)
            button.clicked.connect(lambda _=False, c=choice: self._on_choice_triggered(c))
            digit = Qt.Key(ord(key))
            keypad = QKeyCombination(Qt.KeyboardModifier.KeypadModifier, digit)
            for sequence in (QKeySequence(digit), QKeySequence(keypad)):
                shortcut = QShortcut(sequence, self)
                shortcut.activated.connect(lambda c=choice: self._on_choice_triggered(c))
                self.shortcuts.append(shortcut)
            if choice == Choice.DENY:
                row.addStretch(1)
            row.addWidget(button)
            self.buttons[choice] = button
        return row

    def _build_outside(self) -> QHBoxLayout:
        """The loud choice, on a row of its own: warning-styled, never default, no key."""
        row = QHBoxLayout()
        self.outside_button = QPushButton(OUTSIDE.text)
        self.outside_button.setAccessibleName(OUTSIDE.name.removeprefix("⚠ "))
        self.outside_button.setToolTip(OUTSIDE.tip)
        self.outside_button.setAutoDefault(False)
        self.outside_button.setDefault(False)
        self.outside_button.setStyleSheet(
            f"QPushButton {{ color: {css(Role.WARNING)}; font-weight: bold; }}"
        )
        self.outside_button.clicked.connect(
            lambda _=False: self._on_choice_triggered(Choice.ONCE_UNSANDBOXED)
        )
        row.addWidget(self.outside_button)
        row.addStretch(1)
        return row

    def _set_tab_order(self) -> None:
        chain: list[QWidget] = [
            self.label_box,
            self.uncovered_box,
            self.preview_box,
            self.reason_edit,
            *self.buttons.values(),
            self.outside_button,
            self.previous_button,
            self.next_button,
        ]
        for first, second in itertools.pairwise(chain):
            QWidget.setTabOrder(first, second)

    def showEvent(self, event: QShowEvent) -> None:
        if not self._sized:
            self._sized = True
            self.resize(720, 380)
        super().showEvent(event)
        QTimer.singleShot(0, self, self._grow_to_fit)

    def _grow_to_fit(self) -> None:
        """Grow (never shrink: a window that jumps is hard to aim at) until the approval shown
        fits without scrolling, up to most of the screen."""
        body = self.body_scroll.widget()
        viewport = self.body_scroll.viewport()
        if not self.isVisible() or body is None or not self.body_scroll.isVisible():
            return
        needed = body.heightForWidth(viewport.width())
        extra = (needed if needed > 0 else body.sizeHint().height()) - viewport.height()
        if extra > 0:
            screen = self.screen().availableGeometry().height()
            self.resize(self.width(), min(self.height() + extra, int(screen * 0.85)))

    # --- the queue -----------------------------------------------------------------------

    @property
    def count(self) -> int:
        """How many approvals are pending."""
        return self.presenter.count

    @property
    def current(self) -> Approval | None:
        """The approval shown now."""
        return self.presenter.current

    def present(self, approval_id: str | None = None, *, activate: bool = True) -> None:
        """Show the window (at ``approval_id`` if it is pending), raised, and active unless
        ``activate`` is False (a new approval must not take the keyboard from the composer)."""
        if approval_id is not None:
            self.presenter.select(approval_id)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, not activate)
        self.show()
        self.raise_()
        if activate:
            self.activateWindow()
            self.label_box.setFocus()

    def show_index(self, index: int) -> None:
        """Show the pending approval at ``index`` (0-based)."""
        self.presenter.select_index(index)

    # --- answering -----------------------------------------------------------------------

    async def choose(self, choice: Choice) -> None:
        """Answer the current approval with ``choice`` (as its button or key does)."""
        approval = self.current
        if approval is None or self._busy:
            return
        self._set_busy(True)
        await self._choose(approval, choice)

    async def _choose(self, approval: Approval, choice: Choice) -> None:
        """Runs with the buttons disabled (``_busy``); enables them again when done."""
        try:
            reason = self.reason_edit.text().strip()
            answered = await self.presenter.answer(approval, choice, reason=reason, parent=self)
            if not alive(self) or answered.outcome is Outcome.CANCELLED:
                return  # cancelled: back to the approval
            self._show_notice(answered.notice)
            if answered.outcome is Outcome.ANSWERED and not self.presenter.count:
                self.hide()
        finally:
            if alive(self):
                self._set_busy(False)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()

    def _update_buttons(self) -> None:
        enabled = self.current is not None and not self._busy
        for button in self.buttons.values():
            button.setEnabled(enabled)
        self.outside_button.setEnabled(enabled)
        self.outside_button.setVisible(self.current is not None and self.current.offers_outside)
        self.reason_edit.setEnabled(self.current is not None)
        many = self.presenter.count > 1
        index = self.presenter.index
        self.previous_button.setVisible(many)
        self.next_button.setVisible(many)
        self.previous_button.setEnabled(many and index > 0)
        self.next_button.setEnabled(many and index < self.presenter.count - 1)

    # --- showing -------------------------------------------------------------------------

    def _show_notice(self, text: str) -> None:
        show_problem(self.notice, text)

    def _update_counter(self) -> None:
        count = self.presenter.count
        many = count > 1
        self.counter.setText(f"Approval {self.presenter.index + 1} of {count}" if many else "")
        self.counter.setVisible(many)
        self._update_buttons()

    def _show_current(self) -> None:
        approval = self.current
        self.body_scroll.setVisible(approval is not None)
        self.empty_label.setVisible(approval is None)
        self.reason_edit.clear()
        self._update_counter()
        if approval is None:
            self.tool_label.setText("No approval is waiting")
            return
        detail = approval.detail
        self.tool_label.setText(tool_text(approval.tool))
        self.tool_label.setToolTip(approval.tool)
        session, workspace = self.presenter.describe(approval)
        where = f"Session “{session}”" + (f" · {workspace}" if workspace else "")
        self.where_label.setText(where)
        command = approval.runs_command
        self.label_box.setAccessibleName("Command" if command else "Path")
        self.label_box.set_text(approval.label)
        sandbox = approval.sandbox
        self.sandbox_label.setText("\n".join(sandbox.lines()) if sandbox is not None else "")
        self.sandbox_label.setVisible(sandbox is not None)
        self.outside_label.setVisible(bool(detail.get("outside")))
        self.reason_label.setText(
            code_spans(str(detail.get("reason") or "No reason was recorded."))
        )
        uncovered = [str(part) for part in detail.get("uncovered") or []]
        # A single part that is the whole command says nothing the box above does not.
        show_parts = bool(uncovered) and uncovered != [approval.label]
        self.uncovered_title.setVisible(show_parts)
        self.uncovered_box.setVisible(show_parts)
        self.uncovered_box.set_text("\n".join(f"• {part}" for part in uncovered))
        explanation = approval.explanation.strip()
        self.explanation_title.setVisible(bool(explanation))
        self.explanation_label.setVisible(bool(explanation))
        self.explanation_label.setText(f"“{explanation}”" if explanation else "")
        preview = str(detail.get("preview") or "")
        self.preview_title.setVisible(bool(preview))
        self.preview_box.setVisible(bool(preview))
        self.preview_box.set_diff(preview)
        self.body_scroll.verticalScrollBar().setValue(0)
        if self.isVisible():
            QTimer.singleShot(0, self, self._grow_to_fit)  # once the layout has settled
        if self.isActiveWindow():
            self.label_box.setFocus()

    # --- slots ---------------------------------------------------------------------------

    def _on_choice_triggered(self, choice: Choice) -> None:
        approval = self.current
        if approval is None or self._busy or not self.isVisible():
            return
        if choice is Choice.ONCE_UNSANDBOXED and not approval.offers_outside:
            return
        self._set_busy(True)  # before the task starts: no second answer from a quick key
        self.tasks.spawn(self._choose(approval, choice), f"approval-{choice.value}")

    @Slot()
    def _on_presenter_changed(self) -> None:
        empty = self.presenter.count == 0
        if self._was_empty and not empty:
            self._show_notice("")  # a new approval: an old notice is not about it
        self._was_empty = empty
        self._update_counter()
        # Answered elsewhere (the dock, the CLI) or cancelled: nothing left to ask. While this
        # dialog answers, the outcome of its own answer decides instead.
        if empty and not self._busy:
            self.hide()

    @Slot()
    def _on_presenter_current_changed(self) -> None:
        self._show_current()

    @Slot()
    def _on_previous_button_clicked(self) -> None:
        self.show_index(self.presenter.index - 1)

    @Slot()
    def _on_next_button_clicked(self) -> None:
        self.show_index(self.presenter.index + 1)
