"""Colours as named roles: every role has a light and a dark value, style sheets get only the
roles that need no second value, and no module of the window spells a colour of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

import fxdesk.gui
from fxdesk.gui.theme import Role, color, css, dark_palette, is_dark

GUI = Path(fxdesk.gui.__file__).parent
# "#rgb", "#rrggbb" or "#aarrggbb" in a string, a colour named to QColor or in a style sheet.
SPELLED = re.compile(
    r"""["'][^"'\n]*#(?:[0-9a-fA-F]{8}|[0-9a-fA-F]{6}|[0-9a-fA-F]{3})\b"""
    r"""|QColor\(\s*["']"""
    r"""|color:\s*[a-z]+\b"""
    r"""|GlobalColor\.(?!transparent)"""
)


def test_every_role_has_a_light_and_a_dark_colour(qapp: object) -> None:
    for role in Role:
        light, dark = color(role), color(role, dark=True)
        assert light.isValid() and dark.isValid(), role


def test_the_diff_and_the_transcript_colours_differ_in_the_dark(qapp: object) -> None:
    for role in (Role.DIFF_ADDED_BACKGROUND, Role.USER_MESSAGE_BACKGROUND, Role.CODE_BACKGROUND):
        assert color(role).lightness() > 128 > color(role, dark=True).lightness(), role


def test_style_sheets_get_only_roles_with_one_value() -> None:
    assert css(Role.FAILURE) == color(Role.FAILURE, dark=True).name()
    with pytest.raises(ValueError, match="DIFF_ADDED"):
        css(Role.DIFF_ADDED)


def test_is_dark_reads_the_palette(qapp: object) -> None:
    assert is_dark(dark_palette())
    light = QPalette()
    light.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.white)
    assert not is_dark(light)


def test_no_module_of_the_window_spells_a_colour_but_the_theme() -> None:
    spelled = [
        f"{path.relative_to(GUI)}:{number}: {line.strip()}"
        for path in sorted(GUI.rglob("*.py"))
        if path.name != "theme.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if SPELLED.search(line)
    ]
    assert spelled == []


def test_in_the_dark_theme_an_unchecked_radio_button_shows_its_circle(qtbot: object) -> None:
    """Fusion outlines indicators with the window colour darkened: on the dark window that is
    the field's own colour, and the radio buttons were nearly invisible."""
    from PySide6.QtWidgets import QApplication, QRadioButton, QStyle, QStyleOptionButton

    from fxdesk.gui.theme import apply_appearance

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_appearance(app, "dark")
    try:
        button = QRadioButton("Ask")
        qtbot.addWidget(button)  # type: ignore[attr-defined]
        button.resize(120, 30)
        button.show()
        option = QStyleOptionButton()
        option.initFrom(button)
        box = button.style().subElementRect(
            QStyle.SubElement.SE_RadioButtonIndicator, option, button
        )
        image = button.grab().toImage()
        window = button.palette().color(QPalette.ColorRole.Window).lightness()
        indicator = [
            image.pixelColor(x, y).lightness()
            for x in range(box.left(), box.right() + 1)
            for y in range(box.top(), box.bottom() + 1)
        ]
        # An edge that stands out from the window (Fusion's own: no lighter than the window).
        assert max(indicator) - window > 60
    finally:
        apply_appearance(app, "light")
