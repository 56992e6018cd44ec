"""Light and dark appearance: follow the system, or force a Fusion palette.

``apply_appearance`` may be called any number of times. "light" and "dark" switch to the Fusion
style with a palette of its own; "system" puts back the style and palette the platform gave the
application, and uses the dark palette only when the system asks for dark and the platform's own
palette is light (some Linux setups report a dark scheme without painting it). While "system" is
chosen, a change of the system's color scheme is followed live.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

APPEARANCES = ("system", "light", "dark")

_NATIVE_STYLE = "_fxdesk_native_style"  # application properties: what to go back to
_APPEARANCE = "_fxdesk_appearance"
_WATCHING = "_fxdesk_watching_scheme"

_applying = False  # the scheme changes apply_appearance itself makes are not followed

_Role = QPalette.ColorRole
_Group = QPalette.ColorGroup

_DARK = {
    _Role.Window: "#2b2b2b",
    _Role.WindowText: "#e6e6e6",
    _Role.Base: "#1e1e1e",
    _Role.AlternateBase: "#262626",
    _Role.ToolTipBase: "#353535",
    _Role.ToolTipText: "#e6e6e6",
    _Role.PlaceholderText: "#8c8c8c",
    _Role.Text: "#e6e6e6",
    _Role.Button: "#353535",
    _Role.ButtonText: "#e6e6e6",
    _Role.BrightText: "#ff6b6b",
    _Role.Light: "#474747",
    _Role.Midlight: "#3c3c3c",
    _Role.Mid: "#2a2a2a",
    _Role.Dark: "#1a1a1a",
    _Role.Shadow: "#0d0d0d",
    _Role.Highlight: "#3d6fb6",
    _Role.HighlightedText: "#ffffff",
    _Role.Link: "#6ea8ff",
    _Role.LinkVisited: "#b18cff",
    _Role.Accent: "#3d6fb6",
}
_DARK_DISABLED = {
    _Role.WindowText: "#7c7c7c",
    _Role.Text: "#7c7c7c",
    _Role.ButtonText: "#7c7c7c",
    _Role.Highlight: "#424242",
    _Role.HighlightedText: "#9a9a9a",
    _Role.PlaceholderText: "#5f5f5f",
}


def dark_palette() -> QPalette:
    """fxdesk's dark palette: charcoal windows, near-black fields, light text, a calm blue."""
    palette = QPalette()
    for role, color in _DARK.items():
        palette.setColor(role, QColor(color))
    for role, color in _DARK_DISABLED.items():
        palette.setColor(_Group.Disabled, role, QColor(color))
    return palette


def current_appearance(app: QApplication) -> str:
    """The appearance last applied to ``app`` ("system" before any)."""
    value = app.property(_APPEARANCE)
    return value if value in APPEARANCES else "system"


def _repolish(app: QApplication) -> None:
    """Widgets with their own style sheet keep the palette they were polished with; set their
    sheets again so they take the new one."""
    for widget in app.allWidgets():
        sheet = widget.styleSheet()
        if sheet:
            widget.setStyleSheet("")
            widget.setStyleSheet(sheet)


def apply_appearance(app: QApplication, appearance: str) -> None:
    """Give ``app`` the "system", "light" or "dark" look (anything else counts as "system").

    Args:
        app: the running application.
        appearance: "system" follows the system color scheme; "light" and "dark" force one.
    """
    global _applying
    if appearance not in APPEARANCES:
        appearance = "system"
    _applying = True
    try:
        _apply(app, appearance)
        _repolish(app)
    finally:
        _applying = False


def _apply(app: QApplication, appearance: str) -> None:
    if app.property(_NATIVE_STYLE) is None:
        app.setProperty(_NATIVE_STYLE, app.style().name())
    app.setProperty(_APPEARANCE, appearance)
    _watch_scheme(app)
    hints = app.styleHints()
    if appearance == "system":
        hints.unsetColorScheme()
        _set_style(app, str(app.property(_NATIVE_STYLE)))
        app.setPalette(QPalette())  # the platform's palette again
        window = app.palette().color(_Role.Window)
        if hints.colorScheme() == Qt.ColorScheme.Dark and window.lightness() > 128:
            _set_style(app, "fusion")
            app.setPalette(dark_palette())
        return
    dark = appearance == "dark"
    hints.setColorScheme(Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light)
    _set_style(app, "fusion")
    app.setPalette(dark_palette() if dark else app.style().standardPalette())


def _set_style(app: QApplication, name: str) -> None:
    if app.style().name().lower() != name.lower():
        app.setStyle(name)


def _watch_scheme(app: QApplication) -> None:
    if app.property(_WATCHING):
        return
    app.setProperty(_WATCHING, True)

    def on_scheme_changed(_scheme: Qt.ColorScheme) -> None:
        if current_appearance(app) == "system" and not _applying:
            apply_appearance(app, "system")

    app.styleHints().colorSchemeChanged.connect(on_scheme_changed)
