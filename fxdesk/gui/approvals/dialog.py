"""The approval window: one non-modal dialog that queues every pending approval.

It shows exactly what would run or change and where, why fxdesk asks, and what the agent said;
the person answers with a button or the keys 1–4. No button is a default button, so a stray Enter
or Return answers nothing. Esc hides the window without answering: the approvals stay pending and
the Approvals dock still lists them.

The dialog never talks to the engine itself: ``answer`` (given by the main window) resolves the
approval, and the main window calls ``remove`` when one is answered elsewhere (the dock, the CLI)
or cancelled.
"""

from __future__ import annotations

import itertools

from PySide6.QtCore import QEvent, QKeyCombination, QSize, Qt, QTimer, Slot
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QKeySequence,
    QPalette,
    QResizeEvent,
    QShortcut,
    QShowEvent,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextOption,
)
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.approvals import Approval, ApprovalNotPending, Choice
from fxdesk.domain.permissions import PermissionRule
from fxdesk.gui.approvals.dock import (
    CHOICE_TIPS,
    NOT_PENDING,
    Answer,
    Describe,
    choose_rules,
)
from fxdesk.gui.settings.profile_form import FAIL_COLOR, WidgetTasks, alive, hint_label
from fxdesk.gui.settings.rules_page import bold_label, tool_text
from fxdesk.store import StoreError

WARN_COLOR = "#c77c02"  # readable on light and dark windows

CHOICE_BUTTONS = (
    (Choice.ONCE, "&1 Allow once", "Allow once", "1"),
    (Choice.SESSION, "&2 Allow for this session", "Allow for this session", "2"),
    (Choice.ALWAYS, "&3 Always allow…", "Always allow", "3"),
    (Choice.DENY, "&4 Deny", "Deny", "4"),
)


def fixed_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


class CodeBox(QPlainTextEdit):
    """Read-only monospace text that wraps anywhere (so nothing is cut off or elided) and is as
    tall as its text, up to ``max_lines``; longer text scrolls."""

    def __init__(self, name: str, max_lines: int = 8, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_lines = max_lines
        self.setAccessibleName(name)
        self.setReadOnly(True)
        self.setTabChangesFocus(True)
        self.setFont(fixed_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self._fitted = -1
        self.document().documentLayout().documentSizeChanged.connect(self._fit)

    def set_text(self, text: str) -> None:
        self.setPlainText(text)
        self.moveCursor(QTextCursor.MoveOperation.Start)
        self._fit()

    def sizeHint(self) -> QSize:
        return QSize(520, self._height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _height(self) -> int:
        # QPlainTextEdit's document height is counted in lines (wrapped lines included).
        lines = max(1, min(self.max_lines, int(self.document().size().height())))
        margins = self.contentsMargins()
        # The document margin above and below, and the one pixel QPlainTextEdit keeps spare
        # before it decides the last line does not fit and shows a scroll bar.
        padding = int(2 * self.document().documentMargin()) + 1 + margins.top() + margins.bottom()
        return lines * self.fontMetrics().lineSpacing() + padding

    @Slot()
    def _fit(self) -> None:
        height = self._height()
        if height != self._fitted:  # only the height changes: the wrapping stays as it is
            self._fitted = height
            self.setFixedHeight(height)


class DiffView(CodeBox):
    """A unified diff: added lines green, removed lines red, hunk headers muted; the colours
    follow the palette (light or dark) and are chosen again when it changes."""

    def __init__(self, name: str, max_lines: int = 16, parent: QWidget | None = None) -> None:
        super().__init__(name, max_lines, parent)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)  # code keeps its shape
        self._diff = ""

    def set_diff(self, text: str) -> None:
        self._diff = text
        self._render()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._diff:
            self._render()

    def _render(self) -> None:
        dark = self.palette().color(QPalette.ColorRole.Base).lightness() < 128
        colors = {  # (text, background) of added, removed and hunk-header lines
            "+": ("#7ee787", "#1b3a24") if dark else ("#116329", "#dafbe1"),
            "-": ("#ffa198", "#43201f") if dark else ("#82071e", "#ffebe9"),
            "@": ("#a5b4fc", "") if dark else ("#5b4fc4", ""),
        }
        self.clear()
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        for number, line in enumerate(self._diff.splitlines()):
            kind = line[:1] if line[:1] in "+-@" and not line.startswith(("+++", "---")) else ""
            block = QTextBlockFormat()
            char = QTextCharFormat()
            if line.startswith(("+++", "---")):
                char.setFontWeight(QFont.Weight.Bold)
            elif kind:
                text, background = colors[kind]
                char.setForeground(QColor(text))
                if background:
                    block.setBackground(QColor(background))
            if number:
                cursor.insertBlock(block, char)
            else:
                cursor.setBlockFormat(block)
                cursor.setCharFormat(char)
            cursor.insertText(line, char)
        cursor.endEditBlock()
        self.moveCursor(QTextCursor.MoveOperation.Start)
        self._fit()


class ApprovalDialog(QDialog):
    """Queues pending approvals and asks about them one at a time.

    Args:
        answer: resolves an approval with (approval, choice, deny reason, edited rules or None);
            it raises ``ApprovalNotPending`` when the approval was answered elsewhere.
        describe: (session name, workspace path) of an approval.
        parent: the main window (the dialog stays non-modal).
    """

    def __init__(self, answer: Answer, describe: Describe, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._answer = answer
        self._describe = describe
        self.tasks = WidgetTasks(self)
        self._queue: list[Approval] = []
        self._index = 0
        self._busy = False
        self.setWindowTitle("fxdesk: approval needed")
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
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.notice.setAccessibleName("Notice")
        self.notice.setStyleSheet(f"color: {FAIL_COLOR};")
        self.notice.hide()
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
        layout.addLayout(self._build_buttons())
        self._set_tab_order()
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
        self.outside_label = QLabel("⚠ This reaches outside the workspace.")
        self.outside_label.setStyleSheet(f"color: {WARN_COLOR};")
        self.outside_label.setAccessibleName("Outside the workspace")
        column.addWidget(self.outside_label)
        column.addSpacing(4)
        column.addWidget(bold_label("Why it asks"))
        self.reason_label = QLabel()
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
        for choice, text, name, key in CHOICE_BUTTONS:
            button = QPushButton(text)
            button.setAccessibleName(name)
            button.setToolTip(f"{CHOICE_TIPS[choice]} (key {key})")
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

    def _set_tab_order(self) -> None:
        chain: list[QWidget] = [
            self.label_box,
            self.uncovered_box,
            self.preview_box,
            self.reason_edit,
            *self.buttons.values(),
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
        """How many approvals are queued."""
        return len(self._queue)

    @property
    def current(self) -> Approval | None:
        """The approval shown now."""
        return self._queue[self._index] if self._queue else None

    def approvals(self) -> list[Approval]:
        return list(self._queue)

    def add(self, approval: Approval) -> bool:
        """Queue ``approval`` (after the others); False when its id is queued already."""
        if any(a.id == approval.id for a in self._queue):
            return False
        if not self._queue:
            self._show_notice("")
        self._queue.append(approval)
        if len(self._queue) == 1:
            self._index = 0
            self._show_current()
        else:
            self._update_counter()
        return True

    def remove(self, approval_id: str) -> bool:
        """Drop an approval answered or cancelled elsewhere; the next one shows, and the window
        hides when none is left. False when it was not queued."""
        position = next((i for i, a in enumerate(self._queue) if a.id == approval_id), None)
        if position is None:
            return False
        self._drop(position)
        if not self._queue:
            self.hide()
        return True

    def present(self, approval_id: str | None = None, *, activate: bool = True) -> None:
        """Show the window (at ``approval_id`` if it is queued), raised, and active unless
        ``activate`` is False (a new approval must not take the keyboard from the composer)."""
        position = next((i for i, a in enumerate(self._queue) if a.id == approval_id), None)
        if position is not None and position != self._index:
            self._index = position
            self._show_current()
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating, not activate)
        self.show()
        self.raise_()
        if activate:
            self.activateWindow()
            self.label_box.setFocus()

    def show_index(self, index: int) -> None:
        """Show the queued approval at ``index`` (0-based)."""
        if 0 <= index < len(self._queue) and index != self._index:
            self._index = index
            self._show_current()

    def _drop(self, position: int) -> None:
        was_current = position == self._index
        del self._queue[position]
        if position < self._index:
            self._index -= 1
        self._index = min(self._index, max(0, len(self._queue) - 1))
        if was_current:
            self._show_current()
        else:
            self._update_counter()

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
            rules: list[PermissionRule] | None = None
            if choice == Choice.ALWAYS:
                _, workspace = self._describe(approval)
                rules = await choose_rules(self, approval, workspace)
                if rules is None or not alive(self):
                    return  # cancelled: back to the approval
                if all(a.id != approval.id for a in self._queue):
                    self._show_notice(NOT_PENDING)  # answered elsewhere meanwhile
                    return
            reason = self.reason_edit.text().strip() if choice == Choice.DENY else ""
            try:
                await self._answer(approval, choice, reason, rules)
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
                if not self._queue:
                    self.hide()
        finally:
            if alive(self):
                self._set_busy(False)

    def _forget(self, approval_id: str) -> None:
        position = next((i for i, a in enumerate(self._queue) if a.id == approval_id), None)
        if position is not None:
            self._drop(position)

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()

    def _update_buttons(self) -> None:
        enabled = self.current is not None and not self._busy
        for button in self.buttons.values():
            button.setEnabled(enabled)
        self.reason_edit.setEnabled(self.current is not None)
        many = len(self._queue) > 1
        self.previous_button.setVisible(many)
        self.next_button.setVisible(many)
        self.previous_button.setEnabled(many and self._index > 0)
        self.next_button.setEnabled(many and self._index < len(self._queue) - 1)

    # --- showing -------------------------------------------------------------------------

    def _show_notice(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.setVisible(bool(text))

    def _update_counter(self) -> None:
        many = len(self._queue) > 1
        self.counter.setText(f"Approval {self._index + 1} of {len(self._queue)}" if many else "")
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
        session, workspace = self._describe(approval)
        where = f"Session “{session}”" + (f" · {workspace}" if workspace else "")
        self.where_label.setText(where)
        command = approval.tool == "run_command"
        self.label_box.setAccessibleName("Command" if command else "Path")
        self.label_box.set_text(approval.label)
        self.outside_label.setVisible(bool(detail.get("outside")))
        self.reason_label.setText(str(detail.get("reason") or "No reason was recorded."))
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
        self._set_busy(True)  # before the task starts: no second answer from a quick key
        self.tasks.spawn(self._choose(approval, choice), f"approval-{choice.value}")

    @Slot()
    def _on_previous_button_clicked(self) -> None:
        self.show_index(self._index - 1)

    @Slot()
    def _on_next_button_clicked(self) -> None:
        self.show_index(self._index + 1)
