"""Desktop notifications behind one small interface, with a fallback chain.

``Notifier.notify(title, body, session_id)`` is all the rest of the GUI sees. The chain that
``build_notifier`` assembles, best first:

1. ``TrayNotifier``: the tray icon's own balloon, when the desktop has a tray.
2. ``DbusNotifier``: ``org.freedesktop.Notifications`` over the session bus with ``jeepney``
   (QtDBus cannot send the ``susssasa{sv}i`` signature from plain Python values; STACK-NOTES §4).
   The call runs in a worker thread, so a slow or hung bus never stalls the window; the first
   failure (no bus, no notification server) is logged once and every later notification goes
   straight to the fallback.
3. ``WindowNotifier``: a status-bar message through ``fxdesk.messages`` plus a taskbar alert.

Clicking a tray balloon opens its session. Clicking a D-Bus notification does nothing yet: that
needs a connection kept open to hear ``ActionInvoked``, which this module does not do.
"""

from __future__ import annotations

import asyncio
import html
import importlib.resources
import logging
import sys
from pathlib import Path
from typing import Protocol

from PySide6.QtWidgets import QApplication, QWidget

from fxdesk import APP_ID, APP_NAME, messages
from fxdesk.gui.desktop.tray import Tray
from fxdesk.gui.tasks import TaskGroup

log = logging.getLogger(__name__)

DBUS_TIMEOUT_S = 5.0


class Notifier(Protocol):
    """Tells the person something while they may be looking elsewhere."""

    def notify(self, title: str, body: str, session_id: str | None) -> None:
        """Show ``title`` and ``body``; a click should open ``session_id`` where supported."""


class WindowNotifier:
    """The last resort: the status bar, and the window's taskbar entry asks for attention."""

    def __init__(self, window: QWidget | None = None) -> None:
        self._window = window

    def notify(self, title: str, body: str, session_id: str | None) -> None:
        text = title if not body else f"{title}: {'; '.join(body.splitlines())}"
        messages.info(text, key="desktop-notification")
        if self._window is not None:
            QApplication.alert(self._window)


class TrayNotifier:
    """The tray icon's balloon; ``fallback`` when the icon is not shown."""

    def __init__(self, tray: Tray, fallback: Notifier) -> None:
        self._tray = tray
        self._fallback = fallback

    def notify(self, title: str, body: str, session_id: str | None) -> None:
        if not self._tray.show_message(title, body, session_id):
            self._fallback.notify(title, body, session_id)


class DbusNotifier:
    """``org.freedesktop.Notifications.Notify`` over D-Bus, off the GUI thread.

    Args:
        fallback: used for every notification once D-Bus has failed.
        tasks: tracks the sends (cancelled at shutdown).
        bus: ``"SESSION"`` or a D-Bus address (tests point it at a missing socket).
    """

    def __init__(self, fallback: Notifier, tasks: TaskGroup, *, bus: str = "SESSION") -> None:
        self._fallback = fallback
        self._tasks = tasks
        self._bus = bus
        self.failed: str | None = None  # why D-Bus was given up, once it was
        self.sent: list[int] = []  # notification ids the server returned

    def notify(self, title: str, body: str, session_id: str | None) -> None:
        if self.failed is not None:
            self._fallback.notify(title, body, session_id)
            return
        self._tasks.spawn(self._send(title, body, session_id), "desktop-notification")

    async def _send(self, title: str, body: str, session_id: str | None) -> None:
        try:
            notification_id = await asyncio.to_thread(send_notification, self._bus, title, body)
        except Exception as exc:  # no bus, no server, a timeout: all mean "not this way"
            if self.failed is None:
                self.failed = _describe(exc)
                log.info("desktop notifications unavailable (%s); using the window", self.failed)
            self._fallback.notify(title, body, session_id)
            return
        self.sent.append(notification_id)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args == ("DBUS_SESSION_BUS_ADDRESS",):
        return "no D-Bus session bus"
    return f"{type(exc).__name__}: {exc}"


def send_notification(bus: str, title: str, body: str) -> int:
    """Blocking: one ``Notify`` call on a short-lived connection; the server's notification id.

    Runs in a worker thread. Raises ``KeyError`` when there is no session bus, ``OSError`` when
    its socket cannot be reached, and jeepney's ``DBusErrorResponse`` when no server answers.
    """
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    address = DBusAddress(
        "/org/freedesktop/Notifications",
        bus_name="org.freedesktop.Notifications",
        interface="org.freedesktop.Notifications",
    )
    hints = {"desktop-entry": ("s", APP_ID), "category": ("s", "im.received")}
    # Servers may read the body as markup (dunst does): escape it so `<` and `&` show as typed.
    message = new_method_call(
        address,
        "Notify",
        "susssasa{sv}i",
        (APP_NAME, 0, _icon_path(), title, html.escape(body, quote=False), [], hints, -1),
    )
    with open_dbus_connection(bus=bus) as connection:
        reply = connection.send_and_get_reply(message, timeout=DBUS_TIMEOUT_S)
    return int(reply.body[0])


def _icon_path() -> str:
    icon = importlib.resources.files("fxdesk") / "resources" / f"{APP_ID}.svg"
    return str(icon) if isinstance(icon, Path) and icon.is_file() else APP_ID


def build_notifier(tray: Tray, window: QWidget, tasks: TaskGroup) -> Notifier:
    """The best notifier this desktop offers, falling back down the chain above."""
    in_window = WindowNotifier(window)
    if tray.available:
        return TrayNotifier(tray, in_window)
    if sys.platform.startswith("linux"):
        return DbusNotifier(in_window, tasks)
    return in_window
