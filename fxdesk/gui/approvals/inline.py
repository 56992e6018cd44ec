"""The open session's pending approval, in its transcript, where the keyboard already is.

As the Claude and Codex apps do: the oldest approval the open session waits for is shown at the
foot of its transcript, above the composer, with what the dialog shows (the command or path,
why it asks, what the sandbox lets through, the agent's words, the change) and the same four
answers. With the composer empty, or the transcript focused, the keys 1–4 answer it; once the
person has typed into the composer, digits are text again. It answers through the one
routine of the presenter, so the dialog and the dock update with it.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Slot
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.gui.approvals.code_box import CodeBox, DiffView
from fxdesk.gui.approvals.presenter import CHOICES, OUTSIDE, ApprovalsPresenter, Outcome
from fxdesk.gui.settings.rule_editor import tool_text
from fxdesk.gui.tasks import TaskGroup, alive
from fxdesk.gui.theme import Role, css
from fxdesk.gui.widgets import code_spans

KEYS = {label.key: label.choice for label in CHOICES}


class ApprovalContent(QWidget):
    """What one approval is about, as the dialog shows it: the command or path, why it asks,
    what the sandbox lets through, the agent's words and the change. Shown inline in the
    transcript and as the Approvals dock's preview."""

    def __init__(self, parent: QWidget | None = None, *, diff_lines: int = 10) -> None:
        super().__init__(parent)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        self.label_box = CodeBox("Command", max_lines=4)
        column.addWidget(self.label_box)
        self.reason = QLabel()
        self.reason.setTextFormat(Qt.TextFormat.RichText)
        self.reason.setWordWrap(True)
        self.reason.setAccessibleName("Why it asks")
        self.reason.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.reason)
        self.details = QLabel()
        self.details.setWordWrap(True)
        self.details.setTextFormat(Qt.TextFormat.PlainText)
        self.details.setAccessibleName("What else to know")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.details)
        self.preview = DiffView("Proposed change", max_lines=diff_lines)
        column.addWidget(self.preview)
        column.addStretch(1)  # packed at the top where it has more room than it needs

    def show_approval(self, approval: Approval) -> None:
        self.label_box.setAccessibleName("Command" if approval.runs_command else "Path")
        self.label_box.set_text(approval.label)
        self.label_box.setToolTip(approval.label)
        detail = approval.detail
        self.reason.setText(code_spans(str(detail.get("reason") or "No reason was recorded.")))
        lines = []
        sandbox = approval.sandbox
        if sandbox is not None:
            lines += sandbox.lines()
        if detail.get("outside"):
            lines.append("⚠ This reaches outside the workspace.")
        if approval.explanation.strip():
            lines.append(f"The agent said: “{approval.explanation.strip()}”")
        self.details.setText("\n".join(lines))
        self.details.setVisible(bool(lines))
        preview = str(detail.get("preview") or "")
        self.preview.set_diff(preview)
        self.preview.setVisible(bool(preview))


def choice_for_key(event: QKeyEvent) -> Choice | None:
    """The answer a key press asks for: 1–4 (main row or keypad) with no other modifier."""
    plain = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier == (
        Qt.KeyboardModifier.NoModifier
    )
    return KEYS.get(event.text()) if plain else None


class InlineApproval(QFrame):
    """The oldest approval of one session (``show_session``), answerable by keys 1–4.

    Args:
        presenter: the queue of pending approvals and the one way to answer them.
        tasks: where answers run.
    """

    def __init__(
        self, presenter: ApprovalsPresenter, tasks: TaskGroup, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.presenter = presenter
        self.tasks = tasks
        self.session_id: str | None = None
        self.approval: Approval | None = None
        self._busy = False
        self.setObjectName("inlineApproval")
        self.setAccessibleName("Approval waiting in this session")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            f"#inlineApproval {{ border: 2px solid {css(Role.WARNING)}; border-radius: 6px; }}"
        )
        column = QVBoxLayout(self)
        column.setContentsMargins(10, 8, 10, 8)
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        column.addWidget(self.title)
        self.content = ApprovalContent()
        column.addWidget(self.content)
        row = QHBoxLayout()
        self.buttons: dict[Choice, QPushButton] = {}
        for label in CHOICES:
            button = QPushButton(f"{label.key} {label.short}")
            button.setAccessibleName(label.name)
            button.setToolTip(f"{label.tip} (key {label.key} while the message box is empty)")
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, c=label.choice: self.choose(c))
            if label.choice is Choice.DENY:
                row.addStretch(1)
            row.addWidget(button)
            self.buttons[label.choice] = button
        column.addLayout(row)
        # The loud choice on a line of its own, as in the dialog (and so the row fits a narrow
        # window).
        self.outside = QPushButton(OUTSIDE.text)
        self.outside.setToolTip(OUTSIDE.tip)
        self.outside.setAutoDefault(False)
        self.outside.clicked.connect(lambda: self.choose(Choice.ONCE_UNSANDBOXED))
        outside_row = QHBoxLayout()
        outside_row.addStretch(1)
        outside_row.addWidget(self.outside)
        column.addLayout(outside_row)
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.hide()  # until there is something to say
        column.addWidget(self.notice)
        presenter.changed.connect(self._on_presenter_changed)
        self.hide()

    # --- what it shows -------------------------------------------------------------------------

    def show_session(self, session_id: str | None) -> None:
        """Follow the open session: its oldest pending approval, or nothing."""
        self.session_id = session_id
        self.notice.clear()
        self.notice.hide()
        self._refresh()

    def _refresh(self) -> None:
        waiting = self.presenter.first_of_session(self.session_id) if self.session_id else None
        if waiting is not None and self.approval is not None and waiting.id == self.approval.id:
            return  # the same one: never redrawn under the person's cursor
        self.approval = waiting
        self.setVisible(waiting is not None)
        if waiting is None:
            return
        others = sum(1 for a in self.presenter.approvals() if a.session_id == self.session_id)
        more = f" · {others - 1} more after this one" if others > 1 else ""
        self.title.setText(
            f"<b>The agent asks: {tool_text(waiting.tool)}</b>"
            f"<span style='color: {css(Role.QUIET_TEXT)}'>{more} · keys 1–4 answer</span>"
        )
        self.content.show_approval(waiting)
        self.outside.setVisible(waiting.offers_outside)
        self._set_busy(False)

    @Slot()
    def _on_presenter_changed(self) -> None:
        if self.approval is not None and not self.presenter.is_pending(self.approval.id):
            self.approval = None
        self._refresh()

    # --- answering -----------------------------------------------------------------------------

    def choose(self, choice: Choice) -> bool:
        """Answer the shown approval; False when there is none (or an answer is under way)."""
        approval = self.approval
        if approval is None or self._busy or not self.isVisible():
            return False
        if choice is Choice.ONCE_UNSANDBOXED and not approval.offers_outside:
            return False
        self._set_busy(True)  # before the task: no second answer from a quick key
        self.tasks.spawn(self._answer(approval, choice), f"inline-approval-{choice.value}")
        return True

    async def _answer(self, approval: Approval, choice: Choice) -> None:
        try:
            answered = await self.presenter.answer(approval, choice, parent=self.window())
        finally:
            if alive(self):
                self._set_busy(False)
        if alive(self) and answered.outcome is not Outcome.CANCELLED:
            self.notice.setText(answered.notice)
            self.notice.setVisible(bool(answered.notice))

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        for button in (*self.buttons.values(), self.outside):
            button.setEnabled(not busy)

    def watch_keys(self, *widgets: QWidget) -> None:
        """Let 1–4 answer from these widgets (the composer, only while it is empty)."""
        for widget in widgets:
            widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.KeyPress or not isinstance(event, QKeyEvent):
            return False
        choice = choice_for_key(event)
        if choice is None or self.approval is None or not self.isVisible():
            return False
        if isinstance(watched, QPlainTextEdit) and watched.toPlainText():
            return False  # the person is writing: a digit is text
        return self.choose(choice)
