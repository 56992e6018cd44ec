"""The notifier chain: the tray balloon, D-Bus (a missing bus, and a real private bus with a fake
notification server) and the in-window fallback. Every fake records what it was asked."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from fxdesk import messages
from fxdesk.gui.desktop.notifiers import DbusNotifier, TrayNotifier, WindowNotifier, build_notifier
from fxdesk.gui.desktop.tray import Tray
from fxdesk.gui.tasks import TaskGroup
from tests.gui.desktop.test_tray import Recorder
from tests.gui.waiting import until

MISSING_BUS = "unix:path=/nonexistent/fxdesk-test/bus"


def test_the_tray_notifier_falls_back_when_no_tray_is_shown(qtbot: QtBot) -> None:
    fallback = Recorder()
    tray = Tray(QIcon(), None)
    TrayNotifier(tray, fallback).notify("Parser finished", "Ready", "s1")
    assert fallback.calls == [("Parser finished", "Ready", "s1")]
    tray.stop()


def test_the_window_notifier_puts_it_in_the_status_bar(qtbot: QtBot) -> None:
    seen: list[messages.Message] = []
    detach = messages.hub.attach(seen.append)
    try:
        WindowNotifier().notify("2 sessions finished", "Finished: A, B", None)
    finally:
        detach()
    assert [m.text for m in seen] == ["2 sessions finished: Finished: A, B"]


@pytest.mark.parametrize("bus", ["no-variable", MISSING_BUS])
async def test_dbus_without_a_bus_falls_back_once_without_raising(
    qtbot: QtBot, monkeypatch: pytest.MonkeyPatch, bus: str
) -> None:
    if bus == "no-variable":
        monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    fallback = Recorder()
    tasks = TaskGroup()
    seen: list[messages.Message] = []
    detach = messages.hub.attach(seen.append)  # an unexpected task error would land here
    try:
        notifier = DbusNotifier(fallback, tasks, bus="SESSION" if bus == "no-variable" else bus)
        notifier.notify("Parser finished", "Ready", "s1")
        await until(lambda: fallback.calls)
        assert notifier.failed is not None
        if bus == "no-variable":
            assert notifier.failed == "no D-Bus session bus"
        notifier.notify("Docs finished", "Ready", "s2")  # straight to the fallback now
        assert fallback.calls == [
            ("Parser finished", "Ready", "s1"),
            ("Docs finished", "Ready", "s2"),
        ]
        assert notifier.sent == []
        assert len(tasks) == 0
    finally:
        detach()
        await tasks.cancel_all()
    assert seen == []


class NotificationServer:
    """A private session bus (``dbus-daemon``) with a fake ``org.freedesktop.Notifications``
    that records every ``Notify`` call and answers with an id."""

    def __init__(self, folder: Path) -> None:
        self.address = f"unix:path={folder / 'bus'}"
        self.calls: list[tuple[object, ...]] = []
        self.daemon = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", f"--address={self.address}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-notifications")

    def __enter__(self) -> NotificationServer:
        self._thread.start()
        assert self._ready.wait(20), "the fake notification server did not start"
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(20)
        self.daemon.terminate()
        self.daemon.wait(20)

    def _serve(self) -> None:
        from jeepney import HeaderFields, message_bus, new_method_return
        from jeepney.io.blocking import open_dbus_connection

        for _ in range(200):  # the daemon needs a moment to create its socket
            try:
                connection = open_dbus_connection(bus=self.address)
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError("dbus-daemon did not start")
        with connection:
            connection.send_and_get_reply(message_bus.RequestName(NOTIFICATIONS), timeout=10)
            self._ready.set()
            while not self._stop.is_set():
                try:
                    message = connection.receive(timeout=0.1)
                except TimeoutError:
                    continue
                if message.header.fields.get(HeaderFields.member) == "Notify":
                    self.calls.append(tuple(message.body))
                    connection.send(new_method_return(message, "u", (len(self.calls),)))


NOTIFICATIONS = "org.freedesktop.Notifications"


@pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="needs dbus-daemon")
async def test_dbus_notifications_reach_the_notification_server(
    qtbot: QtBot, tmp_path: Path
) -> None:
    fallback = Recorder()
    tasks = TaskGroup()
    with NotificationServer(tmp_path) as server:
        notifier = DbusNotifier(fallback, tasks, bus=server.address)
        notifier.notify("Approval needed", "Clean build wants to run `a < b && c`", "s1")
        await until(lambda: notifier.sent or fallback.calls)
    assert fallback.calls == []
    assert notifier.sent == [1]
    [(app, replaces, icon, title, body, actions, hints, timeout)] = server.calls
    assert (app, replaces, title, actions, timeout) == ("fxdesk", 0, "Approval needed", [], -1)
    assert body == "Clean build wants to run `a &lt; b &amp;&amp; c`"  # servers may read markup
    assert str(icon).endswith(".svg")
    assert hints["desktop-entry"] == ("s", "io.github.fxdesk.Fxdesk")  # type: ignore[index]


def test_offscreen_the_chain_is_dbus_then_the_window(qtbot: QtBot) -> None:
    window = QWidget()
    tray = Tray(QIcon(), None)
    notifier = build_notifier(tray, window, TaskGroup())
    assert isinstance(notifier, DbusNotifier)
    assert isinstance(notifier._fallback, WindowNotifier)
    tray.stop()
    window.deleteLater()
