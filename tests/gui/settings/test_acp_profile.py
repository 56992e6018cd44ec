"""The profile form's "External agent (ACP)" kind: create, edit and save an ``acp`` profile
through the dialog and read it back from a real store and a file keyring (issue 19)."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import keyring
from PySide6.QtWidgets import QDialog

from fxdesk.engine.profiles import ProfileService
from fxdesk.engine.providers import build_provider
from fxdesk.gui.settings.dialog import ProfileDialog
from fxdesk.gui.settings.profile_form import STORED, ProfileForm
from fxdesk.providers.acp import AcpAgentProvider
from tests.gui.settings.test_settings import (  # noqa: F401 (keep_running: autouse)
    keep_running,
    profile_service,
    shown,
)
from tests.gui.waiting import until

SECRET = "sk-ant-test-acp-form-7c2e1f-do-not-leak"
TOKEN = "ghp-test-acp-form-0a9b8c-do-not-leak"


@contextlib.contextmanager
def new_acp_profile(service: ProfileService) -> Iterator[ProfileDialog]:
    """The new-profile dialog, shown, with the External agent (ACP) kind chosen."""
    with shown(ProfileDialog(service)) as dialog:
        dialog.form.set_kind("acp")
        yield dialog


def pick_preset(form: ProfileForm, title: str) -> None:
    index = form.preset_combo.findText(title)
    assert index > 0, title
    form.preset_combo.setCurrentIndex(index)
    form.preset_combo.activated.emit(index)  # what a person's choice emits


def database_holds(tmp_path: Path, text: str) -> bool:
    return any(text.encode() in p.read_bytes() for p in tmp_path.glob("db.sqlite3*"))


async def test_an_acp_profile_is_created_and_edited_through_the_form_with_secrets_in_the_keyring(
    tmp_path: Path, file_keyring: Path
) -> None:
    async with profile_service(tmp_path) as service:
        # Create: the preset fills the command line and the name; secrets go to the keyring.
        with new_acp_profile(service) as dialog:
            form = dialog.form
            assert form.command_edit.isVisible() and form.agent_env_edit.isVisible()
            assert not form.model_edit.isVisible() and not form.key_source_combo.isVisible()
            assert form.test_button.text() == "C&heck"
            pick_preset(form, "Claude Code")
            assert form.command_edit.text() == "npx"
            assert form.args_edit.text() == "-y @zed-industries/claude-code-acp"
            assert form.name_edit.text() == "claude-code"
            # The preset says what it needs from the sandbox, and why it is off by default.
            assert not form.sandbox_check.isChecked()
            hint = form.sandbox_hint.text()
            assert "~/.claude" in hint and "Off by default" in hint
            form.agent_env_edit.setPlainText(f"ANTHROPIC_API_KEY={SECRET}\nDEBUG=acp")
            dialog.save_button.click()
            await until(lambda: dialog.result() == QDialog.DialogCode.Accepted)
        saved = await service.get("claude-code")
        assert saved is not None
        assert (saved.kind, saved.command, saved.args) == (
            "acp",
            "npx",
            ("-y", "@zed-industries/claude-code-acp"),
        )
        assert saved.env == (("DEBUG", "acp"),)
        assert saved.secret_env == ("ANTHROPIC_API_KEY",)
        assert saved.preset == "claude-code" and saved.sandbox is False
        stored = keyring.get_password("fxdesk", "profile:claude-code")
        assert stored is not None and json.loads(stored) == {"ANTHROPIC_API_KEY": SECRET}
        assert not database_holds(tmp_path, SECRET)

        # Edit: the stored secret shows as a placeholder and is kept; a new one is added, and
        # a changed command line is no longer the preset.
        dialog = ProfileDialog(service, saved)
        with shown(dialog):
            form = dialog.form
            assert form.name_edit.isReadOnly()
            text = form.agent_env_edit.toPlainText()
            assert f"ANTHROPIC_API_KEY={STORED}" in text and SECRET not in text
            assert form.preset_combo.currentText() == "Claude Code"
            form.command_edit.setText("/opt/claude-acp/bin/claude-acp")
            form.args_edit.setText("--log-dir '/var/tmp/claude acp'")
            assert form.preset_combo.currentText() == "Custom command"
            assert "Off by default" not in form.sandbox_hint.text()
            form.sandbox_check.setChecked(True)
            form.agent_env_edit.setPlainText(f"{text}\nGH_TOKEN={TOKEN}")
            dialog.save_button.click()
            await until(lambda: dialog.result() == QDialog.DialogCode.Accepted)
        edited = await service.get("claude-code")
        assert edited is not None
        assert edited.command == "/opt/claude-acp/bin/claude-acp"
        assert edited.args == ("--log-dir", "/var/tmp/claude acp")
        assert edited.preset is None and edited.sandbox is True
        assert edited.env == (("DEBUG", "acp"),)
        assert set(edited.secret_env) == {"ANTHROPIC_API_KEY", "GH_TOKEN"}
        assert not database_holds(tmp_path, SECRET) and not database_holds(tmp_path, TOKEN)

        # The agent is started with every value: the stored ones from the keyring.
        provider = await build_provider(edited)
        assert isinstance(provider, AcpAgentProvider)
        assert dict(provider.launch.env) == {
            "DEBUG": "acp",
            "ANTHROPIC_API_KEY": SECRET,
            "GH_TOKEN": TOKEN,
        }

        # A secret line removed is forgotten in the keyring too.
        dialog = ProfileDialog(service, edited)
        with shown(dialog):
            form = dialog.form
            form.agent_env_edit.setPlainText(f"GH_TOKEN={STORED}")
            dialog.save_button.click()
            await until(lambda: dialog.result() == QDialog.DialogCode.Accepted)
        last = await service.get("claude-code")
        assert last is not None and last.env == () and last.secret_env == ("GH_TOKEN",)
        stored = keyring.get_password("fxdesk", "profile:claude-code")
        assert stored is not None and json.loads(stored) == {"GH_TOKEN": TOKEN}


async def test_the_form_refuses_a_missing_command_and_a_malformed_environment_line(
    tmp_path: Path,
) -> None:
    async with profile_service(tmp_path) as service:
        with new_acp_profile(service) as dialog:
            form = dialog.form
            form.name_edit.setText("mine")
            dialog.save_button.click()
            await until(lambda: "command that starts the agent" in form.message.text())
            form.command_edit.setText("my-agent")
            form.agent_env_edit.setPlainText("not a line")
            dialog.save_button.click()
            await until(lambda: "is not NAME=value" in form.message.text())
            form.args_edit.setText("--x 'open")
            form.agent_env_edit.setPlainText("")
            dialog.save_button.click()
            await until(lambda: "quote" in form.message.text())
        assert await service.get("mine") is None


async def test_check_says_whether_the_agents_program_is_found(tmp_path: Path) -> None:
    present = shutil.which("sh")
    assert present is not None
    async with profile_service(tmp_path) as service:
        with new_acp_profile(service) as dialog:
            form = dialog.form
            form.command_edit.setText("sh")
            form.test_button.click()
            await until(lambda: form.test_result.text().startswith("✓"))
            assert f"found {present}" in form.test_result.text()
            form.command_edit.setText("no-such-acp-agent-5d1e")
            form.test_button.click()
            await until(lambda: form.test_result.text().startswith("✗"))
            assert "no-such-acp-agent-5d1e is not found on PATH" in form.test_result.text()
            pick_preset(form, "Gemini CLI")
            form.test_button.click()
            await until(lambda: form.test_result.text()[:1] in ("✓", "✗"))
            if shutil.which("gemini") is None:  # a preset says how to install its program
                assert "npm install -g @google/gemini-cli" in form.test_result.text()
