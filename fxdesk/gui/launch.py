"""The window's first frame, before anything the frame does not show is imported.

``fxdesk`` (``cli.window.open_window``) calls ``first_frame`` before asyncio, qasync, the App
and the engine exist: the QApplication and the main window, shown and given one turn of Qt's
own event loop to paint. The window shows its sessions once the App has started
(``application.run`` takes the window over); until then it shows what it shows with no data.
What the first frame costs beyond a bare PySide6 window is in docs/performance.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QEventLoop, QObject, QTimer
from PySide6.QtWidgets import QApplication, QWidget

from fxdesk import APP_ID, APP_NAME, __version__
from fxdesk.gui.window.main_window import MainWindow

if TYPE_CHECKING:
    from PySide6.QtGui import QIcon

log = logging.getLogger(__name__)

FIRST_FRAME_WAIT_S = 0.5  # a window that is not exposed (no screen, minimized) paints later


def create_qapplication(argv: list[str], *, icon: bool = True) -> QApplication:
    """The QApplication with fxdesk's names and, with ``icon``, its icon (``first_frame`` gives
    the icon after the window's first frame)."""
    existing = QApplication.instance()
    qapp = existing if isinstance(existing, QApplication) else QApplication(argv)
    qapp.setApplicationName(APP_NAME)
    qapp.setApplicationDisplayName(APP_NAME)
    qapp.setApplicationVersion(__version__)
    qapp.setOrganizationName(APP_NAME)
    qapp.setDesktopFileName(APP_ID)
    if icon:
        qapp.setWindowIcon(app_icon())
    return qapp


def app_icon() -> QIcon:
    import importlib.resources

    from PySide6.QtGui import QIcon

    icon = importlib.resources.files("fxdesk") / "resources" / f"{APP_ID}.svg"
    with importlib.resources.as_file(icon) as path:
        return QIcon(str(path))


class _PaintWait(QObject):
    """Ends ``loop`` at the first paint event of ``window``."""

    def __init__(self, window: QWidget, loop: QEventLoop) -> None:
        super().__init__(window)
        self.painted = False
        self._loop = loop
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self.painted:
            self.painted = True
            self._loop.quit()
        return False


def first_frame(argv: list[str], wait_s: float = FIRST_FRAME_WAIT_S) -> MainWindow:
    """Show the main window (no sessions in it yet) and let it paint, at most ``wait_s``; then
    give the application its icon and the window its (empty) session tree.

    The wait is a plain ``QEventLoop``: no asyncio loop runs yet, so none can lose wake-ups
    to it (the reason nested Qt loops are banned elsewhere). The tree's model and the domain's
    session types it imports come after the frame, which shows no session anyway."""
    # The icon after the frame: its file through importlib.resources, QIcon's Python type, the
    # SVG icon engine and the icon's pixmaps for the window manager (~5-8 ms); the frame's own
    # pixels do not show it, the window manager's title bar may for those few milliseconds.
    qapp = create_qapplication(argv, icon=False)
    # Quitting is GuiController's orderly decision, never a side effect of a window closing.
    QApplication.setQuitOnLastWindowClosed(False)
    window = MainWindow()
    loop = QEventLoop()
    wait = _PaintWait(window, loop)
    give_up = QTimer(loop)
    give_up.setSingleShot(True)
    give_up.timeout.connect(loop.quit)
    window.show()
    if not wait.painted:
        give_up.start(int(wait_s * 1000))
        loop.exec()
        give_up.stop()
    window.removeEventFilter(wait)
    wait.deleteLater()
    if not wait.painted:
        log.info("the window did not paint within %.1f s; starting anyway", wait_s)
    qapp.setWindowIcon(app_icon())
    from fxdesk.gui.sessions.model import SessionTreeModel

    window.attach_sessions(SessionTreeModel(window))
    return window
