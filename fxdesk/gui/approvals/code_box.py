"""Read-only text boxes of the approval dialog: ``CodeBox`` for a command or path (monospace,
wrapping anywhere, as tall as its text up to a limit) and ``DiffView`` for a proposed change."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt, Slot
from PySide6.QtGui import QResizeEvent, QTextCursor, QTextOption
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from fxdesk.gui.diff import color_code, color_diff
from fxdesk.gui.theme import is_dark
from fxdesk.gui.widgets import monospace


class CodeBox(QPlainTextEdit):
    """Read-only monospace text that wraps anywhere (so nothing is cut off or elided) and is as
    tall as its text, up to ``max_lines``; longer text scrolls."""

    def __init__(self, name: str, max_lines: int = 8, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_lines = max_lines
        self.setAccessibleName(name)
        self.setReadOnly(True)
        self.setTabChangesFocus(True)
        self.setFont(monospace())
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
    """A unified diff, coloured by ``diff.color_diff`` (the transcript's tool cards use it too);
    the colours follow the palette (light or dark) and are chosen again when it changes."""

    def __init__(self, name: str, max_lines: int = 16, parent: QWidget | None = None) -> None:
        super().__init__(name, max_lines, parent)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)  # code keeps its shape
        self._diff = ""
        self._name = ""

    def set_diff(self, text: str, name: str = "") -> None:
        """Show the diff ``text``; with the file's ``name``, its code coloured too."""
        self._diff, self._name = text, name
        self._render()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._diff:
            self._render()

    def _render(self) -> None:
        # Lines, not the text: a final newline would add an empty last line.
        self.setPlainText("\n".join(self._diff.splitlines()))
        color_diff(self.document(), dark=is_dark(self.palette()))
        if self._name:
            color_code(self.document(), self._name, dark=is_dark(self.palette()))
        self.moveCursor(QTextCursor.MoveOperation.Start)
        self._fit()
