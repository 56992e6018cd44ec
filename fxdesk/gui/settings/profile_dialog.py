"""The dialog that adds or edits one model profile (Settings → Profiles → Add / Edit)."""

from __future__ import annotations

from collections.abc import Collection

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QCheckBox, QDialog, QDialogButtonBox, QVBoxLayout, QWidget

from fxdesk.domain.model import Profile
from fxdesk.engine.facade import ProfileService
from fxdesk.gui.settings.profile_form import ProfileForm
from fxdesk.gui.settings.setup_dialog import save_profile
from fxdesk.gui.tasks import WidgetTasks, alive


class ProfileDialog(QDialog):
    """Adds a profile, or edits one (``profile`` given), and saves it when "Save" is pressed."""

    def __init__(
        self,
        service: ProfileService,
        profile: Profile | None = None,
        *,
        taken: Collection[str] = (),
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.service = service
        self.tasks = WidgetTasks(self)
        self.taken = set(taken)
        self.saved_name: str | None = None
        self.setWindowTitle(f"Edit profile “{profile.name}”" if profile else "Add a profile")
        self.setMinimumWidth(600)
        layout = QVBoxLayout(self)
        self.form = ProfileForm(service)
        if profile is not None:
            self.form.set_profile(profile)
        layout.addWidget(self.form)
        self.default_check = QCheckBox("Use as the &default profile")
        self.default_check.setAccessibleName("Use as the default profile")
        self.default_check.setVisible(profile is None)
        layout.addWidget(self.default_check)
        layout.addStretch(1)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setAccessibleName("Save")
        cancel = self.buttons.button(QDialogButtonBox.StandardButton.Cancel)
        cancel.setAccessibleName("Cancel")
        self.save_button.clicked.connect(self._on_save_button_clicked)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        (self.form.model_edit if profile else self.form.kind_combo).setFocus()

    async def save(self) -> bool:
        """Save the profile; True (and accepted) when saved, else the problem is shown."""
        profile = self.form.profile()
        if not self.form.validate():
            self.save_button.setEnabled(True)
            return False
        if not self.form.editing and profile.name in self.taken:
            self.form.show_problem(
                f"A profile named “{profile.name}” already exists; choose another name."
            )
            self.save_button.setEnabled(True)
            return False
        self.save_button.setEnabled(False)
        try:
            problem = await save_profile(
                self.service,
                profile,
                self.form.key(),
                make_default=self.default_check.isChecked(),
            )
        finally:
            if alive(self):
                self.save_button.setEnabled(True)
        if not alive(self):
            return problem is None
        if problem is not None:
            self.form.show_problem(problem)
            return False
        self.saved_name = profile.name
        self.accept()
        return True

    @Slot()
    def _on_save_button_clicked(self) -> None:
        self.save_button.setEnabled(False)  # no second click before the task starts
        self.tasks.spawn(self.save(), "profile-save")
