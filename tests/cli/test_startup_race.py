"""Two fxdesk processes starting together (issue 10 item 11: "alone" can race).

A process that finds itself alone recovers without proving session locks. It used to let other
fxdesk processes in (shared instance lock) before that recovery, so a second process starting
in the gap ran its work and then saw it marked "interrupted by process restart" while it ran.
The first process is stopped at that exact step with the test-only ``FXDESK_TEST_HOLD`` hook
(``fxdesk/app.py``); the second is a real ``fxdesk send`` whose turn waits for a gate file.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

from fxdesk.app import TEST_HOLD_ENV
from tests.cli.test_sessions import Setup
from tests.helpers import child_env, fxdesk_command, wait_for

GATED = {
    "text": "Waiting for the gate.",
    "tool_calls": [
        {
            "name": "run_command",
            "arguments": {"command": "until [ -e gate ]; do sleep 0.05; done; echo through"},
        }
    ],
}


def item_statuses(s: Setup, session_id: str) -> list[str]:
    with sqlite3.connect(f"file:{s.data / 'fxdesk.sqlite3'}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT status FROM work_item WHERE session_id = ? ORDER BY position", (session_id,)
        ).fetchall()
    return [str(row[0]) for row in rows]


def waits_for_the_instance_lock(s: Setup, pid: int) -> bool:
    """Whether ``pid`` is blocked in ``flock`` on ``locks/instance.lock`` (``/proc/locks``
    lists a waiting request as ``N: -> FLOCK ... PID MAJ:MIN:INODE ...``)."""
    inode = os.stat(s.data / "locks" / "instance.lock").st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        waiting = "->" in fields and "FLOCK" in fields and str(pid) in fields
        if waiting and any(f.endswith(f":{inode}") for f in fields):
            return True
    return False


def test_a_process_starting_while_another_recovers_alone_keeps_its_work(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write_script({"text": "Hello."})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    assert s.fx("run", "-w", str(s.workspace), "--mode", "yolo", "hello").returncode == 0
    session_id = s.only_session()
    s.write_script(GATED, {"text": "Through the gate."})

    hold = tmp_path / "hold"
    hold.mkdir()
    alone = subprocess.Popen(
        fxdesk_command("--data-dir", str(s.data), "recover", "--json"),
        env=child_env(**{TEST_HOLD_ENV: f"before-recovery:{hold}"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    second: subprocess.Popen[str] | None = None
    try:
        wait_for(lambda: any(hold.glob("held-*")), 60, what="the first process to decide")
        second = s.start("send", session_id, "wait for the gate")
        pid = second.pid
        # The second process either waits for the first one's recovery (as it must), or got
        # in and runs its turn (the race): let the first process recover only then.
        wait_for(
            lambda: (
                waits_for_the_instance_lock(s, pid) or item_statuses(s, session_id)[-1] == "running"
            ),
            60,
            what="the second process to wait for the lock or to run its turn",
        )
        (hold / "go").touch()
        out, err = alone.communicate(timeout=60)
        assert alone.returncode == 0, err
        report = json.loads(out)
        assert report["work_interrupted"] == 0  # the second process's turn was not touched
        wait_for(lambda: item_statuses(s, session_id)[-1] == "running", 60, what="the turn")
        (s.workspace / "gate").touch()
        _out, err = second.communicate(timeout=120)
    finally:
        (hold / "go").touch()
        (s.workspace / "gate").touch()
        for process in (alone, second):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()
    assert second.returncode == 0, err
    shown = s.show(session_id)
    assert [q["status"] for q in shown["queue"]] == ["completed", "completed"]
    assert all(q["reason"] is None for q in shown["queue"])
    assert "Through the gate." in [e["content"] for e in shown["transcript"]]
