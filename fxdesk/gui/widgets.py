"""Small widgets and helpers every feature of the window uses.

Labels (``hint_label``, ``bold_label``), the fixed-width font, combo-box and column helpers, and
``confirm``: a yes/no question asked window-modally without a nested event loop.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontDatabase, QPalette
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QTreeView,
    QTreeWidget,
    QWidget,
)

from fxdesk.gui.tasks import alive, run_dialog
from fxdesk.gui.theme import Role, css


def monospace() -> QFont:
    """The system's fixed-width font (commands, paths, code, diffs)."""
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def code_spans(text: str) -> str:
    """``text`` as rich text, its `code` spans (the engine's wording marks commands and paths
    so) in the fixed-width font instead of showing the backticks; everything else escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: not markup, show them
        parts = [text]
    spans = (
        f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part)
        for i, part in enumerate(parts)
    )
    return "".join(spans).replace("\n", "<br>")


def hint_label(text: str = "", *, wrap: bool = False) -> QLabel:
    """A smaller label in the muted text color of the current palette."""
    label = QLabel(text)
    label.setWordWrap(wrap)
    font = QFont(label.font())
    font.setPointSizeF(font.pointSizeF() * 0.92)
    label.setFont(font)
    label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    return label


def bold_label(text: str) -> QLabel:
    """A label in the bold variant of its font (a heading inside a form)."""
    label = QLabel(text)
    font = QFont(label.font())
    font.setBold(True)
    label.setFont(font)
    return label


def fit_columns(view: QTreeView | QTreeWidget, caps: Mapping[int, int]) -> None:
    """Size columns to their contents, but no wider than ``caps`` (column -> pixels), so one
    long value cannot push the stretching column out of sight."""
    for column, cap in caps.items():
        view.setColumnWidth(column, min(cap, max(view.sizeHintForColumn(column), 40) + 12))


def push_button(text: str, name: str, slot: Callable[[], None]) -> QPushButton:
    """A button beside a list: ``text`` (with its mnemonic), accessible ``name``, and never a
    default button (Enter in the list must not press it)."""
    button = QPushButton(text)
    button.setAccessibleName(name)
    button.setAutoDefault(False)
    button.clicked.connect(slot)
    return button


def select_data(combo: QComboBox, value: object) -> None:
    """Select the item of ``combo`` whose data is ``value`` (the first item if none is)."""
    combo.setCurrentIndex(max(0, combo.findData(value)))


async def confirm(parent: QWidget, title: str, text: str, action: str) -> bool:
    """Ask a yes/no question window-modally; True when ``action`` is chosen.

    Cancel is the default button, so Enter never confirms a destructive action.
    """
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    yes = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    try:
        await run_dialog(box)
        return box.clickedButton() is yes
    finally:
        if alive(box):
            box.deleteLater()


def problem_label(name: str) -> QLabel:
    """A hidden, wrapping label in the failure colour for what is wrong below a form or list;
    ``name`` is its accessible name."""
    label = QLabel()
    label.setWordWrap(True)
    label.setAccessibleName(name)
    label.setStyleSheet(f"color: {css(Role.FAILURE)};")
    label.hide()
    return label


def show_problem(label: QLabel, text: str) -> None:
    """Show ``text`` in a ``problem_label``; hide the label when there is nothing to say."""
    label.setText(text)
    label.setVisible(bool(text))


def show_outcome(label: QLabel, ok: bool | None, text: str) -> None:
    """Show ``text`` in ``label``: with ✓ in the success colour when ``ok``, with ✗ in the
    failure colour when not, plainly when ``ok`` is None."""
    role = Role.SUCCESS if ok else Role.FAILURE
    label.setStyleSheet("" if ok is None else f"color: {css(role)};")
    mark = "" if ok is None or not text else ("✓ " if ok else "✗ ")
    label.setText(mark + text)


def widen_dock(dock: QDockWidget, preferred: int, margin: int = 40) -> None:
    """Open ``dock`` up to ``preferred`` px wide, at most a quarter of the window (the
    transcript gets the room first) and within what the window's central area can spare (less
    ``margin``); Qt would open a side dock at its narrow size hint."""
    window = dock.parentWidget()
    central = window.centralWidget() if isinstance(window, QMainWindow) else None
    if not isinstance(window, QMainWindow) or central is None:
        return
    spare = window.width() - max(central.minimumSizeHint().width(), central.minimumWidth())
    width = min(preferred, window.width() // 4, spare - margin)
    if width > dock.width():
        window.resizeDocks([dock], [width], Qt.Orientation.Horizontal)
