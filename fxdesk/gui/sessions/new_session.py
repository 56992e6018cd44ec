"""The "New session" dialog (a workspace folder, a name, a model profile, a permission mode and
whether it runs in a git worktree of its own) and ``ask_new_session``, the flow that creates the
session from it."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from fxdesk import messages
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.facade import Engine, InvalidWorkspace, StoreError, WorktreeError
from fxdesk.gui.sessions import modes
from fxdesk.gui.tasks import run_dialog


class NewSessionDialog(QDialog):
    """Asks where and how to start a session. ``values()`` after ``accepted``."""

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        folder: str = "",
        recent: list[str] | None = None,
        mode: PermissionMode = PermissionMode.ASK,
        profiles: list[str] | None = None,
        default_profile: str | None = None,
        unrestricted: bool = False,
        worktree_defaults: dict[str, bool] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("New session")
        self.setMinimumWidth(560)
        form = QFormLayout(self)
        row = QHBoxLayout()
        self.folder_edit = QLineEdit(folder)
        self.folder_edit.setPlaceholderText("/path/to/your/project")
        self.folder_edit.setAccessibleName("Workspace folder")
        self.folder_edit.textChanged.connect(self._validate)
        # The folders of earlier sessions, latest first: typing a few letters of one, or Down in
        # an empty field, offers them.
        self.recent = list(dict.fromkeys(recent or []))
        completer = QCompleter(self.recent, self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.folder_edit.setCompleter(completer)
        self.folder_edit.selectAll()
        row.addWidget(self.folder_edit, 1)
        browse = QPushButton("&Browse…")
        browse.clicked.connect(self._on_browse_clicked)
        row.addWidget(browse)
        # A row that is a layout gets no buddy from QFormLayout, and its label would show the
        # "&" instead of making Alt+W a way to the folder field.
        folder_label = QLabel("&Workspace folder:")
        folder_label.setBuddy(self.folder_edit)
        form.addRow(folder_label, row)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("New session")
        self.name_edit.setAccessibleName("Session name")
        form.addRow("&Name:", self.name_edit)
        self.profile_combo = QComboBox()
        self.profile_combo.setAccessibleName("Model profile")
        default_label = f"Default profile ({default_profile})" if default_profile else "Default"
        self.profile_combo.addItem(default_label, "")
        for name in profiles or []:
            self.profile_combo.addItem(name, name)
        form.addRow("&Model profile:", self.profile_combo)
        self.mode_combo = QComboBox()
        self.mode_combo.setAccessibleName("Permission mode")
        self.mode_combo.setToolTip(modes.TIP)
        offered = modes.offered(unrestricted)
        modes.fill(self.mode_combo, offered, modes.LABELS)
        self.mode_combo.setCurrentIndex(max(self.mode_combo.findData(mode.value), 0))
        modes.colour(self.mode_combo)
        self.mode_combo.currentIndexChanged.connect(self._on_mode_combo_changed)
        form.addRow("&Permissions:", self.mode_combo)
        # Per workspace folder: whether its sessions get a worktree unless told (a setting).
        self.worktree_defaults = dict(worktree_defaults or {})
        self.worktree_box = QCheckBox("Run in its own git &worktree (a new branch from HEAD)")
        self.worktree_box.setToolTip(
            "The agent works on a branch in a separate folder; your checkout stays as it is "
            "until you merge (Session → Worktree). Needs a git repository with a commit."
        )
        self.remember_box = QCheckBox("Make this the default for this &folder")
        form.addRow(self.worktree_box)
        form.addRow(self.remember_box)
        self.folder_edit.textChanged.connect(self._on_folder_edit_changed)
        self._on_folder_edit_changed()
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        form.addRow(self.problem)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setText("Start session")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self._validate()

    def values(self) -> tuple[str, str, PermissionMode, str | None]:
        """Folder, name, permission mode, and profile name (None: the default profile)."""
        return (
            self.folder_edit.text().strip(),
            self.name_edit.text().strip(),
            PermissionMode(self.mode_combo.currentData()),
            self.profile_combo.currentData() or None,
        )

    def worktree(self) -> tuple[bool, bool]:
        """(run in a worktree, make that the folder's default)."""
        return self.worktree_box.isChecked(), self.remember_box.isChecked()

    @Slot()
    def _on_folder_edit_changed(self) -> None:
        folder = self.folder_edit.text().strip()
        self.worktree_box.setChecked(self.worktree_defaults.get(folder, False))

    def show_problem(self, text: str) -> None:
        self.problem.setText(text)

    @Slot()
    def _validate(self) -> None:
        text = self.folder_edit.text().strip()
        ok = bool(text) and Path(text).expanduser().is_dir()
        self.problem.setText("" if ok or not text else "That folder does not exist.")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)

    @Slot()
    def _on_mode_combo_changed(self) -> None:
        modes.colour(self.mode_combo)

    @Slot()
    def _on_browse_clicked(self) -> None:
        folder = QFileDialog.getExistingDirectory(
            self, "Choose the project folder", self.folder_edit.text() or str(Path.home())
        )
        if folder:
            self.folder_edit.setText(folder)


async def ask_new_session(
    parent: QWidget, engine: Engine, *, workspace_id: int | None = None
) -> str | None:
    """Ask where and how to start a session (window-modally over ``parent``) and create it; a
    folder that cannot be a workspace is said in the dialog, which stays open. The folder is
    that of ``workspace_id`` (the open session's) to begin with, and the folders of earlier
    sessions are offered. The new session's id, or None when none was made."""
    profiles = engine.profiles
    catalog = await engine.catalog()
    paths = {w.id: w.path for w in catalog.workspaces}
    latest = sorted(catalog.sessions, key=lambda s: s.updated_at_ms, reverse=True)
    recent = [paths[s.workspace_id] for s in latest if s.workspace_id in paths]
    recent += [w.path for w in catalog.workspaces]  # workspaces without sessions last
    dialog = NewSessionDialog(
        parent,
        folder=paths.get(workspace_id, "") if workspace_id is not None else "",
        recent=recent,
        mode=await profiles.default_permission_mode(),
        profiles=[p.name for p in await profiles.list()],
        default_profile=await profiles.default_name(),
        unrestricted=await profiles.unrestricted_enabled(),
        worktree_defaults={w.path: await engine.worktree_default(w.id) for w in catalog.workspaces},
    )
    try:
        while await run_dialog(dialog) == NewSessionDialog.DialogCode.Accepted:
            folder, name, mode, profile = dialog.values()
            worktree, remember = dialog.worktree()
            try:
                if remember:
                    workspace = await engine.ensure_workspace(folder)
                    await engine.set_worktree_default(workspace.id, worktree)
                created = await engine.create_session(
                    folder, name=name, permission_mode=mode, profile=profile, worktree=worktree
                )
            except (InvalidWorkspace, WorktreeError) as exc:
                dialog.show_problem(str(exc))
                continue
            except StoreError as exc:
                messages.error(exc.user_message, key="store")
                return None
            return created.id
        return None
    finally:
        dialog.deleteLater()
