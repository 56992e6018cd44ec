"""Each invariant check of the crash harness reports a fault planted in a healthy data folder:
a check that cannot fail proves nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability import harness, invariants
from tests.reliability.invariants import Observed


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    """A folder where the whole scenario ran and a recovery followed: every check holds."""
    obs = harness.new_observed(tmp_path_factory.mktemp("healthy"), "healthy")
    try:
        assert harness.spawn(obs, "run").done
        assert "RECOVERED" in harness.spawn(obs, "recover").lines
        assert invariants.after_recovery(obs) == []
        yield obs
    finally:
        invariants.end_servers([obs.marker])


@pytest.fixture
def obs(healthy: Observed, tmp_path: Path) -> Observed:
    root = tmp_path / "copy"
    shutil.copytree(healthy.data.parent, root)
    copy = Observed(
        root / "data", root / "workspace", healthy.marker, set(healthy.acks), dict(healthy.finished)
    )
    assert invariants.after_recovery(copy) == []
    return copy


def sql(obs: Observed, statement: str) -> None:
    with sqlite3.connect(obs.database) as db:
        db.execute(statement)


def test_a_corrupted_page_is_caught(obs: Observed) -> None:
    sql(obs, "PRAGMA wal_checkpoint(TRUNCATE)")
    with open(obs.database, "r+b") as db:
        db.seek(4096 * 3)
        db.write(b"\xde\xad\xbe\xef" * 1024)
    assert invariants.integrity(obs)


def test_a_lost_acknowledged_commit_is_caught(obs: Observed) -> None:
    (table, ident) = next(iter(sorted(obs.acks)))
    sql(obs, f"DELETE FROM {table} WHERE id = '{ident}'")
    assert invariants.acknowledged(obs) == [f"acknowledged {table} {ident} is gone"]


def test_a_side_effect_done_twice_is_caught(obs: Observed) -> None:
    with obs.tags.open("a") as tags:
        tags.write("root-0\n")
    assert invariants.tags_once(obs) == ["side effect root-0 happened 2 times"]


def test_a_second_terminal_delivery_is_caught(obs: Observed) -> None:
    sql(
        obs,
        "INSERT INTO delivery SELECT id || '-again', session_id, target_id, work_id, kind, "
        "payload_json, created_at_ms FROM delivery WHERE kind = 'terminal' LIMIT 1",
    )
    (problem,) = invariants.deliveries_once(obs)
    assert "has 2 terminal deliveries" in problem


def test_a_missing_terminal_delivery_is_caught(obs: Observed) -> None:
    sql(
        obs,
        "DELETE FROM delivery WHERE rowid = (SELECT MIN(rowid) FROM delivery "
        "WHERE kind = 'terminal')",
    )
    (problem,) = invariants.deliveries_once(obs)
    assert "has no terminal delivery" in problem


def test_a_second_inbox_completion_is_caught(obs: Observed) -> None:
    with sqlite3.connect(obs.database) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(agent_inbox)")]
        copied = ", ".join(
            "id || '-again'" if c == "id" else "event_key || '-again'" if c == "event_key" else c
            for c in columns
        )
        db.execute(
            f"INSERT INTO agent_inbox SELECT {copied} FROM agent_inbox WHERE kind = 'completion'"
        )
    problems = invariants.completions_once(obs)
    assert any("has 2 inbox completions" in p for p in problems), problems


def test_a_model_call_during_recovery_is_caught(obs: Observed) -> None:
    with obs.calls.open("a") as calls:
        calls.write(json.dumps({"phase": "recover", "session": "root", "step": 0}) + "\n")
    assert len(invariants.no_model_call_in(obs, "recover")) == 1


def test_work_running_again_without_a_resume_is_caught(obs: Observed) -> None:
    with sqlite3.connect(obs.database) as db:
        # a completed one: the scenario also leaves one interrupted, and ids are random
        (ident,) = db.execute(
            "SELECT id FROM work_item WHERE status = 'completed' LIMIT 1"
        ).fetchone()
    invariants.nothing_runs(obs)  # remembers what finished
    sql(obs, f"UPDATE work_item SET status = 'running' WHERE id = '{ident}'")
    assert invariants.nothing_runs(obs) == [
        f"work item {ident} is running after recovery",
        f"work item {ident} was completed, is now running",
    ]


def test_a_forgotten_server_is_caught(obs: Observed) -> None:
    sql(obs, "DELETE FROM background_task")
    (problem,) = invariants.servers_known(obs)
    assert "runs but no record says so (forgotten)" in problem


def test_a_server_recorded_running_but_gone_is_caught(obs: Observed) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    sql(obs, f"UPDATE background_task SET pid = {gone.pid}")
    problems = invariants.servers_known(obs)
    assert f"task #1 is recorded running but pid {gone.pid} is gone" in problems


def test_a_tool_run_by_recovery_is_caught(obs: Observed) -> None:
    before = invariants.tag_count(obs)
    with obs.tags.open("a") as tags:
        tags.write("root-9\n")
    assert invariants.no_tool_ran(obs, before) == ["recovery ran 1 tool calls"]


def test_a_command_run_without_its_approval_is_caught(obs: Observed) -> None:
    with obs.tags.open("a") as tags:
        tags.write("unapproved\n")
    assert invariants.approvals_hold(obs) == ["a command ran without its approval"]


def test_an_approval_left_pending_for_finished_work_is_caught(obs: Observed) -> None:
    with sqlite3.connect(obs.database) as db:
        (ident,) = db.execute("SELECT id FROM approval LIMIT 1").fetchone()
    sql(obs, f"UPDATE approval SET status = 'pending' WHERE id = '{ident}'")
    sql(
        obs,
        "UPDATE work_item SET status = 'interrupted' WHERE id = "
        f"(SELECT work_id FROM approval WHERE id = '{ident}')",
    )
    (problem,) = invariants.approvals_hold(obs)
    assert f"approval {ident} is pending but its work item is interrupted" == problem
