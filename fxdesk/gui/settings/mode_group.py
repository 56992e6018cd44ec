"""Settings → General: the permission mode of new sessions, and whether ``unrestricted`` mode
(no sandbox) is offered at all.

Signals:
    mode_chosen(object): the person picked a ``PermissionMode`` for new sessions.
    unrestricted_toggled(bool): the person turned unrestricted mode on or off.
"""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QButtonGroup, QCheckBox, QGroupBox, QLabel, QRadioButton, QVBoxLayout

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.sessions import modes
from fxdesk.gui.widgets import hint_label

MODES = list(PermissionMode)


class ModeGroup(QGroupBox):
    """The mode radios (unrestricted shown only while offered, in the warning colour) and the
    switch that offers it, with its warning. See the module docstring for signals."""

    mode_chosen = Signal(object)
    unrestricted_toggled = Signal(bool)

    def __init__(self) -> None:
        super().__init__("Permission mode of new sessions")
        box = QVBoxLayout(self)
        self._loading = False
        self.group = QButtonGroup(self)
        self.buttons: dict[PermissionMode, QRadioButton] = {}
        for index, mode in enumerate(MODES):
            radio = QRadioButton(modes.LABELS[mode])
            radio.setAccessibleName(modes.LABELS[mode].removeprefix("⚠ "))
            radio.setStyleSheet(modes.warning_style(mode, "QRadioButton"))
            self.group.addButton(radio, index)
            self.buttons[mode] = radio
            box.addWidget(radio)
        box.addWidget(
            hint_label(
                "The New session dialog starts with this mode; each session can differ.",
                wrap=True,
            )
        )
        self.unrestricted_check = QCheckBox(
            "Offer &unrestricted mode (commands without the sandbox)"
        )
        self.unrestricted_check.setAccessibleName("Offer unrestricted mode")
        box.addWidget(self.unrestricted_check)
        self.warning = QLabel(modes.UNRESTRICTED_WARNING)
        self.warning.setWordWrap(True)
        self.warning.setAccessibleName("Unrestricted mode warning")
        self.warning.setStyleSheet(modes.warning_style(modes.UNRESTRICTED))
        box.addWidget(self.warning)
        self._show_offer(False)
        self.group.idToggled.connect(self._on_group_toggled)
        self.unrestricted_check.toggled.connect(self._on_unrestricted_check_toggled)

    def set_values(self, mode: PermissionMode, unrestricted: bool) -> None:
        """Show the stored settings (emits nothing)."""
        self._loading = True
        try:
            self.unrestricted_check.setChecked(unrestricted)
            self._show_offer(unrestricted)
            self.buttons[mode].setChecked(True)
        finally:
            self._loading = False

    @property
    def mode(self) -> PermissionMode | None:
        checked = self.group.checkedId()
        return MODES[checked] if checked >= 0 else None

    def _show_offer(self, offered: bool) -> None:
        self.buttons[modes.UNRESTRICTED].setVisible(offered)

    @Slot(int, bool)
    def _on_group_toggled(self, index: int, checked: bool) -> None:
        if checked and not self._loading:
            self.mode_chosen.emit(MODES[index])

    @Slot(bool)
    def _on_unrestricted_check_toggled(self, checked: bool) -> None:
        if self._loading:
            return
        self._show_offer(checked)
        if not checked and self.mode is modes.UNRESTRICTED:
            self.buttons[PermissionMode.YOLO].setChecked(True)  # stored through mode_chosen
        self.unrestricted_toggled.emit(checked)
