"""What must hold after any kill and a restart, read straight from the files (no App, no Qt).

Each check returns a list of violations in words; an empty list means it holds. The harness runs
them all after every recovery; ``test_invariants_catch.py`` plants one fault per check and shows
the check reports it.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

TERMINAL_ITEMS = ("completed", "failed", "cancelled")
TERMINAL_RUNS = ("completed", "failed", "timed_out", "cancelled", "interrupted")


@dataclass
class Observed:
    """What the harness knows from outside: acknowledged commits and earlier observations."""

    data: Path
    workspace: Path
    marker: str
    acks: set[tuple[str, str]] = field(default_factory=set)
    # Item id -> the terminal status it was once seen in: it must never change again.
    finished: dict[str, str] = field(default_factory=dict)
    sessions: list[str] = field(default_factory=list)  # acknowledged, in order (root first)

    @property
    def database(self) -> Path:
        return self.data / "fxdesk.sqlite3"

    @property
    def calls(self) -> Path:
        return self.data.parent / "calls.jsonl"

    @property
    def tags(self) -> Path:
        return self.workspace / "tags.txt"


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def _rows(obs: Observed, sql: str) -> list[tuple[object, ...]]:
    if not obs.database.exists():
        return []
    with _connect(obs.database) as db:
        return db.execute(sql).fetchall()


def integrity(obs: Observed) -> list[str]:
    if not obs.database.exists():
        return []
    try:
        with _connect(obs.database) as db:
            result = [row[0] for row in db.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        return [f"integrity_check could not run: {exc}"]
    return [] if result == ["ok"] else [f"integrity_check: {'; '.join(map(str, result[:5]))}"]


def acknowledged(obs: Observed) -> list[str]:
    lost = []
    for table, ident in sorted(obs.acks):
        if not _rows(obs, f"SELECT 1 FROM {table} WHERE id = '{ident}'"):
            lost.append(f"acknowledged {table} {ident} is gone")
    return lost


def tags_once(obs: Observed) -> list[str]:
    if not obs.tags.exists():
        return []
    counts = Counter(line.strip() for line in obs.tags.read_text().splitlines() if line.strip())
    return [f"side effect {tag} happened {n} times" for tag, n in counts.items() if n > 1]


def tag_count(obs: Observed) -> int:
    return len(obs.tags.read_text().splitlines()) if obs.tags.exists() else 0


def no_tool_ran(obs: Observed, tags_before: int) -> list[str]:
    """Recovery alone ran no tool: no tag was added while it ran."""
    after = tag_count(obs)
    return [] if after == tags_before else [f"recovery ran {after - tags_before} tool calls"]


def approvals_hold(obs: Observed) -> list[str]:
    """A command that waits for an approval never runs without one, and no approval is left
    pending for work that no longer waits for it."""
    problems = []
    if obs.tags.exists() and "unapproved" in obs.tags.read_text().split():
        problems.append("a command ran without its approval")
    problems += [
        f"approval {ident} is pending but its work item is {status}"
        for ident, status in _rows(
            obs,
            "SELECT a.id, w.status FROM approval a JOIN work_item w ON w.id = a.work_id "
            "WHERE a.status = 'pending' AND w.status != 'awaiting_approval'",
        )
    ]
    return problems


def deliveries_once(obs: Observed) -> list[str]:
    problems = [
        f"work item {work} has {n} terminal deliveries"
        for work, n in _rows(
            obs,
            "SELECT work_id, COUNT(*) FROM delivery WHERE kind = 'terminal' "
            "GROUP BY work_id HAVING COUNT(*) > 1",
        )
    ]
    problems += [
        f"finished work item {work} ({status}) has no terminal delivery"
        for work, status in _rows(
            obs,
            "SELECT w.id, w.status FROM work_item w WHERE w.status IN "
            f"{TERMINAL_ITEMS} AND NOT EXISTS (SELECT 1 FROM delivery d "
            "WHERE d.kind = 'terminal' AND d.work_id = w.id)",
        )
    ]
    return problems


def completions_once(obs: Observed) -> list[str]:
    counts = dict(
        _rows(
            obs,
            "SELECT run_id, COUNT(*) FROM agent_inbox WHERE kind = 'completion' GROUP BY run_id",
        )
    )
    problems = [f"run {run} has {n} inbox completions" for run, n in counts.items() if n > 1]
    for run, status in _rows(obs, "SELECT id, status FROM agent_run WHERE mode = 'background'"):
        if status in TERMINAL_RUNS and counts.get(run, 0) != 1:
            problems.append(f"background run {run} ({status}) has {counts.get(run, 0)} completions")
    return problems


def no_model_call_in(obs: Observed, phase: str) -> list[str]:
    if not obs.calls.exists():
        return []
    calls = [json.loads(line) for line in obs.calls.read_text().splitlines() if line.strip()]
    return [f"{phase} made a model call: {call}" for call in calls if call["phase"] == phase]


def nothing_runs(obs: Observed) -> list[str]:
    """After a recovery with no resume, nothing is running and nothing finished changed."""
    problems = [
        f"work item {ident} is {status} after recovery"
        for ident, status in _rows(obs, "SELECT id, status FROM work_item WHERE status = 'running'")
    ]
    for ident, status in _rows(obs, "SELECT id, status FROM work_item"):
        was = obs.finished.get(str(ident))
        if was is not None and was != status:
            problems.append(f"work item {ident} was {was}, is now {status}")
        if status in TERMINAL_ITEMS:
            obs.finished.setdefault(str(ident), str(status))
    return problems


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = process.info.get("cmdline") or []
        if marker in cmdline and process.info.get("status") != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def _lineage(process: psutil.Process) -> set[int]:
    pids = {process.pid}
    with contextlib.suppress(psutil.Error):
        pids.update(p.pid for p in process.parents())
    return pids


def servers_known(obs: Observed) -> list[str]:
    """A durable server still running has a record that says running; a record that says
    running names a live process."""
    rows = _rows(obs, "SELECT number, pid, state FROM background_task")
    running = {int(pid): number for number, pid, state in rows if state == "running"}
    problems = []
    for process in _marked(obs.marker):
        if not _lineage(process) & running.keys():
            problems.append(f"server pid {process.pid} runs but no record says so (forgotten)")
    for pid, number in running.items():
        if not psutil.pid_exists(pid):
            problems.append(f"task #{number} is recorded running but pid {pid} is gone")
    return problems


def after_recovery(obs: Observed) -> list[str]:
    return [
        *integrity(obs),
        *acknowledged(obs),
        *tags_once(obs),
        *deliveries_once(obs),
        *approvals_hold(obs),
        *completions_once(obs),
        *no_model_call_in(obs, "recover"),
        *nothing_runs(obs),
        *servers_known(obs),
    ]


def end_servers(markers: Iterable[str]) -> None:
    """Kill what the scenarios started (durable servers outlive fxdesk on purpose)."""
    for marker in markers:
        for process in _marked(marker):
            with contextlib.suppress(psutil.Error):
                process.kill()
