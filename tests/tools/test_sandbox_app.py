"""The sandbox through the whole app: ``fxdesk run`` with a scripted model, whose commands run
as the engine builds their context (the data folder, the session's /tmp, the network by mode).

The data folder and the workspace live under /var/tmp: under /tmp they would be out of the
sandbox's sight anyway (its /tmp is private), and prove nothing.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import child_env, fxdesk_command
from tests.llmock_server import LLMock

KEY = "sk-test-sandbox-4b1e0c7d-do-not-leak"


@pytest.fixture
def place() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-sandbox-app-", dir="/var/tmp")).resolve()
    (root / "ws").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def run(
    place: Path,
    llmock: LLMock,
    mode: str,
    *commands: str,
    sandbox: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> list[str]:
    """``fxdesk run`` in ``mode`` whose model runs ``commands`` one after the other; the tool
    results as saved. ``sandbox``: options of ``fxdesk sandbox set`` for the workspace first;
    ``env``: more of fxdesk's environment."""
    data = place / "data"
    env = child_env(FXDESK_TEST_KEY=KEY, **(env or {}))

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            fxdesk_command("--data-dir", str(data), *args),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    added = cli(
        "profiles", "add", "envkey", "--kind", "anthropic", "--base-url",
        f"{llmock.base}/anthropic", "--model", "claude-test", "--api-key-env", "FXDESK_TEST_KEY",
        "--default",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    if sandbox:
        done = cli("sandbox", "set", "-w", str(place / "ws"), *sandbox)
        assert done.returncode == 0, done.stderr
    steps: list[dict[str, Any]] = [
        {
            "type": "reply",
            "tool_calls": [{"name": "run_command", "arguments": {"command": command}}],
            "match": {"provider": "anthropic"},
        }
        for command in commands
    ]
    llmock.scenario(*steps, {"type": "reply", "text": "done", "match": {"provider": "anthropic"}})
    ran = cli("run", "-w", str(place / "ws"), "--mode", mode, "go")
    while ran.returncode == 3:  # waiting for an approval: allow it once, and go on
        asked = re.search(r"fxdesk approve (\w+) .*fxdesk resume (\w+)", ran.stderr, re.DOTALL)
        assert asked is not None, ran.stderr
        assert cli("approve", asked[1], "once").returncode == 0
        ran = cli("resume", asked[2])
    assert ran.returncode == 0, ran.stderr
    assert KEY not in ran.stdout + ran.stderr
    db = sqlite3.connect(f"file:{data / 'fxdesk.sqlite3'}?mode=ro", uri=True)
    with contextlib.closing(db):
        rows = db.execute(
            "SELECT content FROM history_entry WHERE kind = 'tool_result' ORDER BY rowid"
        ).fetchall()
    return [content for (content,) in rows]


def test_commands_see_neither_the_data_folder_nor_fxdesks_environment(
    place: Path, llmock: LLMock
) -> None:
    data = place / "data"
    (output,) = run(
        place,
        llmock,
        "yolo",
        f"echo listing: $(ls -A {data}); head -c 200 {data}/fxdesk.sqlite3; echo; "
        "(cat /proc/$PPID/environ; for p in /proc/[0-9]*; do cat $p/environ; done) | "
        "tr '\\0' '\\n'; env",
    )
    assert "listing:\n" in output and "SQLite format" not in output, output
    assert KEY not in output
    assert "FXDESK_TEST_KEY" not in output
    assert (data / "fxdesk.sqlite3").stat().st_size > 0  # it is there, only hidden


def test_the_sessions_tmp_is_kept_between_its_commands_and_private(
    place: Path, llmock: LLMock
) -> None:
    first, second = run(
        place, llmock, "yolo", "echo kept > /tmp/note && echo written", "cat /tmp/note"
    )
    assert first.startswith("written\n"), first
    assert second.startswith("kept\n"), second
    (kept,) = (place / "data" / "sandbox-tmp").glob("*/note")
    assert kept.read_text() == "kept\n"


@pytest.mark.parametrize(("mode", "reached"), [("auto", False), ("yolo", True)])
def test_the_network_is_off_in_auto_mode_and_on_in_yolo(
    place: Path, llmock: LLMock, mode: str, reached: bool
) -> None:
    """The model server listens on the host's loopback: a command reaches it only with the
    network on (the sandbox's own loopback is another)."""
    port = llmock.base.rsplit(":", 1)[1].strip("/")
    (output,) = run(
        place,
        llmock,
        mode,
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); "
        "print('reached the host')\"",
    )
    assert ("reached the host" in output) is reached, output


@pytest.mark.parametrize("listed", [True, False])
def test_a_workspace_writable_path_set_from_the_cli_lets_commands_write_there(
    place: Path, llmock: LLMock, listed: bool
) -> None:
    """A tool writing its cache under the home folder (here a fake one, outside /tmp): the
    write is not in the line the permission check reads, only the sandbox decides."""
    home = place / "home"
    home.mkdir()
    write = (
        "python3 -c \"import os; p = os.path.expanduser('~/.cache/tool'); "
        "os.makedirs(p, exist_ok=True); open(p + '/entry', 'w').write('cached')\" && echo wrote"
    )
    (output,) = run(
        place,
        llmock,
        "yolo",
        write,
        sandbox=("--writable", "~/.cache/tool") if listed else (),
        env={"HOME": str(home)},
    )
    entry = home / ".cache" / "tool" / "entry"
    if listed:
        assert output.startswith("wrote\n"), output
        assert entry.read_text() == "cached"
    else:
        assert "Read-only file system" in output, output
        assert not entry.exists()


@pytest.mark.parametrize("listed", [True, False])
def test_a_workspace_variable_reaches_its_commands(
    place: Path, llmock: LLMock, listed: bool
) -> None:
    (output,) = run(
        place,
        llmock,
        "yolo",
        "echo value=${FXDESK_TEST_EXTRA-unset}",
        sandbox=("--env", "FXDESK_TEST_EXTRA") if listed else (),
        env={"FXDESK_TEST_EXTRA": "passed-on"},
    )
    assert output.startswith("value=passed-on\n" if listed else "value=unset\n"), output


def test_the_workspace_network_setting_gives_auto_mode_the_network(
    place: Path, llmock: LLMock
) -> None:
    port = llmock.base.rsplit(":", 1)[1].strip("/")
    (output,) = run(
        place,
        llmock,
        "auto",
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5); "
        "print('reached the host')\"",
        sandbox=("--network", "on"),
    )
    assert "reached the host" in output, output
