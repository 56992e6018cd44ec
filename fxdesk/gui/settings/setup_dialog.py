"""The first-run dialog: connect a model, or try the offline demo agent, or decide later; and
``FirstRun``, which shows it over the main window when no profile exists yet."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk import messages
from fxdesk.domain.model import KeySource, Profile
from fxdesk.engine.facade import ProfileError, ProfileService, SecretsUnavailable, StoreError
from fxdesk.gui.settings.profile_form import ProfileForm
from fxdesk.gui.tasks import WidgetTasks, alive, run_dialog
from fxdesk.providers.demo import DEMO_SCRIPT

INTRO = (
    "fxdesk's agents need an AI model to work with: connect an OpenAI-compatible or Anthropic "
    "model below, or try the offline demo agent first and set up a model later in Settings."
)

DEMO_PROFILE = Profile(
    name="demo", kind="scripted", script_path=DEMO_SCRIPT, key_source=KeySource.NONE
)


async def save_profile(
    service: ProfileService,
    profile: Profile,
    key: str | None,
    *,
    make_default: bool,
) -> str | None:
    """Save through ``service``; None when saved, else one sentence saying why not."""
    try:
        await service.save(profile, key=key, make_default=make_default)
    except ProfileError as exc:
        text = str(exc)
        return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
    except SecretsUnavailable as exc:
        return exc.user_message
    except StoreError as exc:
        return exc.user_message
    return None


class SetupDialog(QDialog):
    """Asks for a first model profile and saves it as the default.

    Accepted once a profile is saved (its name in ``saved_name``); rejected by "Later".

    Signals:
        profile_saved(str): the name of the profile just saved and made the default.
    """

    profile_saved = Signal(str)

    def __init__(self, service: ProfileService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.tasks = WidgetTasks(self)
        self.saved_name: str | None = None
        self.setWindowTitle("Set up a model")
        self.setMinimumWidth(620)
        layout = QVBoxLayout(self)
        layout.setSpacing(10)
        heading = QLabel("Set up a model")
        font = QFont(heading.font())
        font.setPointSizeF(font.pointSizeF() * 1.35)
        font.setBold(True)
        heading.setFont(font)
        layout.addWidget(heading)
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        layout.addWidget(intro)
        layout.addSpacing(4)
        self.form = ProfileForm(service)
        layout.addWidget(self.form)
        layout.addStretch(1)
        layout.addSpacing(6)
        layout.addLayout(self._build_buttons())
        self.form.kind_combo.setFocus()

    def _build_buttons(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.demo_button = QPushButton("Try the offline &demo agent")
        self.demo_button.setAccessibleName("Try the offline demo agent")
        self.demo_button.setToolTip(
            "Save a profile named “demo” that runs with no AI model and no network"
        )
        self.demo_button.clicked.connect(self._on_demo_button_clicked)
        row.addWidget(self.demo_button)
        row.addStretch(1)
        self.buttons = QDialogButtonBox()
        self.save_button = self.buttons.addButton(
            "&Save and continue", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.save_button.setAccessibleName("Save and continue")
        self.save_button.setDefault(True)
        self.later_button = self.buttons.addButton("&Later", QDialogButtonBox.ButtonRole.RejectRole)
        self.later_button.setAccessibleName("Later")
        self.later_button.setToolTip("Close without a model; Settings can add one any time")
        self.save_button.clicked.connect(self._on_save_button_clicked)
        self.later_button.clicked.connect(self.reject)
        row.addWidget(self.buttons)
        return row

    async def save(self) -> bool:
        """Save the profile in the form as the default; True (and accepted) when saved."""
        if not self.form.validate():
            self._set_busy(False)
            return False
        return await self._store(self.form.profile(), self.form.key())

    async def try_demo(self) -> bool:
        """Save the offline demo agent's profile as the default; True (and accepted) when saved."""
        return await self._store(DEMO_PROFILE, None)

    async def _store(self, profile: Profile, key: str | None) -> bool:
        self._set_busy(True)
        try:
            problem = await save_profile(self.service, profile, key, make_default=True)
        finally:
            if alive(self):
                self._set_busy(False)
        if not alive(self):
            return problem is None
        if problem is not None:
            self.form.show_problem(problem)
            return False
        self.saved_name = profile.name
        self.profile_saved.emit(profile.name)
        self.accept()
        return True

    def _set_busy(self, busy: bool) -> None:
        self.save_button.setEnabled(not busy)
        self.demo_button.setEnabled(not busy)

    @Slot()
    def _on_save_button_clicked(self) -> None:
        self._set_busy(True)  # no second click before the task starts
        self.tasks.spawn(self.save(), "setup-save")

    @Slot()
    def _on_demo_button_clicked(self) -> None:
        self._set_busy(True)
        self.tasks.spawn(self.try_demo(), "setup-demo")


class FirstRun:
    """No model profile yet: asks for one (or the offline demo) over the main window.

    ``dialog`` is the setup dialog while it is open, else None.
    """

    def __init__(self, service: ProfileService, window: QWidget) -> None:
        self.service = service
        self.window = window
        self.dialog: SetupDialog | None = None

    async def run(self) -> bool:
        """Show the setup dialog and wait for it; True when a profile was saved."""
        dialog = self.dialog = SetupDialog(self.service, self.window)
        try:
            if await run_dialog(dialog) == SetupDialog.DialogCode.Accepted:
                messages.info(
                    f"Profile “{dialog.saved_name}” is ready; start a session with Ctrl+N."
                )
                return True
            return False
        finally:
            self.dialog = None
            dialog.deleteLater()
