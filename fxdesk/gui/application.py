"""Runs fxdesk's window on a qasync loop and shuts it down in order.

``GuiController`` is the window's composition root: it builds each feature (``window``,
``sessions``, ``transcript``, ``approvals``, ``settings``, ``desktop``) and connects them to each
other and to the engine; no feature imports this module.

Quit paths (window close, Ctrl+Q, SIGTERM, SIGINT) all set one event; ``GuiController.main`` then
stops every subsystem through ``App.stop`` (each step logged) and returns exit code 0.

The display going away (the X server dies, the person logs out) is one more quit path. Qt's xcb
plugin then ends Qt's event loop itself (``QCoreApplication::exit(1)`` on a broken connection),
under the running asyncio loop, and ends it again each time the loop runs; ``run`` notices the
loop stopped with the work unfinished, asks for the same orderly quit and runs the loop again,
one pass at a time, until the shutdown is done (issue 16 item 6: it used to end in "Event loop
stopped before Future completed", a crash log and a crash banner at the next start).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import gc
import logging
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import qasync
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

from fxdesk import APP_NAME, messages
from fxdesk.gui.desktop.program_watch import ProgramWatch, frozen_program, restart_text
from fxdesk.gui.launch import FIRST_FRAME_WAIT_S, app_icon, create_qapplication
from fxdesk.gui.sessions.model import (
    ROLE_APPROVALS,
    ROLE_BUSY,
    ROLE_LAST_FAILED,
    ROLE_QUEUED,
    SessionTreeModel,
)
from fxdesk.gui.tasks import TaskGroup, run_dialog
from fxdesk.gui.transcript.markdown import warm_lexers
from fxdesk.gui.transcript.model import TranscriptModel
from fxdesk.gui.window.main_window import MainWindow
from fxdesk.gui.window.messages import MessagePresenter
from fxdesk.logs import loop_exception_handler

# What only the started engine needs (the engine facade, the features composed in _compose, the
# dialogs) is imported where it is used: the first frame of the window does not wait for it.
if TYPE_CHECKING:
    from fxdesk.app import App
    from fxdesk.domain.approvals import Approval
    from fxdesk.domain.conversation import HistoryEntry
    from fxdesk.engine.facade import Engine
    from fxdesk.gui.agents.controller import AgentsController
    from fxdesk.gui.approvals.dialog import ApprovalDialog
    from fxdesk.gui.approvals.dock import ApprovalsDock
    from fxdesk.gui.approvals.inbox import ApprovalsInbox
    from fxdesk.gui.bridge import EngineBridge
    from fxdesk.gui.changes import ChangesController
    from fxdesk.gui.desktop.integration import DesktopIntegration
    from fxdesk.gui.desktop.notifications import NotificationCenter
    from fxdesk.gui.desktop.notifiers import Notifier
    from fxdesk.gui.desktop.tray import Tray
    from fxdesk.gui.processes.controller import ProcessesController
    from fxdesk.gui.sessions.controller import SessionController
    from fxdesk.gui.settings.dialog import SettingsDialog
    from fxdesk.gui.settings.setup_dialog import FirstRun, SetupDialog
    from fxdesk.gui.settings.window import SettingsWindow

log = logging.getLogger(__name__)


class Outcome(enum.Enum):
    """How the window's run ended; the launcher turns it into the process exit code."""

    CLOSED = "closed"  # the person quit (or a signal asked to)
    DATA_UNUSABLE = "data_unusable"  # the database could not be opened; the window said why
    DISPLAY_LOST = "display_lost"  # the display went away; fxdesk quit in order all the same


_QUIT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _FirstFrame(QObject):
    """``painted`` resolves at the first paint event of ``window``."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.painted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and not self.painted.done():
            self.painted.set_result(None)
        return False


class GuiController(QObject):
    """Composes the window from its features and owns the run from start-up to shutdown.

    It builds each feature's objects and connects them to each other and to the engine; what a
    feature does lives in the feature: ``window.startup`` (what start-up says),
    ``sessions.controller`` and ``sessions.new_session`` (what the person does with sessions),
    ``approvals.inbox`` (the approvals queue, dialog and dock), ``settings.window`` and
    ``settings.setup_dialog.FirstRun``, ``desktop.integration`` (tray and notifications).
    """

    def __init__(
        self,
        app: App,
        *,
        notifier: Notifier | None = None,
        new_session: bool = False,
        window: MainWindow | None = None,
    ) -> None:
        """``window``: the main window ``launch.first_frame`` already showed, if any."""
        super().__init__()
        self.open_new_session = new_session  # `fxdesk --new-session`: ask once it is ready
        # Quitting is this controller's orderly decision, never a side effect of a window
        # closing (that would end the Qt loop under the running asyncio loop).
        QApplication.setQuitOnLastWindowClosed(False)
        self.app = app
        self.transcript = TranscriptModel(self._fetch_history, self)
        self._shown = window is not None
        if window is None:
            self.model = SessionTreeModel(self)
            window = MainWindow(self.model, self.transcript)
        else:
            self.model = window.model
            window.use_transcript(self.transcript)
        self.window = window
        self.messages = MessagePresenter(self.window.statusBar(), self.window)
        self.tasks = TaskGroup()
        # The tray and notifications, built in main once the window has painted (their Qt
        # types cost ~40 ms the first frame does not need).
        self._notifier = notifier
        self.desktop: DesktopIntegration
        self.tray: Tray
        self.notifications: NotificationCenter
        program = frozen_program()
        self.program_watch = ProgramWatch(program, self) if program is not None else None
        # Built in _compose, once the App has started: they need its services.
        self.bridge: EngineBridge | None = None
        self.sessions: SessionController | None = None
        self.approvals: ApprovalsInbox | None = None
        self.processes: ProcessesController | None = None
        self.changes: ChangesController | None = None
        self.agents: AgentsController | None = None
        self.quit_box: QMessageBox | None = None  # the quit question while it is open
        self.settings_window: SettingsWindow | None = None
        self.first_run: FirstRun | None = None
        self.quit_event = asyncio.Event()
        self.ready = asyncio.Event()  # set once the window shows the data
        self.outcome = Outcome.CLOSED
        if self.program_watch is not None:
            self.program_watch.replaced.connect(self._on_program_watch_replaced)
        self.window.quit_requested.connect(self.ask_quit)
        self.window.new_session_requested.connect(self._on_window_new_session_requested)
        self.window.settings_requested.connect(self._on_window_settings_requested)

    def _build_desktop(self) -> None:
        from fxdesk.gui.desktop.integration import DesktopIntegration

        self.desktop = DesktopIntegration(
            self.window, self.model, app_icon(), self.tasks, self._notifier, parent=self
        )
        self.tray = self.desktop.tray
        self.notifications = self.desktop.notifications
        self.desktop.quit_requested.connect(self.ask_quit)

    # --- the parts open now (tests and the screenshot scripts look at them) ---------------

    @property
    def approval_dialog(self) -> ApprovalDialog:
        assert self.approvals is not None, "approvals exist once the App has started"
        return self.approvals.dialog

    @property
    def approvals_dock(self) -> ApprovalsDock:
        assert self.approvals is not None, "approvals exist once the App has started"
        return self.approvals.dock

    @property
    def settings(self) -> SettingsDialog | None:
        """The Settings window while it is open."""
        return self.settings_window.dialog if self.settings_window is not None else None

    @property
    def setup(self) -> SetupDialog | None:
        """The first-run setup dialog while it is open."""
        return self.first_run.dialog if self.first_run is not None else None

    # --- the run --------------------------------------------------------------------------

    async def _fetch_history(
        self, session_id: str, before: int | None, limit: int
    ) -> list[HistoryEntry]:
        return await self.app.engine.history_page(session_id, before, limit)

    @Slot()
    def request_quit(self) -> None:
        if not self.quit_event.is_set():
            log.info("quit requested")
        self.quit_event.set()

    @Slot()
    def ask_quit(self) -> None:
        """The person asked to quit (Ctrl+Q, closing the window, the tray): when background
        commands run, say first what quitting does to them; otherwise quit."""
        question = self.processes.quit_question() if self.processes is not None else ""
        if not question:
            self.request_quit()
        elif self.quit_box is None:
            self.tasks.spawn(self._ask_quit(question), "ask-quit")
        else:
            self.quit_box.raise_()

    async def _ask_quit(self, question: str) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Question, f"Quit {APP_NAME}?", question, parent=self.window
        )
        box.setInformativeText("Quit now?")
        quit_button = box.addButton("&Quit", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(quit_button)
        self.quit_box = box
        try:
            await run_dialog(box)
            if box.clickedButton() is quit_button:
                self.request_quit()
        finally:
            self.quit_box = None
            box.deleteLater()

    def _on_signal(self, signum: int) -> None:
        log.info("received %s; quitting", signal.Signals(signum).name)
        self.request_quit()

    def display_lost(self) -> None:
        """Qt ended its event loop by itself: the window system went away. Quit in order."""
        if self.outcome is not Outcome.DISPLAY_LOST:
            log.warning(
                "the display went away (its server ended or the session logged out); quitting"
            )
        if self.outcome is Outcome.CLOSED:
            self.outcome = Outcome.DISPLAY_LOST
        self.request_quit()

    async def main(self) -> Outcome:
        loop = asyncio.get_running_loop()
        for signum in _QUIT_SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        self.messages.attach()
        if not self._shown:
            self.window.show()
            await self._first_frame()
        self.window.finish()
        self._build_desktop()
        self.desktop.start()
        if self.program_watch is not None:
            self.program_watch.start()
        try:
            if await self._start():
                await self.quit_event.wait()
        finally:
            await self._shutdown(loop)
        return self.outcome

    async def _first_frame(self) -> None:
        """Let the window paint before the engine is imported and started: the person sees it
        at once, and what start-up does next shows in it (docs/performance.md)."""
        frame = _FirstFrame(self.window)
        try:
            await asyncio.wait_for(asyncio.shield(frame.painted), FIRST_FRAME_WAIT_S)
        except TimeoutError:
            log.info("the window did not paint within %.1f s; starting anyway", FIRST_FRAME_WAIT_S)
        finally:
            self.window.removeEventFilter(frame)
            frame.deleteLater()

    async def _start(self) -> bool:
        from fxdesk.engine.facade import StoreError
        from fxdesk.gui.theme import apply_appearance
        from fxdesk.gui.window.startup import (
            offer_crash_logs,
            offer_recovery,
            show_data_error,
            show_data_folder,
        )

        try:
            await self.app.start()
            qapp = QApplication.instance()
            if isinstance(qapp, QApplication):
                apply_appearance(qapp, await self.app.engine.profiles.appearance())
            self.notifications.set_enabled(await self.app.engine.profiles.notifications_enabled())
        except StoreError as exc:
            log.error("cannot start: %s", exc.user_message)
            self.outcome = Outcome.DATA_UNUSABLE
            await show_data_error(self.window, exc.user_message, self.quit_event)
            return False
        engine = self.app.engine
        approvals = self._compose(engine)
        catalog = await engine.catalog()
        self.model.load(catalog.workspaces, catalog.sessions)
        if self.agents is not None:
            self.agents.load()
        self.notifications.seed(catalog.sessions)
        counts = await engine.counts()
        for session_id, (queued, _open) in counts.items():
            self.model.set_mark(session_id, ROLE_QUEUED, queued)
        for session_id, waiting in (await engine.approval_counts()).items():
            self.model.set_mark(session_id, ROLE_APPROVALS, waiting)
        await approvals.presenter.reload()
        for session_id in await engine.last_failed():
            self.model.set_mark(session_id, ROLE_LAST_FAILED, True)
        for session_id in engine.busy_elsewhere():
            self.model.set_mark(session_id, ROLE_BUSY, True)
        self.window.restore_state(await engine.profiles.window_state())
        if self.processes is not None:
            self.processes.dock.refit()  # the saved layout may hide it while commands run
        offer_recovery(self.window, engine.recovery, catalog.sessions, engine)
        last = await engine.profiles.last_session()
        if last and any(s.id == last for s in catalog.sessions):
            self.window.select_session(last)
            self.window.type_into(last)  # reopened as it was left: ready to type to
        database, schema = engine.database()
        show_data_folder(self.window, self.app.paths.root, database, schema)
        offer_crash_logs(self.window, self.app.crash_log, self.messages, self.tasks)
        self.tasks.spawn(self._check_sandbox(engine), "sandbox-status")
        # pygments and the common lexers, off the Qt thread: the first code block coloured
        # held it 50-100 ms (the worst stall while 20 sessions streamed, issue 17).
        self.tasks.spawn(asyncio.to_thread(warm_lexers), "warm-lexers")
        self.ready.set()
        messages.info("Ready")
        if self.app.providers is None and not await engine.profiles.list():
            self.tasks.spawn(self._first_run(), "first-run")  # a session needs a model first
        elif self.open_new_session:
            self._on_window_new_session_requested()
        return True

    def _compose(self, engine: Engine) -> ApprovalsInbox:
        """Build the features that need the started engine, and connect them."""
        from fxdesk.gui.agents.controller import AgentsController
        from fxdesk.gui.approvals.inbox import ApprovalsInbox
        from fxdesk.gui.bridge import EngineBridge
        from fxdesk.gui.changes import ChangesController
        from fxdesk.gui.processes.controller import ProcessesController
        from fxdesk.gui.sessions.controller import SessionController
        from fxdesk.gui.sessions.worktree_actions import WorktreeActions
        from fxdesk.gui.settings.setup_dialog import FirstRun
        from fxdesk.gui.settings.window import SettingsWindow

        self.bridge = bridge = EngineBridge(engine, self.model, self.transcript, self)
        self.approvals = approvals = ApprovalsInbox(engine, self._where, self.window, self.tasks)
        bridge.approvals_changed.connect(approvals.presenter.request_reload)
        approvals.presenter.loaded.connect(self._on_approvals_loaded)
        self.desktop.approvals_requested.connect(approvals.show_all)
        self.desktop.session_opened.connect(approvals.show_session)
        bridge.session_added.connect(self.window.select_session)
        bridge.session_changed.connect(self.notifications.session_changed)
        self.sessions = SessionController(self.window, bridge, engine, self.tasks)
        self.worktrees = WorktreeActions(self.window, engine, self.sessions)
        self.processes = ProcessesController(
            engine, bridge, self.window, self.model, self.notifications, self
        )
        self.agents = AgentsController(
            engine, bridge, self.window, self.model, self.tasks, self._confirm, self
        )
        self.changes = ChangesController(
            engine, bridge, self.window, self.tasks, self._confirm, self.window.selected_session
        )
        changes = self.changes
        self.window.view_menu.addAction(changes.toggle_action)
        self.window.addAction(changes.toggle_action)
        self.window.session_selected.connect(changes.follow)
        # Docks that share a side are tabs: opening one never squeezes another.
        self.window.tabifyDockWidget(self.processes.dock, self.agents.runs_dock)
        self.window.tabifyDockWidget(self.processes.dock, changes.dock)
        self.window.tabifyDockWidget(approvals.dock, self.agents.inbox_dock)
        self.settings_window = SettingsWindow(
            engine.profiles,
            self.app.paths.root,
            self.window,
            permissions=engine,
            workspaces=self.model.workspace_folders,
            sandbox=engine,
            current_workspace=self._current_workspace,
            mcp=engine.mcp,
            subscribe=engine.subscribe,
        )
        self.settings_window.profiles_changed.connect(self._on_settings_profiles_changed)
        self.sessions.edit_profile_requested.connect(self.settings_window.edit_profile)
        self.settings_window.modes_changed.connect(self._on_settings_profiles_changed)
        self.settings_window.notifications_changed.connect(self.notifications.set_enabled)
        self.first_run = FirstRun(engine.profiles, self.window)
        return approvals

    async def _confirm(self, title: str, text: str, do: str, keep: str) -> bool:
        """The session controller's question with verbs (tests answer it there)."""
        assert self.sessions is not None
        return await self.sessions.confirm(title, text, do, keep)

    async def _check_sandbox(self, engine: Engine) -> None:
        """Say in one line when commands run without a sandbox here (the probe runs bubblewrap
        once, off the loop)."""
        from fxdesk.gui.window.startup import offer_sandbox_fix

        status = await engine.sandbox_status()
        if self.settings_window is not None:
            open_permissions = functools.partial(self.settings_window.open, permissions_page=True)
            offer_sandbox_fix(self.window, status, open_permissions)

    def _current_workspace(self) -> str | None:
        """The selected session's workspace id, as the settings pages key workspaces."""
        session = self.window.selected_session()
        return str(session.workspace_id) if session is not None else None

    def _where(self, approval: Approval) -> tuple[str, str]:
        """(session name, workspace folder) of an approval."""
        return self.model.where(approval.session_id)

    async def _first_run(self) -> None:
        assert self.first_run is not None
        if await self.first_run.run() and self.sessions is not None:
            await self.sessions.refresh_profiles()

    async def _shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        log.info("shutdown: gui ...")
        for signum in _QUIT_SIGNALS:
            loop.remove_signal_handler(signum)
        self.desktop.stop()  # work the quit interrupts is not news
        if self.program_watch is not None:
            self.program_watch.stop()
        await self.tasks.cancel_all()
        if self.bridge is not None:
            await self.bridge.close()
        await self._save_window()
        await self.app.stop()
        self.messages.detach()
        self.window.allow_close = True
        self.window.close()
        # Delete the widgets now, on this (the GUI) thread: left to Python's garbage collector
        # they could be destroyed on whatever thread happens to collect them.
        self.window.deleteLater()
        self.deleteLater()
        log.info("shutdown: gui closed")

    async def _save_window(self) -> None:
        """Remember the window's place, size, maximized state and docks for the next start."""
        if not self.app.started or not self.ready.is_set():
            return  # nothing was restored: keep what the last good run saved
        from fxdesk.engine.facade import StoreError  # loaded since start-up

        try:
            await self.app.engine.profiles.set_window_state(self.window.saved_state())
        except StoreError as exc:
            log.warning("the window's state was not saved: %s", exc.user_message)

    # --- slots ----------------------------------------------------------------------------

    @Slot(object)
    def _on_approvals_loaded(self, pending: list[Approval]) -> None:
        # Those waiting at start-up are a baseline: the dialog shows them anyway.
        self.notifications.approvals_loaded(pending, announce=self.ready.is_set())

    @Slot(bool)
    def _on_program_watch_replaced(self, removed: bool) -> None:
        banner = self.window.add_banner(restart_text(removed), kind="warning")
        banner.setObjectName("restart_banner")
        banner.add_action("&Quit", self.ask_quit).setAccessibleName("Quit fxdesk")

    @Slot()
    def _on_window_new_session_requested(self) -> None:
        if self.app.started:
            self.tasks.spawn(self._new_session(), "new-session")

    async def _new_session(self) -> None:
        from fxdesk.gui.sessions.new_session import ask_new_session

        shown = self.window.selected_session()
        created = await ask_new_session(
            self.window, self.app.engine, workspace_id=shown.workspace_id if shown else None
        )
        if created is not None:
            self.window.type_into(created)

    @Slot()
    def _on_window_settings_requested(self) -> None:
        if self.app.started and self.settings_window is not None:
            self.settings_window.open()

    @Slot()
    def _on_settings_profiles_changed(self) -> None:
        if self.sessions is not None:
            self.tasks.spawn(self.sessions.refresh_profiles(), "refresh-profiles")


class MainThreadGarbageCollector(QObject):
    """Runs Python's cyclic garbage collector on the GUI thread only, a generation at a time.

    Left automatic, the collector runs on whichever thread allocates at the wrong moment (the
    database writer, an executor) and may destroy Qt objects there, which crashes. Anki and
    qutebrowser solve this the same way. Like qutebrowser's, this one checks the allocation
    counts often and collects only the generations over their thresholds, so the GUI thread
    pays for young objects in small steps instead of a full collection every few seconds.

    A full collection walks every object alive, and a transcript of 10,000 messages makes that
    40–140 ms on the GUI thread (a visible stall while the person scrolls). So what survives a
    full collection is frozen (``gc.freeze``): later full collections walk only what was made
    since; what start-up made is frozen once it is done (``settle``), unwalked. Frozen objects
    are still freed by reference counting; only a reference cycle among them that becomes
    garbage waits, until the next *thorough* collection, which unfreezes,
    collects everything and freezes again: when the window is not the active one and
    ``THOROUGH_S`` have passed, or after ``THOROUGH_MAX_S`` whatever the window does.
    """

    INTERVAL_MS = 1_000
    SETTLE_MS = 2_000  # start-up's objects are frozen this long after start()
    THOROUGH_S = 600.0
    THOROUGH_MAX_S = 3_600.0

    def __init__(
        self, parent: QObject | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(self.INTERVAL_MS)
        self._timer.timeout.connect(self.check)
        self._clock = clock
        self._thorough_at = clock()
        self.collections = [0, 0, 0]
        self.thorough = 0

    def start(self) -> None:
        gc.disable()
        self._thorough_at = self._clock()
        self._timer.start()
        QTimer.singleShot(self.SETTLE_MS, self, self.settle)

    @Slot()
    def settle(self) -> None:
        """Freeze what start-up made (modules, the window, the engine: ~70,000 objects)
        without walking it: the first full collection did, ~100 ms on the GUI thread at some
        moment in the first minutes (while the person scrolled a transcript, in the bench).
        A cycle among them that is garbage already waits for the first thorough collection."""
        if self._timer.isActive():  # not after stop()
            gc.freeze()

    def stop(self) -> None:
        self._timer.stop()
        gc.unfreeze()
        gc.collect()
        gc.enable()

    @Slot()
    def check(self) -> None:
        since = self._clock() - self._thorough_at
        idle = QGuiApplication.applicationState() != Qt.ApplicationState.ApplicationActive
        if since >= self.THOROUGH_MAX_S or (since >= self.THOROUGH_S and idle):
            self.collect_thoroughly()
            return
        thresholds = gc.get_threshold()
        counts = gc.get_count()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                self.collect(generation)
                return

    def collect(self, generation: int = 2) -> None:
        began = time.perf_counter()
        found = gc.collect(generation)
        if generation == 2:
            gc.freeze()
        self.collections[generation] += 1
        self._took(f"generation {generation}", began, found)

    def collect_thoroughly(self) -> None:
        """Everything, the frozen objects too, then freeze what survived."""
        began = time.perf_counter()
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        self.thorough += 1
        self._thorough_at = self._clock()
        self._took("thorough", began, found)

    @staticmethod
    def _took(what: str, began: float, found: int) -> None:
        took_ms = (time.perf_counter() - began) * 1000
        if took_ms > 20:
            log.info("garbage collection (%s) took %.0f ms (%d objects)", what, took_ms, found)


# How long a thread holding the GIL keeps it while another waits for it (Python's default is
# 5 ms). The store's threads, worker threads and the Qt thread share one GIL; each time the Qt
# thread comes back from Qt into Python (a paint, a timer, an event) while another thread runs
# Python, it waited up to the whole interval, several times a frame (issue 17: with 20 sessions
# streaming, delta -> paint p99 90/81/91 -> 47/42/40 ms alternated with 1 ms at load ~4.5).
QT_THREAD_SWITCH_S = 0.001


@contextlib.contextmanager
def qt_thread_first() -> Iterator[None]:
    """While the window runs: a thread holding the GIL hands it over after
    ``QT_THREAD_SWITCH_S`` when another (the Qt thread) waits for it."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(QT_THREAD_SWITCH_S)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run(
    app: App, argv: list[str], *, new_session: bool = False, window: MainWindow | None = None
) -> Outcome:
    """Open the window (or take over ``window``, shown by ``launch.first_frame``) and run until
    quit (with the New session dialog open once it is ready if ``new_session``). Returns how
    the run ended."""
    qapp = create_qapplication(argv)
    loop = QuitSafeEventLoop(qapp)
    asyncio.set_event_loop(loop)
    loop.set_exception_handler(loop_exception_handler)
    collector = MainThreadGarbageCollector()
    collector.start()
    controller = GuiController(app, new_session=new_session, window=window)
    try:
        with loop, qt_thread_first():
            main = loop.create_task(controller.main(), name="gui-main")
            outcome: Outcome = _run_to_the_end(loop, main, controller)
    finally:
        collector.stop()
        asyncio.set_event_loop(None)
    return outcome


class QuitSafeEventLoop(qasync.QEventLoop):
    """qasync's loop, with asyncio's running loop still set for the last pass of Qt's loop.

    ``qasync.QEventLoop.run_until_complete`` runs Qt's loop "one last time" after
    ``run_forever`` returns, when asyncio no longer knows a running loop: a task step that runs
    in that pass fails with "no running event loop" (it ended the display-lost shutdown in a
    traceback about one run in five, in ``store.write``'s ``get_running_loop``).
    """

    def run_forever(self) -> int:
        try:
            return int(super().run_forever())
        finally:
            asyncio.events._set_running_loop(self)  # for run_until_complete's last pass

    def run_until_complete(self, future: Any) -> Any:
        try:
            return super().run_until_complete(future)
        finally:
            asyncio.events._set_running_loop(None)


DISPLAY_LOST_SHUTDOWN_S = 120.0  # how long a shutdown without a display may take


def _run_to_the_end(
    loop: QuitSafeEventLoop, main: asyncio.Task[Outcome], controller: GuiController
) -> Outcome:
    """Run ``main`` to its end, even when Qt ends its event loop by itself (see the module
    docstring): then quit in order, running the loop again until the shutdown is done."""
    give_up: float | None = None
    while True:
        try:
            return loop.run_until_complete(main)
        except RuntimeError:
            if main.done():
                raise
            now = time.monotonic()
            if give_up is None:
                give_up = now + DISPLAY_LOST_SHUTDOWN_S
                controller.display_lost()
            elif now > give_up:
                raise
            # Each run is one pass of Qt's loop (it ends again at once): let threads work.
            time.sleep(0.005)
