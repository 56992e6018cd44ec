"""The permission modes as the window names, offers and colours them: one place for the New
session dialog, the composer and Settings → General.

``unrestricted`` (yolo without the sandbox) is offered only once the person turned it on in
Settings → General, and wherever a mode is shown it is shown in the warning colour. A session
already in it stays shown in it (so the picker says the truth) even after the setting is off;
the engine then runs it as yolo, in the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QComboBox

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.theme import Role, css

UNRESTRICTED = PermissionMode.UNRESTRICTED

LABELS = {
    PermissionMode.ASK: "Ask: every change and command asks first",
    PermissionMode.AUTO: "Auto: works in the sandbox; asks before leaving it",
    PermissionMode.YOLO: "Yolo: no questions, still in the sandbox",
    UNRESTRICTED: "⚠ Unrestricted: no questions and no sandbox",
}
SHORT = {
    PermissionMode.ASK: "Ask",
    PermissionMode.AUTO: "Auto",
    PermissionMode.YOLO: "Yolo",
    UNRESTRICTED: "⚠ Unrestricted",
}
TIP = (
    "Ask: every change and command asks first · Auto: commands run in the sandbox, asking "
    "before a write outside, the network or a protected path · Yolo: no questions, in the "
    "sandbox · Unrestricted (when turned on in Settings → General): no questions, no sandbox"
)
UNRESTRICTED_WARNING = (
    "Unrestricted mode runs the agent's commands without the sandbox and without asking: they "
    "can read your keys, change any of your files and use the network. A prompt injection in a "
    "file the agent reads gets the same power."
)


def offered(unrestricted: bool, current: PermissionMode | None = None) -> list[PermissionMode]:
    """The modes a picker lists: ``unrestricted`` only once turned on, or when it is already
    the mode shown (``current``)."""
    return [m for m in PermissionMode if m is not UNRESTRICTED or unrestricted or m is current]


def warning_style(mode: PermissionMode | None, selector: str = "") -> str:
    """A style sheet painting the text in the warning colour for ``unrestricted`` ('' else)."""
    if mode is not UNRESTRICTED:
        return ""
    rule = f"color: {css(Role.WARNING)};"
    return f"{selector} {{ {rule} }}" if selector else rule


def fill(
    combo: QComboBox, modes: Sequence[PermissionMode], labels: Mapping[PermissionMode, str]
) -> None:
    """Make ``combo`` list ``modes`` (their values as item data), unrestricted in the warning
    colour; the current mode is kept when still listed."""
    current = combo.currentData()
    combo.blockSignals(True)
    combo.clear()
    for mode in modes:
        combo.addItem(labels[mode], mode.value)
        if mode is UNRESTRICTED:
            color = QColor(css(Role.WARNING))
            combo.setItemData(combo.count() - 1, color, Qt.ItemDataRole.ForegroundRole)
    combo.setCurrentIndex(max(combo.findData(current), 0))
    combo.blockSignals(False)
    colour(combo)


def colour(combo: QComboBox) -> None:
    """Paint a picker's shown mode: the warning colour while it shows ``unrestricted``."""
    data = combo.currentData()
    shown = PermissionMode(data) if data in _VALUES else None
    combo.setStyleSheet(warning_style(shown, "QComboBox"))


_VALUES = frozenset(mode.value for mode in PermissionMode)
