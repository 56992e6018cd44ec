"""Concurrency (issue 16 item 2): several real fxdesk processes on one real data folder.

Two App processes (the window's App, headless: ``conc_host``), the real window offscreen and
the real CLI share one folder; a runner is frozen with SIGSTOP while another process cancels and
sends; a process holding SQLite's write lock is frozen; the engines' clocks jump by hours. After
each: every model step asked once, every tool side effect once, at most one committed turn per
work item, nothing left running, ``PRAGMA integrity_check`` ok (``Folder.violations``).

CI runs the short variants; ``FXDESK_TORTURE=1`` runs ``FXDESK_CONC_TRIALS`` (default 60) random
SIGSTOP moments and freezes the lock holder for ``FXDESK_CONC_FREEZE_S`` (default 180 s).
``FXDESK_CONC_REPORT=FILE`` writes the random trials' figures as JSON.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.engine.locking import LOCKER
from tests.helpers import python_child, wait_for
from tests.reliability.concurrency import Folder, Host, Window

TORTURE = os.environ.get("FXDESK_TORTURE") == "1"
TRIALS = int(os.environ.get("FXDESK_CONC_TRIALS", "60" if TORTURE else "1"))
FREEZE_S = float(os.environ.get("FXDESK_CONC_FREEZE_S", "180" if TORTURE else "0"))
SEED = int(os.environ.get("FXDESK_CONC_SEED", "1616"))
HOURS = 3_600_000

pytestmark = [pytest.mark.slow]


def _settled(f: Folder, session_id: str, expected: list[str]) -> bool:
    return f.statuses(session_id) == expected


def _one_turn_per_finished_item(f: Folder) -> list[str]:
    rows = f.query(
        "SELECT w.content, COUNT(h.id) FROM work_item w LEFT JOIN history_entry h "
        "ON h.work_id = w.id AND h.kind = 'turn_end' WHERE w.status = 'completed' GROUP BY w.id"
    )
    return [f"{content}: {n} turns" for content, n in rows if n != 1]


@pytest.mark.timeout(300)
def test_two_apps_a_window_and_the_cli_share_one_folder(tmp_path: Path) -> None:
    f = Folder(tmp_path)
    script = tmp_path / "window.json"
    window_calls = tmp_path / "window-calls.jsonl"
    script.write_text(
        json.dumps(
            {
                "responses": [{"text": "the window answers"}],
                "when_done": "repeat_last",
                "record_to": str(window_calls),
            }
        )
    )
    added = f.cli(
        "profiles", "add", "demo", "--kind", "scripted", "--script", str(script), "--default"
    )
    assert added.returncode == 0, added.stderr
    a, b = f.host(), f.host()
    window = Window(f)
    try:
        s1 = a.create("s1", "a1 steps=2 gate=open")
        wait_for(lambda: "a1-0" in f.tags(), 60, what="A to run s1")
        s2 = b.create("s2", "b1 steps=1")
        # B sends to the session A runs: queued; B's own run is refused, naming A.
        b.ask(f"send {s1} b2 steps=1", "QUEUED")
        assert b.ask(f"join {s1}", "RESULT").split()[2:] == ["external_busy", str(a.pid)]
        listed = {row["id"]: row for row in json.loads(f.cli("sessions", "--json").stdout)}
        assert s1 in listed and s2 in listed
        assert listed[s1]["busy_elsewhere"] is True
        sent = f.cli("send", s1, "c1 steps=1")
        assert sent.returncode == 4, sent.stderr
        assert f"in use by process {a.pid}" in sent.stderr
        assert "stays queued" in sent.stderr
        handed = f.cli("send", "--no-wait", s1, "c2 steps=1")
        assert handed.returncode == 0, handed.stderr
        assert f"process {a.pid} (" in handed.stdout
        assert "is running the session and runs it next" in handed.stdout
        (f.workspace / "open").touch()
        done = ["completed"] * 4
        wait_for(lambda: _settled(f, s1, done), 120, interval=0.2, what=f"s1 done: {done}")
        wait_for(lambda: _settled(f, s2, ["completed"]), 60, interval=0.2, what="s2 done")
    finally:
        window_code = window.stop()
        f.stop_all()
    assert window_code == 0
    assert f.violations() == []
    assert _one_turn_per_finished_item(f) == []
    # Each message was run by one process: the hosts' steps were asked once each (above);
    # a message the window ran has no host call at all.
    by_label = {(c["label"], c["pid"]) for c in f.call_log()}
    assert Counter(label for label, _pid in by_label).most_common(1)[0][1] == 1
    assert ("a1", a.pid) in by_label and ("b1", b.pid) in by_label


@pytest.mark.timeout(300)
def test_a_stopped_runner_loses_to_a_cancel_and_nothing_runs_twice(tmp_path: Path) -> None:
    """A is frozen inside a command of its turn; the CLI cancels, B and the CLI send. When A
    runs again, the cancel wins: A asks the model nothing more and writes no outcome over the
    cancel; the messages sent meanwhile run once (B picks them up when A lets the session go)."""
    f = Folder(tmp_path)
    a, b = f.host(), f.host()
    try:
        s = a.create("s", "x1 steps=3 gate=go")
        wait_for(lambda: "x1-0" in f.tags(), 60, what="A inside its first command")
        a.signal(signal.SIGSTOP)
        cancelled = f.cli("cancel", s)
        assert cancelled.returncode == 0, cancelled.stderr
        assert "cancelled 1 work item" in cancelled.stdout
        b.ask(f"send {s} x2 steps=1", "QUEUED")
        assert b.ask(f"join {s}", "RESULT").split()[2:] == ["external_busy", str(a.pid)]
        sent = f.cli("send", s, "x3 steps=1")
        assert sent.returncode == 4 and f"in use by process {a.pid} (" in sent.stderr
        assert "stopped)" in sent.stderr  # the holder is frozen, and the person is told so
        asked_while_stopped = f.asked("x1")
        (f.workspace / "go").touch()
        a.signal(signal.SIGCONT)
        expected = ["cancelled", "completed", "completed"]
        wait_for(lambda: _settled(f, s, expected), 120, interval=0.2, what=str(expected))
        time.sleep(1)  # A had a step boundary to cross: it must not ask the model again
    finally:
        f.stop_all()
    assert f.asked("x1") == asked_while_stopped == 1
    assert "x1-1" not in f.tags()
    assert f.item_status("x1") == "cancelled"
    assert f.violations() == []
    assert _one_turn_per_finished_item(f) == []


def _stop_trial(f: Folder, a: Host, b: Host, rng: random.Random, n: int, fig: Counter[str]) -> None:
    """One random moment: A runs a message of six short commands, is frozen at a random
    time, the CLI cancels, A runs again, B sends a message after the cancel."""
    label = f"r{n}"
    # Six short commands: most of the turn is fxdesk's own work (model calls, commits,
    # sandbox start-ups), so a stop often lands inside it, sometimes inside a commit.
    s = a.create(label, f"{label} steps=6")
    # A moment inside the turn: after the model call of a random step (a turn of six short
    # commands is over in about a second here, so a time drawn from the start mostly missed it).
    step = rng.randrange(7)
    wait_for(lambda: f.asked(label, step), 60, interval=0.005, what=f"{label} step {step}")
    time.sleep(rng.uniform(0.0, 0.2))
    a.signal(signal.SIGSTOP)
    fig["stops"] += 1
    try:
        cancel = f.cli("cancel", s)
        if cancel.returncode == 5:
            # Frozen inside a transaction: the cancel waits the busy timeout, then names A.
            assert f"locked by process {a.pid}" in cancel.stderr, cancel.stderr
            assert "stopped" in cancel.stderr, cancel.stderr
            fig["stopped_inside_a_transaction"] += 1
        else:
            assert cancel.returncode == 0, cancel.stderr
        asked, tagged = f.asked(label), _tags_of(f, label)
        time.sleep(rng.uniform(0.0, 1.0))
    finally:
        a.signal(signal.SIGCONT)
    if cancel.returncode == 5:
        cancel = f.cli("cancel", s)
        assert cancel.returncode == 0, cancel.stderr
        asked, tagged = f.asked(label), _tags_of(f, label)
    elif "cancelled 0" in cancel.stdout:
        fig["finished_before_the_stop"] += 1
    else:
        fig["cancel_won"] += 1
    b.ask(f"send {s} {label}-after steps=1", "QUEUED")
    wait_for(
        lambda: f.statuses(s)[-1:] == ["completed"] and "running" not in f.statuses(s),
        120,
        interval=0.2,
        what=f"{label}: the message after the cancel to run",
    )
    if f.statuses(s)[0] == "cancelled":
        # What was under way when A froze may finish (a model call already decided, a command
        # whose start was committed); nothing new starts: at most one of them, no step after.
        calls, tags = f.asked(label) - asked, _tags_of(f, label) - tagged
        fig["in_flight_call_finished"] += calls
        fig["in_flight_command_finished"] += tags
        if calls + tags > 1:
            fig["started_after_cancel"] += 1
            raise AssertionError(f"{label}: {calls} model calls, {tags} commands after the cancel")


def _tags_of(f: Folder, label: str) -> int:
    return sum(1 for tag in f.tags() if tag.rsplit("-", 1)[0] == label)


@pytest.mark.timeout(3600 if TORTURE else 300)
def test_sigstop_at_random_moments_never_lets_a_stopped_runner_win(tmp_path: Path) -> None:
    f = Folder(tmp_path)
    rng = random.Random(SEED)
    fig: Counter[str] = Counter()
    began = time.monotonic()
    a, b = f.host(), f.host()
    try:
        for n in range(TRIALS):
            _stop_trial(f, a, b, rng, n, fig)
            problems = f.violations()
            if problems:
                fig["violations"] += len(problems)
            assert problems == [], f"seed {SEED}, trial {n}: {problems}"
    finally:
        f.stop_all()
    report = dict(fig) | {
        "trials": TRIALS,
        "seed": SEED,
        "seconds": round(time.monotonic() - began),
    }
    if os.environ.get("FXDESK_CONC_REPORT"):
        Path(os.environ["FXDESK_CONC_REPORT"]).write_text(json.dumps(report, indent=2))
    print(json.dumps(report))
    assert f.violations() == [] and _one_turn_per_finished_item(f) == []


@pytest.mark.timeout(900 if TORTURE else 300)
def test_a_frozen_write_lock_holder_gets_a_clear_message_and_no_hang(tmp_path: Path) -> None:
    """A program holds SQLite's write lock and is frozen. Every fxdesk process gives up on a
    write within the busy timeout, naming the holder, saves nothing and goes on; reading goes
    on; once the holder goes, the same processes work again."""
    f = Folder(tmp_path)
    a = f.host()
    locker = None
    try:
        s = a.create("s", "l1 steps=1")
        wait_for(lambda: _settled(f, s, ["completed"]), 60, interval=0.2, what="l1")
        locker = python_child(LOCKER.replace("sys.argv[1]", repr(str(f.data / "fxdesk.sqlite3"))))
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        locker.send_signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        holder = f"locked by process {locker.pid} (python"
        rounds = refused_count = 0
        while True:
            rounds += 1
            listed = f.cli("sessions", "--json")
            assert listed.returncode == 0 and s in listed.stdout  # readers are not blocked
            refusals = [["send", "--no-wait", s, f"l2-{rounds} steps=1"]]
            if TORTURE:  # an engine command too (it starts, then its first write waits)
                refusals.append(["cancel", s])
            for args in refusals:
                began = time.monotonic()
                refused = f.cli(*args)
                assert refused.returncode == 5, refused.stderr
                assert holder in refused.stderr and "stopped" in refused.stderr, refused.stderr
                assert time.monotonic() - began < 60
                refused_count += 1
            answer = a.answer(f"send {s} l3-{rounds} steps=1", timeout=60)
            assert answer.startswith("ERROR send: DatabaseLockedError"), answer
            assert holder in answer and "stopped" in answer
            refused_count += 1
            if time.monotonic() - frozen_at >= FREEZE_S:
                break
            time.sleep(min(20.0, max(0.0, FREEZE_S - (time.monotonic() - frozen_at))))
        frozen_s = round(time.monotonic() - frozen_at)
        print(json.dumps({"frozen_s": frozen_s, "rounds": rounds, "refused": refused_count}))
        locker.send_signal(signal.SIGCONT)
        locker.communicate("\n", timeout=30)
        handed = f.cli("send", "--no-wait", s, "l4 steps=1")
        assert handed.returncode == 0, handed.stderr
        a.ask(f"send {s} l5 steps=1", "QUEUED")
        done = ["completed"] * 3
        wait_for(lambda: _settled(f, s, done), 120, interval=0.2, what="l4 and l5 to run")
    finally:
        if locker is not None and locker.poll() is None:
            locker.send_signal(signal.SIGCONT)
            locker.kill()
            locker.wait(30)
        f.stop_all()
    assert f.item_status("l2") is None and f.item_status("l3") is None  # nothing half-saved
    assert f.violations() == []


@pytest.mark.timeout(300)
def test_clock_jumps_give_no_session_a_second_runner(tmp_path: Path) -> None:
    """The engines' clocks jump by hours, forward in one process and backward in the other,
    in the middle of turns: a live runner keeps its session, a second process never runs it
    alongside, cancels still win, and work queued meanwhile still runs."""
    f = Folder(tmp_path)
    clock_a, clock_b = tmp_path / "clock-a", tmp_path / "clock-b"
    clock_a.write_text("0")
    clock_b.write_text("0")
    a, b = f.host(clock_a), f.host(clock_b)
    try:
        s1 = a.create("s1", "k1 steps=2 gate=k1go")
        wait_for(lambda: "k1-0" in f.tags(), 60, what="A to run s1")
        clock_a.write_text(str(6 * HOURS))
        clock_b.write_text(str(-6 * HOURS))
        b.ask(f"send {s1} k2 steps=1", "QUEUED")
        assert b.ask(f"join {s1}", "RESULT").split()[2:] == ["external_busy", str(a.pid)]
        (f.workspace / "k1go").touch()
        wait_for(lambda: _settled(f, s1, ["completed"] * 2), 120, interval=0.2, what="s1")
        s2 = b.create("s2", "k3 steps=2 gate=k3go")
        wait_for(lambda: "k3-0" in f.tags(), 60, what="B to run s2")
        clock_a.write_text(str(-3 * HOURS))
        clock_b.write_text(str(9 * HOURS))
        a.ask(f"send {s2} k4 steps=1", "QUEUED")
        assert a.ask(f"join {s2}", "RESULT").split()[2:] == ["external_busy", str(b.pid)]
        assert a.ask(f"cancel {s2}", "CANCELLED").split()[2] == "2"  # k3 running, k4 queued
        a.ask(f"send {s2} k5 steps=1", "QUEUED")
        clock_b.write_text(str(-9 * HOURS))
        (f.workspace / "k3go").touch()
        expected = ["cancelled", "cancelled", "completed"]
        wait_for(lambda: _settled(f, s2, expected), 120, interval=0.2, what=str(expected))
    finally:
        f.stop_all()
    assert f.asked("k3") == 1 and f.asked("k4") == 0
    assert f.violations() == []
    assert _one_turn_per_finished_item(f) == []
