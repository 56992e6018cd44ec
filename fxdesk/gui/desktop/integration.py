"""The tray icon and desktop notifications, attached to the main window.

``DesktopIntegration`` builds the ``Tray`` and the ``NotificationCenter`` (with the best
``Notifier`` this desktop offers), keeps the tray's badge in step with the centre, and does what
the tray menu and a clicked notification ask of the window. What concerns other parts of the
window (approvals, quitting) it passes on as signals.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QIcon

from fxdesk.gui.desktop.notifications import NotificationCenter
from fxdesk.gui.desktop.notifiers import Notifier, build_notifier
from fxdesk.gui.desktop.tray import Tray
from fxdesk.gui.sessions.model import ROLE_LAST_FAILED, SessionTreeModel
from fxdesk.gui.tasks import TaskGroup
from fxdesk.gui.window.main_window import MainWindow


class DesktopIntegration(QObject):
    """fxdesk's tray icon (inert without a tray) and the notifications it and the desktop show.

    Args:
        window: the main window (brought to the front from the tray; while it or one of its
            dialogs is active nothing is announced).
        model: the session tree (names, and whether a session's newest work failed).
        icon: the application icon the tray badges.
        tasks: where notifiers run their background work.
        notifier: where notifications go; by default the best this desktop offers.
        parent: the owning QObject.

    Signals:
        approvals_requested(): the tray's "Approvals…"; the window is already in front.
        session_opened(str): a notification about this session was clicked; the window is in
            front and shows the session.
        quit_requested(): the tray's "Quit".
    """

    approvals_requested = Signal()
    session_opened = Signal(str)
    quit_requested = Signal()

    def __init__(
        self,
        window: MainWindow,
        model: SessionTreeModel,
        icon: QIcon,
        tasks: TaskGroup,
        notifier: Notifier | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.window = window
        self.tray = Tray(icon, self)
        self.notifications = NotificationCenter(
            notifier or build_notifier(self.tray, window, tasks),
            is_looking=window.is_looked_at,
            last_failed=lambda sid: bool(model.session_index(sid).data(ROLE_LAST_FAILED)),
            name_of=model.session_name,
            parent=self,
        )
        self.notifications.status_changed.connect(self.tray.set_status)
        window.session_selected.connect(self.notifications.session_seen)
        self.tray.show_requested.connect(window.bring_to_front)
        self.tray.toggle_requested.connect(window.toggle_from_tray)
        self.tray.approvals_requested.connect(self._on_tray_approvals_requested)
        self.tray.quit_requested.connect(self.quit_requested)
        self.tray.message_clicked.connect(self._on_tray_message_clicked)

    def start(self) -> None:
        self.tray.start()

    def stop(self) -> None:
        """Quitting: nothing more is announced (work the quit interrupts is not news)."""
        self.notifications.stop()
        self.tray.stop()

    def open_session(self, session_id: str) -> None:
        """Bring the window to the front at ``session_id`` (none: just the window)."""
        self.window.bring_to_front()
        if not session_id:
            return
        self.window.select_session(session_id)
        self.notifications.session_seen(session_id)
        self.session_opened.emit(session_id)

    @Slot(str)
    def _on_tray_message_clicked(self, session_id: str) -> None:
        self.open_session(session_id)

    @Slot()
    def _on_tray_approvals_requested(self) -> None:
        self.window.bring_to_front()
        self.approvals_requested.emit()
