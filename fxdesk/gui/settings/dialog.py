"""The Settings window: model profiles, defaults for new sessions, appearance, notifications, the
data folder, (given a ``RuleBook``) the permission rules and (given a ``SandboxBook``) the
sandbox of commands.

It is non-modal and reads everything through ``ProfileService`` after it is built (``load``,
started on first show). Changes are stored as they are made; there is no OK button to forget.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices, QFont, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.model import KeySource, PermissionMode, Profile
from fxdesk.engine.facade import ProfileService, StoreError
from fxdesk.gui.settings.mode_group import ModeGroup
from fxdesk.gui.settings.permissions_page import PermissionsPage, SandboxBook
from fxdesk.gui.settings.profile_dialog import ProfileDialog
from fxdesk.gui.settings.rule_editor import Workspaces
from fxdesk.gui.settings.rules_page import RuleBook, RulesPage
from fxdesk.gui.settings.tools_page import McpBook, ToolsPage
from fxdesk.gui.tasks import WidgetTasks, alive, run_dialog
from fxdesk.gui.theme import apply_appearance
from fxdesk.gui.widgets import confirm, hint_label, push_button, show_outcome
from fxdesk.providers.demo import DEMO_SCRIPT

APPEARANCE_LABELS = {"system": "Follow the system", "light": "Light", "dark": "Dark"}
ROLE_NAME = Qt.ItemDataRole.UserRole  # the profile name of a list item


def describe(profile: Profile) -> str:
    """One line saying what a profile connects to, for lists."""
    if profile.kind == "scripted":
        script = profile.script_path
        return "offline demo agent" if script in (None, DEMO_SCRIPT) else f"scripted: {script}"
    if profile.kind == "acp":
        return " ".join(["external agent (ACP):", profile.command or "?", *profile.args])
    kind = "Anthropic" if profile.kind == "anthropic" else "OpenAI-compatible"
    parts = [kind, profile.model or "no model"]
    if profile.base_url:
        parts.append(urlsplit(profile.base_url).netloc or profile.base_url)
    if profile.key_source == KeySource.ENV:
        parts.append(f"key from ${profile.key_env}")
    elif profile.key_source == KeySource.NONE:
        parts.append("no key")
    return " · ".join(parts)


class SettingsDialog(QDialog):
    """fxdesk's settings, in tabs: Profiles, General, Rules (only given ``permissions``),
    Permissions (only given ``sandbox``), Tools (MCP servers; only given ``mcp``) and Data.

    ``workspaces`` (workspace id -> folder) lets the Rules tab name workspaces by their folder
    and the Permissions tab offer them; ``current_workspace`` (the current session's, or None)
    comes first there.

    Signals:
        appearance_changed(str): "system", "light" or "dark", chosen here (already applied to the
            application and being stored).
        profiles_changed(): a profile was added, edited or removed, or the default changed.
        notifications_changed(bool): desktop notifications were turned on or off here.
        modes_changed(): unrestricted mode was turned on or off here (stored).
    """

    appearance_changed = Signal(str)
    profiles_changed = Signal()
    notifications_changed = Signal(bool)
    modes_changed = Signal()

    def __init__(
        self,
        service: ProfileService,
        data_folder: Path,
        parent: QWidget | None = None,
        *,
        permissions: RuleBook | None = None,
        workspaces: Workspaces | None = None,
        sandbox: SandboxBook | None = None,
        current_workspace: Callable[[], str | None] | None = None,
        mcp: McpBook | None = None,
        subscribe: Callable[..., Callable[[], None]] | None = None,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self.data_folder = data_folder
        self.rules_page: RulesPage | None = None
        self.permissions_page: PermissionsPage | None = None
        self.tasks = WidgetTasks(self)
        self._load_started = False
        self._loading = False
        self._profiles: dict[str, Profile] = {}
        self._default: str | None = None
        self._testing = False
        self.setWindowTitle("Settings")
        self.setModal(False)
        self.resize(720, 460)
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Settings pages")
        self.tabs.addTab(self._build_profiles_page(), "&Profiles")
        self.tabs.addTab(self._build_general_page(), "&General")
        if permissions is not None:
            self.rules_page = RulesPage(permissions, workspaces=workspaces)
            self.tabs.addTab(self.rules_page, "R&ules")
        if sandbox is not None:
            self.permissions_page = PermissionsPage(
                sandbox, workspaces=workspaces, current_workspace=current_workspace
            )
            self.tabs.addTab(self.permissions_page, "Permi&ssions")
        self.tools_page: ToolsPage | None = None
        if mcp is not None:
            self.tools_page = ToolsPage(mcp, subscribe)
            self.tabs.addTab(self.tools_page, "&Tools")
        self.tabs.addTab(self._build_data_page(), "&Data")
        layout.addWidget(self.tabs)
        self._page_keys()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close = buttons.button(QDialogButtonBox.StandardButton.Close)
        close.setAccessibleName("Close")
        close.setAutoDefault(False)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)

    def _page_keys(self) -> None:
        """Ctrl+Tab / Ctrl+PgDown and back, wherever the keyboard is in the dialog: a list, a
        table or a text box takes those keys for itself before the tab bar sees them."""
        for keys, step in (
            ((QKeySequence.StandardKey.NextChild, "Ctrl+PgDown"), 1),
            ((QKeySequence.StandardKey.PreviousChild, "Ctrl+PgUp"), -1),
        ):
            for key in keys:
                shortcut = QShortcut(QKeySequence(key), self)
                shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                shortcut.activated.connect(lambda step=step: self._turn_page(step))

    def _turn_page(self, step: int) -> None:
        count = self.tabs.count()
        self.tabs.setCurrentIndex((self.tabs.currentIndex() + step) % count)

    # --- pages ---------------------------------------------------------------------------

    def _build_profiles_page(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        intro = QLabel(
            "A profile says which model sessions talk to and where its key comes from. "
            "New sessions use the default profile."
        )
        intro.setWordWrap(True)
        column.addWidget(intro)
        row = QHBoxLayout()
        self.profile_list = QListWidget()
        self.profile_list.setAccessibleName("Profiles")
        self.profile_list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.profile_list.setStyleSheet("QListWidget::item { padding: 3px 2px; }")
        # Long lines wrap instead of hiding behind a horizontal scroll bar.
        self.profile_list.setWordWrap(True)
        self.profile_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.profile_list.itemSelectionChanged.connect(self._on_profile_list_selection_changed)
        self.profile_list.itemActivated.connect(self._on_profile_list_activated)
        row.addWidget(self.profile_list, 1)
        buttons = QVBoxLayout()
        self.add_button = push_button("&Add…", "Add a profile", self._on_add_button_clicked)
        self.edit_button = push_button("&Edit…", "Edit profile", self._on_edit_button_clicked)
        self.remove_button = push_button(
            "&Remove", "Remove profile", self._on_remove_button_clicked
        )
        self.default_button = push_button(
            "Set as de&fault", "Set as default profile", self._on_default_button_clicked
        )
        self.test_button = push_button("&Test", "Test profile", self._on_test_button_clicked)
        for button in (
            self.add_button,
            self.edit_button,
            self.remove_button,
            self.default_button,
            self.test_button,
        ):
            buttons.addWidget(button)
        buttons.addStretch(1)
        row.addLayout(buttons)
        column.addLayout(row, 1)
        self.profile_status = QLabel()
        self.profile_status.setWordWrap(True)
        self.profile_status.setAccessibleName("Profile status")
        self.profile_status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column.addWidget(self.profile_status)
        delete = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.profile_list)
        delete.activated.connect(self._on_remove_button_clicked)
        self._update_buttons()
        return page

    def _build_general_page(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        self.mode_group = ModeGroup()
        self.mode_buttons = self.mode_group.buttons
        self.mode_group.mode_chosen.connect(self._on_mode_group_mode_chosen)
        self.mode_group.unrestricted_toggled.connect(self._on_mode_group_unrestricted_toggled)
        column.addWidget(self.mode_group)
        form = QFormLayout()
        self.appearance_combo = QComboBox()
        self.appearance_combo.setAccessibleName("Appearance")
        for value, label in APPEARANCE_LABELS.items():
            self.appearance_combo.addItem(label, value)
        self.appearance_combo.currentIndexChanged.connect(self._on_appearance_combo_changed)
        form.addRow("&Appearance:", self.appearance_combo)
        self.notifications_check = QCheckBox("When sessions finish, fail or need an approval")
        self.notifications_check.setAccessibleName("Desktop notifications")
        self.notifications_check.setToolTip("Only while you are not looking at fxdesk")
        self.notifications_check.toggled.connect(self._on_notifications_check_toggled)
        form.addRow("&Notify me:", self.notifications_check)
        column.addSpacing(6)
        column.addLayout(form)
        self.general_status = QLabel()
        self.general_status.setWordWrap(True)
        self.general_status.setAccessibleName("General settings status")
        column.addWidget(self.general_status)
        column.addStretch(1)
        return page

    def _build_data_page(self) -> QWidget:
        page = QWidget()
        column = QVBoxLayout(page)
        form = QFormLayout()
        folder = QWidget()
        row = QHBoxLayout(folder)
        row.setContentsMargins(0, 0, 0, 0)
        self.folder_edit = QLineEdit(str(self.data_folder))
        self.folder_edit.setReadOnly(True)
        self.folder_edit.setAccessibleName("Data folder")
        self.folder_edit.setCursorPosition(0)
        row.addWidget(self.folder_edit, 1)
        self.open_button = QPushButton("&Open folder")
        self.open_button.setAccessibleName("Open data folder")
        self.open_button.setAutoDefault(False)
        self.open_button.clicked.connect(self._on_open_button_clicked)
        row.addWidget(self.open_button)
        folder.setFocusProxy(self.folder_edit)
        form.addRow("Data &folder:", folder)
        note = hint_label(
            "Sessions, their history, logs and crash reports live here. To back them up, "
            "copy the folder while fxdesk is closed.",
            wrap=True,
        )
        form.addRow("", note)
        self.keyring_label = QLabel("…")
        self.keyring_label.setWordWrap(True)
        self.keyring_label.setAccessibleName("Where API keys are kept")
        form.addRow("API keys:", self.keyring_label)
        column.addLayout(form)
        column.addStretch(1)
        return page

    # --- loading -------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._load_started:
            self.tasks.spawn(self.load(), "settings-load")

    async def load(self) -> None:
        """Read the profiles and settings and show them."""
        self._load_started = True
        try:
            mode = await self.service.default_permission_mode()
            unrestricted = await self.service.unrestricted_enabled()
            appearance = await self.service.appearance()
            notifications = await self.service.notifications_enabled()
            keyring = await self.service.keyring_status()
        except StoreError as exc:
            if alive(self):
                self.general_status.setText(exc.user_message)
            return
        if not alive(self):
            return
        self._loading = True
        try:
            self.mode_group.set_values(mode, unrestricted)
            self.appearance_combo.setCurrentIndex(self.appearance_combo.findData(appearance))
            self.notifications_check.setChecked(notifications)
        finally:
            self._loading = False
        if not keyring.usable:
            self.keyring_label.setText(keyring.detail)
        elif keyring.encrypted:
            self.keyring_label.setText(f"In the system keyring ({keyring.label}).")
        else:
            self.keyring_label.setText(
                f"In a keyring that is not encrypted ({keyring.label}): anyone who can read "
                "your files can read them."
            )
        self.keyring_label.setToolTip(keyring.backend)  # the class, for a bug report
        await self.reload_profiles()

    async def reload_profiles(self, select: str | None = None) -> None:
        """Re-read the profile list, keeping (or moving to ``select``) the selection."""
        try:
            profiles = await self.service.list()
            default = await self.service.default_name()
        except StoreError as exc:
            if alive(self):
                self._show_status(False, exc.user_message)
            return
        if not alive(self):
            return
        keep = select or self.selected_name()
        self._profiles = {p.name: p for p in profiles}
        self._default = default
        self.profile_list.clear()
        for profile in profiles:
            is_default = profile.name == default
            text = f"{profile.name} — {describe(profile)}"
            item = QListWidgetItem(f"{text}   ★ default" if is_default else text)
            item.setData(ROLE_NAME, profile.name)
            item.setToolTip(describe(profile))
            if is_default:
                font = QFont(item.font())
                font.setBold(True)
                item.setFont(font)
            self.profile_list.addItem(item)
            if profile.name == keep:
                self.profile_list.setCurrentItem(item)
        if self.profile_list.currentItem() is None and self.profile_list.count():
            self.profile_list.setCurrentRow(0)
        if not profiles:
            self._show_status(None, "No profiles yet: add one to let sessions talk to a model.")
        self._update_buttons()

    # --- profile actions -----------------------------------------------------------------

    def selected_name(self) -> str | None:
        item = self.profile_list.currentItem()
        return str(item.data(ROLE_NAME)) if item is not None and item.isSelected() else None

    async def add_profile(self) -> None:
        """Ask for a new profile in a sub-dialog and save it."""
        await self._run_profile_dialog(None)

    async def edit_profile(self, name: str) -> None:
        """Edit the profile ``name`` in a sub-dialog."""
        profile = await self.service.get(name)
        if not alive(self):
            return
        if profile is None:
            await self.reload_profiles()
            return
        await self._run_profile_dialog(profile)

    async def _run_profile_dialog(self, profile: Profile | None) -> None:
        dialog = ProfileDialog(self.service, profile, taken=self._profiles, parent=self)
        try:
            accepted = await run_dialog(dialog) == QDialog.DialogCode.Accepted
            saved = dialog.saved_name
        finally:
            if alive(dialog):
                dialog.deleteLater()
        if accepted and saved and alive(self):
            self._show_status(True, f"Saved the profile “{saved}”.")
            await self.reload_profiles(select=saved)
            self.profiles_changed.emit()

    async def remove_profile(self, name: str) -> bool:
        """Remove ``name`` after asking; True when removed."""
        question = f"Remove the profile “{name}”?"
        profile = self._profiles.get(name)
        if profile is not None and profile.key_source == KeySource.KEYRING:
            question += " Its API key is deleted from the keyring too."
        if name == self._default:
            question += " It is the default profile: new sessions will need another one."
        if not await confirm(self, "Remove profile", question, "Remove"):
            return False
        try:
            removed = await self.service.remove(name)
        except StoreError as exc:
            if alive(self):
                self._show_status(False, exc.user_message)
            return False
        if alive(self):
            self._show_status(True, f"Removed the profile “{name}”.")
            await self.reload_profiles()
            self.profiles_changed.emit()
        return removed

    async def set_default(self, name: str) -> None:
        """Make ``name`` the default profile of new sessions."""
        try:
            await self.service.set_default(name)
        except StoreError as exc:
            if alive(self):
                self._show_status(False, exc.user_message)
            return
        if alive(self):
            self._show_status(True, f"New sessions use “{name}”.")
            await self.reload_profiles()
            self.profiles_changed.emit()

    async def test_profile(self, name: str) -> None:
        """Test ``name`` with one tiny request and show what happened."""
        profile = self._profiles.get(name)
        if profile is None:
            return
        self._testing = True
        self.test_button.setEnabled(False)
        self._show_status(None, f"Testing “{name}”…")
        try:
            result = await self.service.test(profile)
        finally:
            if alive(self):
                self._testing = False
                self._update_buttons()
        if alive(self):
            self._show_status(result.ok, f"{name}: {result.message}")

    def _show_status(self, ok: bool | None, text: str) -> None:
        show_outcome(self.profile_status, ok, text)

    def _update_buttons(self) -> None:
        name = self.selected_name()
        for button in (self.edit_button, self.remove_button):
            button.setEnabled(name is not None)
        self.test_button.setEnabled(name is not None and not self._testing)
        self.default_button.setEnabled(name is not None and name != self._default)

    # --- general actions -----------------------------------------------------------------

    async def set_permission_mode(self, mode: PermissionMode) -> None:
        """Store the permission mode new sessions start with."""
        try:
            await self.service.set_default_permission_mode(mode)
        except StoreError as exc:
            if alive(self):
                self.general_status.setText(exc.user_message)

    async def set_unrestricted(self, enabled: bool) -> None:
        """Offer unrestricted mode (no sandbox) or stop offering it; the pickers follow."""
        try:
            await self.service.set_unrestricted_enabled(enabled)
        except StoreError as exc:
            if alive(self):
                self.general_status.setText(exc.user_message)
            return
        self.modes_changed.emit()

    async def set_appearance(self, appearance: str) -> None:
        """Apply ``appearance`` to the application now and store it."""
        self._apply_appearance(appearance)
        await self._store_appearance(appearance)

    def _apply_appearance(self, appearance: str) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_appearance(app, appearance)
        self.appearance_changed.emit(appearance)

    async def _store_appearance(self, appearance: str) -> None:
        try:
            await self.service.set_appearance(appearance)
        except StoreError as exc:
            if alive(self):
                self.general_status.setText(exc.user_message)

    async def set_notifications(self, enabled: bool) -> None:
        """Turn desktop notifications on or off, now and for the next start."""
        self.notifications_changed.emit(enabled)
        try:
            await self.service.set_notifications_enabled(enabled)
        except StoreError as exc:
            if alive(self):
                self.general_status.setText(exc.user_message)

    # --- slots ---------------------------------------------------------------------------

    @Slot()
    def _on_profile_list_selection_changed(self) -> None:
        self._update_buttons()

    @Slot(QListWidgetItem)
    def _on_profile_list_activated(self, item: QListWidgetItem) -> None:
        self.tasks.spawn(self.edit_profile(str(item.data(ROLE_NAME))), "settings-edit")

    @Slot()
    def _on_add_button_clicked(self) -> None:
        self.tasks.spawn(self.add_profile(), "settings-add")

    @Slot()
    def _on_edit_button_clicked(self) -> None:
        if name := self.selected_name():
            self.tasks.spawn(self.edit_profile(name), "settings-edit")

    @Slot()
    def _on_remove_button_clicked(self) -> None:
        if name := self.selected_name():
            self.tasks.spawn(self.remove_profile(name), "settings-remove")

    @Slot()
    def _on_default_button_clicked(self) -> None:
        if name := self.selected_name():
            self.tasks.spawn(self.set_default(name), "settings-default")

    @Slot()
    def _on_test_button_clicked(self) -> None:
        if name := self.selected_name():
            self.test_button.setEnabled(False)  # until the result is in
            self.tasks.spawn(self.test_profile(name), "settings-test")

    @Slot(object)
    def _on_mode_group_mode_chosen(self, mode: PermissionMode) -> None:
        if not self._loading:
            self.tasks.spawn(self.set_permission_mode(mode), "settings-mode")

    @Slot(bool)
    def _on_mode_group_unrestricted_toggled(self, enabled: bool) -> None:
        if not self._loading:
            self.tasks.spawn(self.set_unrestricted(enabled), "settings-unrestricted")

    @Slot()
    def _on_appearance_combo_changed(self) -> None:
        if not self._loading:
            value = str(self.appearance_combo.currentData())
            self._apply_appearance(value)  # at once; storing it can follow
            self.tasks.spawn(self._store_appearance(value), "settings-appearance")

    @Slot(bool)
    def _on_notifications_check_toggled(self, checked: bool) -> None:
        if not self._loading:
            self.tasks.spawn(self.set_notifications(checked), "settings-notifications")

    @Slot()
    def _on_open_button_clicked(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.data_folder)))
