"""Pending work across fxdesk processes (issue 10 items 8 and 14).

Each work item records the fxdesk process that queued it to run it. A restart interrupts the
pending work of a process that is gone (spec §3.7), even while another fxdesk runs, and leaves
the pending work of a live process alone. ``fxdesk send --no-wait`` queues for whichever fxdesk
runs the session next: that work never started, so no restart interrupts it; the next ``send``
or ``resume`` runs it, and so does a running window (here: the window's ``App``, headless).

The processes are real: ``fxdesk`` commands, and small Python programs that run the same
``App`` the window runs, on the same data folder.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.test_sessions import Setup
from tests.helpers import child_env, wait_for

# An fxdesk process as the window runs it (App with its defaults), headless: it queues messages
# without running them, says so, and lives until its standard input closes (then it quits the
# orderly way).
APP = """
import asyncio, sys
from pathlib import Path
from fxdesk.app import App
from fxdesk.paths import DataPaths

async def main(data, session_id, *texts):
    app = App(DataPaths(Path(data), "--data-dir"))
    await app.start()
    for text in texts:
        await app.engine.send(session_id, text, start=False)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.read)
    await app.stop()

asyncio.run(main(*sys.argv[1:]))
"""


def app_process(s: Setup, session_id: str, *texts: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-u",
            "-c",
            APP,
            str(s.data),
            session_id,
            *texts,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.strip() == "ready", process.stderr.read() if process.stderr else line
    return process


def quit_app(process: subprocess.Popen[str]) -> str:
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return err


def kill(*processes: subprocess.Popen[str] | None) -> None:
    for process in processes:
        if process is not None and process.poll() is None:
            process.kill()
            process.communicate()


def queue(s: Setup, session_id: str) -> list[tuple[str, str, str | None]]:
    return [(q["content"], q["status"], q["reason"]) for q in s.show(session_id)["queue"]]


def new_session(s: Setup, prompt: str) -> str:
    before = {row["id"] for row in json.loads(s.fx("sessions", "--json").stdout)}
    assert s.fx("run", "-w", str(s.workspace), prompt).returncode == 0
    (session_id,) = {row["id"] for row in json.loads(s.fx("sessions", "--json").stdout)} - before
    return session_id


def test_a_dead_process_pending_work_is_interrupted_while_a_live_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    s.script.write_text(
        json.dumps(
            {
                "responses": [{"text": "ok"}],
                "when_done": "repeat_last",
                "record_to": str(s.requests),
            }
        )
    )
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    dead_session = new_session(s, "first")
    live_session = new_session(s, "other")
    calls = s.model_calls()

    live = dead = None
    try:
        live = app_process(s, live_session, "the live process runs this later")
        dead = app_process(s, dead_session, "queued by a process that dies", "and this")
        dead.send_signal(signal.SIGKILL)
        dead.wait(30)

        # A plain start of the dead process's session, while the live process runs.
        sent = s.fx("send", dead_session, "the next message")
        assert sent.returncode == 4, sent.stderr  # the abandoned work holds the queue
        assert "fxdesk resume" in sent.stderr
        restart = "interrupted by process restart"
        assert queue(s, dead_session) == [
            ("first", "completed", None),
            ("queued by a process that dies", "interrupted", restart),
            ("and this", "interrupted", restart),
            ("the next message", "pending", None),
        ]
        assert s.model_calls() == calls  # nothing of the dead process's ran
        assert queue(s, live_session)[-1] == ("the live process runs this later", "pending", None)

        # Quitting neither runs nor cancels a queue: it is now a dead process's pending work,
        # like the message of the `send` that stopped with exit 4.
        quit_app(live)
        report = json.loads(s.fx("recover", "--json").stdout)
        assert report["work_interrupted"] == 2
        assert queue(s, dead_session)[-1] == ("the next message", "interrupted", restart)
        assert queue(s, live_session)[-1] == (
            "the live process runs this later",
            "interrupted",
            restart,
        )
    finally:
        kill(live, dead)

    resumed = s.fx("resume", dead_session)
    assert resumed.returncode == 0, resumed.stderr
    assert [status for _c, status, _r in queue(s, dead_session)] == ["completed"] * 4
    assert s.model_calls() == calls + 3  # each once, in order


def test_send_no_wait_work_waits_for_the_next_run_and_no_restart_interrupts_it(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    s.write_script({"text": "ok"})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    assert s.fx("run", "-w", str(s.workspace), "first").returncode == 0
    session_id = s.only_session()

    queued = s.fx("send", session_id, "second", "--no-wait")
    assert queued.returncode == 0, queued.stderr
    assert "no fxdesk window is running" in queued.stdout
    assert f"fxdesk resume {session_id}" in queued.stdout

    # A command that starts the engine (and so recovers) leaves it as it was: it never started.
    report = json.loads(s.fx("recover", "--json").stdout)
    assert report["work_interrupted"] == 0 and report["sessions_changed"] == 0
    assert queue(s, session_id)[-1] == ("second", "pending", None)

    sent = s.fx("send", session_id, "third")
    assert sent.returncode == 0, sent.stderr
    assert [(c, st) for c, st, _r in queue(s, session_id)] == [
        ("first", "completed"),
        ("second", "completed"),
        ("third", "completed"),
    ]
    kinds = [(e["kind"], e["content"]) for e in s.show(session_id)["transcript"]]
    users = [content for kind, content in kinds if kind == "user"]
    assert users == ["first", "second", "third"]
    assert s.model_calls() == 3  # each message once


def test_a_running_window_runs_work_handed_to_it_and_a_starting_one_runs_what_waits(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    s.script.write_text(
        json.dumps(
            {
                "responses": [{"text": "ok"}],
                "when_done": "repeat_last",
                "record_to": str(s.requests),
            }
        )
    )
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    assert s.fx("run", "-w", str(s.workspace), "first").returncode == 0
    session_id = s.only_session()

    # Nobody to run it now: it waits, and a window that starts runs it.
    waiting = s.fx("send", session_id, "while no window runs", "--no-wait")
    assert "no fxdesk window is running" in waiting.stdout
    window = None
    try:
        window = app_process(s, session_id)
        wait_for(
            lambda: queue(s, session_id)[-1] == ("while no window runs", "completed", None),
            60,
            what="the starting window to run the waiting message",
        )
        # A window runs: it picks the message up.
        handed = s.fx("send", session_id, "while the window runs", "--no-wait")
        assert handed.returncode == 0, handed.stderr
        assert "the running fxdesk window runs it" in handed.stdout
        wait_for(
            lambda: queue(s, session_id)[-1] == ("while the window runs", "completed", None),
            60,
            what="the running window to run the handed-off message",
        )
        quit_app(window)
    finally:
        kill(window)
    assert s.model_calls() == 3
