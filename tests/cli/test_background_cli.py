"""``fxdesk start/ps/logs/stop/run-commands`` as the person types them: the real entry point in
subprocesses, real ``bash`` wrappers (in bubblewrap where this machine has it) and a real
``python3 -m http.server`` answering real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fxdesk.app import App
from fxdesk.engine.facade import RunCommand
from fxdesk.paths import resolve
from tests.helpers import child_env, fxdesk_command, run_fxdesk, wait_for

SERVER = "python3 -m http.server 0 --bind 127.0.0.1"


class Desk:
    """One data folder and one workspace, and ``fxdesk`` run on them."""

    def __init__(self, tmp_path: Path) -> None:
        self.data = tmp_path / "data"
        self.workspace = tmp_path / "project"
        self.workspace.mkdir()
        (self.workspace / "index.html").write_text("hello from the project\n")
        self.pids: list[int] = []

    def fx(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_fxdesk("--data-dir", str(self.data), *args)

    def ps(self, *args: str) -> list[dict[str, Any]]:
        done = self.fx("ps", "--json", *args)
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)
        self.pids += [row["pid"] for row in rows]
        return rows  # type: ignore[no-any-return]

    def start_server(self) -> tuple[str, str]:
        """``start --durable --url`` a server: (its #N line, its URL)."""
        done = self.fx("start", "-w", str(self.workspace), "--durable", "--url", "--", SERVER)
        assert done.returncode == 0, done.stderr
        started = re.search(r"^(#\d+) started \(durable\) .*: log at (\S+)$", done.stdout, re.M)
        assert started is not None, done.stdout
        assert Path(started.group(2)).is_file()
        url = re.search(r"serves at (http://127\.0\.0\.1:\d+/)", done.stdout)
        assert url is not None, done.stdout + done.stderr
        return started.group(1), url.group(1)

    def cleanup(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    made = Desk(tmp_path)
    try:
        yield made
    finally:
        made.cleanup()


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def answers(url: str) -> bool:
    try:
        fetch(url)
    except OSError:
        return False
    return True


@pytest.mark.slow
def test_a_durable_server_is_started_listed_read_and_stopped_from_the_command_line(
    desk: Desk,
) -> None:
    ref, url = desk.start_server()
    assert ref == "#1"
    assert fetch(url) == "hello from the project\n"  # it outlived `fxdesk start`

    (row,) = wait_for(lambda: desk.ps(), what="the server in ps")  # type: ignore[misc]
    assert (row["ref"], row["state"], row["url"]) == ("#1", "running", url)
    assert row["session_name"] == "Commands"
    assert (row["origin"], row["policy"], row["read_only"]) == ("person", "durable", False)
    assert row["cwd"] == str(desk.workspace.resolve())
    assert row["command"] == SERVER and row["exit_code"] is None
    assert isinstance(row["uptime_s"], int)
    table = desk.fx("ps")
    assert table.returncode == 0 and url in table.stdout and "Commands" in table.stdout

    logs = desk.fx("logs", "1")
    assert logs.returncode == 0, logs.stderr
    assert "Serving HTTP on 127.0.0.1 port" in logs.stdout

    stopped = desk.fx("stop", "1")
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "Command #1 stopped.")
    assert not answers(url)
    assert desk.ps() == []
    (ended,) = desk.ps("--all")
    assert (ended["ref"], ended["state"], ended["uptime_s"]) == ("#1", "stopped", None)
    again = desk.fx("stop", "1")
    assert (again.returncode, again.stdout.strip()) == (0, "Command #1 is not running (stopped).")

    second, _ = desk.start_server()
    assert second == "#2"  # numbers are not reused within the session
    desk.ps()
    assert desk.fx("stop", "2").returncode == 0


def test_logs_show_invalid_utf8_and_nul_and_follow_until_the_task_ends(desk: Desk) -> None:
    script = "printf 'caf\\xe9 \\x00 ok\\n'; sleep 1; echo after; exit 4"
    started = desk.fx("start", "-w", str(desk.workspace), "--durable", "--", script)
    assert started.returncode == 0, started.stderr
    followed = desk.fx("logs", "1", "--follow")
    assert followed.returncode == 0, followed.stderr
    assert followed.stdout == "caf\ufffd \u2400 ok\nafter\n"
    assert "#1 ended with code 4" in followed.stderr
    plain = run_fxdesk("--data-dir", str(desk.data), "logs", "1", LANG="C", LC_ALL="C")
    assert plain.returncode == 0, plain.stderr  # an ASCII terminal gets '?', not a crash
    assert "ok" in plain.stdout and "after" in plain.stdout
    (row,) = desk.ps("--all")
    assert (row["state"], row["exit_code"]) == ("failed", 4)


def test_start_without_durable_stays_in_the_foreground_and_ctrl_c_stops_the_task(
    desk: Desk,
) -> None:
    done = desk.fx("start", "-w", str(desk.workspace), "--", "echo out; echo err >&2; exit 7")
    assert done.returncode == 7  # the task's own exit code
    assert done.stdout == "out\nerr\n"
    assert "ended with code 7" in done.stderr

    marker = desk.workspace / "alive"
    child = subprocess.Popen(
        fxdesk_command(
            "--data-dir",
            str(desk.data),
            "start",
            "-w",
            str(desk.workspace),
            "--",
            f"echo started; while true; do touch {marker}; sleep 0.1; done",
        ),
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(marker.exists, what="the foreground task to run")
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130
    assert out.startswith("started\n")
    # #1 again: a foreground task has no record, so the next fxdesk cannot know its number.
    assert "Command #1 stopped." in err
    marker.unlink()
    time.sleep(0.5)
    assert not marker.exists()  # the loop is gone, not only its wrapper


def test_saved_run_commands_are_listed_and_started_by_name(desk: Desk) -> None:
    async def save() -> None:
        app = App(resolve(desk.data))
        await app.start(recover=False)
        try:
            workspace = await app.engine.ensure_workspace(desk.workspace)
            await app.engine.set_run_commands(
                workspace.id,
                (
                    RunCommand.make("dev server", SERVER, expect_url=True, durable=True),
                    RunCommand.make("hello", "echo hello from $PWD", folder="sub"),
                ),
            )
        finally:
            await app.stop()

    (desk.workspace / "sub").mkdir()
    asyncio.run(save())
    listed = desk.fx("run-commands", "-w", str(desk.workspace))
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"dev server: {SERVER}  [url, durable]",
        "hello: echo hello from $PWD (in sub)",
    ]
    as_json = json.loads(desk.fx("run-commands", "-w", str(desk.workspace), "--json").stdout)
    assert [c["name"] for c in as_json] == ["dev server", "hello"]

    hello = desk.fx("start", "-w", str(desk.workspace), "--saved", "hello")
    assert hello.returncode == 0, hello.stderr
    assert hello.stdout == f"hello from {(desk.workspace / 'sub').resolve()}\n"

    server = desk.fx("start", "-w", str(desk.workspace), "--saved", "DEV SERVER")
    assert server.returncode == 0, server.stderr
    assert "started (durable)" in server.stdout
    (row,) = desk.ps()
    assert row["url"] is not None and answers(row["url"])
    assert desk.fx("stop", row["id"]).returncode == 0  # by its id

    unknown = desk.fx("start", "-w", str(desk.workspace), "--saved", "nope")
    assert unknown.returncode == 2
    assert "no run command named 'nope' here ('dev server', 'hello')" in unknown.stderr


def test_clear_errors_for_unknown_tasks_and_folders_that_are_not_workspaces(
    desk: Desk, tmp_path: Path
) -> None:
    for command in (("stop", "3"), ("logs", "3")):
        done = desk.fx(*command)
        assert done.returncode == 2
        assert "no background task #3 (see `fxdesk ps --all`)" in done.stderr
    bad_ref = desk.fx("stop", "abc")
    assert bad_ref.returncode == 2 and "not a background task reference" in bad_ref.stderr

    missing = tmp_path / "missing"
    done = desk.fx("start", "-w", str(missing), "--durable", "--", "sleep 1")
    assert done.returncode == 2
    assert f"cannot use that workspace: {missing} does not exist" in done.stderr
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    done = desk.fx("start", "-w", str(a_file), "--", "sleep 1")
    assert done.returncode == 2 and "is not a folder" in done.stderr
    unknown = desk.fx("run-commands", "-w", str(tmp_path))
    assert unknown.returncode == 2 and "is not a workspace of fxdesk yet" in unknown.stderr
    neither = desk.fx("start", "-w", str(desk.workspace))
    assert neither.returncode == 2 and "either -- COMMAND or --saved NAME" in neither.stderr


def test_a_number_used_in_two_sessions_needs_the_session(desk: Desk, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for folder in (desk.workspace, other):
        done = desk.fx("start", "-w", str(folder), "--durable", "--", "sleep 600")
        assert done.returncode == 0, done.stderr
    rows = desk.ps()
    assert [r["ref"] for r in rows] == ["#1", "#1"]
    ambiguous = desk.fx("stop", "1")
    assert ambiguous.returncode == 2
    assert "names a task in more than one session" in ambiguous.stderr
    assert [r["state"] for r in desk.ps()] == ["running", "running"]  # nothing was stopped
    done = desk.fx("stop", "1", "-s", rows[0]["session_id"][:8])
    assert (done.returncode, done.stdout.strip()) == (0, "Command #1 stopped.")
    (left,) = desk.ps()
    assert left["session_id"] == rows[1]["session_id"]
    done = desk.fx("stop", "1")  # only one #1 runs now: that is the one meant
    assert (done.returncode, done.stdout.strip()) == (0, "Command #1 stopped.")
    assert desk.ps() == []
    assert desk.fx("logs", "1").returncode == 2  # logs still needs to know which


if sys.platform != "linux":  # pragma: no cover - the wrappers' identity is read from /proc
    pytestmark = pytest.mark.skip(reason="Linux only")
