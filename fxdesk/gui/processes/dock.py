"""The Processes dock: every background task, its log, and what the person can do with it.

A table of tasks (``ProcessesModel``) beside the selected task's live log (``LogView``). The
buttons act on the selected row: Open URL, Copy URL, Stop, Restart, Open log folder; "Run ▸"
starts or stops the saved run commands of the selected session's workspace (issue 12, item 7),
which are tracked like the agent's tasks, with origin "you"; its "Edit saved run commands…" opens
``RunCommandsDialog`` and the menu offers what was saved at once. Enter on a row opens its URL,
Delete stops it. A URL is opened only while its task runs: once it stopped or went stale its
port may serve another program, and the dock says so instead of opening it.

CPU and memory are sampled at most once a second, in a worker thread, while the dock is visible
and a task runs. The dock opens when the first task appears and closes again if the list empties,
unless the person showed or hid it themselves (View → Processes): then it stays so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QItemSelection, QModelIndex, Qt, QTimer, QUrl, Slot
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QMainWindow,
    QMenu,
    QPushButton,
    QSplitter,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from fxdesk import messages
from fxdesk.engine.events import BackgroundChanged
from fxdesk.engine.facade import (
    BackgroundError,
    BackgroundTask,
    Engine,
    RunCommand,
    StoreError,
    TaskNotFound,
)
from fxdesk.gui.processes.log_view import LogView
from fxdesk.gui.processes.model import (
    COL_COMMAND,
    COL_CPU,
    COL_EXIT,
    COL_FOLDER,
    COL_MEMORY,
    COL_NUMBER,
    COL_ORIGIN,
    COL_STATE,
    COL_UPTIME,
    COL_URL,
    ProcessesModel,
    StateDelegate,
    url_openable,
)
from fxdesk.gui.processes.run_commands_dialog import RunCommandsDialog
from fxdesk.gui.tasks import WidgetTasks, alive, run_dialog
from fxdesk.gui.widgets import fit_columns, hint_label, problem_label, show_problem

SAMPLE_MS = 1000
MESSAGE_KEY = "processes"
EMPTY_RUN_MENU = "No saved run commands in this workspace"
EDIT_RUN_COMMANDS = "&Edit saved run commands…"


@dataclass(frozen=True)
class Place:
    """Where "Run ▸" starts commands: the selected session, its workspace and folder."""

    session_id: str
    workspace_id: int
    folder: str


class ProcessesDock(QDockWidget):
    """The "Processes" dock.

    Args:
        engine: the facade: tasks, their logs, stop/restart/start, usage samples.
        session_name: a session's name from its id (the "Started by" column).
        parent: the main window.
    """

    def __init__(
        self,
        engine: Engine,
        session_name: Callable[[str], str],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Processes", parent)
        self.setObjectName("processes-dock")
        self.engine = engine
        self.tasks = WidgetTasks(self)
        self.model = ProcessesModel(engine.now_ms, session_name, self)
        self.place: Place | None = None
        self.run_commands: tuple[RunCommand, ...] = ()
        self.editor: RunCommandsDialog | None = None  # while Edit saved run commands… is open
        self.open_url_with: Callable[[QUrl], bool] = QDesktopServices.openUrl  # tests replace
        self.sample_ms: list[float] = []  # how long each usage sample took (measured)
        self._busy = False
        self._sampling = False
        self._shown_for_tasks = False
        self._auto = True  # False once the person chose (View → Processes)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(4, 4, 4, 4)
        column.addLayout(self._build_buttons())
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self._build_view())
        self.log = LogView()
        splitter.addWidget(self.log)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        splitter.setSizes([900, 560])
        column.addWidget(splitter, 1)
        self.notice = problem_label("Processes notice")
        column.addWidget(self.notice)
        self.status = hint_label("", wrap=True)
        self.status.setAccessibleName("Processes status")
        column.addWidget(self.status)
        self.setWidget(body)
        self._sampler = QTimer(self)
        self._sampler.setInterval(SAMPLE_MS)
        self._sampler.timeout.connect(self._on_sampler_timeout)
        self._sampler.start()
        self.toggleViewAction().triggered.connect(self._on_toggle_action_triggered)
        self.model.set_tasks(engine.all_background_tasks() if engine.runs_background else [])
        self._fit()
        self._update()

    def _build_buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.run_button = QToolButton()
        self.run_button.setText("R&un")
        self.run_button.setAccessibleName("Run a saved command")
        self.run_button.setToolTip("Start or stop a saved run command of this workspace")
        self.run_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.run_menu = QMenu(self.run_button)
        self.run_menu.aboutToShow.connect(self._on_run_menu_about_to_show)
        self.run_button.setMenu(self.run_menu)
        self.edit_action = QAction(EDIT_RUN_COMMANDS, self)
        self.edit_action.setToolTip("Add, change, order or remove this workspace's run commands")
        self.edit_action.triggered.connect(self._on_edit_action_triggered)
        row.addWidget(self.run_button)
        self.buttons: dict[str, QPushButton] = {}
        for key, text, tip, slot in (
            ("open", "Open &URL", "Open its URL in the browser (Enter)", self.open_selected_url),
            ("copy", "&Copy URL", "Copy its URL", self.copy_url),
            ("stop", "Sto&p", "Stop it and its process group (Delete)", self._on_stop_clicked),
            ("restart", "&Restart", "Stop it if it runs, then start it again", self._on_restart),
            ("folder", "Open l&og folder", "Show its log file's folder", self.open_log_folder),
        ):
            button = QPushButton(text)
            button.setAccessibleName(text.replace("&", ""))
            button.setToolTip(tip)
            button.setAutoDefault(False)
            button.clicked.connect(slot)
            row.addWidget(button)
            self.buttons[key] = button
        row.addStretch(1)
        return row

    def _build_view(self) -> QTreeView:
        self.view = QTreeView()
        self.view.setAccessibleName("Background commands")
        self.view.setModel(self.model)
        self.view.setRootIsDecorated(False)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAllColumnsShowFocus(True)
        self.view.setTextElideMode(Qt.TextElideMode.ElideRight)  # a command by its start
        self.view.setItemDelegateForColumn(COL_STATE, StateDelegate(self.view))
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        for short in (COL_NUMBER, COL_STATE, COL_EXIT, COL_UPTIME, COL_CPU, COL_MEMORY):
            header.setSectionResizeMode(short, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COL_COMMAND, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(36)
        self.view.clicked.connect(self._on_view_clicked)
        self.view.activated.connect(self._on_view_activated)
        self.view.selectionModel().selectionChanged.connect(self._on_view_selection_changed)
        stop = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.view)
        stop.setContext(Qt.ShortcutContext.WidgetShortcut)
        stop.activated.connect(self._on_stop_clicked)
        return self.view

    # --- contents ------------------------------------------------------------------------

    def apply(self, event: BackgroundChanged) -> None:
        """Show a task's change (from the engine's ``BackgroundChanged``)."""
        if event.removed:
            self.model.remove(event.session_id, event.task_id)
        else:
            self.model.upsert(event.task)
        if self.selected() is None and self.model.rowCount():
            self.select(self.model.task(self.model.rowCount() - 1))
        self._fit()
        self._update()

    def selected(self) -> BackgroundTask | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.task(rows[0].row()) if rows else None

    def select(self, task: BackgroundTask) -> bool:
        row = self.model.row_of(task.session_id, task.stable_id)
        if row is None:
            return False
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    def set_place(self, place: Place | None) -> None:
        """The selected session changed: "Run ▸" offers its workspace's saved commands."""
        if place == self.place:
            return
        self.place = place
        self.run_commands = ()
        if place is not None:
            self.tasks.spawn(self.load_run_commands(), "processes-run-commands")
        self._update()

    async def load_run_commands(self) -> tuple[RunCommand, ...]:
        place = self.place
        if place is None:
            return ()
        try:
            found = await self.engine.run_commands(place.workspace_id)
        except StoreError as exc:
            found = ()
            self._say(f"The saved run commands cannot be read: {exc.user_message}", problem=True)
        if alive(self) and place == self.place:
            changed = found != self.run_commands
            self.run_commands = found
            self._update()
            if changed and self.run_menu.isVisible():
                self._fill_run_menu()  # saved meanwhile (the CLI, another window)
        return found

    def _fit(self) -> None:
        """Open when the first task appears, close if none are left, unless the person showed
        or hid the dock themselves."""
        count = self.model.rowCount()
        if count and self.isHidden() and not self._shown_for_tasks and self._auto:
            self.show()
            self._shown_for_tasks = True
            self._keep_low()
        elif not count and self._shown_for_tasks:
            self.hide()
            self._shown_for_tasks = False
        fit_columns(
            self.view,
            {COL_FOLDER: 120, COL_URL: 200, COL_ORIGIN: 220},
        )

    def _keep_low(self) -> None:
        """Opened by itself, the dock takes at most a quarter of the window's height: the
        transcript gets the room first (the person can drag it taller)."""
        window = self.parentWidget()
        if isinstance(window, QMainWindow) and window.height() > 0:
            height = max(self.minimumSizeHint().height(), window.height() // 4)
            window.resizeDocks([self], [height], Qt.Orientation.Vertical)

    def refit(self) -> None:
        """Open again if commands are listed (after the saved window layout was restored)."""
        self._shown_for_tasks = False
        self._fit()

    def _update(self) -> None:
        task = self.selected()
        url = task is not None and task.url is not None
        self.buttons["open"].setEnabled(url)
        self.buttons["copy"].setEnabled(url)
        self.buttons["stop"].setEnabled(task is not None and task.stoppable and not self._busy)
        self.buttons["restart"].setEnabled(
            task is not None and not task.read_only and not self._busy
        )
        self.buttons["folder"].setEnabled(task is not None)
        self.run_button.setEnabled(self.place is not None and self.engine.runs_background)
        self.edit_action.setEnabled(self.place is not None and self.editor is None)
        if self.place is None:
            self.run_button.setToolTip("Select a session: its workspace's saved commands show here")
        warning = task.persistence_warning if task is not None else ""
        show_problem(self.notice, f"⚠ {task.ref} {warning}" if task and warning else "")

    def _say(self, text: str, *, problem: bool = False) -> None:
        self.status.setText(text)
        if problem:
            messages.warning(text, key=MESSAGE_KEY)
        else:
            messages.info(text, key=MESSAGE_KEY)

    # --- actions -------------------------------------------------------------------------

    def open_url(self, task: BackgroundTask) -> bool:
        """Open ``task``'s URL in the browser, only while it runs (else say why not)."""
        if task.url is None:
            self._say(f"Command {task.ref} has no URL.")
            return False
        if not url_openable(task):
            self._say(
                f"Not opening {task.url}: command {task.ref} is {task.state.value}, so that "
                "port may belong to another program now. Restart it to open it again.",
                problem=True,
            )
            return False
        opened = self.open_url_with(QUrl(task.url))
        self._say(f"Opened {task.url}" if opened else f"No browser could open {task.url}.")
        return opened

    @Slot()
    def open_selected_url(self) -> None:
        task = self.selected()
        if task is not None:
            self.open_url(task)

    @Slot()
    def copy_url(self) -> None:
        task = self.selected()
        if task is not None and task.url:
            QGuiApplication.clipboard().setText(task.url)
            self._say(f"Copied {task.url}")

    @Slot()
    def open_log_folder(self) -> None:
        task = self.selected()
        if task is not None:
            folder = Path(task.log_path).parent
            if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder))):
                self._say(f"No file manager could open {folder}.", problem=True)

    async def stop(self, task: BackgroundTask) -> str:
        """Stop ``task``; the outcome's sentence (also shown)."""
        self._set_busy(True)
        try:
            outcome = await self.engine.stop_background(task.stable_id, task.session_id)
            text = outcome.message
            ok = outcome.result.ended
        except (BackgroundError, TaskNotFound) as exc:
            text, ok = f"Command {task.ref} was not stopped: {exc}", False
        finally:
            if alive(self):
                self._set_busy(False)
        if alive(self):
            self._say(text, problem=not ok)
        return text

    async def restart(self, task: BackgroundTask) -> BackgroundTask | None:
        self._set_busy(True)
        try:
            _outcome, started = await self.engine.restart_background(
                task.stable_id, task.session_id
            )
        except (BackgroundError, TaskNotFound) as exc:
            if alive(self):
                self._say(f"Command {task.ref} was not restarted: {exc}", problem=True)
            return None
        finally:
            if alive(self):
                self._set_busy(False)
        if alive(self):
            self._say(f"Command {task.ref} restarted as {started.ref}.")
            self.select(started)
        return started

    async def run_saved(self, command: RunCommand) -> BackgroundTask | None:
        """Start a saved run command in the selected session (tracked like the agent's)."""
        place = self.place
        if place is None:
            return None
        cwd = os.path.join(place.folder, command.folder) if command.folder else place.folder
        try:
            task = await self.engine.start_background(
                place.session_id,
                command.command,
                cwd=cwd,
                expect_url=command.expect_url,
                durable=command.durable,
            )
        except (BackgroundError, StoreError) as exc:
            if alive(self):
                said = getattr(exc, "user_message", None) or str(exc)
                self._say(f"“{command.name}” did not start: {said}", problem=True)
            return None
        if alive(self):
            self._say(f"“{command.name}” started as {task.ref}.")
            self.select(task)
        return task

    def running_of(self, command: RunCommand) -> BackgroundTask | None:
        """The running task of a saved command in the current workspace, if there is one."""
        if self.place is None:
            return None
        folder = self.place.folder
        cwd = os.path.normpath(os.path.join(folder, command.folder) if command.folder else folder)
        for task in self.model.tasks():
            if (
                task.state.running
                and task.workspace_id == self.place.workspace_id
                and task.command == command.command
                and os.path.normpath(task.cwd) == cwd
            ):
                return task
        return None

    def _set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update()

    # --- sampling ------------------------------------------------------------------------

    async def sample(self) -> None:
        """One usage sample of the running tasks (CPU and memory of their process groups)."""
        running = [t for t in self.model.tasks() if t.state.running]
        self._sampling = True
        began = time.perf_counter()
        try:
            usage = await self.engine.background_usage(running) if running else {}
        finally:
            if alive(self):
                self._sampling = False
        if alive(self):
            if running:
                self.sample_ms.append((time.perf_counter() - began) * 1000)
                del self.sample_ms[:-60]
            self.model.set_usage(usage)

    @Slot()
    def _on_sampler_timeout(self) -> None:
        if self.isVisible() and not self._sampling and self.model.rowCount():
            self.tasks.spawn(self.sample(), "processes-sample")

    # --- slots ---------------------------------------------------------------------------

    @Slot()
    def _on_run_menu_about_to_show(self) -> None:
        self._fill_run_menu()
        self.tasks.spawn(self.load_run_commands(), "processes-run-commands")

    def _fill_run_menu(self) -> None:
        self.run_menu.clear()
        for command in self.run_commands:
            running = self.running_of(command)
            if running is not None:
                action = self.run_menu.addAction(f"Stop “{command.name}” ({running.ref})")
                action.triggered.connect(
                    lambda _=False, t=running: self.tasks.spawn(self.stop(t), "processes-stop")
                )
            else:
                action = self.run_menu.addAction(f"Run “{command.name}”")
                action.triggered.connect(
                    lambda _=False, c=command: self.tasks.spawn(self.run_saved(c), "processes-run")
                )
            action.setToolTip(command.command)
        if not self.run_commands:
            empty = self.run_menu.addAction(EMPTY_RUN_MENU)
            empty.setEnabled(False)
        self.run_menu.addSeparator()
        self.run_menu.addAction(self.edit_action)

    async def edit_run_commands(self) -> tuple[RunCommand, ...] | None:
        """Edit saved run commands…: the dialog for the selected session's workspace; what it
        saved (None when cancelled), offered by Run ▸ at once."""
        place = self.place
        if place is None or self.editor is not None:
            return None
        commands = await self.load_run_commands()
        if not alive(self) or place != self.place:
            return None
        self.editor = RunCommandsDialog(
            self.engine, place.workspace_id, place.folder, commands, self.window()
        )
        self._update()
        try:
            await run_dialog(self.editor)
            saved = self.editor.saved
        finally:
            if alive(self.editor):
                self.editor.deleteLater()
            self.editor = None
            if alive(self):
                self._update()
        if saved is not None and alive(self) and place == self.place:
            self.run_commands = saved
            count = f"{len(saved)} run command{'' if len(saved) == 1 else 's'}"
            self._say(f"Saved {count} for {place.folder}; Run ▸ starts them.")
        return saved

    @Slot()
    def _on_edit_action_triggered(self) -> None:
        self.tasks.spawn(self.edit_run_commands(), "processes-edit-run-commands")

    @Slot(bool)
    def _on_toggle_action_triggered(self, checked: bool) -> None:
        self._auto = False  # the person's choice from now on
        self._shown_for_tasks = False
        if checked:
            self.raise_()
            self.view.setFocus(Qt.FocusReason.ShortcutFocusReason)

    @Slot()
    def _on_stop_clicked(self) -> None:
        task = self.selected()
        if task is not None and task.stoppable and not self._busy:
            self.tasks.spawn(self.stop(task), "processes-stop")

    @Slot()
    def _on_restart(self) -> None:
        task = self.selected()
        if task is not None and not self._busy:
            self.tasks.spawn(self.restart(task), "processes-restart")

    @Slot(QModelIndex)
    def _on_view_clicked(self, index: QModelIndex) -> None:
        if index.column() == COL_URL:
            self.open_url(self.model.task(index.row()))

    @Slot(QModelIndex)
    def _on_view_activated(self, index: QModelIndex) -> None:
        if index.column() != COL_URL:  # a click on the URL already opened it
            self.open_url(self.model.task(index.row()))

    @Slot(QItemSelection, QItemSelection)
    def _on_view_selection_changed(self, _selected: object, _deselected: object) -> None:
        task = self.selected()
        if task is None:
            self.log.follow(None)
        else:
            title = f"{task.ref} {task.command} — {task.log_path}"
            self.log.follow(Path(task.log_path), title)
        self._update()
