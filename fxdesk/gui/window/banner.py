"""A dismissible banner across the top of the window (crash logs, interrupted work)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from fxdesk.gui.theme import Role, css


class Banner(QFrame):
    """One line of text with actions and a Dismiss button.

    Signals:
        dismissed(): the person closed it.
    """

    dismissed = Signal()

    def __init__(self, text: str, parent: QWidget | None = None, *, kind: str = "info") -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.setProperty("kind", kind)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Notice")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 6, 6)
        self.label = QLabel(text)
        self.label.setWordWrap(True)
        layout.addWidget(self.label, 1)
        self._actions = layout
        self.dismiss_button = QPushButton("Dismiss")
        self.dismiss_button.clicked.connect(self._on_dismiss_clicked)
        layout.addWidget(self.dismiss_button)
        self.setStyleSheet(
            # By class, not object name: callers name banners to find them again.
            ".Banner { background: palette(alternate-base); border: 1px solid palette(mid);"
            " border-radius: 4px; }"
            f".Banner[kind='warning'] {{ border-left: 4px solid {css(Role.BANNER_WARNING)}; }}"
            f".Banner[kind='info'] {{ border-left: 4px solid {css(Role.BANNER_INFO)}; }}"
        )

    def text(self) -> str:
        return self.label.text()

    def add_action(self, text: str, callback: Callable[[], None]) -> QPushButton:
        button = QPushButton(text)
        button.clicked.connect(lambda _checked=False: callback())
        self._actions.insertWidget(self._actions.count() - 1, button)
        return button

    def _on_dismiss_clicked(self) -> None:
        self.hide()
        self.dismissed.emit()
        self.deleteLater()
