"""The one Settings window of a run: opened on request, raised again while it is open, deleted
when it closes. Its signals reach the rest of the window through ``SettingsWindow``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QWidget

from fxdesk.engine.facade import ProfileService
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.gui.settings.permissions_page import SandboxBook
from fxdesk.gui.settings.rule_editor import Workspaces
from fxdesk.gui.settings.rules_page import RuleBook
from fxdesk.gui.settings.tools_page import McpBook


class SettingsWindow(QObject):
    """Opens the non-modal ``SettingsDialog`` over ``window``, one at a time.

    Args:
        profiles: the engine's profiles and settings.
        data_folder: shown on the Data tab.
        window: the main window (the dialog's parent).
        permissions: for the Rules tab.
        workspaces: workspace id -> folder, so the Rules tab can name workspaces.
        sandbox: for the Permissions tab.
        current_workspace: the current session's workspace id (offered first there).

    Signals:
        profiles_changed(): a profile was added, edited or removed, or the default changed.
        notifications_changed(bool): desktop notifications were turned on or off.
        modes_changed(): unrestricted mode was turned on or off.
    """

    profiles_changed = Signal()
    notifications_changed = Signal(bool)
    modes_changed = Signal()

    def __init__(
        self,
        profiles: ProfileService,
        data_folder: Path,
        window: QWidget,
        *,
        permissions: RuleBook,
        workspaces: Workspaces,
        sandbox: SandboxBook | None = None,
        current_workspace: Callable[[], str | None] | None = None,
        mcp: McpBook | None = None,
        subscribe: Callable[..., Callable[[], None]] | None = None,
    ) -> None:
        super().__init__(window)
        self._mcp = mcp
        self._subscribe = subscribe
        self._profiles = profiles
        self._data_folder = data_folder
        self._window = window
        self._permissions = permissions
        self._workspaces = workspaces
        self._sandbox = sandbox
        self._current_workspace = current_workspace
        self.dialog: SettingsDialog | None = None  # while it is open

    def open(self, *, permissions_page: bool = False) -> None:
        """Show the Settings window (built on first use), raised and active; on the
        Permissions page when asked (the no-sandbox notice's Details)."""
        if self.dialog is None:
            self.dialog = SettingsDialog(
                self._profiles,
                self._data_folder,
                self._window,
                permissions=self._permissions,
                workspaces=self._workspaces,
                sandbox=self._sandbox,
                current_workspace=self._current_workspace,
                mcp=self._mcp,
                subscribe=self._subscribe,
            )
            self.dialog.profiles_changed.connect(self.profiles_changed)
            self.dialog.notifications_changed.connect(self.notifications_changed)
            self.dialog.modes_changed.connect(self.modes_changed)
            self.dialog.finished.connect(self._on_dialog_finished)
        if permissions_page and self.dialog.permissions_page is not None:
            self.dialog.tabs.setCurrentWidget(self.dialog.permissions_page)
        self.dialog.show()
        self.dialog.raise_()
        self.dialog.activateWindow()

    @Slot(str)
    def edit_profile(self, name: str) -> None:
        """Settings, with the profile ``name`` open for editing ('' for the list alone)."""
        self.open()
        dialog = self.dialog
        if dialog is not None and name:
            dialog.tasks.spawn(dialog.edit_profile(name), "edit-profile")

    @Slot(int)
    def _on_dialog_finished(self, _code: int) -> None:
        if self.dialog is not None:
            self.dialog.deleteLater()
            self.dialog = None
