"""Profiles and keys through the CLI: the key lives in the keyring and nowhere else."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.helpers import child_env, fxdesk_command
from tests.llmock_server import LLMock

SECRET = "sk-test-UNIQUE-7f3a9c21-do-not-leak"


class CLI:
    def __init__(self, tmp_path: Path, keyring: bool = True) -> None:
        self.data = tmp_path / "data"
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.env = child_env()
        if keyring:  # a file keyring in the test's own XDG folder: no OS prompt, no real keyring
            self.env["PYTHON_KEYRING_BACKEND"] = "keyrings.alt.file.PlaintextKeyring"
            self.env["XDG_DATA_HOME"] = str(tmp_path / "xdg")

    def __call__(
        self, *args: str, stdin: str | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            fxdesk_command("--data-dir", str(self.data), *args),
            input=stdin,
            env=self.env | env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def _keyring_value(cli: CLI, profile: str) -> str:
    code = f"import keyring; print(keyring.get_password('fxdesk', 'profile:{profile}') or '')"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=cli.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def _files_mention(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_a_key_goes_to_the_keyring_and_never_to_the_database_or_logs(
    tmp_path: Path, llmock: LLMock
) -> None:
    cli = CLI(tmp_path)
    added = cli(
        "profiles",
        "add",
        "live",
        "--kind",
        "openai",
        "--base-url",
        f"{llmock.base}/v1",
        "--model",
        "gpt-test",
        "--api-key-stdin",
        "--default",
        "--price-in",
        "3",
        "--price-out",
        "15",
        stdin=SECRET + "\n",
    )
    assert added.returncode == 0, added.stderr
    assert "its key in the keyring" in added.stdout
    assert _keyring_value(cli, "live") == SECRET

    llmock.scenario(
        {"type": "reply", "text": "hello from the mock", "match": {"provider": "openai"}}
    )
    ran = cli("run", "-w", str(cli.workspace), "say hello")
    assert ran.returncode == 0, ran.stderr
    assert "hello from the mock" in ran.stdout
    tested = cli("profiles", "test", "live")
    assert tested.returncode == 0 and "live: ok: gpt-test replied" in tested.stdout

    shown = cli("show", json.loads(cli("sessions", "--json").stdout)[0]["id"])
    assert "model calls, $" in shown.stdout  # cost from the profile's prices

    assert _files_mention(cli.data, SECRET) == []  # database, WAL, logs, locks: nowhere
    listed = cli("profiles", "list", "--json")
    assert SECRET not in listed.stdout and SECRET not in ran.stderr + ran.stdout

    removed = cli("profiles", "remove", "live")
    assert removed.returncode == 0
    assert _keyring_value(cli, "live") == ""


def test_no_usable_keyring_says_what_to_do(tmp_path: Path) -> None:
    cli = CLI(tmp_path, keyring=False)  # the tests' default backend stores nothing
    done = cli(
        "profiles",
        "add",
        "x",
        "--kind",
        "openai",
        "--model",
        "m",
        "--api-key-stdin",
        stdin=SECRET + "\n",
    )
    assert done.returncode == 1
    assert "No usable keyring" in done.stderr and "--api-key-env" in done.stderr
    assert "Traceback" not in done.stderr
    assert SECRET not in done.stderr + done.stdout


def test_a_key_from_an_environment_variable(tmp_path: Path, llmock: LLMock) -> None:
    cli = CLI(tmp_path, keyring=False)
    assert (
        cli(
            "profiles",
            "add",
            "envkey",
            "--kind",
            "anthropic",
            "--base-url",
            f"{llmock.base}/anthropic",
            "--model",
            "claude-test",
            "--api-key-env",
            "FXDESK_TEST_KEY",
            "--default",
        ).returncode
        == 0
    )
    missing = cli("run", "-w", str(cli.workspace), "hi")
    assert missing.returncode == 1
    assert "FXDESK_TEST_KEY" in missing.stderr and "is not set" in missing.stderr
    llmock.scenario(
        {"type": "reply", "text": "anthropic says hi", "match": {"provider": "anthropic"}}
    )
    ran = cli("run", "-w", str(cli.workspace), "hi", FXDESK_TEST_KEY=SECRET)
    assert ran.returncode == 0, ran.stderr
    assert "anthropic says hi" in ran.stdout
    assert _files_mention(cli.data, SECRET) == []


def test_commands_the_agent_runs_never_see_the_key(tmp_path: Path, llmock: LLMock) -> None:
    """A key read from the environment is not inherited by run_command: not under the variable
    the profile names, nor under any other name that holds the same value."""
    cli = CLI(tmp_path, keyring=False)
    added = cli(
        "profiles", "add", "envkey", "--kind", "anthropic", "--base-url",
        f"{llmock.base}/anthropic", "--model", "claude-test", "--api-key-env", "FXDESK_TEST_KEY",
        "--default",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    command = 'env; echo "named=[$FXDESK_TEST_KEY] copied=[$COPIED_KEY] seen=[$TZ]"'
    llmock.scenario(
        {
            "type": "reply",
            "tool_calls": [{"name": "run_command", "arguments": {"command": command}}],
            "match": {"provider": "anthropic"},
        },
        {"type": "reply", "text": "done", "match": {"provider": "anthropic"}},
    )
    ran = cli(
        "run", "-w", str(cli.workspace), "--mode", "yolo", "show me the environment",
        FXDESK_TEST_KEY=SECRET, COPIED_KEY=SECRET, TZ="visible-42",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    db = sqlite3.connect(f"file:{cli.data / 'fxdesk.sqlite3'}?mode=ro", uri=True)
    with contextlib.closing(db):
        (output,) = db.execute(
            "SELECT content FROM history_entry WHERE kind = 'tool_result'"
        ).fetchone()
    assert "named=[] copied=[] seen=[visible-42]" in output
    assert "FXDESK_TEST_KEY" not in output and "COPIED_KEY" not in output
    assert "TZ=visible-42" in output  # the allow-listed environment is passed on
    assert SECRET not in ran.stdout + ran.stderr
    assert _files_mention(cli.data, SECRET) == []


def test_profile_add_checks_its_arguments(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    no_model = cli("profiles", "add", "a", "--kind", "openai", "--no-key")
    assert no_model.returncode == 2 and "needs --model" in no_model.stderr
    demo = cli("profiles", "add", "b", "--kind", "scripted", "--default")
    assert demo.returncode == 0  # no script: the built-in offline demo agent
    (cli.workspace / "README.md").write_text("# Demo project\nA tiny project.\n")
    ran = cli("run", "-w", str(cli.workspace), "what is this project?")
    assert ran.returncode == 0, ran.stderr
    assert "offline demo agent" in ran.stdout and "→ list_dir" in ran.stdout
    assert "→ read_file" in ran.stdout and "Demo project" in ran.stdout
    both = cli(
        "profiles", "add", "c", "--kind", "openai", "--model", "m", "--no-key", "--api-key-env", "X"
    )
    assert both.returncode == 2  # mutually exclusive
    unreachable = cli(
        "profiles",
        "add",
        "d",
        "--kind",
        "openai",
        "--model",
        "m",
        "--no-key",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--connect-timeout",
        "1",
    )
    assert unreachable.returncode == 0
    tested = cli("profiles", "test", "d")
    assert tested.returncode == 1 and "cannot reach the provider" in tested.stdout


def test_an_acp_profile_keeps_its_command_arguments_and_environment(tmp_path: Path) -> None:
    cli = CLI(tmp_path, keyring=False)
    added = cli(
        "profiles", "add", "agent", "--kind", "acp", "--command", "npx",
        "--arg", "@zed-industries/claude-code-acp", "--env", "MODE=fast",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = json.loads(cli("profiles", "list", "--json").stdout)
    (profile,) = listed
    assert (profile["kind"], profile["command"], profile["args"], profile["env"]) == (
        "acp",
        "npx",
        ["@zed-industries/claude-code-acp"],
        [["MODE", "fast"]],
    )
    missing = cli("profiles", "add", "bad", "--kind", "acp")
    assert missing.returncode != 0 and "needs --command" in missing.stderr


def test_a_preset_fills_in_the_agents_command(tmp_path: Path) -> None:
    cli = CLI(tmp_path, keyring=False)
    added = cli("profiles", "add", "codex", "--preset", "codex")
    assert added.returncode == 0, added.stderr
    (profile,) = json.loads(cli("profiles", "list", "--json").stdout)
    assert (profile["kind"], profile["command"], profile["args"]) == (
        "acp",
        "npx",
        ["-y", "@zed-industries/codex-acp"],
    )
    assert (profile["preset"], profile["sandbox"]) == ("codex", None)  # the preset's default
    off = cli("profiles", "add", "gem", "--preset", "gemini", "--no-sandbox")
    assert off.returncode == 0, off.stderr
    gem = next(
        p for p in json.loads(cli("profiles", "list", "--json").stdout) if p["name"] == "gem"
    )
    assert (gem["preset"], gem["sandbox"]) == ("gemini", False)
    clash = cli("profiles", "add", "x", "--preset", "codex", "--kind", "openai")
    assert clash.returncode != 0 and "--preset makes an acp profile" in clash.stderr


def test_a_profile_can_say_its_model_takes_no_images(tmp_path: Path) -> None:
    """Issue 18 item 6: ``--no-images`` / ``--images`` store the setting; without them it is
    left to the guess by the model's name."""
    cli = CLI(tmp_path, keyring=False)
    for name, flag in (("plain", None), ("text", "--no-images"), ("local", "--images")):
        extra = [flag] if flag else []
        added = cli("profiles", "add", name, "--kind", "openai", "--model", "m", "--no-key", *extra)
        assert added.returncode == 0, added.stderr
    listed = {
        p["name"]: p["accepts_images"] for p in json.loads(cli("profiles", "list", "--json").stdout)
    }
    assert listed == {"plain": None, "text": False, "local": True}


def test_a_gemini_command_line_of_before_the_acp_flag_is_still_the_gemini_preset() -> None:
    from fxdesk.domain.acp_presets import PRESETS, preset_of

    assert PRESETS["gemini"].args == ("--acp",)  # gemini-cli 0.61 deprecates the old flag
    found = preset_of("gemini", ("--experimental-acp",))
    assert found is not None and found.name == "gemini"
    assert preset_of("gemini", ("--other",)) is None
