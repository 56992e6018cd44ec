"""A window with the whole of a long text: a command's full output, or an answer too long for
the transcript ("Show full output…", "Show the whole answer…").

Qt lays a ``QPlainTextEdit`` out as its text is set: 2 MB given at once keeps the Qt thread
busy for most of a second, and the whole window with it. This window shows the first piece at
once and adds the rest a piece a frame (``PIECE_CHARS``, cut at line breaks), so the transcript
behind it keeps painting; the summary says "loading…" until all of it is in. Copy copies the
whole text, loaded or not.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Slot
from PySide6.QtGui import QGuiApplication, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk.gui.widgets import monospace

PIECE_CHARS = 64 * 1024  # ~10-20 ms of layout a frame on the development machine


class FullTextWindow(QDialog):
    """A non-modal window showing ``text`` whole, filled in between frames.

    Args:
        title: The window's title (and the text area's accessible name).
        summary: One line above the text.
        text: The text.
        wrap: Wrap long lines (prose); off for command output, where columns matter.
    """

    def __init__(
        self, title: str, summary: str, text: str, *, wrap: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setModal(False)
        self.resize(900, 600)
        self.whole = text
        self._summary_text = summary
        self._at = 0
        layout = QVBoxLayout(self)
        self.summary = QLabel(summary)
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setFont(monospace())
        self.text.setAccessibleName(title)
        self.text.setLineWrapMode(
            QPlainTextEdit.LineWrapMode.WidgetWidth if wrap else QPlainTextEdit.LineWrapMode.NoWrap
        )
        self.text.setUndoRedoEnabled(False)  # read-only: no history of the pieces to keep
        layout.addWidget(self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("&Copy all")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        self.text.setFocus()  # the keys scroll the text, not press Close
        self._pieces = QTimer(self)
        self._pieces.setInterval(0)
        self._pieces.timeout.connect(self._on_pieces_timeout)
        self._add_piece()
        self.text.moveCursor(QTextCursor.MoveOperation.Start)  # it is read from the top
        if not self.complete:
            self.summary.setText(f"{summary} · loading…")
            self._pieces.start()

    @property
    def complete(self) -> bool:
        """True once the whole text is in the text area."""
        return self._at >= len(self.whole)

    def _add_piece(self) -> None:
        end = min(self._at + PIECE_CHARS, len(self.whole))
        if end < len(self.whole):
            line_end = self.whole.rfind("\n", self._at, end)
            if line_end > self._at:
                end = line_end + 1  # whole lines: a line is laid out once
        cursor = QTextCursor(self.text.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(self.whole[self._at : end])
        self._at = end

    @Slot()
    def _on_pieces_timeout(self) -> None:
        self._add_piece()
        if self.complete:
            self._pieces.stop()
            self.summary.setText(self._summary_text)

    @Slot()
    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.whole)
        self.copy_button.setText("Copied")
