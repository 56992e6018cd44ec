"""Shows ``fxdesk.messages`` messages: the status bar, and a details dialog for bugs.

``MessagePresenter`` attaches to the message hub. The hub may call it from any thread; it re-emits
through a Qt signal, which Qt queues onto the GUI thread. Expected failures appear as one sentence
in the status bar (a message with the same key replaces the earlier one); unexpected ones also open
a non-modal details dialog with "Copy debug info".
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStatusBar,
    QVBoxLayout,
    QWidget,
)

from fxdesk import messages
from fxdesk.gui.widgets import monospace

_TIMEOUT_MS = {messages.Level.INFO: 6000, messages.Level.WARNING: 15000, messages.Level.ERROR: 0}


class ErrorDetailsDialog(QDialog):
    """A non-modal window with the debug details of an unexpected error."""

    def __init__(self, message: messages.Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Unexpected error")
        self.setModal(False)
        self.resize(720, 420)
        layout = QVBoxLayout(self)
        summary = QLabel(message.text)
        summary.setWordWrap(True)
        layout.addWidget(summary)
        self.details = QPlainTextEdit(message.details or "")
        self.details.setReadOnly(True)
        self.details.setFont(monospace())
        self.details.setAccessibleName("Debug information")
        layout.addWidget(self.details)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("&Copy debug info")
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self._on_copy_clicked)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)

    @Slot()
    def _on_copy_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.details.toPlainText())
        self.copy_button.setText("Copied")


class MessagePresenter(QObject):
    """Puts messages in the status bar; opens details for bugs.

    Signals:
        posted(object): a ``messages.Message``, re-emitted on the GUI thread.
    """

    posted = Signal(object)

    def __init__(self, status_bar: QStatusBar, window: QWidget) -> None:
        super().__init__(window)
        self._status_bar = status_bar
        self._window = window
        self._current_key: str | None = None
        self.shown: list[messages.Message] = []
        self.dialogs: list[ErrorDetailsDialog] = []
        self._detach: Callable[[], None] | None = None
        self.posted.connect(self._on_hub_posted)

    def attach(self) -> None:
        self._detach = messages.hub.attach(self.posted.emit)

    def detach(self) -> None:
        if self._detach is not None:
            self._detach()
            self._detach = None

    @Slot(object)
    def _on_hub_posted(self, message: messages.Message) -> None:
        if message.withdrawn:
            if message.key is not None and message.key == self._current_key:
                self._status_bar.clearMessage()
                self._current_key = None
            return
        self.shown.append(message)
        prefix = {messages.Level.WARNING: "⚠ ", messages.Level.ERROR: "✖ "}.get(message.level, "")
        self._status_bar.showMessage(prefix + message.text, _TIMEOUT_MS[message.level])
        self._current_key = message.key
        if message.details:
            dialog = ErrorDetailsDialog(message, self._window)
            dialog.finished.connect(lambda _code, d=dialog: self._forget_dialog(d))
            self.dialogs.append(dialog)
            dialog.show()

    def _forget_dialog(self, dialog: ErrorDetailsDialog) -> None:
        if dialog in self.dialogs:
            self.dialogs.remove(dialog)
        dialog.deleteLater()
