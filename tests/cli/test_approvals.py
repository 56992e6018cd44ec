"""Permissions from the terminal, through real fxdesk processes.

`fxdesk run` asks on its terminal (a pseudo-terminal here), or stops with exit 3 leaving the
approval pending; `fxdesk approvals`, `fxdesk approve` and `fxdesk rules` work on the same data
folder; a SIGKILLed process leaves its approval stale and its work interrupted, and resuming asks
again.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.test_sessions import Setup
from tests.helpers import child_env, fxdesk_command, wait_for

MKDIR = {
    "text": "Making the folder.",
    "tool_calls": [{"name": "run_command", "arguments": {"command": "mkdir made"}}],
}


def mkdir_agent(s: Setup) -> None:
    """The default profile: an agent that asks to run ``mkdir made``, then says "Done."."""
    s.write_script(MKDIR, {"text": "Done."})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")


def run_stopped_for_approval(s: Setup) -> subprocess.CompletedProcess[str]:
    """``fxdesk run --no-input`` of the mkdir agent in ask mode: it stops with exit 3."""
    mkdir_agent(s)
    ran = s.fx("run", "-w", str(s.workspace), "--mode", "ask", "--no-input", "make a folder")
    assert ran.returncode == 3, ran.stderr
    return ran


def approvals(s: Setup) -> list[dict[str, Any]]:
    done = s.fx("approvals", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def status_of(s: Setup, approval_id: str) -> str:
    with sqlite3.connect(f"file:{s.data / 'fxdesk.sqlite3'}?mode=ro", uri=True) as db:
        row = db.execute("SELECT status FROM approval WHERE id = ?", (approval_id,)).fetchone()
    return str(row[0])


def start_on_a_terminal(s: Setup, *args: str) -> tuple[subprocess.Popen[str], int]:
    """``fxdesk ARGS`` with a pseudo-terminal as its standard input (so it asks there)."""
    master, slave = os.openpty()
    process = subprocess.Popen(
        fxdesk_command("--data-dir", str(s.data), *args),
        env=child_env(),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(slave)
    return process, master


def test_without_a_terminal_run_stops_with_exit_3_and_approve_then_resume_finishes(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    ran = run_stopped_for_approval(s)
    (pending,) = approvals(s)
    assert pending["label"] == "mkdir made" and pending["status"] == "pending"
    assert pending["detail"]["uncovered"] == ["mkdir made"]
    assert f"fxdesk approve {pending['id'][:12]}" in ran.stderr
    assert not (s.workspace / "made").exists()

    approved = s.fx("approve", pending["id"][:12], "session")
    assert approved.returncode == 0, approved.stderr
    assert "allowed session; 1 rule(s) stored" in approved.stdout
    again = s.fx("approve", pending["id"][:12], "once")
    assert again.returncode == 1 and "no longer pending" in again.stderr

    session_id = s.only_session()
    s.write_script({"text": "Done."})  # a new process plays its script from the start
    resumed = s.fx("resume", session_id, "--no-input")
    assert resumed.returncode == 0, resumed.stderr
    assert "Done." in resumed.stdout
    assert (s.workspace / "made").is_dir()
    assert s.model_calls() == 2  # the approved call ran without asking the model again
    rules = json.loads(s.fx("rules", "list", "--json").stdout)
    assert [(r["pattern"], r["scope"], r["scope_key"]) for r in rules] == [
        ("mkdir made", "session", session_id)
    ]


def test_on_a_terminal_run_asks_and_the_answer_runs_it(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    mkdir_agent(s)
    process, terminal = start_on_a_terminal(
        s, "run", "-w", str(s.workspace), "--mode", "ask", "make it"
    )
    try:
        wait_for(lambda: len(approvals(s)) == 1, 60, what="the approval to be asked")
        os.write(terminal, b"1\n")  # allow once
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(terminal)
    assert process.returncode == 0, err
    assert "[1] allow once" in err and "mkdir made" in err
    assert "Done." in out
    assert (s.workspace / "made").is_dir()


def test_a_pending_approval_survives_sigkill_as_stale_and_resuming_asks_again(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    mkdir_agent(s)
    process, terminal = start_on_a_terminal(
        s, "run", "-w", str(s.workspace), "--mode", "ask", "make it"
    )
    try:
        wait_for(lambda: len(approvals(s)) == 1, 60, what="the approval to be asked")
        (pending,) = approvals(s)
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        os.close(terminal)

    recovered = json.loads(s.fx("recover", "--json").stdout)
    assert recovered["work_interrupted"] == 1
    assert status_of(s, pending["id"]) == "stale"
    session_id = s.only_session()
    assert s.show(session_id)["queue"][0]["status"] == "interrupted"
    assert approvals(s) == []
    stale = s.fx("approve", pending["id"][:12], "once")
    assert stale.returncode != 0

    resumed = s.fx("resume", session_id, "--no-input")
    assert resumed.returncode == 3  # it asks again: the same question, pending again
    (again,) = approvals(s)
    assert again["id"] == pending["id"]
    assert s.fx("approve", again["id"][:12], "once").returncode == 0
    s.write_script({"text": "Done."})  # a new process plays its script from the start
    finished = s.fx("resume", session_id, "--no-input")
    assert finished.returncode == 0, finished.stderr
    assert (s.workspace / "made").is_dir()
    assert s.model_calls() == 2  # resuming picked up at the tool call: no model call replayed


def test_rules_are_listed_added_and_removed(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    added = s.fx("rules", "add", "allow", "run_command", "npm test", "--match", "prefix")
    assert added.returncode == 0, added.stderr
    denied = s.fx("rules", "add", "deny", "*", "~/.ssh/*")
    assert denied.returncode == 0, denied.stderr
    listed = s.fx("rules", "list")
    assert "npm test" in listed.stdout and "(prefix)" in listed.stdout
    rules = json.loads(s.fx("rules", "list", "--json").stdout)
    assert {(r["action"], r["tool"], r["match"], r["scope"]) for r in rules} == {
        ("allow", "run_command", "prefix", "global"),
        ("deny", "*", "exact", "global"),
    }
    first = next(r["id"] for r in rules if r["action"] == "allow")
    assert s.fx("rules", "remove", str(first)).returncode == 0
    assert len(json.loads(s.fx("rules", "list", "--json").stdout)) == 1
    missing = s.fx("rules", "remove", "999")
    assert missing.returncode == 2 and "no rule 999" in missing.stderr
