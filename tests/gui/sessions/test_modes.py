"""The mode pickers: ``unrestricted`` is listed only once turned on in Settings → General (or
when it is the session's mode already), and shown in the warning colour wherever it is shown:
the composer, the New session dialog and Settings → General (with a real ProfileService)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QComboBox
from pytestqt.qtbot import QtBot

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.sessions.composer import Composer
from fxdesk.gui.sessions.new_session import NewSessionDialog
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.gui.theme import Role, css
from tests.gui.settings.test_settings import (  # noqa: F401 - fixtures used by name
    eventually,
    keep_running,
    no_bugs,
    profile_service,
    shown,
)

UNRESTRICTED = PermissionMode.UNRESTRICTED
WARNING = css(Role.WARNING)


def listed(combo: QComboBox) -> list[str]:
    return [str(combo.itemData(i)) for i in range(combo.count())]


def warned(combo: QComboBox, mode: PermissionMode) -> bool:
    """The item of ``mode`` is painted in the warning colour (and no other is)."""
    colours = {
        str(combo.itemData(i)): combo.itemData(i, Qt.ItemDataRole.ForegroundRole)
        for i in range(combo.count())
    }
    others = [c for value, c in colours.items() if value != mode.value and c is not None]
    return colours.get(mode.value) == QColor(WARNING) and not others


def test_the_composer_offers_unrestricted_only_once_turned_on(qtbot: QtBot) -> None:
    composer = Composer()
    qtbot.addWidget(composer)
    assert listed(composer.mode) == ["ask", "auto", "yolo"]
    composer.set_mode(PermissionMode.YOLO)
    assert composer.mode.styleSheet() == ""
    composer.set_unrestricted(True)
    assert listed(composer.mode) == ["ask", "auto", "yolo", "unrestricted"]
    assert warned(composer.mode, UNRESTRICTED)
    assert composer.mode.currentData() == "yolo"  # offering it changes nothing chosen
    chosen: list[str] = []
    composer.mode_chosen.connect(chosen.append)
    composer.mode.setCurrentIndex(3)
    composer.mode.activated.emit(3)
    assert chosen == ["unrestricted"]
    assert WARNING in composer.mode.styleSheet()  # the mode shown is in the warning colour
    composer.set_unrestricted(False)  # turned off: the session is still shown as it is
    assert listed(composer.mode) == ["ask", "auto", "yolo", "unrestricted"]
    composer.set_mode(PermissionMode.AUTO)
    assert listed(composer.mode) == ["ask", "auto", "yolo"]
    assert composer.mode.styleSheet() == ""
    composer.set_mode(UNRESTRICTED)  # a session still in it
    assert composer.mode.currentData() == "unrestricted" and WARNING in composer.mode.styleSheet()


def test_the_new_session_dialog_offers_unrestricted_only_once_turned_on(qtbot: QtBot) -> None:
    closed = NewSessionDialog()
    qtbot.addWidget(closed)
    assert listed(closed.mode_combo) == ["ask", "auto", "yolo"]
    opened = NewSessionDialog(unrestricted=True, mode=PermissionMode.YOLO)
    qtbot.addWidget(opened)
    assert listed(opened.mode_combo) == ["ask", "auto", "yolo", "unrestricted"]
    assert warned(opened.mode_combo, UNRESTRICTED)
    assert opened.mode_combo.styleSheet() == ""
    opened.mode_combo.setCurrentIndex(opened.mode_combo.findData("unrestricted"))
    assert WARNING in opened.mode_combo.styleSheet()
    assert opened.values()[2] is UNRESTRICTED


async def test_settings_turns_unrestricted_on_with_a_warning_and_off_again(
    tmp_path: Path,
) -> None:
    async with profile_service(tmp_path) as service:
        dialog = SettingsDialog(service, tmp_path / "data")
        changed: list[bool] = []
        dialog.modes_changed.connect(lambda: changed.append(True))
        with shown(dialog):
            await dialog.load()
            dialog.tabs.setCurrentIndex(dialog.tabs.indexOf(dialog.mode_group.parentWidget()))
            group = dialog.mode_group
            radio = group.buttons[UNRESTRICTED]
            assert not radio.isVisible()  # off by default: not offered
            assert WARNING in radio.styleSheet() and WARNING in group.warning.styleSheet()
            assert "without the sandbox" in group.warning.text()

            group.unrestricted_check.click()
            await eventually(service.unrestricted_enabled)
            assert radio.isVisible() and changed == [True]
            radio.click()
            await eventually(lambda: _default_is(service, UNRESTRICTED))

            group.unrestricted_check.click()  # off again: the default falls back to yolo
            await eventually(lambda: _disabled(service))
            await eventually(lambda: _default_is(service, PermissionMode.YOLO))
            assert not radio.isVisible()
            assert group.buttons[PermissionMode.YOLO].isChecked()


async def _default_is(service: object, mode: PermissionMode) -> bool:
    return await service.default_permission_mode() is mode  # type: ignore[attr-defined, no-any-return]


async def _disabled(service: object) -> bool:
    return not await service.unrestricted_enabled()  # type: ignore[attr-defined]


def test_alt_w_takes_the_keyboard_to_the_workspace_folder(qtbot: QtBot) -> None:
    """The folder's label is a mnemonic (it showed a literal "&" when its row was a layout)."""
    dialog = NewSessionDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=5000)
    dialog.name_edit.setFocus()
    qtbot.waitUntil(dialog.name_edit.hasFocus, timeout=5000)
    QTest.keyClick(dialog.name_edit, Qt.Key.Key_W, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(dialog.folder_edit.hasFocus, timeout=5000)
