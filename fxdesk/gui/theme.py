"""Light and dark appearance, and every colour of the window as a named role.

``color(Role.DIFF_ADDED, dark=...)`` is the one place a colour of fxdesk's own comes from (no
other module spells a colour); ``is_dark(palette)`` says which of a role's two values applies.
Roles used in style sheets have one value for both (a sheet does not follow a palette change);
``css`` refuses any other.

Appearance: follow the system, or force a Fusion palette.

``apply_appearance`` may be called any number of times. "light" and "dark" switch to the Fusion
style with a palette of its own; "system" puts back the style and palette the platform gave the
application, and uses the dark palette only when the system asks for dark and the platform's own
palette is light (some Linux setups report a dark scheme without painting it). While "system" is
chosen, a change of the system's color scheme is followed live.
"""

from __future__ import annotations

import enum

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleOption, QWidget

APPEARANCES = ("system", "light", "dark")

_NATIVE_STYLE = "_fxdesk_native_style"  # application properties: what to go back to
_APPEARANCE = "_fxdesk_appearance"
_WATCHING = "_fxdesk_watching_scheme"

_applying = False  # the scheme changes apply_appearance itself makes are not followed


class Role(enum.Enum):
    """A colour by what it means. Each has a light and a dark value (often the same)."""

    # Outcomes and notes in text (style sheets: one value, readable on either window).
    SUCCESS = enum.auto()  # ✓ test results, allow rules
    FAILURE = enum.auto()  # ✗ results, deny rules, the problem under a form
    WARNING = enum.auto()  # "this reaches outside the workspace"
    QUIET_TEXT = enum.auto()  # secondary words in rich text (the header's folder)
    BANNER_WARNING = enum.auto()  # the edge of a warning banner
    BANNER_INFO = enum.auto()
    # Unified diffs: the approval preview and edit_file tool cards.
    DIFF_ADDED = enum.auto()
    DIFF_ADDED_BACKGROUND = enum.auto()
    DIFF_REMOVED = enum.auto()
    DIFF_REMOVED_BACKGROUND = enum.auto()
    DIFF_HUNK = enum.auto()  # "@@ -1,3 +1,3 @@"
    # The transcript.
    USER_MESSAGE_BACKGROUND = enum.auto()
    TOOL_CARD_BACKGROUND = enum.auto()
    TOOL_OK = enum.auto()  # the ✓ of a tool card
    TOOL_FAILED = enum.auto()
    TOOL_RUNNING = enum.auto()
    NOTICE_FAILED = enum.auto()  # the bar on a notice's left edge
    NOTICE_INTERRUPTED = enum.auto()
    NOTICE_OTHER = enum.auto()
    NOTICE_FAILED_BACKGROUND = enum.auto()
    NOTICE_INTERRUPTED_BACKGROUND = enum.auto()
    NOTICE_OTHER_BACKGROUND = enum.auto()
    CODE_BACKGROUND = enum.auto()  # fenced code blocks
    SYNTAX_KEYWORD = enum.auto()
    SYNTAX_NAME = enum.auto()  # builtins and function names
    SYNTAX_CLASS = enum.auto()
    SYNTAX_STRING = enum.auto()
    SYNTAX_NUMBER = enum.auto()
    SYNTAX_COMMENT = enum.auto()
    SYNTAX_OPERATOR = enum.auto()
    SYNTAX_DECORATOR = enum.auto()
    # Session badges in the tree: one per state, and the marks beside them.
    STATE_IDLE = enum.auto()
    STATE_QUEUED = enum.auto()
    STATE_RUNNING = enum.auto()
    STATE_AWAITING_APPROVAL = enum.auto()
    STATE_INTERRUPTED = enum.auto()
    STATE_COMPLETED = enum.auto()
    STATE_FAILED = enum.auto()
    STATE_CANCELLED = enum.auto()
    STATE_ARCHIVED = enum.auto()
    BADGE_BUSY = enum.auto()  # "in use elsewhere"
    BADGE_APPROVALS = enum.auto()  # "2 to approve"
    BADGE_QUEUED = enum.auto()  # "1 queued"
    BADGE_TEXT = enum.auto()
    # The tray icon's badge.
    TRAY_WORKING = enum.auto()
    TRAY_ATTENTION = enum.auto()
    TRAY_BADGE_EDGE = enum.auto()  # its outline and "!"


# The named colours the roles are made of (Catppuccin Latte and Mocha for most).
_RED = "#d20f39"
_GREEN = "#40a02b"
_BLUE = "#1e66f5"
_YELLOW = "#df8e1d"
_PEACH = "#fe640b"
_TEAL = "#179299"
_OVERLAY = "#7c7f93"
_WHITE = "#ffffff"

_COLORS: dict[Role, tuple[str, str]] = {  # (light, dark)
    Role.SUCCESS: ("#3b9a4a", "#3b9a4a"),
    Role.FAILURE: ("#d9534f", "#d9534f"),
    Role.WARNING: ("#c77c02", "#c77c02"),
    Role.QUIET_TEXT: ("#808080", "#808080"),
    Role.BANNER_WARNING: ("#d08a00", "#d08a00"),
    Role.BANNER_INFO: ("#3d7bd9", "#3d7bd9"),
    Role.DIFF_ADDED: ("#116329", "#7ee787"),
    Role.DIFF_ADDED_BACKGROUND: ("#dafbe1", "#1b3a24"),
    Role.DIFF_REMOVED: ("#82071e", "#ffa198"),
    Role.DIFF_REMOVED_BACKGROUND: ("#ffebe9", "#43201f"),
    Role.DIFF_HUNK: ("#5b4fc4", "#a5b4fc"),
    Role.USER_MESSAGE_BACKGROUND: ("#e6eefc", "#2d3a55"),
    Role.TOOL_CARD_BACKGROUND: ("#f7f7fa", "#252537"),
    Role.TOOL_OK: (_GREEN, _GREEN),
    Role.TOOL_FAILED: (_RED, _RED),
    Role.TOOL_RUNNING: (_BLUE, _BLUE),
    Role.NOTICE_FAILED: (_RED, _RED),
    Role.NOTICE_INTERRUPTED: (_YELLOW, _YELLOW),
    Role.NOTICE_OTHER: (_OVERLAY, _OVERLAY),
    # The light backgrounds are the bar's colour lightened (QColor.lighter(170)).
    Role.NOTICE_FAILED_BACKGROUND: ("#ff7895", "#3b2f2f"),
    Role.NOTICE_INTERRUPTED_BACKGROUND: ("#ffd69d", "#3b2f2f"),
    Role.NOTICE_OTHER_BACKGROUND: ("#d3d8fa", "#3b2f2f"),
    Role.CODE_BACKGROUND: ("#eff1f5", "#181825"),
    Role.SYNTAX_KEYWORD: ("#8839ef", "#cba6f7"),
    Role.SYNTAX_NAME: (_BLUE, "#89b4fa"),
    Role.SYNTAX_CLASS: (_YELLOW, "#f9e2af"),
    Role.SYNTAX_STRING: (_GREEN, "#a6e3a1"),
    Role.SYNTAX_NUMBER: (_PEACH, "#fab387"),
    Role.SYNTAX_COMMENT: ("#8c8fa1", "#7f849c"),
    Role.SYNTAX_OPERATOR: ("#04a5e5", "#89dceb"),
    Role.SYNTAX_DECORATOR: ("#ea76cb", "#f5c2e7"),
    Role.STATE_IDLE: (_OVERLAY, _OVERLAY),
    Role.STATE_QUEUED: (_BLUE, _BLUE),
    Role.STATE_RUNNING: (_GREEN, _GREEN),
    Role.STATE_AWAITING_APPROVAL: (_YELLOW, _YELLOW),
    Role.STATE_INTERRUPTED: (_PEACH, _PEACH),
    Role.STATE_COMPLETED: (_TEAL, _TEAL),
    Role.STATE_FAILED: (_RED, _RED),
    Role.STATE_CANCELLED: ("#8c8fa1", "#8c8fa1"),
    Role.STATE_ARCHIVED: ("#9ca0b0", "#9ca0b0"),
    Role.BADGE_BUSY: ("#5c5f77", "#5c5f77"),
    Role.BADGE_APPROVALS: (_YELLOW, _YELLOW),
    Role.BADGE_QUEUED: (_BLUE, _BLUE),
    Role.BADGE_TEXT: (_WHITE, _WHITE),
    Role.TRAY_WORKING: ("#2f9e44", "#2f9e44"),
    Role.TRAY_ATTENTION: ("#e8590c", "#e8590c"),
    Role.TRAY_BADGE_EDGE: (_WHITE, _WHITE),
}


# Terminal colours 0-15 in a background task's log (black … white, then the bright ones), as
# (light window, dark window): black and white swap meaning with the field they are drawn on.
_ANSI: tuple[tuple[str, str], ...] = (
    ("#000000", "#bfbfbf"),
    ("#c91b00", "#ff6e67"),
    ("#00a300", "#5ff967"),
    ("#a87b00", "#fefb67"),
    ("#0225c7", "#6871ff"),
    ("#c930c7", "#ff76ff"),
    ("#00a5b2", "#5ffdff"),
    ("#707070", "#c7c7c7"),
    ("#686868", "#8c8c8c"),
    ("#e0301e", "#ff8a80"),
    ("#0f9d1d", "#85ff8a"),
    ("#b58900", "#fffc9e"),
    ("#4056e8", "#8f9aff"),
    ("#d33ad1", "#ff9bff"),
    ("#0097a7", "#8afdff"),
    ("#3a3a3a", "#ffffff"),
)


def ansi_color(index: int, *, dark: bool = False) -> QColor:
    """Terminal colour ``index`` (0-15) readable on a light window, or on a dark one."""
    light, dark_value = _ANSI[index % len(_ANSI)]
    return QColor(dark_value if dark else light)


def color(role: Role, *, dark: bool = False) -> QColor:
    """The colour of ``role`` on a light window, or on a dark one."""
    light, dark_value = _COLORS[role]
    return QColor(dark_value if dark else light)


def css(role: Role) -> str:
    """``role`` as "#rrggbb" for a style sheet or rich text.

    Raises:
        ValueError: ``role`` differs between light and dark; a style sheet would not follow a
            change of appearance, so such roles are painted with ``color`` instead.
    """
    light, dark_value = _COLORS[role]
    if light != dark_value:
        raise ValueError(f"{role.name} differs in light and dark; paint it with color()")
    return light


def is_dark(palette: QPalette) -> bool:
    """Whether ``palette`` paints dark fields (its base is darker than mid-grey)."""
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


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
            _use_fusion(app)
            app.setPalette(dark_palette())
        return
    dark = appearance == "dark"
    hints.setColorScheme(Qt.ColorScheme.Dark if dark else Qt.ColorScheme.Light)
    _use_fusion(app)
    app.setPalette(dark_palette() if dark else app.style().standardPalette())


class OutlinedIndicators(QProxyStyle):
    """Fusion, with radio buttons and check boxes outlined so they show on a dark window.

    Fusion outlines them with the window colour darkened, which on fxdesk's charcoal window
    is all but the field's own colour: the dark theme's radio buttons were nearly invisible.
    On a light palette nothing changes."""

    def drawPrimitive(
        self,
        element: QStyle.PrimitiveElement,
        option: QStyleOption,
        painter: QPainter,
        widget: QWidget | None = None,
    ) -> None:
        super().drawPrimitive(element, option, painter, widget)
        radio = element == QStyle.PrimitiveElement.PE_IndicatorRadioButton
        check = element == QStyle.PrimitiveElement.PE_IndicatorCheckBox
        if not (radio or check) or option.palette.color(_Role.Window).lightness() >= 128:
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QColor(INDICATOR_OUTLINE_DARK))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        box = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)
        if radio:
            painter.drawEllipse(box)
        else:
            painter.drawRoundedRect(box, 2, 2)
        painter.restore()


INDICATOR_OUTLINE_DARK = "#9a9a9a"


def _use_fusion(app: QApplication) -> None:
    if not isinstance(app.style(), OutlinedIndicators):
        app.setStyle(OutlinedIndicators("fusion"))


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
