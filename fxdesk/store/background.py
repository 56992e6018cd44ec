"""Background task records in SQL (called inside store jobs, like ``control``).

One row per durable task (spec §2.19, §6.9), keyed by (session, number at launch) and unique by
(session, stable id). ``owner_instance`` says which fxdesk process runs the task; every write
here is conditional on it, so a process never rewrites a record another live process adopted
(the spec's read-only authority, held by SQL rather than by hope). Process-local tasks have no
row (Appendix A 10).
"""

from __future__ import annotations

import json
from typing import Any

from fxdesk.domain.background import BackgroundRecord, LaunchPolicy, Origin, TaskState
from fxdesk.domain.worktrees import folder_from_config_json
from fxdesk.store.schema import database_proxy as db

_COLUMNS = (
    "session_id, number, stable_id, workspace_id, policy, origin, pid, process_token, command, "
    "cwd, log_path, expect_url, server_url, exit_code, state, started_at_ms, updated_at_ms, "
    "owner_instance, diagnostic"
)
_PLACEHOLDERS = ", ".join("?" * len(_COLUMNS.split(", ")))


class RecordConflict(Exception):
    """The row for this task holds another task, or another process owns it."""


def _record(row: tuple[Any, ...]) -> BackgroundRecord:
    return BackgroundRecord(
        session_id=row[0],
        number=row[1],
        stable_id=row[2],
        workspace_id=row[3],
        policy=LaunchPolicy(row[4]),
        origin=Origin(row[5]),
        pid=row[6],
        token=row[7],
        command=row[8],
        cwd=row[9],
        log_path=row[10],
        expect_url=bool(row[11]),
        url=row[12],
        exit_code=row[13],
        state=TaskState(row[14]),
        started_at_ms=row[15],
        updated_at_ms=row[16],
        owner_instance=row[17],
        diagnostic=row[18],
    )


def _values(record: BackgroundRecord) -> tuple[Any, ...]:
    return (
        record.session_id,
        record.number,
        record.stable_id,
        record.workspace_id,
        record.policy.value,
        record.origin.value,
        record.pid,
        record.token,
        record.command,
        record.cwd,
        record.log_path,
        int(record.expect_url),
        record.url,
        record.exit_code,
        record.state.value,
        record.started_at_ms,
        record.updated_at_ms,
        record.owner_instance,
        record.diagnostic,
    )


def by_stable_id(session_id: str, stable_id: str) -> BackgroundRecord | None:
    row = db.execute_sql(
        f"SELECT {_COLUMNS} FROM background_task WHERE session_id = ? AND stable_id = ?",
        (session_id, stable_id),
    ).fetchone()
    return None if row is None else _record(row)


def save(record: BackgroundRecord) -> None:
    """Insert or update ``record``, owned by ``record.owner_instance``.

    ``RecordConflict`` (nothing written) when its (session, number) row holds another stable id
    (spec §6.4 step 3, "identity mismatch") or another process owns the row."""
    existing = db.execute_sql(
        "SELECT stable_id, owner_instance FROM background_task WHERE session_id = ? AND number = ?",
        (record.session_id, record.number),
    ).fetchone()
    if existing is None:
        if by_stable_id(record.session_id, record.stable_id) is not None:
            raise RecordConflict("this task's record has another number")
        db.execute_sql(
            f"INSERT INTO background_task ({_COLUMNS}) VALUES ({_PLACEHOLDERS})", _values(record)
        )
        return
    if existing[0] != record.stable_id:
        raise RecordConflict("the record with this number belongs to another task")
    if existing[1] is not None and existing[1] != record.owner_instance:
        raise RecordConflict("another fxdesk process owns this record")
    db.execute_sql(
        "UPDATE background_task SET pid = ?, process_token = ?, expect_url = ?, server_url = ?, "
        "exit_code = ?, state = ?, updated_at_ms = ?, owner_instance = ?, diagnostic = ? "
        "WHERE session_id = ? AND number = ?",
        (
            record.pid,
            record.token,
            int(record.expect_url),
            record.url,
            record.exit_code,
            record.state.value,
            record.updated_at_ms,
            record.owner_instance,
            record.diagnostic,
            record.session_id,
            record.number,
        ),
    )


def adopt(session_id: str, stable_id: str, previous: str | None, owner: str) -> bool:
    """Make ``owner`` the record's owner if it is still ``previous`` (a dead or no process):
    True when this call took it, False when another process took it first."""
    cursor = db.execute_sql(
        "UPDATE background_task SET owner_instance = ? WHERE session_id = ? AND stable_id = ? "
        "AND owner_instance IS ?",
        (owner, session_id, stable_id, previous),
    )
    return bool(cursor.rowcount)


def delete(session_id: str, stable_id: str, owner: str | None) -> bool:
    """Remove a record this process wrote (a saved-headless launch whose release failed)."""
    cursor = db.execute_sql(
        "DELETE FROM background_task WHERE session_id = ? AND stable_id = ? "
        "AND owner_instance IS ?",
        (session_id, stable_id, owner),
    )
    return bool(cursor.rowcount)


def running() -> list[BackgroundRecord]:
    """Every record that says ``running``, newest first (what start-up tries to re-attach)."""
    rows = db.execute_sql(
        f"SELECT {_COLUMNS} FROM background_task WHERE state = 'running' "
        "ORDER BY updated_at_ms DESC, session_id, number"
    ).fetchall()
    return [_record(row) for row in rows]


def listed(*, include_ended: bool = False) -> list[BackgroundRecord]:
    """Every record (only ``running`` ones unless ``include_ended``), in launch order per
    session: what ``fxdesk ps`` shows without adopting anything."""
    where = "" if include_ended else "WHERE state = 'running' "
    rows = db.execute_sql(
        f"SELECT {_COLUMNS} FROM background_task {where}ORDER BY started_at_ms, session_id, number"
    ).fetchall()
    return [_record(row) for row in rows]


def for_session(session_id: str) -> list[BackgroundRecord]:
    rows = db.execute_sql(
        f"SELECT {_COLUMNS} FROM background_task WHERE session_id = ? ORDER BY number",
        (session_id,),
    ).fetchall()
    return [_record(row) for row in rows]


def highest_number(session_id: str) -> int:
    """The largest number any record of the session has (0 when none): new numbers go above
    it (spec §2.15 "the counter is raised to at least the store's next id")."""
    row = db.execute_sql(
        "SELECT COALESCE(MAX(number), 0) FROM background_task WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return int(row[0])


def session_place(session_id: str) -> tuple[int, str, str] | None:
    """(workspace id, working folder, permission mode) of a session, or None. The working
    folder is its tree's worktree when the root session has one, else the workspace."""
    row = db.execute_sql(
        "SELECT s.workspace_id, w.path, s.permission_mode, r.config_json FROM session s "
        "JOIN workspace w ON w.id = s.workspace_id LEFT JOIN session r ON r.id = s.root_id "
        "WHERE s.id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    folder = folder_from_config_json(_config(row[3])) or str(row[1])
    return int(row[0]), folder, str(row[2])


def _config(raw: str | None) -> dict[str, Any]:
    value = json.loads(raw or "{}")
    return value if isinstance(value, dict) else {}
