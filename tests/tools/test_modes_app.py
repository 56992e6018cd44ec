"""The modes through real ``fxdesk`` processes: ``fxdesk run`` with a scripted model, its
commands in real bubblewrap, answers given with ``fxdesk approve`` (or on the terminal), and a
real HTTP server on the host's loopback as the network's target.

The data folder and the workspace live under /var/tmp: the sandbox's /tmp is its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.model import UNRESTRICTED_SETTING
from fxdesk.tools import sandbox_probe
from tests.cli.test_sessions import Setup
from tests.helpers import child_env, fxdesk_command, wait_for
from tests.host_server import GREETING, Host, serving

pytestmark = pytest.mark.skipif(
    not sandbox_probe.sandbox_status().available, reason="needs a working bubblewrap"
)
NEEDS_NETWORK = "needs the network (auto mode runs commands without it)"


@pytest.fixture
def host() -> Iterator[Host]:
    with serving() as found:
        yield found


@pytest.fixture
def s() -> Iterator[Setup]:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-modes-app-", dir="/var/tmp")).resolve()
    yield Setup(root)
    shutil.rmtree(root, ignore_errors=True)


def runs(*commands: str) -> list[dict[str, Any]]:
    """Model responses that run each command in turn."""
    return [
        {"tool_calls": [{"name": "run_command", "arguments": {"command": line}}]}
        for line in commands
    ]


def agent(s: Setup, *responses: dict[str, Any]) -> None:
    s.write_script(*responses, {"text": "Done."})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")


def stopped(s: Setup, mode: str) -> str:
    """``fxdesk run --no-input`` stopped on an approval: the session id."""
    ran = s.fx("run", "-w", str(s.workspace), "--mode", mode, "--no-input", "go")
    assert ran.returncode == 3, ran.stderr
    found = re.search(r"fxdesk resume (\w+)", ran.stderr)
    assert found is not None, ran.stderr
    return found[1]


def pending(s: Setup) -> dict[str, Any]:
    done = s.fx("approvals", "--json")
    assert done.returncode == 0, done.stderr
    (approval,) = json.loads(done.stdout)
    return approval  # type: ignore[no-any-return]


def results(s: Setup) -> list[str]:
    db = sqlite3.connect(f"file:{s.data / 'fxdesk.sqlite3'}?mode=ro", uri=True)
    with contextlib.closing(db):
        rows = db.execute(
            "SELECT content FROM history_entry WHERE kind = 'tool_result' ORDER BY rowid"
        ).fetchall()
    return [content for (content,) in rows]


def curl(host: Host) -> str:
    return f"curl -sS --max-time 5 {host.url}/curl"


def test_auto_asks_for_the_network_and_approve_once_reaches_the_host(s: Setup, host: Host) -> None:
    agent(s, *runs(curl(host)))
    session = stopped(s, "auto")
    listing = s.fx("approvals")
    assert f"why it asks: `{curl(host)}` {NEEDS_NETWORK}" in listing.stdout, listing.stdout
    assert "Sandbox: may write the workspace and /tmp; network on" in listing.stdout
    assert host.seen == []
    approval = pending(s)
    assert s.fx("approve", approval["id"][:12], "once").returncode == 0
    s.write_script({"text": "Done."})  # a new process plays its script from the start
    resumed = s.fx("resume", session, "--no-input")
    assert resumed.returncode == 0, resumed.stderr
    assert GREETING in results(s)[0]
    assert host.seen == ["/curl"]


def test_denied_the_command_never_reaches_the_host(s: Setup, host: Host) -> None:
    agent(s, *runs(curl(host)))
    session = stopped(s, "auto")
    assert s.fx("approve", pending(s)["id"][:12], "deny").returncode == 0
    s.write_script({"text": "Done."})
    assert s.fx("resume", session, "--no-input").returncode == 0
    assert results(s) == ["The person denied this action."]
    assert host.seen == []


def test_approve_unsandboxed_runs_that_one_command_outside(s: Setup) -> None:
    """Outside, the command sees fxdesk's data folder and its parent is fxdesk; the same
    command next asks again and runs inside, where both are hidden."""
    line = f"ls {s.data}; cat /proc/$PPID/comm"
    agent(s, *runs(line, line))
    session = stopped(s, "ask")
    approved = s.fx("approve", pending(s)["id"][:12], "unsandboxed")
    assert approved.returncode == 0, approved.stderr
    assert "allowed once, outside the sandbox" in approved.stdout
    s.write_script(*runs(line), {"text": "Done."})
    assert s.fx("resume", session, "--no-input").returncode == 3  # the second call asks again
    assert s.fx("approve", pending(s)["id"][:12], "once").returncode == 0
    s.write_script({"text": "Done."})
    assert s.fx("resume", session, "--no-input").returncode == 0
    outside, inside = results(s)
    assert "fxdesk.sqlite3" in outside and "bwrap" not in outside
    assert "[ran outside the sandbox: the person allowed this one command outside" in outside
    assert "fxdesk.sqlite3" not in inside and "bwrap" in inside
    assert "ran outside the sandbox" not in inside


def test_approve_unsandboxed_is_refused_for_a_file_edit(s: Setup) -> None:
    agent(s, {"tool_calls": [{"name": "write_file", "arguments": {"path": "a", "content": "x"}}]})
    stopped(s, "ask")
    approval = pending(s)
    refused = s.fx("approve", approval["id"][:12], "unsandboxed")
    assert refused.returncode == 2  # a usage error, said in one line
    assert refused.stderr.startswith("fxdesk: approval ")
    assert "is not a command that would run in the sandbox" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert pending(s)["status"] == "pending"


def test_on_a_terminal_5_runs_it_outside_the_sandbox(s: Setup) -> None:
    agent(s, *runs(f"ls {s.data}"))
    master, slave = os.openpty()
    command = ["run", "-w", str(s.workspace), "--mode", "ask", "go"]
    process = subprocess.Popen(
        fxdesk_command("--data-dir", str(s.data), *command),
        env=child_env(),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(slave)
    try:
        wait_for(lambda: s.fx("approvals", "--json").stdout.strip() not in ("", "[]"), 60)
        os.write(master, b"5\n")
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    assert process.returncode == 0, err
    assert "[5] run outside the sandbox, once" in err
    assert "fxdesk.sqlite3" in results(s)[0]


def test_mode_unrestricted_is_refused_while_its_setting_is_off(s: Setup) -> None:
    agent(s, *runs("echo hi"))
    ran = s.fx("run", "-w", str(s.workspace), "--mode", "unrestricted", "go")
    assert ran.returncode == 2, ran.stderr
    assert UNRESTRICTED_SETTING in ran.stderr and "Settings → General" in ran.stderr
    assert json.loads(s.fx("sessions", "--json").stdout) == []
