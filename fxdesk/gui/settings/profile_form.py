"""The form that edits one model profile, shared by the setup and settings dialogs.

It shows only the fields the chosen kind uses, says in one sentence what is missing, and can test
the profile through ``ProfileService.test``. It never stores anything itself: the dialog around it
calls ``ProfileService.save`` with ``profile()`` and ``key()``.
"""

from __future__ import annotations

import dataclasses
import math
import shlex

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.acp_presets import (
    PRESETS,
    SECRET_WORDS,
    looks_secret,
    needs_of,
    preset_of,
    sandboxed,
)
from fxdesk.domain.images import guess_accepts
from fxdesk.domain.model import KeySource, Profile
from fxdesk.engine.facade import ProfileService
from fxdesk.gui.tasks import WidgetTasks, alive
from fxdesk.gui.widgets import hint_label, problem_label, show_outcome, show_problem
from fxdesk.providers.demo import DEMO_SCRIPT

KIND_LABELS = {
    "openai": "OpenAI-compatible (OpenAI, Ollama, LM Studio, OpenRouter…)",
    "anthropic": "Anthropic",
    "scripted": "Offline demo agent (no AI model)",
    "acp": "External agent (ACP: Claude Code, Codex, Gemini CLI…)",
}
KEY_SOURCE_LABELS = {
    KeySource.KEYRING: "Stored in the system keyring",
    KeySource.ENV: "Read from an environment variable",
    KeySource.NONE: "No key needed (local server)",
}
EFFORT_LABELS = {"": "Model default", "low": "Low", "medium": "Medium", "high": "High"}

_URL_PLACEHOLDER = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_URL_HINT = {
    "openai": "Leave empty for OpenAI itself. On this computer:\n"
    "Ollama http://localhost:11434/v1 · LM Studio http://localhost:1234/v1",
    "anthropic": "Leave empty for Anthropic's own API.",
}
_MODEL_PLACEHOLDER = {
    "openai": "e.g. gpt-4.1-mini, or llama3.1 on Ollama",
    "anthropic": "e.g. claude-sonnet-4-5",
}
_ENV_PLACEHOLDER = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_DEFAULT_NAME = {"openai": "openai", "anthropic": "anthropic", "scripted": "demo", "acp": "agent"}
# In the environment field, in place of a value kept in the keyring: keep it as stored.
STORED = "<in the keyring>"
ENV_HINT = (
    "One NAME=value a line. Values of names with "
    + ", ".join(SECRET_WORDS[:4])
    + " and the like go to the system keyring, not the database; "
    + STORED
    + " keeps the stored value. Outside the sandbox the agent also gets all of fxdesk's "
    + "environment; inside, only the usual variables and its preset's key variables."
)

DEMO_TEXT = (
    "The offline demo agent needs no account and no network: it looks around the workspace, "
    "reads its README and says what it saw, so you can try fxdesk before connecting a model."
)


class ProfileForm(QWidget):
    """Edits one ``Profile``: ``profile()`` and ``key()`` give what to save.

    An empty key field while editing a profile whose key is in the keyring keeps the stored key.

    Signals:
        changed(): any field changed.
    """

    changed = Signal()

    def __init__(self, service: ProfileService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.service = service
        self.tasks = WidgetTasks(self)
        self._original: Profile | None = None
        self._name_edited = False
        self._checking = False  # show problems live once the person tried to save or test
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.fields = QFormLayout()
        self.fields.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        layout.addLayout(self.fields)
        self._build_fields()
        self.message = problem_label("Problem")
        layout.addWidget(self.message)
        layout.addLayout(self._build_test_row())
        self._on_kind_combo_changed()

    # --- building ------------------------------------------------------------------------

    def _build_fields(self) -> None:
        form = self.fields
        self.kind_combo = QComboBox()
        self.kind_combo.setAccessibleName("Provider")
        for kind, label in KIND_LABELS.items():
            self.kind_combo.addItem(label, kind)
        self.kind_combo.currentIndexChanged.connect(self._on_kind_combo_changed)
        form.addRow("&Provider:", self.kind_combo)

        self.demo_note = QLabel(DEMO_TEXT)
        self.demo_note.setWordWrap(True)
        form.addRow(self.demo_note)
        self.script_label = QLabel()
        self.script_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Script:", self.script_label)

        self.name_edit = QLineEdit()
        self.name_edit.setAccessibleName("Profile name")
        self.name_edit.setToolTip("How sessions and the command line refer to this profile")
        self.name_edit.textEdited.connect(self._on_name_edit_edited)
        form.addRow("&Name:", self.name_edit)

        self.url_edit = QLineEdit()
        self.url_edit.setAccessibleName("Base URL")
        self.url_hint = hint_label()
        self._url_box = _stacked(self.url_edit, self.url_hint)
        form.addRow("Base &URL:", self._url_box)

        self.model_edit = QLineEdit()
        self.model_edit.setAccessibleName("Model")
        form.addRow("&Model:", self.model_edit)

        self.key_source_combo = QComboBox()
        self.key_source_combo.setAccessibleName("Where the API key comes from")
        for source, label in KEY_SOURCE_LABELS.items():
            self.key_source_combo.addItem(label, source.value)
        self.key_source_combo.currentIndexChanged.connect(self._on_key_source_combo_changed)
        form.addRow("API key &from:", self.key_source_combo)

        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setAccessibleName("API key")
        self.key_edit.setPlaceholderText("Paste the API key")
        form.addRow("API &key:", self.key_edit)

        self.env_edit = QLineEdit()
        self.env_edit.setAccessibleName("Environment variable holding the API key")
        form.addRow("&Variable:", self.env_edit)

        self.more_button = QToolButton()
        self.more_button.setText("More &options")
        self.more_button.setAccessibleName("More options")
        self.more_button.setCheckable(True)
        self.more_button.setArrowType(Qt.ArrowType.RightArrow)
        self.more_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.more_button.setAutoRaise(True)
        self.more_button.toggled.connect(self._on_more_button_toggled)

        # Whether images the person attaches may go to this model (issue 18 item 6); by
        # default a guess by its name (domain/images.py).
        self.images_combo = QComboBox()
        self.images_combo.setAccessibleName("Accepts images")
        self.images_combo.addItem("By model name", None)
        self.images_combo.addItem("Yes", True)
        self.images_combo.addItem("No (text only)", False)
        self.images_combo.setToolTip(
            "Whether images attached to a message are sent to this model. A model that takes "
            "none gets no images: the composer says so before sending."
        )
        form.addRow("Accepts &images:", self.images_combo)
        form.addRow(self.more_button)

        self.effort_combo = QComboBox()
        self.effort_combo.setAccessibleName("Reasoning effort")
        for effort, label in EFFORT_LABELS.items():
            self.effort_combo.addItem(label, effort)
        form.addRow("&Effort:", self.effort_combo)

        self.max_tokens_spin = QSpinBox()
        self.max_tokens_spin.setAccessibleName("Maximum output tokens")
        self.max_tokens_spin.setRange(0, 1_000_000)
        self.max_tokens_spin.setSingleStep(1024)
        self.max_tokens_spin.setSpecialValueText("Model default")
        form.addRow("Ma&x tokens:", self.max_tokens_spin)
        self._build_agent_fields()

        prices = QWidget()
        row = QHBoxLayout(prices)
        row.setContentsMargins(0, 0, 0, 0)
        self.price_in_edit = QLineEdit()
        self.price_in_edit.setAccessibleName("Price of a million input tokens in US dollars")
        self.price_out_edit = QLineEdit()
        self.price_out_edit.setAccessibleName("Price of a million output tokens in US dollars")
        for text, edit in (("in $", self.price_in_edit), ("out $", self.price_out_edit)):
            edit.setPlaceholderText("unknown")
            edit.setMaximumWidth(90)
            row.addWidget(QLabel(text))
            row.addWidget(edit)
        row.addWidget(QLabel("per million tokens"))
        row.addStretch(1)
        form.addRow("P&rices:", prices)
        self._prices = prices

        for edit in (self.name_edit, self.url_edit, self.model_edit, self.key_edit, self.env_edit,
                     self.price_in_edit, self.price_out_edit):  # fmt: skip
            edit.textChanged.connect(self._on_field_changed)
        self.effort_combo.currentIndexChanged.connect(self._on_field_changed)
        self.max_tokens_spin.valueChanged.connect(self._on_field_changed)
        self.images_combo.currentIndexChanged.connect(self._on_field_changed)
        self.model_edit.textChanged.connect(self._show_image_guess)

    def _build_agent_fields(self) -> None:
        """The fields of an ``acp`` profile: a preset, the command, its arguments and
        environment."""
        form = self.fields
        self.preset_combo = QComboBox()
        self.preset_combo.setAccessibleName("Preset")
        self.preset_combo.addItem("Custom command", None)
        for preset in PRESETS.values():
            self.preset_combo.addItem(preset.title, preset.name)
        self.preset_combo.setToolTip("Fill in the command of an agent people already use")
        self.preset_combo.activated.connect(self._on_preset_combo_activated)
        form.addRow("Pre&set:", self.preset_combo)

        self.command_edit = QLineEdit()
        self.command_edit.setAccessibleName("Command")
        self.command_edit.setPlaceholderText("the agent's program, e.g. npx or gemini")
        form.addRow("&Command:", self.command_edit)

        self.args_edit = QLineEdit()
        self.args_edit.setAccessibleName("Arguments")
        self.args_edit.setPlaceholderText("as on a command line; quote an argument with spaces")
        form.addRow("&Arguments:", self.args_edit)

        self.agent_env_edit = QPlainTextEdit()
        self.agent_env_edit.setAccessibleName("Environment")
        self.agent_env_edit.setTabChangesFocus(True)
        self.agent_env_edit.setPlaceholderText("ANTHROPIC_API_KEY=sk-…")
        self.agent_env_edit.setFixedHeight(self.agent_env_edit.fontMetrics().lineSpacing() * 4 + 12)
        self.agent_env_hint = hint_label()
        self.agent_env_hint.setText(ENV_HINT)
        self.agent_env_hint.setWordWrap(True)
        self._agent_env_box = _stacked(self.agent_env_edit, self.agent_env_hint)
        form.addRow("&Environment:", self._agent_env_box)

        self.sandbox_check = QCheckBox("Run the agent in the sand&box")
        self.sandbox_check.setAccessibleName("Run the agent in the sandbox")
        self.sandbox_check.setChecked(True)
        self.sandbox_hint = hint_label()
        self.sandbox_hint.setWordWrap(True)
        self._sandbox_box = _stacked(self.sandbox_check, self.sandbox_hint)
        form.addRow("Sandbox:", self._sandbox_box)

        for edit in (self.command_edit, self.args_edit):
            edit.textChanged.connect(self._on_field_changed)
        self.agent_env_edit.textChanged.connect(self._on_field_changed)

    def _show_image_guess(self) -> None:
        guess = guess_accepts(self.kind, self.model_edit.text().strip())
        self.images_combo.setItemText(0, f"By model name ({'yes' if guess else 'no'})")

    def _build_test_row(self) -> QHBoxLayout:
        row = QHBoxLayout()
        self.test_button = QPushButton("&Test connection")
        self.test_button.setAccessibleName("Test connection")
        self.test_button.setAutoDefault(False)
        self.test_button.clicked.connect(self._on_test_button_clicked)
        row.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignTop)
        self.test_result = QLabel()
        self.test_result.setWordWrap(True)
        self.test_result.setAccessibleName("Test result")
        self.test_result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.test_result, 1)
        return row

    # --- values --------------------------------------------------------------------------

    @property
    def kind(self) -> str:
        return str(self.kind_combo.currentData())

    @property
    def key_source(self) -> KeySource:
        return KeySource(self.key_source_combo.currentData())

    @property
    def editing(self) -> bool:
        """Whether the form edits a stored profile (its name is then fixed)."""
        return self._original is not None

    def set_kind(self, kind: str) -> None:
        self.kind_combo.setCurrentIndex(self.kind_combo.findData(kind))

    def set_profile(self, profile: Profile) -> None:
        """Show a stored profile for editing; its name cannot be changed here."""
        self._original = profile
        self._name_edited = True
        self.set_kind(profile.kind)
        self.name_edit.setText(profile.name)
        self.command_edit.setText(profile.command or "")
        self.args_edit.setText(shlex.join(profile.args))
        lines = [f"{name}={value}" for name, value in profile.env]
        lines += [f"{name}={STORED}" for name in profile.secret_env]
        self.agent_env_edit.setPlainText("\n".join(lines))
        self._show_preset(profile.preset)
        self.sandbox_check.setChecked(sandboxed(profile.preset, profile.sandbox))
        self.name_edit.setReadOnly(True)
        self.url_edit.setText(profile.base_url or "")
        self.model_edit.setText(profile.model or "")
        self.key_source_combo.setCurrentIndex(
            self.key_source_combo.findData(profile.key_source.value)
        )
        self.key_edit.clear()
        self.env_edit.setText(profile.key_env or "")
        self.effort_combo.setCurrentIndex(max(0, self.effort_combo.findData(profile.effort or "")))
        self.max_tokens_spin.setValue(profile.max_tokens or 0)
        self.images_combo.setCurrentIndex(
            max(0, self.images_combo.findData(profile.accepts_images))
        )
        self.price_in_edit.setText(_price_text(profile.price_in_per_mtok))
        self.price_out_edit.setText(_price_text(profile.price_out_per_mtok))
        if profile.effort or profile.max_tokens or profile.price_in_per_mtok is not None:
            self.more_button.setChecked(True)
        self._update_visibility()

    def profile(self) -> Profile:
        """The profile as the form shows it (``problem()`` says whether it can be saved)."""
        base = self._original or Profile(name="", kind=self.kind)
        name = self.name_edit.text().strip()
        if self.kind == "acp":
            return self._agent_profile(base, name)
        if self.kind == "scripted":
            script = base.script_path if base.kind == "scripted" and base.script_path else None
            return dataclasses.replace(
                base,
                name=name,
                kind="scripted",
                base_url=None,
                model=None,
                script_path=script or DEMO_SCRIPT,
                effort=None,
                max_tokens=None,
                price_in_per_mtok=None,
                price_out_per_mtok=None,
                key_source=KeySource.NONE,
                key_env=None,
            )
        source = self.key_source
        return dataclasses.replace(
            base,
            name=name,
            kind=self.kind,
            base_url=self.url_edit.text().strip() or None,
            model=self.model_edit.text().strip() or None,
            script_path=None,
            effort=str(self.effort_combo.currentData()) or None,
            max_tokens=self.max_tokens_spin.value() or None,
            accepts_images=self.images_combo.currentData(),
            price_in_per_mtok=_parse_price(self.price_in_edit.text()),
            price_out_per_mtok=_parse_price(self.price_out_edit.text()),
            key_source=source,
            key_env=(self.env_edit.text().strip() or self._default_env())
            if source == KeySource.ENV
            else None,
        )

    def _agent_profile(self, base: Profile, name: str) -> Profile:
        command = self.command_edit.text().strip()
        args = tuple(self._args() or ())
        env, kept = _parse_env(self.agent_env_edit.toPlainText())
        preset = preset_of(command, args)
        return dataclasses.replace(
            base,
            name=name,
            kind="acp",
            base_url=None,
            model=None,
            script_path=None,
            effort=None,
            max_tokens=None,
            accepts_images=None,
            price_in_per_mtok=None,
            price_out_per_mtok=None,
            key_source=KeySource.NONE,
            key_env=None,
            command=command or None,
            args=args,
            env=tuple(env),
            secret_env=tuple(kept),
            preset=preset.name if preset is not None else None,
            sandbox=self.sandbox_check.isChecked(),
        )

    def _args(self) -> list[str] | None:
        """The arguments as typed, split as a shell would; None when a quote is not closed."""
        try:
            return shlex.split(self.args_edit.text())
        except ValueError:
            return None

    def key(self) -> str | None:
        """The API key typed in, to store in the keyring; None keeps the stored one (if any)."""
        if self.kind in ("scripted", "acp") or self.key_source != KeySource.KEYRING:
            return None
        return self.key_edit.text().strip() or None

    def problem(self) -> str | None:
        """What keeps the profile from being saved, in one sentence; None when it can be."""
        return self._problem()[0]

    def _problem(self) -> tuple[str | None, QWidget | None]:
        """(what keeps the profile from being saved, the field to fix), or (None, None)."""
        if not self.name_edit.text().strip():
            return "A profile name is needed.", self.name_edit
        if self.kind == "scripted":
            return None, None
        if self.kind == "acp":
            return self._agent_problem()
        if not self.model_edit.text().strip():
            return "A model name is needed.", self.model_edit
        url = self.url_edit.text().strip()
        if url and not url.startswith(("http://", "https://")):
            return "The base URL starts with http:// or https://.", self.url_edit
        if self.key_source == KeySource.KEYRING and not self.key() and not self._key_is_stored():
            return "Paste the API key, or choose where else it comes from.", self.key_edit
        env = self.env_edit.text().strip()
        if self.key_source == KeySource.ENV and env and not env.isidentifier():
            return (
                "An environment variable name has only letters, digits and underscores.",
                self.env_edit,
            )
        for edit in (self.price_in_edit, self.price_out_edit):
            if edit.text().strip() and _parse_price(edit.text()) is None:
                return "Prices are numbers of dollars, like 0.15 (or empty when unknown).", edit
        return None, None

    def _agent_problem(self) -> tuple[str | None, QWidget | None]:
        if not self.command_edit.text().strip():
            return "The command that starts the agent is needed.", self.command_edit
        if self._args() is None:
            return "A quote in the arguments is not closed.", self.args_edit
        for line in self.agent_env_edit.toPlainText().splitlines():
            name, equals, _value = line.strip().partition("=")
            if line.strip() and (not equals or not name.strip().isidentifier()):
                return (
                    f"“{line.strip()}” is not NAME=value (a name has only letters, digits "
                    "and underscores).",
                    self.agent_env_edit,
                )
        return None, None

    def validate(self) -> bool:
        """Show the problem, if any, with the keyboard in the field to fix, and keep showing
        problems as fields change."""
        self._checking = True
        problem, field = self._problem()
        self.show_problem(problem or "")
        if field is not None and field.isVisible():
            field.setFocus(Qt.FocusReason.OtherFocusReason)
        return problem is None

    def show_problem(self, text: str) -> None:
        """Show ``text`` (for example a keyring or database error) below the fields."""
        show_problem(self.message, text)

    # --- test ----------------------------------------------------------------------------

    async def test(self) -> None:
        """Test the profile as shown, and show what happened next to the button."""
        if self._begin_test():
            await self._run_test(self.profile())

    def _begin_test(self) -> bool:
        """Check the profile can be tested; if so show "Testing…" and disable the button."""
        if not self.validate():
            return False
        self._show_testing()
        return True

    async def _run_test(self, profile: Profile) -> None:
        try:
            # A key typed but not saved yet is tested as typed; an empty field, the stored one.
            result = await self.service.test(profile, api_key=self.key() or None)
        finally:
            if alive(self):
                self.test_button.setEnabled(True)
        if alive(self):
            self._show_result(result.ok, result.message)

    def _show_testing(self) -> None:
        self.test_button.setEnabled(False)
        self.test_result.setStyleSheet("")
        self.test_result.setText("Checking…" if self.kind == "acp" else "Testing…")

    def _show_result(self, ok: bool, message: str) -> None:
        show_outcome(self.test_result, ok, message)

    # --- slots ---------------------------------------------------------------------------

    @Slot()
    def _on_test_button_clicked(self) -> None:
        if self._begin_test():  # the button is disabled before the task starts
            self.tasks.spawn(self._run_test(self.profile()), "profile-test")

    @Slot()
    def _on_kind_combo_changed(self) -> None:
        kind = self.kind
        if not self._name_edited:
            self.name_edit.setText(_DEFAULT_NAME[kind])
        if kind in _URL_PLACEHOLDER:
            self.url_edit.setPlaceholderText(_URL_PLACEHOLDER[kind])
            self.url_hint.setText(_URL_HINT[kind])
            self.model_edit.setPlaceholderText(_MODEL_PLACEHOLDER[kind])
            self.env_edit.setPlaceholderText(self._default_env())
        self.test_result.clear()
        self._update_visibility()
        self._on_field_changed()

    @Slot()
    def _on_key_source_combo_changed(self) -> None:
        self._update_visibility()
        self._on_field_changed()

    @Slot(int)
    def _on_preset_combo_activated(self, index: int) -> None:
        name = self.preset_combo.itemData(index)
        if name is None:
            return
        preset = PRESETS[name]
        self.command_edit.setText(preset.command)
        self.args_edit.setText(shlex.join(preset.args))
        if not self._name_edited:
            self.name_edit.setText(preset.name)
        self.sandbox_check.setChecked(preset.needs.sandbox)
        self.test_result.clear()

    def _show_preset(self, name: str | None) -> None:
        self.preset_combo.setCurrentIndex(max(0, self.preset_combo.findData(name)))
        needs = needs_of(name)
        text = (
            "In fxdesk's sandbox the agent writes only the workspace"
            + (f" and {', '.join(needs.home_paths)}" if needs.home_paths else "")
            + "; it has the network."
        )
        if needs.why_not:
            text += f" Off by default: {needs.why_not}."
        self.sandbox_hint.setText(text)

    @Slot(bool)
    def _on_more_button_toggled(self, checked: bool) -> None:
        arrow = Qt.ArrowType.DownArrow if checked else Qt.ArrowType.RightArrow
        self.more_button.setArrowType(arrow)
        self._update_visibility()

    @Slot(str)
    def _on_name_edit_edited(self, text: str) -> None:
        self._name_edited = bool(text)

    @Slot()
    def _on_field_changed(self) -> None:
        if self.kind == "acp":  # the preset shown follows the command line
            preset = preset_of(self.command_edit.text().strip(), tuple(self._args() or ()))
            self._show_preset(preset.name if preset is not None else None)
        if self._checking:
            self.show_problem(self.problem() or "")
        self.changed.emit()

    # --- helpers -------------------------------------------------------------------------

    def _update_visibility(self) -> None:
        self._show_image_guess()
        agent = self.kind == "acp"
        scripted = self.kind == "scripted" or agent  # neither has a model, key or prices
        script = self._original.script_path if self._original else None
        custom_script = self.kind == "scripted" and bool(script) and script != DEMO_SCRIPT
        self.script_label.setText((script or "") if custom_script else "")
        more = self.more_button.isChecked() and not scripted
        source = self.key_source
        rows: list[tuple[QWidget, bool]] = [
            (self.demo_note, self.kind == "scripted" and not custom_script),
            (self.script_label, custom_script),
            (self._url_box, not scripted),
            (self.model_edit, not scripted),
            (self.key_source_combo, not scripted),
            (self.key_edit, not scripted and source == KeySource.KEYRING),
            (self.env_edit, not scripted and source == KeySource.ENV),
            (self.images_combo, not scripted),
            (self.more_button, not scripted),
            (self.effort_combo, more),
            (self.max_tokens_spin, more),
            (self._prices, more),
            (self.preset_combo, agent),
            (self.command_edit, agent),
            (self.args_edit, agent),
            (self._agent_env_box, agent),
            (self._sandbox_box, agent),
        ]
        for widget, visible in rows:
            self.fields.setRowVisible(widget, visible)
        self.test_button.setText("C&heck" if agent else "&Test connection")
        self.test_button.setAccessibleName("Check" if agent else "Test connection")
        self.test_button.setToolTip(
            "Whether the agent's program is found on this computer" if agent else ""
        )
        stored = self._key_is_stored()
        self.key_edit.setPlaceholderText(
            "Leave empty to keep the stored key" if stored else "Paste the API key"
        )
        if self.isVisible():
            QTimer.singleShot(0, self, self._fit_window)

    def _fit_window(self) -> None:
        """Let the dialog around the form grow or shrink to the rows now shown."""
        window = self.window()
        if window is not self:
            window.resize(window.width(), window.sizeHint().height())

    def _key_is_stored(self) -> bool:
        original = self._original
        return original is not None and original.key_source == KeySource.KEYRING

    def _default_env(self) -> str:
        return _ENV_PLACEHOLDER.get(self.kind, "API_KEY")


def _stacked(field: QWidget, hint: QLabel) -> QWidget:
    box = QWidget()
    column = QVBoxLayout(box)
    column.setContentsMargins(0, 0, 0, 0)
    column.setSpacing(2)
    column.addWidget(field)
    column.addWidget(hint)
    box.setFocusProxy(field)
    return box


def _parse_env(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The environment lines as (NAME, value) pairs given now, and the names whose value is
    ``STORED`` (kept in the keyring as it is). Malformed lines are left out (``problem`` says)."""
    given: list[tuple[str, str]] = []
    kept: list[str] = []
    for line in text.splitlines():
        name, equals, value = line.strip().partition("=")
        name = name.strip()
        if not equals or not name.isidentifier():
            continue
        if value == STORED and looks_secret(name):
            kept.append(name)
        else:
            given.append((name, value))
    return given, kept


def _price_text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _parse_price(text: str) -> float | None:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
