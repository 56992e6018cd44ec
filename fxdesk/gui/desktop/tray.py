"""The system-tray icon: idle, working or needs-attention, with a small menu.

``TrayStatus`` is the pure part (counts in, state and tooltip out) so it is tested without a tray.
``Tray`` shows it when the desktop has a tray (``QSystemTrayIcon.isSystemTrayAvailable()``); when
it has none (always the case offscreen and on bare X servers) ``Tray`` creates no
``QSystemTrayIcon`` at all, so nothing is shown, nothing warns, and every method is a no-op.

Signals:
    show_requested(): "Show fxdesk" in the menu.
    toggle_requested(): a left click on the icon (raise the window, or tuck it away).
    approvals_requested(): "Approvals (N)…" in the menu.
    quit_requested(): "Quit" in the menu.
    message_clicked(str): a balloon was clicked; the session it was about ("" for none).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from PySide6.QtCore import QObject, QPointF, QRectF, Qt, Signal, Slot
from PySide6.QtGui import QAction, QGuiApplication, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from fxdesk import APP_NAME
from fxdesk.gui.theme import Role, color

ICON_SIZES = (16, 22, 24, 32, 48, 64)
MESSAGE_MS = 8000
# Platforms where asking for a tray is pointless (and where showing one warns on stderr).
NO_TRAY_PLATFORMS = ("offscreen", "minimal", "vnc")


class TrayState(enum.Enum):
    IDLE = "idle"  # nothing running
    WORKING = "working"  # at least one session running, queued or waiting on an approval
    ATTENTION = "attention"  # an approval waiting, or a failure the person has not seen


@dataclass(frozen=True)
class TrayStatus:
    """What the tray shows, from three counts.

    Attributes:
        running: sessions running, queued or waiting on an approval.
        approvals: pending approvals across all sessions.
        failures: sessions that failed (or were interrupted) since the person last looked at them.
        background: background commands running (dev servers, watchers).
    """

    running: int = 0
    approvals: int = 0
    failures: int = 0
    background: int = 0  # background commands running (they do not make the icon busy)

    @property
    def state(self) -> TrayState:
        if self.approvals or self.failures:
            return TrayState.ATTENTION
        return TrayState.WORKING if self.running else TrayState.IDLE

    @property
    def tooltip(self) -> str:
        """ "fxdesk — 2 running, 1 approval waiting" in words; "fxdesk — idle" when quiet."""
        parts = []
        if self.running:
            parts.append(f"{self.running} running")
        if self.approvals:
            parts.append(f"{_count(self.approvals, 'approval')} waiting")
        if self.failures:
            parts.append(f"{_count(self.failures, 'session')} failed")
        if self.background:
            parts.append(f"{_count(self.background, 'background command')} running")
        return f"{APP_NAME} — {', '.join(parts) if parts else 'idle'}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# The badge painted over the app icon's bottom-right corner: none, a green "busy" dot, or an
# orange dot with "!"; distinct in shape as well as colour, for people who cannot tell them apart.
_BADGES = {
    TrayState.WORKING: Role.TRAY_WORKING,
    TrayState.ATTENTION: Role.TRAY_ATTENTION,
}


def state_icon(base: QIcon, state: TrayState) -> QIcon:
    """``base`` with the badge of ``state`` (``base`` itself for idle)."""
    role = _BADGES.get(state)
    if role is None:
        return base
    colour, edge = color(role), color(Role.TRAY_BADGE_EDGE)
    icon = QIcon()
    for size in ICON_SIZES:
        pixmap = base.pixmap(size, size)
        if pixmap.isNull():
            pixmap = QPixmap(size, size)
            pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        diameter = max(7.0, size * 0.5)
        rect = QRectF(size - diameter, size - diameter, diameter, diameter).adjusted(
            0.5, 0.5, -0.5, -0.5
        )
        painter.setPen(QPen(edge, max(1.0, size / 20)))
        painter.setBrush(colour)
        painter.drawEllipse(rect)
        if state == TrayState.ATTENTION and size >= 16:
            painter.setPen(QPen(edge, max(1.2, size / 14)))
            centre = rect.center()
            top, bottom = rect.top() + rect.height() * 0.22, rect.bottom() - rect.height() * 0.38
            painter.drawLine(QPointF(centre.x(), top), QPointF(centre.x(), bottom))
            painter.drawPoint(QPointF(centre.x(), rect.bottom() - rect.height() * 0.2))
        painter.end()
        icon.addPixmap(pixmap)
    return icon


def tray_available() -> bool:
    """True when the desktop shows tray icons (never offscreen)."""
    if QGuiApplication.platformName() in NO_TRAY_PLATFORMS:
        return False
    return QSystemTrayIcon.isSystemTrayAvailable()


class Tray(QObject):
    """fxdesk's tray icon and its menu; inert when there is no tray."""

    show_requested = Signal()
    toggle_requested = Signal()
    approvals_requested = Signal()
    quit_requested = Signal()
    message_clicked = Signal(str)

    def __init__(
        self, base: QIcon, parent: QObject | None = None, *, available: bool | None = None
    ) -> None:
        super().__init__(parent)
        self.available = tray_available() if available is None else available
        self.status = TrayStatus()
        self.stopped = False  # the app quit: the menu is gone
        self._icons = {state: state_icon(base, state) for state in TrayState}
        self._message_session = ""
        self.menu = QMenu()
        self.show_action = QAction(f"Show {APP_NAME}", self.menu)
        self.show_action.triggered.connect(self.show_requested)
        self.approvals_action = QAction("Approvals…", self.menu)
        self.approvals_action.triggered.connect(self.approvals_requested)
        self.quit_action = QAction("Quit", self.menu)
        self.quit_action.triggered.connect(self.quit_requested)
        self.menu.addAction(self.show_action)
        self.menu.addAction(self.approvals_action)
        self.menu.addSeparator()
        self.menu.addAction(self.quit_action)
        self.icon: QSystemTrayIcon | None = None
        if self.available:
            self.icon = QSystemTrayIcon(self._icons[TrayState.IDLE], self)
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._on_icon_activated)
            self.icon.messageClicked.connect(self._on_icon_message_clicked)
        self.set_status(self.status)

    def start(self) -> None:
        if self.icon is not None:
            self.icon.show()

    def stop(self) -> None:
        self.stopped = True
        if self.icon is not None:
            self.icon.hide()
        self.menu.deleteLater()

    def set_status(self, status: TrayStatus) -> None:
        self.status = status
        if self.stopped:
            # A status the engine sent while the app quit: its menu (and actions) are gone.
            return
        self.approvals_action.setText(f"Approvals ({status.approvals})…")
        if self.icon is not None:
            self.icon.setIcon(self._icons[status.state])
            self.icon.setToolTip(status.tooltip)

    def show_message(self, title: str, body: str, session_id: str | None) -> bool:
        """A balloon from the tray icon; False when there is no tray to show it."""
        if self.icon is None or not self.icon.isVisible():
            return False
        # Qt reports a click on "the" message, not which one: the newest replaces the older.
        self._message_session = session_id or ""
        self.icon.showMessage(title, body, self._icons[self.status.state], MESSAGE_MS)
        return True

    @Slot(QSystemTrayIcon.ActivationReason)
    def _on_icon_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.toggle_requested.emit()

    @Slot()
    def _on_icon_message_clicked(self) -> None:
        self.message_clicked.emit(self._message_session)
