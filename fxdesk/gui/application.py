"""Runs fxdesk's window on a qasync loop and shuts it down in order.

Quit paths (window close, Ctrl+Q, SIGTERM, SIGINT) all set one event; ``GuiController.main`` then
stops every subsystem through ``App.stop`` (each step logged) and returns exit code 0.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.resources
import logging
import signal
import time
from pathlib import Path

import qasync
from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from fxdesk import APP_ID, APP_NAME, __version__, notify
from fxdesk.app import App
from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import Session
from fxdesk.domain.permissions import PermissionRule
from fxdesk.engine.sessions import Catalog, InvalidWorkspace
from fxdesk.gui.approvals.dialog import ApprovalDialog
from fxdesk.gui.approvals.dock import ApprovalsDock
from fxdesk.gui.bridge import EngineBridge
from fxdesk.gui.desktop.notifications import NotificationCenter
from fxdesk.gui.desktop.notifiers import Notifier, build_notifier
from fxdesk.gui.desktop.tray import Tray
from fxdesk.gui.sessions.controller import SessionController
from fxdesk.gui.sessions.model import (
    ROLE_APPROVALS,
    ROLE_BUSY,
    ROLE_LAST_FAILED,
    ROLE_QUEUED,
    ROLE_SNAPSHOT,
    SessionTreeModel,
)
from fxdesk.gui.sessions.new_session import NewSessionDialog
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.gui.settings.setup_dialog import SetupDialog
from fxdesk.gui.tasks import TaskGroup, run_dialog
from fxdesk.gui.theme import apply_appearance
from fxdesk.gui.transcript.model import TranscriptModel
from fxdesk.gui.window.main_window import MainWindow
from fxdesk.gui.window.messages import ErrorDetailsDialog, MessagePresenter
from fxdesk.logs import loop_exception_handler
from fxdesk.store import StoreError

log = logging.getLogger(__name__)

EXIT_DATA = 5
_QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def create_qapplication(argv: list[str]) -> QApplication:
    existing = QApplication.instance()
    qapp = existing if isinstance(existing, QApplication) else QApplication(argv)
    qapp.setApplicationName(APP_NAME)
    qapp.setApplicationDisplayName(APP_NAME)
    qapp.setApplicationVersion(__version__)
    qapp.setOrganizationName(APP_NAME)
    qapp.setDesktopFileName(APP_ID)
    qapp.setWindowIcon(app_icon())
    return qapp


def app_icon() -> QIcon:
    icon = importlib.resources.files("fxdesk") / "resources" / f"{APP_ID}.svg"
    with importlib.resources.as_file(icon) as path:
        return QIcon(str(path))


class GuiController(QObject):
    """Connects the window to the engine and owns the run from start-up to shutdown."""

    def __init__(self, app: App, *, notifier: Notifier | None = None) -> None:
        super().__init__()
        # Quitting is this controller's orderly decision, never a side effect of a window
        # closing (that would end the Qt loop under the running asyncio loop).
        QApplication.setQuitOnLastWindowClosed(False)
        self.app = app
        self.model = SessionTreeModel(self)
        self.transcript = TranscriptModel(self._fetch_history, self)
        self.window = MainWindow(self.model, self.transcript)
        self.messages = MessagePresenter(self.window.statusBar(), self.window)
        self.tasks = TaskGroup()
        self.bridge: EngineBridge | None = None
        self.sessions: SessionController | None = None
        self.quit_event = asyncio.Event()
        self.ready = asyncio.Event()  # set once the window shows the data
        self.exit_code = 0
        self.window.quit_requested.connect(self.request_quit)
        self.window.new_session_requested.connect(self._on_window_new_session_requested)
        self.window.settings_requested.connect(self._on_window_settings_requested)
        self.settings: SettingsDialog | None = None
        self.setup: SetupDialog | None = None
        self._build_tray(notifier)

    async def _fetch_history(
        self, session_id: str, before: int | None, limit: int
    ) -> list[HistoryEntry]:
        return await self.app.sessions.history_page(session_id, before, limit)

    @Slot()
    def request_quit(self) -> None:
        if not self.quit_event.is_set():
            log.info("quit requested")
        self.quit_event.set()

    def _on_signal(self, signum: int) -> None:
        log.info("received %s; quitting", signal.Signals(signum).name)
        self.request_quit()

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in _QUIT_SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        self.messages.attach()
        self.window.show()
        self.tray.start()
        try:
            if await self._start():
                await self.quit_event.wait()
        finally:
            await self._shutdown(loop)
        return self.exit_code

    async def _start(self) -> bool:
        try:
            await self.app.start()
            qapp = QApplication.instance()
            if isinstance(qapp, QApplication):
                apply_appearance(qapp, await self.app.profiles.appearance())
            self.notifications.set_enabled(await self.app.profiles.notifications_enabled())
        except StoreError as exc:
            log.error("cannot start: %s", exc.user_message)
            self.exit_code = EXIT_DATA
            box = QMessageBox(
                QMessageBox.Icon.Critical,
                APP_NAME,
                exc.user_message,
                QMessageBox.StandardButton.Close,
                self.window,
            )
            dialog = asyncio.ensure_future(run_dialog(box))
            quit_wait = asyncio.ensure_future(self.quit_event.wait())
            await asyncio.wait({dialog, quit_wait}, return_when=asyncio.FIRST_COMPLETED)
            for pending in (dialog, quit_wait):
                pending.cancel()
            box.close()
            return False
        self.bridge = EngineBridge(
            self.app.bus,
            self.model,
            self.transcript,
            self.app.sessions,
            self,
            permissions=self.app.permissions,
        )
        self._build_approvals()
        self.bridge.session_added.connect(self.window.select_session)
        self.bridge.session_changed.connect(self.notifications.session_changed)
        self.sessions = SessionController(
            self.window,
            self.bridge,
            self.app.sessions,
            self.app.owner,
            self.app.profiles,
            self.tasks,
        )
        catalog = await self.app.sessions.catalog()
        self.model.load(catalog.workspaces, catalog.sessions)
        self.notifications.seed(catalog.sessions)
        counts = await self.app.sessions.counts()
        for session_id, (queued, _open) in counts.items():
            self.model.set_mark(session_id, ROLE_QUEUED, queued)
        for session_id, waiting in (await self.app.permissions.counts()).items():
            self.model.set_mark(session_id, ROLE_APPROVALS, waiting)
        await self._reload_approvals()
        for session_id in await self.app.sessions.last_failed():
            self.model.set_mark(session_id, ROLE_LAST_FAILED, True)
        for session_id in self.app.owner.busy_elsewhere:
            self.model.set_mark(session_id, ROLE_BUSY, True)
        self._offer_recovery(catalog)
        last = await self.app.profiles.last_session()
        if last and any(s.id == last for s in catalog.sessions):
            self.window.select_session(last)
        store = self.app.store
        self.window.status_info.setText(
            f"{_short(self.app.paths.root)} · schema {store.schema_version}"
        )
        self.window.status_info.setToolTip(str(store.path))
        self._offer_crash_logs(self.app.crash_log.previous)
        self.ready.set()
        notify.info("Ready")
        if self.app.providers is None and not await self.app.profiles.list():
            self.tasks.spawn(self._first_run(), "first-run")
        return True

    # --- approvals ------------------------------------------------------------------------

    def _build_approvals(self) -> None:
        """One approval window (a queue) and the approvals dock, fed from the engine."""
        self.approval_dialog = ApprovalDialog(self._answer, self._describe, self.window)
        self.approvals_dock = ApprovalsDock(self._answer, self._describe, self.window)
        self.window.add_approvals_dock(self.approvals_dock)
        # Out of the way until something waits; see _fit_approvals_dock.
        self.approvals_dock.hide()
        self._dock_shown_for_approvals = False
        self._approvals_waiting = 0
        self.window.approvals_action.triggered.connect(self._on_approvals_action_triggered)
        self.approvals_dock.open_requested.connect(self.approval_dialog.present)
        assert self.bridge is not None
        self.bridge.approvals_changed.connect(self._on_bridge_approvals_changed)
        self._approvals_reload: asyncio.Task[None] | None = None
        self._approvals_again = False

    async def _answer(
        self, approval: Approval, choice: Choice, reason: str, rules: list[PermissionRule] | None
    ) -> None:
        await self.app.permissions.resolve(approval.id, choice, reason=reason, rules=rules)

    def _describe(self, approval: Approval) -> tuple[str, str]:
        """(session name, workspace folder) for an approval."""
        session = self.model.session_index(approval.session_id).data(ROLE_SNAPSHOT)
        if not isinstance(session, Session):
            return approval.session_id, ""
        workspace = self.model.workspace_index(session.workspace_id).data(ROLE_SNAPSHOT)
        return session.name, getattr(workspace, "path", "")

    @Slot()
    def _on_bridge_approvals_changed(self) -> None:
        if self._approvals_reload is not None and not self._approvals_reload.done():
            self._approvals_again = True  # one more reload after this one
            return
        self._approvals_reload = self.tasks.spawn(self._reload_approvals(), "approvals")

    def _fit_approvals_dock(self, waiting: int) -> None:
        """The dock opens when approvals start waiting and closes again once none are left,
        unless the person showed or hid it themselves (View → Approvals): then it stays so."""
        dock = self.approvals_dock
        if waiting and not self._approvals_waiting and dock.isHidden():
            dock.show()
            self._dock_shown_for_approvals = True
        elif not waiting and self._dock_shown_for_approvals:
            dock.hide()
            self._dock_shown_for_approvals = False
        self._approvals_waiting = waiting

    @Slot(bool)
    def _on_approvals_action_triggered(self, _checked: bool) -> None:
        self._dock_shown_for_approvals = False  # the person's choice from now on

    async def _reload_approvals(self) -> None:
        while True:
            self._approvals_again = False
            pending = await self.app.permissions.pending()
            self.approvals_dock.set_approvals(pending)
            self._fit_approvals_dock(len(pending))
            # Those waiting at start-up are a baseline: the dialog shows them anyway.
            self.notifications.approvals_loaded(pending, announce=self.ready.is_set())
            wanted = {a.id for a in pending}
            for queued in self.approval_dialog.approvals():
                if queued.id not in wanted:
                    self.approval_dialog.remove(queued.id)
            fresh = [a for a in pending if self.approval_dialog.add(a)]
            if fresh:
                # Shown without taking the keyboard: digits typed into the composer must not
                # answer it by accident.
                self.approval_dialog.present(fresh[0].id, activate=False)
                count = len(pending)
                notify.warning(
                    f"{count} approval{'s' if count != 1 else ''} waiting for you "
                    "(View → Approvals, Ctrl+Shift+A).",
                    key="approvals",
                )
            if not self._approvals_again:
                return

    # --- tray and notifications -----------------------------------------------------------

    def _build_tray(self, notifier: Notifier | None) -> None:
        """The tray icon (inert without a tray) and the notifications it and the desktop show."""
        self.tray = Tray(app_icon(), self)
        self.notifications = NotificationCenter(
            notifier or build_notifier(self.tray, self.window, self.tasks),
            is_looking=self.window.is_looked_at,
            last_failed=lambda sid: bool(self.model.session_index(sid).data(ROLE_LAST_FAILED)),
            name_of=self._session_name,
            parent=self,
        )
        self.notifications.status_changed.connect(self.tray.set_status)
        self.window.session_selected.connect(self.notifications.session_seen)
        self.tray.show_requested.connect(self.window.bring_to_front)
        self.tray.toggle_requested.connect(self.window.toggle_from_tray)
        self.tray.approvals_requested.connect(self._on_tray_approvals_requested)
        self.tray.quit_requested.connect(self.request_quit)
        self.tray.message_clicked.connect(self.open_session)

    def _session_name(self, session_id: str) -> str:
        session = self.model.session_index(session_id).data(ROLE_SNAPSHOT)
        return session.name if isinstance(session, Session) else session_id

    @Slot(str)
    def open_session(self, session_id: str) -> None:
        """A notification was clicked: the window, at that session (and its approval)."""
        self.window.bring_to_front()
        if not session_id:
            return
        self.window.select_session(session_id)
        self.notifications.session_seen(session_id)
        if self.bridge is not None:
            queued = self.approval_dialog.approvals()
            waiting = next((a for a in queued if a.session_id == session_id), None)
            if waiting is not None:
                self.approval_dialog.present(waiting.id)

    @Slot()
    def _on_tray_approvals_requested(self) -> None:
        self.window.bring_to_front()
        if self.bridge is not None:
            self.approvals_dock.show()
            self.approvals_dock.raise_()
            if self.approval_dialog.approvals():
                self.approval_dialog.present()

    # --- first run and settings -----------------------------------------------------------

    async def _first_run(self) -> None:
        """No model profile yet: ask for one (or the offline demo) over the main window."""
        dialog = self.setup = SetupDialog(self.app.profiles, self.window)
        try:
            if await run_dialog(dialog) == SetupDialog.DialogCode.Accepted:
                notify.info(f"Profile “{dialog.saved_name}” is ready; start a session with Ctrl+N.")
                if self.sessions is not None:
                    await self.sessions.refresh_profiles()
        finally:
            self.setup = None
            dialog.deleteLater()

    @Slot()
    def _on_window_settings_requested(self) -> None:
        if not self.app.started:
            return
        if self.settings is None:
            self.settings = SettingsDialog(
                self.app.profiles,
                self.app.paths.root,
                self.window,
                permissions=self.app.permissions,
                workspaces=self._workspace_folders,
            )
            self.settings.profiles_changed.connect(self._on_settings_profiles_changed)
            self.settings.notifications_changed.connect(self.notifications.set_enabled)
            self.settings.finished.connect(self._on_settings_finished)
        self.settings.show()
        self.settings.raise_()
        self.settings.activateWindow()

    def _workspace_folders(self) -> dict[str, str]:
        """Workspace id (as rules store it) → folder, for the Rules tab."""
        folders = {}
        for row in range(self.model.rowCount()):
            workspace = self.model.index(row, 0).data(ROLE_SNAPSHOT)
            if workspace is not None and hasattr(workspace, "path"):
                folders[str(workspace.id)] = workspace.path
        return folders

    @Slot()
    def _on_settings_profiles_changed(self) -> None:
        if self.sessions is not None:
            self.tasks.spawn(self.sessions.refresh_profiles(), "refresh-profiles")

    @Slot(int)
    def _on_settings_finished(self, _code: int) -> None:
        if self.settings is not None:
            self.settings.deleteLater()
            self.settings = None

    async def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        log.info("shutdown: gui ...")
        for signum in _QUIT_SIGNALS:
            loop.remove_signal_handler(signum)
        self.notifications.stop()  # work the quit interrupts is not news
        self.tray.stop()
        await self.tasks.cancel_all()
        if self.bridge is not None:
            await self.bridge.close()
        await self.app.stop()
        self.messages.detach()
        self.window.allow_close = True
        self.window.close()
        # Delete the widgets now, on this (the GUI) thread: left to Python's garbage collector
        # they could be destroyed on whatever thread happens to collect them.
        self.window.deleteLater()
        self.deleteLater()
        log.info("shutdown: gui closed")

    # --- recovery -------------------------------------------------------------------------

    def _offer_recovery(self, catalog: Catalog) -> None:
        report = self.app.recovery
        if report is None or (not report.work_interrupted and not report.busy_sessions):
            return
        names = {s.id: s.name for s in catalog.sessions}
        parts = []
        if report.work_interrupted:
            count = report.work_interrupted
            parts.append(
                f"{count} work item{'s were' if count != 1 else ' was'} interrupted when fxdesk "
                "last stopped; nothing has been re-run."
            )
        if report.busy_sessions:
            busy = ", ".join(f"“{names.get(i, i)}”" for i in report.busy_sessions[:3])
            more = len(report.busy_sessions) - 3
            parts.append(
                f"In use by another fxdesk: {busy}{f' and {more} more' if more > 0 else ''}."
            )
        banner = self.window.add_banner(" ".join(parts), kind="warning")
        banner.setObjectName("recovery_banner")
        interrupted = list(report.interrupted_sessions)
        if interrupted:

            def resume_all() -> None:
                for session_id in interrupted:
                    self.app.owner.start(session_id, retry=True)
                banner.hide()

            def review() -> None:
                self.window.select_session(interrupted[0])

            banner.add_action("Resume all", resume_all)
            banner.add_action("Review", review)

    # --- crash logs -----------------------------------------------------------------------

    def _offer_crash_logs(self, reports: list[Path]) -> None:
        if not reports:
            return
        count = "a crash log" if len(reports) == 1 else f"{len(reports)} crash logs"
        banner = self.window.add_banner(
            f"fxdesk stopped unexpectedly last time and left {count}.", kind="warning"
        )

        def show() -> None:
            self.tasks.spawn(self._show_crash_log(reports[-1]), "show-crash-log")

        def dismiss() -> None:
            for report in reports:
                self.app.crash_log.mark_seen(report)

        banner.add_action("Show crash log", show)
        banner.dismissed.connect(dismiss)

    async def _show_crash_log(self, path: Path) -> None:
        text = await asyncio.get_running_loop().run_in_executor(
            None, lambda: path.read_text(encoding="utf-8", errors="replace")
        )
        dialog = ErrorDetailsDialog(
            notify.Message(notify.Level.ERROR, f"Crash log {path.name}:", details=text), self.window
        )
        dialog.setWindowTitle("fxdesk: crash log")
        self.messages.dialogs.append(dialog)
        dialog.show()

    # --- new session ----------------------------------------------------------------------

    @Slot()
    def _on_window_new_session_requested(self) -> None:
        if self.app.started:
            self.tasks.spawn(self._new_session(), "new-session")

    async def _new_session(self) -> None:
        profiles = self.app.profiles
        dialog = NewSessionDialog(
            self.window,
            mode=await profiles.default_permission_mode(),
            profiles=[p.name for p in await profiles.list()],
            default_profile=await profiles.default_name(),
        )
        try:
            while await run_dialog(dialog) == NewSessionDialog.DialogCode.Accepted:
                folder, name, mode, profile = dialog.values()
                try:
                    await self.app.sessions.create_root(
                        folder, name=name, permission_mode=mode, profile=profile
                    )
                except InvalidWorkspace as exc:
                    dialog.show_problem(str(exc))
                    continue
                except StoreError as exc:
                    notify.error(exc.user_message, key="store")
                return
        finally:
            dialog.deleteLater()


def _short(path: Path) -> str:
    home = Path.home()
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)


class MainThreadGarbageCollector(QObject):
    """Runs Python's cyclic garbage collector on the GUI thread only, a generation at a time.

    Left automatic, the collector runs on whichever thread allocates at the wrong moment (the
    database writer, an executor) and may destroy Qt objects there, which crashes. Anki and
    qutebrowser solve this the same way. Like qutebrowser's, this one checks the allocation
    counts often and collects only the generations over their thresholds, so the GUI thread
    pays for young objects in small steps instead of a full collection every few seconds.
    """

    INTERVAL_MS = 1_000

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(self.INTERVAL_MS)
        self._timer.timeout.connect(self.check)
        self.collections = [0, 0, 0]

    def start(self) -> None:
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self.collect()
        gc.enable()

    @Slot()
    def check(self) -> None:
        thresholds = gc.get_threshold()
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                self.collect(generation)
                return

    def collect(self, generation: int = 2) -> None:
        began = time.perf_counter()
        found = gc.collect(generation)
        self.collections[generation] += 1
        took_ms = (time.perf_counter() - began) * 1000
        if took_ms > 20:
            log.info(
                "garbage collection (generation %d) took %.0f ms (%d objects)",
                generation,
                took_ms,
                found,
            )


def run(app: App, argv: list[str]) -> int:
    """Open the window and run until quit. Returns the process exit code."""
    qapp = create_qapplication(argv)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(loop_exception_handler)
    collector = MainThreadGarbageCollector()
    collector.start()
    controller = GuiController(app)
    try:
        with loop:
            code: int = loop.run_until_complete(controller.main())
    finally:
        collector.stop()
        asyncio.set_event_loop(None)
    return code
