"""The engine through the CLI, in real processes: a real crash, two processes on one data dir."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import child_env, fxdesk_command, run_fxdesk, wait_for


class Setup:
    def __init__(self, tmp_path: Path) -> None:
        self.data = tmp_path / "data"
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir()
        self.script = tmp_path / "script.json"
        self.requests = tmp_path / "requests.jsonl"

    def write_script(self, *responses: dict[str, Any]) -> None:
        self.script.write_text(
            json.dumps({"responses": list(responses), "record_to": str(self.requests)})
        )

    def fx(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_fxdesk("--data-dir", str(self.data), *args)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            fxdesk_command("--data-dir", str(self.data), *args),
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def model_calls(self) -> int:
        return len(self.requests.read_text().splitlines()) if self.requests.exists() else 0

    def show(self, session_id: str) -> dict[str, Any]:
        done = self.fx("show", session_id, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    def only_session(self) -> str:
        sessions = json.loads(self.fx("sessions", "--json").stdout)
        assert len(sessions) == 1
        return str(sessions[0]["id"])


APPEND = {
    "text": "Appending.",
    "tool_calls": [
        {
            "name": "write_file",
            "arguments": {"path": "log.txt", "content": "once\n", "append": True},
        }
    ],
}


def test_run_streams_and_exits_by_outcome(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write_script(APPEND, {"text": "All done.", "chunk": 3})
    assert (
        s.fx(
            "profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default"
        ).returncode
        == 0
    )
    done = s.fx("run", "-w", str(s.workspace), "append a line")
    assert done.returncode == 0, done.stderr
    assert "All done." in done.stdout and "→ write_file" in done.stdout
    assert (s.workspace / "log.txt").read_text() == "once\n"
    shown = s.show(s.only_session())
    kinds = [e["kind"] for e in shown["transcript"]]
    assert kinds == ["user", "assistant", "tool_call", "tool_result", "assistant", "turn_end"]
    assert shown["usage"]["model_calls"] == 2

    s.write_script({"error": {"code": "server_error", "message": "upstream 500"}})
    failed = s.fx("run", "-w", str(s.workspace), "this will fail")
    assert failed.returncode == 1
    assert "provider_failed: server_error: upstream 500" in failed.stderr


def test_run_without_a_profile_says_how_to_add_one(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    done = s.fx("run", "-w", str(s.workspace), "hi")
    assert done.returncode == 2
    assert "fxdesk profiles add" in done.stderr


def test_a_real_crash_mid_turn_recovers_without_replay(tmp_path: Path) -> None:
    """SIGKILL after the tool with a file side effect committed; recover marks the work
    interrupted without calling the model; resume continues after the tool step."""
    s = Setup(tmp_path)
    s.write_script(APPEND, {"stall": True})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    app = s.start("run", "-w", str(s.workspace), "append a line")
    try:
        wait_for(lambda: s.model_calls() == 2, 60, what="the second model call (stalling)")
        session_id = s.only_session()
        results = [e for e in s.show(session_id)["transcript"] if e["kind"] == "tool_result"]
        assert len(results) == 1  # the tool step is committed
        app.send_signal(signal.SIGKILL)
        app.wait(30)
    finally:
        if app.poll() is None:
            app.kill()
        app.communicate()
    assert (s.workspace / "log.txt").read_text() == "once\n"

    recovered = s.fx("recover", "--json")
    report = json.loads(recovered.stdout)
    assert report["work_interrupted"] == 1 and report["fully_reconciled"]
    assert s.model_calls() == 2  # recovery calls no model
    assert s.show(session_id)["queue"][0]["status"] == "interrupted"

    s.write_script({"text": "Finished after the restart."})
    resumed = s.fx("resume", session_id)
    assert resumed.returncode == 0, resumed.stderr
    assert "Finished after the restart." in resumed.stdout
    assert (s.workspace / "log.txt").read_text() == "once\n"  # not run again
    assert s.model_calls() == 3
    kinds = [e["kind"] for e in s.show(session_id)["transcript"]]
    assert kinds == ["user", "assistant", "tool_call", "tool_result", "assistant", "turn_end"]


def test_a_second_process_sees_the_session_busy_and_leaves_it_alone(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write_script({"stall": True})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    first = s.start("run", "-w", str(s.workspace), "think forever")
    try:
        wait_for(lambda: s.model_calls() == 1, 60, what="the first process to be mid-turn")
        session_id = s.only_session()
        report = json.loads(s.fx("recover", "--json").stdout)
        assert report["sessions_external_busy"] == 1
        assert report["busy_sessions"] == [session_id]
        assert report["work_interrupted"] == 0
        assert s.show(session_id)["queue"][0]["status"] == "running"
        resumed = s.fx("resume", session_id)
        assert resumed.returncode == 4
        assert f"in use by process {first.pid}" in resumed.stderr
        assert s.model_calls() == 1
        first.send_signal(signal.SIGTERM)  # quitting never cancels: the work is interrupted
        first.wait(60)
    finally:
        if first.poll() is None:
            first.kill()
        _out, err = first.communicate()
    assert first.returncode == 4, err
    assert "fxdesk resume" in err
    report = json.loads(s.fx("recover", "--json").stdout)
    assert report["work_interrupted"] == 1 and report["fully_reconciled"]


def test_a_message_sent_to_a_session_busy_elsewhere_stays_queued_for_it(tmp_path: Path) -> None:
    """``fxdesk send`` while another process runs the session: refused to run here, naming
    that process, and the message stays queued, left to whichever fxdesk runs the session next
    (issue 16 item 2). Before, it stayed owned by the command that had ended, so the next
    start's recovery interrupted a message that never started."""
    s = Setup(tmp_path)
    s.write_script({"stall": True})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    first = s.start("run", "-w", str(s.workspace), "think forever")
    try:
        wait_for(lambda: s.model_calls() == 1, 60, what="the first process to be mid-turn")
        session_id = s.only_session()
        sent = s.fx("send", session_id, "and then this")
        assert sent.returncode == 4
        assert f"in use by process {first.pid}" in sent.stderr
        assert "stays queued" in sent.stderr
        assert f"process {first.pid} (" in sent.stderr  # "(python)": what it is
        assert "is running the session and runs it next" in sent.stderr
        first.send_signal(signal.SIGTERM)
        first.wait(60)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
    report = json.loads(s.fx("recover", "--json").stdout)
    assert report["work_interrupted"] == 1  # the stalled turn, not the message
    queue = s.show(session_id)["queue"]
    assert [(q["content"], q["status"]) for q in queue] == [
        ("think forever", "interrupted"),
        ("and then this", "pending"),
    ]
    assert s.model_calls() == 1


def test_send_cancel_and_sessions(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write_script({"text": "one"}, {"text": "two"})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    assert s.fx("run", "-w", str(s.workspace), "first").returncode == 0
    session_id = s.only_session()
    queued = s.fx("send", session_id[:6], "second", "--no-wait")
    assert queued.returncode == 0
    assert [q["status"] for q in s.show(session_id)["queue"]] == ["completed", "pending"]
    cancelled = s.fx("cancel", session_id, "--reason", "changed my mind")
    assert "cancelled 1 work item" in cancelled.stdout
    queue = s.show(session_id)["queue"]
    assert queue[1]["status"] == "cancelled" and queue[1]["reason"] == "changed my mind"
    listed = s.fx("sessions")
    assert session_id in listed.stdout and "idle" in listed.stdout
    assert s.fx("show", "nope").returncode == 2


def test_a_cancel_from_another_process_stops_the_turn_at_its_next_step(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    busy = {
        "tool_calls": [{"name": "echo", "arguments": {"text": "again"}}],
        "text": "Working",
        "chunk": 1,
        "delay_ms": 200,  # ~1.4 s a call: far from max_iterations when the cancel lands
    }
    s.script.write_text(
        json.dumps({"responses": [busy], "when_done": "repeat_last", "record_to": str(s.requests)})
    )
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    runner = s.start("run", "-w", str(s.workspace), "loop until cancelled")
    try:
        wait_for(lambda: s.model_calls() >= 2, 60, what="the turn to be looping")
        session_id = s.only_session()
        cancelled = s.fx("cancel", session_id, "--reason", "enough")
        assert "cancelled 1 work item" in cancelled.stdout
        runner.wait(60)
    finally:
        if runner.poll() is None:
            runner.kill()
        _out, err = runner.communicate()
    assert runner.returncode == 1, err
    assert "cancelled" in err
    calls_at_cancel = s.model_calls()
    queue = s.show(session_id)["queue"]
    assert queue[0]["status"] == "cancelled" and queue[0]["reason"] == "enough"
    assert s.model_calls() == calls_at_cancel


def test_scenario_48_recovery_skips_work_owned_by_a_live_process(tmp_path: Path) -> None:
    """While another process is mid-turn, recovery reports it busy (external busy, nothing
    changed, nothing failed) and leaves its running item, every time; once that process
    completes it (exit 0), the next recovery is fully reconciled, the session is no longer busy
    elsewhere, and the item is the other process's completed result: state idle, one turn
    stamped with its work id, which is the session's last work id. (``lastResult`` is the
    recovering process's own slot result; a CLI process has none, so it is not asserted.)"""
    s = Setup(tmp_path)
    gated = {
        "text": "Waiting for the gate.",
        "tool_calls": [
            {
                "name": "run_command",
                "arguments": {"command": "until [ -e gate ]; do sleep 0.05; done"},
            }
        ],
    }
    s.write_script(gated, {"text": "done"})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    other = s.start("run", "-w", str(s.workspace), "--mode", "yolo", "wait for the gate")
    try:
        wait_for(lambda: s.model_calls() == 1, 60, what="the other process to be mid-turn")
        session_id = s.only_session()
        for _ in range(2):  # repeated recoveries report the same
            report = json.loads(s.fx("recover", "--json").stdout)
            assert report["sessions_external_busy"] == 1 and report["busy_sessions"] == [session_id]
            assert (report["sessions_changed"], report["sessions_failed"]) == (0, 0)
            assert report["work_interrupted"] == report["work_completed"] == 0
            assert not report["fully_reconciled"]
            (listed,) = json.loads(s.fx("sessions", "--json").stdout)
            assert listed["busy_elsewhere"] is True and listed["state"] == "running"
        assert [q["status"] for q in s.show(session_id)["queue"]] == ["running"]
        (s.workspace / "gate").touch()
        other.wait(120)
    finally:
        (s.workspace / "gate").touch()
        if other.poll() is None:
            other.kill()
        other.communicate()
    assert other.returncode == 0
    report = json.loads(s.fx("recover", "--json").stdout)
    assert report["fully_reconciled"] and report["sessions_changed"] == 0
    assert report["busy_sessions"] == []
    (listed,) = json.loads(s.fx("sessions", "--json").stdout)
    assert listed["busy_elsewhere"] is False and listed["state"] == "idle"
    shown = s.show(session_id)
    ((item_id, status),) = [(q["id"], q["status"]) for q in shown["queue"]]
    assert status == "completed"
    assert shown["session"]["last_work_id"] == item_id
    kinds = [e["kind"] for e in shown["transcript"]]
    assert kinds.count("turn_end") == 1 and kinds[-1] == "turn_end"
    assert {e["work_id"] for e in shown["transcript"]} == {item_id}
    assert s.model_calls() == 2  # the other process's two calls; recovery made none


def test_send_attaches_images_and_refuses_a_file_that_is_none(tmp_path: Path) -> None:
    """Issue 18 item 6: ``fxdesk send ID MESSAGE --image FILE``; the scripted model records the
    images its request carried. A file that is not an image is refused, nothing queued."""
    from tests.pngs import png_bytes

    s = Setup(tmp_path)
    s.write_script({"text": "hello"}, {"text": "a small image"})
    added = s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script),
                 "--default")  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert s.fx("run", "-w", str(s.workspace), "hi").returncode == 0
    session_id = s.only_session()
    shot = tmp_path / "shot.png"
    shot.write_bytes(png_bytes(3, 2))
    sent = s.fx("send", session_id, "what is this?", "--image", str(shot))
    assert sent.returncode == 0, sent.stderr
    last = json.loads(s.requests.read_text().splitlines()[-1])
    assert last["images"] == [
        {"media_type": "image/png", "size": len(png_bytes(3, 2)), "name": "shot.png"}
    ]
    (tmp_path / "notes.png").write_text("words")
    refused = s.fx("send", session_id, "and this?", "--image", str(tmp_path / "notes.png"))
    assert refused.returncode == 2
    assert "notes.png is not a PNG, JPEG, GIF or WebP image" in refused.stderr
    assert s.model_calls() == 2
