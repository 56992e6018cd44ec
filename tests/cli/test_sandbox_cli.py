"""``fxdesk sandbox show|set``: a workspace's sandbox settings from a terminal, saved only when
all of them can be used, with the reason and exit code 2 when not."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fxdesk.cli.exit_codes import ExitCode
from tests.helpers import child_env, fxdesk_command


class CLI:
    """``fxdesk sandbox`` on a data folder, a workspace and a home folder of its own, under
    /var/tmp (the sandbox refuses paths under its own /tmp)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.workspace = root / "ws"
        self.home = root / "home"
        for folder in (self.workspace, self.home, root / "cache"):
            folder.mkdir()
        self.env = child_env(
            HOME=str(self.home), XDG_CONFIG_HOME="", XDG_DATA_HOME="", XDG_CACHE_HOME=""
        )

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            fxdesk_command("--data-dir", str(self.data), "sandbox", *args),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def settings(self) -> dict[str, Any]:
        shown = self("show", "-w", str(self.workspace), "--json")
        assert shown.returncode == ExitCode.OK, shown.stderr
        return dict(json.loads(shown.stdout)["settings"])


@pytest.fixture
def cli() -> Iterator[CLI]:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-sandbox-cli-", dir="/var/tmp")).resolve()
    yield CLI(root)
    shutil.rmtree(root, ignore_errors=True)


def test_set_saves_what_it_is_given_and_show_reads_it_back(cli: CLI) -> None:
    """``set`` on a folder no session used yet makes it a workspace; later ``set`` calls keep
    what they are not given."""
    cache = str(cli.root / "cache")
    done = cli(
        "set", "-w", str(cli.workspace), "--writable", "~/.cache/pip", "--writable", cache,
        "--env", "GOFLAGS", "--network", "on",
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr
    assert f"saved the sandbox settings of {cli.workspace}" in done.stderr
    assert "  ~/.cache/pip (made when first used)" in done.stdout.splitlines()
    assert f"  {cache}" in done.stdout.splitlines()
    assert not (cli.home / ".cache").exists()  # made by the first command, not by saving
    assert cli.settings() == {
        "writable": ["~/.cache/pip", cache],
        "extra_env": ["GOFLAGS"],
        "network": True,
    }
    assert cli("set", "-w", str(cli.workspace), "--network", "off").returncode == ExitCode.OK
    assert cli("set", "-w", str(cli.workspace), "--clear-writable").returncode == ExitCode.OK
    assert cli.settings() == {"writable": [], "extra_env": ["GOFLAGS"], "network": False}


def test_set_refuses_what_the_sandbox_would_not_allow_and_saves_nothing(cli: CLI) -> None:
    assert cli("set", "-w", str(cli.workspace), "--env", "GOFLAGS").returncode == ExitCode.OK
    before = cli.settings()
    refused = {
        "~/.ssh/keys": "~/.ssh is hidden (SSH keys) and stays hidden",
        "~/.config": "it holds ~/.config/gh (GitHub CLI credentials), which stays hidden",
        f"{cli.workspace}/.git": ".git is protected",
        f"{cli.root}/missing": "does not exist (only folders under the home folder are made)",
        "relative/path": "is not absolute",
        "/tmp/cache": "the sandbox has its own /tmp",
    }
    for path, why in refused.items():
        done = cli("set", "-w", str(cli.workspace), "--writable", "~/.cache/ok", "--writable", path)
        assert done.returncode == ExitCode.USAGE, (path, done.stderr)
        assert done.stderr.startswith("fxdesk: nothing saved: "), done.stderr
        assert why in done.stderr, done.stderr
    done = cli("set", "-w", str(cli.workspace), "--env", "TMPDIR", "--network", "on")
    assert done.returncode == ExitCode.USAGE
    assert "TMPDIR cannot be passed on: the sandbox sets it to its own /tmp" in done.stderr
    assert cli.settings() == before


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "nothing to set"),
        (("--env", "A", "--clear-env"), "--env and --clear-env contradict each other"),
        (("--writable", "/x", "--clear-writable"), "contradict each other"),
    ],
)
def test_set_without_a_change_or_with_contradicting_options_is_a_usage_error(
    cli: CLI, args: tuple[str, ...], says: str
) -> None:
    done = cli("set", "-w", str(cli.workspace), *args)
    assert done.returncode == ExitCode.USAGE
    assert says in done.stderr
    assert not (cli.data / "fxdesk.sqlite3").exists()  # refused before the database opened


def test_unknown_or_unusable_workspaces_are_usage_errors(cli: CLI) -> None:
    shown = cli("show", "-w", str(cli.root / "cache"))
    assert shown.returncode == ExitCode.USAGE
    assert "no workspace" in shown.stderr and "start a session there first" in shown.stderr
    made = cli("set", "-w", str(cli.root / "missing"), "--network", "on")
    assert made.returncode == ExitCode.USAGE
    assert "cannot use that workspace" in made.stderr and "does not exist" in made.stderr


def test_show_says_what_commands_get_and_warns_about_secret_looking_names(cli: CLI) -> None:
    assert cli("set", "-w", str(cli.workspace), "--env", "GITHUB_TOKEN").returncode == 0
    shown = cli("show", "-w", str(cli.workspace))
    assert shown.returncode == ExitCode.OK, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(("Commands run in a sandbox", "Commands run without a sandbox"))
    assert f"  the workspace ({cli.workspace})" in lines
    assert "Read-only inside:" in lines and "  .git" in lines
    assert "  ~/.ssh" in lines
    assert f"  {cli.data}: the fxdesk data folder" in shown.stdout
    assert (
        "Warning: GITHUB_TOKEN looks like a secret: commands, and so the model, can read its value"
        in lines
    )
    everywhere = cli("show")
    assert everywhere.returncode == ExitCode.OK
    assert "  the workspace" in everywhere.stdout.splitlines()
