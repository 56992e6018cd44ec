"""The Permissions page of Settings: the sandbox every agent command runs in (whether it works
here, and if not why and the fix), what each command gets (writable, read-only, hidden,
network), and what one workspace adds to it (writable paths, variables, the network in auto
mode).

Everything is read and written through a ``SandboxBook`` (the engine facade is one): the page
shows ``sandbox_overview`` as the engine works it out, and saves each change at once through
``set_workspace_sandbox``, which refuses what the sandbox would not allow; the reason is shown
under the lists and nothing is saved then.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import QDir, Qt, Signal, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.sandbox_settings import variable_warning
from fxdesk.engine.facade import (
    SandboxOverview,
    SandboxSettingsError,
    StoreError,
    WorkspaceSandbox,
)
from fxdesk.engine.health import status_text
from fxdesk.gui.settings.rule_editor import Workspaces
from fxdesk.gui.tasks import WidgetTasks, alive, run_dialog
from fxdesk.gui.theme import Role, css
from fxdesk.gui.widgets import bold_label, hint_label, problem_label, push_button, show_problem

HIDDEN_SHOWN = 6  # hidden paths listed before "and N more"
NO_WORKSPACE = "No workspace yet: start a session in a folder first."


class SandboxBook(Protocol):
    """Where the page reads and saves: the engine facade."""

    async def sandbox_overview(self, workspace_id: int | None = None) -> SandboxOverview: ...

    async def set_workspace_sandbox(
        self, workspace_id: int, settings: WorkspaceSandbox
    ) -> None: ...


class EditableList(QWidget):
    """A list of texts with a line to type a new one, Add, Remove (and optionally Browse…).

    Signals:
        add_requested(str): the person asked to add the typed text (not empty).
        remove_requested(str): the person asked to remove the selected text.
        browse_requested(): the person asked to pick a folder.
    """

    add_requested = Signal(str)
    remove_requested = Signal(str)
    browse_requested = Signal()

    def __init__(
        self,
        title: str,
        placeholder: str,
        add: tuple[str, str],
        remove: tuple[str, str],
        *,
        browse: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        label = QLabel(title)
        column.addWidget(label)
        self.list = QListWidget()
        self.list.setAccessibleName(title.replace("&", "").rstrip(":"))
        self.list.setFixedHeight(self.list.fontMetrics().lineSpacing() * 3 + 12)  # 3 entries
        self.list.itemSelectionChanged.connect(self._update_buttons)
        column.addWidget(self.list, 1)
        self.edit = QLineEdit()
        self.edit.setPlaceholderText(placeholder)
        self.edit.setAccessibleName(f"New {title.replace('&', '').rstrip(':').lower()}")
        self.edit.returnPressed.connect(self._on_add)
        label.setBuddy(self.edit)
        column.addWidget(self.edit)
        row = QHBoxLayout()
        self.add_button = push_button(add[0], add[1], self._on_add)
        row.addWidget(self.add_button)
        self.browse_button: QPushButton | None = None
        if browse:
            self.browse_button = push_button(
                "&Browse…", "Pick a folder", self.browse_requested.emit
            )
            row.addWidget(self.browse_button)
        self.remove_button = push_button(remove[0], remove[1], self._on_remove)
        row.addWidget(self.remove_button)
        row.addStretch(1)
        column.addLayout(row)
        self._update_buttons()

    def set_items(self, texts: tuple[str, ...]) -> None:
        self.list.clear()
        self.list.addItems(list(texts))
        self._update_buttons()

    def items(self) -> tuple[str, ...]:
        return tuple(self.list.item(row).text() for row in range(self.list.count()))

    @Slot()
    def _update_buttons(self) -> None:
        self.remove_button.setEnabled(self.isEnabled() and bool(self.list.selectedItems()))

    @Slot()
    def _on_add(self) -> None:
        text = self.edit.text().strip()
        if text:
            self.add_requested.emit(text)

    @Slot()
    def _on_remove(self) -> None:
        selected = self.list.selectedItems()
        if selected:
            self.remove_requested.emit(selected[0].text())


class PermissionsPage(QWidget):
    """The sandbox: what commands get, and one workspace's additions.

    Signals:
        sandbox_changed(int): a workspace's settings were saved here (its id).
    """

    sandbox_changed = Signal(int)

    def __init__(
        self,
        service: SandboxBook,
        *,
        workspaces: Workspaces | None = None,
        current_workspace: Callable[[], str | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self._workspaces = workspaces or dict
        self._current = current_workspace or (lambda: None)
        self.tasks = WidgetTasks(self)
        self.overview: SandboxOverview | None = None
        self._load_started = False
        self._all_hidden = False
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QScrollArea.Shape.NoFrame)
        body = QWidget()
        column = QVBoxLayout(body)
        column.addWidget(self._build_summary())
        column.addWidget(self._build_workspace())
        column.addStretch(1)
        self.scroll_area.setWidget(body)
        outer.addWidget(self.scroll_area)

    # --- construction ----------------------------------------------------------------------

    def _build_summary(self) -> QWidget:
        group = QGroupBox("What every command gets")
        group.setToolTip(
            "Every command the agent runs is held in the sandbox, in every mode: what the "
            "permission check misreads, the sandbox still holds."
        )
        form = QFormLayout(group)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.status_label = self._value_label("Sandbox status")
        self.status_label.setText("Checking the sandbox…")
        self.writable_label = self._value_label("Writable")
        self.read_only_label = self._value_label("Read-only inside the workspace")
        self.hidden_label = self._value_label("Hidden")
        self.network_label = self._value_label("Network")
        form.addRow(bold_label("Sandbox:"), self.status_label)
        form.addRow(bold_label("Writable:"), self.writable_label)
        form.addRow(bold_label("Read-only inside:"), self.read_only_label)
        hidden = QHBoxLayout()
        hidden.addWidget(self.hidden_label, 1)
        self.hidden_button = push_button(
            "Show &all", "Show all hidden paths", self._on_hidden_button_clicked
        )
        self.hidden_button.hide()
        hidden.addWidget(self.hidden_button, 0, Qt.AlignmentFlag.AlignTop)
        form.addRow(bold_label("Hidden:"), hidden)
        form.addRow(bold_label("Network:"), self.network_label)
        return group

    def _build_workspace(self) -> QWidget:
        group = QGroupBox("What one workspace adds")
        column = QVBoxLayout(group)
        row = QHBoxLayout()
        label = QLabel("&Workspace:")
        self.workspace_combo = QComboBox()
        self.workspace_combo.setAccessibleName("Workspace")
        self.workspace_combo.currentIndexChanged.connect(self._on_workspace_combo_changed)
        label.setBuddy(self.workspace_combo)
        row.addWidget(label)
        row.addWidget(self.workspace_combo, 1)
        column.addLayout(row)
        lists = QHBoxLayout()
        self.paths = EditableList(
            "Writable pa&ths:",
            "~/.cache/pip or /opt/cache",
            ("Add pat&h", "Add writable path"),
            ("Re&move path", "Remove writable path"),
            browse=True,
        )
        self.paths.add_requested.connect(self._on_paths_add_requested)
        self.paths.remove_requested.connect(self._on_paths_remove_requested)
        self.paths.browse_requested.connect(self._on_paths_browse_requested)
        lists.addWidget(self.paths, 1)
        self.variables = EditableList(
            "&Variables passed on:",
            "PIP_CACHE_DIR",
            ("Add variab&le", "Add variable"),
            ("Remove var&iable", "Remove variable"),
        )
        self.variables.add_requested.connect(self._on_variables_add_requested)
        self.variables.remove_requested.connect(self._on_variables_remove_requested)
        self.variables.edit.textChanged.connect(self._on_variable_edit_changed)
        lists.addWidget(self.variables, 1)
        column.addLayout(lists)
        self.warning_label = QLabel()
        self.warning_label.setWordWrap(True)
        self.warning_label.setAccessibleName("Warnings")
        self.warning_label.setStyleSheet(f"color: {css(Role.WARNING)};")
        self.warning_label.hide()
        column.addWidget(self.warning_label)
        self.network_check = QCheckBox("Commands may use the networ&k in auto mode")
        self.network_check.setAccessibleName("Commands may use the network in auto mode")
        self.network_check.toggled.connect(self._on_network_check_toggled)
        column.addWidget(self.network_check)
        column.addWidget(
            hint_label(
                "For tools' caches (~/.cache/pip, ~/.npm, ~/.cargo/registry). Hidden paths stay "
                "hidden and .git read-only whatever is listed; variables keep fxdesk's value.",
                wrap=True,
            )
        )
        self.problem = problem_label("Problem")
        column.addWidget(self.problem)
        self._editors: tuple[QWidget, ...] = (self.paths, self.variables, self.network_check)
        return group

    @staticmethod
    def _value_label(name: str) -> QLabel:
        label = QLabel()
        label.setWordWrap(True)
        label.setAccessibleName(name)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        return label

    # --- reading ---------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._load_started:
            self._load_started = True
            self._fill_workspaces()
            self.tasks.spawn(self.reload(), "permissions-load")

    def _fill_workspaces(self) -> None:
        """The known workspaces, the current session's first."""
        known = dict(self._workspaces())
        current = self._current()
        order = sorted(known, key=lambda key: (key != current, known[key]))
        self.workspace_combo.blockSignals(True)
        self.workspace_combo.clear()
        for key in order:
            self.workspace_combo.addItem(_with_tilde(known[key]), int(key))
        self.workspace_combo.blockSignals(False)
        self.workspace_combo.setEnabled(bool(order))
        if not order:
            self.workspace_combo.addItem(NO_WORKSPACE, None)

    def workspace_id(self) -> int | None:
        """The workspace being edited (None when there is none)."""
        value = self.workspace_combo.currentData()
        return value if isinstance(value, int) else None

    async def reload(self) -> None:
        """Read the overview of the chosen workspace again and show it."""
        self._load_started = True
        try:
            overview = await self.service.sandbox_overview(self.workspace_id())
        except StoreError as exc:
            if alive(self):
                show_problem(self.problem, exc.user_message)
            return
        if alive(self):
            self.show_overview(overview)

    def show_overview(self, overview: SandboxOverview) -> None:
        self.overview = overview
        available = overview.status.available
        self.status_label.setText(status_text(overview.status))
        self.status_label.setStyleSheet("" if available else f"color: {css(Role.WARNING)};")
        self.writable_label.setText(", ".join(overview.writable))
        self.read_only_label.setText(", ".join(overview.read_only))
        self._show_hidden()
        self.network_label.setText(overview.network[:1].upper() + overview.network[1:] + ".")
        has_workspace = self.workspace_id() is not None
        for editor in self._editors:
            editor.setEnabled(has_workspace)
        self.paths.set_items(overview.settings.writable)
        self.variables.set_items(overview.settings.extra_env)
        self.network_check.blockSignals(True)
        self.network_check.setChecked(overview.settings.network)
        self.network_check.blockSignals(False)
        self._show_warnings()
        self._fit_window()

    def _fit_window(self) -> None:
        """Make the window tall enough to show the whole page when the screen has room; the
        page scrolls otherwise (wrapped lines need more height than Qt asks of a window)."""
        body = self.scroll_area.widget()
        viewport = self.scroll_area.viewport()
        if not self.isVisible() or body is None:
            return
        wanted = body.heightForWidth(viewport.width())
        missing = (wanted if wanted > 0 else body.sizeHint().height()) - viewport.height()
        window = self.window()
        if missing > 0 and window is not self:
            room = window.screen().availableGeometry().height() - window.frameGeometry().height()
            window.resize(window.width(), window.height() + min(missing, max(room, 0)))

    def _show_hidden(self) -> None:
        hidden = self.overview.hidden if self.overview is not None else ()
        more = len(hidden) - HIDDEN_SHOWN
        if self._all_hidden or more <= 0:
            self.hidden_label.setText(", ".join(hidden))
        else:
            self.hidden_label.setText(f"{', '.join(hidden[:HIDDEN_SHOWN])} and {more} more")
        self.hidden_button.setVisible(more > 0)
        self.hidden_button.setText("Show &fewer" if self._all_hidden else "Show &all")

    def _show_warnings(self) -> None:
        """Refused paths and secret-looking names, saved or being typed."""
        lines: list[str] = []
        if self.overview is not None:
            lines += [f"Not made writable: {why}" for why in self.overview.refused]
            lines += list(self.overview.warnings())
            typed = self.variables.edit.text().strip()
            if typed and typed not in self.overview.settings.extra_env:
                warning = variable_warning(typed, self.overview.key_variables)
                lines += [warning] if warning else []
        self.warning_label.setText("\n".join(lines))
        self.warning_label.setVisible(bool(lines))

    # --- saving ----------------------------------------------------------------------------

    async def save(
        self,
        *,
        writable: tuple[str, ...] | None = None,
        extra_env: tuple[str, ...] | None = None,
        network: bool | None = None,
    ) -> bool:
        """Save the chosen workspace's settings with what is given changed; True when saved.
        Bad input is shown under the lists, and nothing changes then."""
        workspace_id = self.workspace_id()
        if workspace_id is None or self.overview is None:
            return False
        old = self.overview.settings
        for editor in self._editors:
            editor.setEnabled(False)
        try:
            settings = WorkspaceSandbox.make(
                old.writable if writable is None else writable,
                old.extra_env if extra_env is None else extra_env,
                old.network if network is None else network,
            )
            await self.service.set_workspace_sandbox(workspace_id, settings)
        except (SandboxSettingsError, StoreError) as exc:
            if alive(self):
                text = exc.user_message if isinstance(exc, StoreError) else str(exc)
                show_problem(self.problem, f"Not saved: {text}")
                self.show_overview(self.overview)  # back to what is saved
            return False
        if not alive(self):
            return True
        show_problem(self.problem, "")
        self.sandbox_changed.emit(workspace_id)
        await self.reload()
        return True

    async def add_path(self, path: str) -> None:
        if await self.save(writable=(*self.paths.items(), path)) and alive(self):
            self.paths.edit.clear()

    async def add_variable(self, name: str) -> None:
        if await self.save(extra_env=(*self.variables.items(), name)) and alive(self):
            self.variables.edit.clear()

    async def pick_folder(self) -> str:
        """A folder chosen in a folder picker (under the home folder written with ``~``);
        '' when cancelled."""
        dialog = QFileDialog(self, "Folder commands may write")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dialog.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        # Caches live in hidden folders (~/.cache, ~/.npm, ~/.cargo): list them.
        dialog.setFilter(dialog.filter() | QDir.Filter.Hidden)
        dialog.setDirectory(str(Path.home()))
        try:
            if await run_dialog(dialog) != QFileDialog.DialogCode.Accepted or not alive(self):
                return ""
            chosen = dialog.selectedFiles()
        finally:
            if alive(dialog):
                dialog.deleteLater()
        return _with_tilde(chosen[0]) if chosen else ""

    async def browse_and_add(self) -> None:
        folder = await self.pick_folder()
        if folder and alive(self):
            self.paths.edit.setText(folder)
            await self.add_path(folder)

    # --- slots -----------------------------------------------------------------------------

    @Slot()
    def _on_hidden_button_clicked(self) -> None:
        self._all_hidden = not self._all_hidden
        self._show_hidden()
        self._fit_window()

    @Slot(int)
    def _on_workspace_combo_changed(self, _index: int) -> None:
        show_problem(self.problem, "")
        self.tasks.spawn(self.reload(), "permissions-load")

    @Slot(str)
    def _on_paths_add_requested(self, path: str) -> None:
        self.tasks.spawn(self.add_path(path), "permissions-add-path")

    @Slot(str)
    def _on_paths_remove_requested(self, path: str) -> None:
        kept = tuple(p for p in self.paths.items() if p != path)
        self.tasks.spawn(self.save(writable=kept), "permissions-remove-path")

    @Slot()
    def _on_paths_browse_requested(self) -> None:
        self.tasks.spawn(self.browse_and_add(), "permissions-browse")

    @Slot(str)
    def _on_variables_add_requested(self, name: str) -> None:
        self.tasks.spawn(self.add_variable(name), "permissions-add-variable")

    @Slot(str)
    def _on_variables_remove_requested(self, name: str) -> None:
        kept = tuple(n for n in self.variables.items() if n != name)
        self.tasks.spawn(self.save(extra_env=kept), "permissions-remove-variable")

    @Slot(str)
    def _on_variable_edit_changed(self, _text: str) -> None:
        self._show_warnings()

    @Slot(bool)
    def _on_network_check_toggled(self, checked: bool) -> None:
        self.tasks.spawn(self.save(network=checked), "permissions-network")


def _with_tilde(folder: str) -> str:
    """``folder`` written from ``~`` when it is under the home folder."""
    home = str(Path.home()).rstrip("/")
    if folder == home or folder.startswith(home + os.sep):
        return "~" + folder[len(home) :]
    return folder
