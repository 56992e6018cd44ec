"""Managed children and the terminal results their parent has not read yet (inside store jobs).

A result is *read* once a history row of the parent lists its delivery id under
``child_results`` (the injected message, or a ``wait_for_agent``/``close_agent`` tool result,
whose tool data nests it under ``data``). Writing that row and deciding what is unread happen
in one transaction, so a result reaches the parent's model once, across restarts too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fxdesk.domain.child_agents import CHILD_RESULTS_KEY, MANAGED_BY_KEY, ChildResult
from fxdesk.domain.deliveries import terminal_id
from fxdesk.domain.model import EntryKind, Session, WorkStatus
from fxdesk.store import control, history, repo
from fxdesk.store.schema import database_proxy as db

_MANAGED = f"json_extract(config_json, '$.{MANAGED_BY_KEY}') IS NOT NULL"


def children_of(parent_id: str) -> list[Session]:
    """The managed children whose parent is ``parent_id`` (closed ones too), oldest first."""
    rows = db.execute_sql(
        f"SELECT id FROM session WHERE parent_id = ? AND {_MANAGED} ORDER BY created_at_ms, id",
        (parent_id,),
    ).fetchall()
    found = [repo.get_session(row[0]) for row in rows]
    return [s for s in found if s is not None]


def child_of(parent_id: str, child_id: str) -> Session | None:
    """``child_id`` when it is a managed child of ``parent_id`` (else None: unknown and foreign
    ids look alike)."""
    session = repo.get_session(child_id)
    if session is None or session.parent_id != parent_id:
        return None
    return session if session.config.get(MANAGED_BY_KEY) else None


def has_children(parent_id: str) -> bool:
    row = db.execute_sql(
        f"SELECT 1 FROM session WHERE parent_id = ? AND {_MANAGED} LIMIT 1", (parent_id,)
    ).fetchone()
    return row is not None


def read_ids(parent_id: str) -> set[str]:
    """The delivery ids the parent's history already carried to its model."""
    found: set[str] = set()
    for path in (f"$.{CHILD_RESULTS_KEY}", f"$.data.{CHILD_RESULTS_KEY}"):
        rows = db.execute_sql(
            "SELECT j.value FROM history_entry h, json_each(h.data_json, ?) j "
            "WHERE h.session_id = ? AND h.data_json LIKE ?",
            (path, parent_id, f"%{CHILD_RESULTS_KEY}%"),
        ).fetchall()
        found.update(str(row[0]) for row in rows)
    return found


def _result(child: Session, work_id: str, state: str, at_ms: int) -> ChildResult:
    answer, reason = "", None
    if state == WorkStatus.COMPLETED.value:
        answers = [e for e in history.work_entries(work_id) if e.kind == EntryKind.ASSISTANT]
        answer = answers[-1].content if answers else ""
    else:
        item = control.get_item(work_id)
        reason = (item.reason if item else None) or control.failure_reason(work_id)
    return ChildResult(
        delivery_id=terminal_id(child.id, work_id),
        child_id=child.id,
        child_name=child.name,
        work_id=work_id,
        state=state,
        answer=answer,
        reason=reason,
        at_ms=at_ms,
    )


def results_of(children: Sequence[Session]) -> list[ChildResult]:
    """Every terminal result of these children, oldest first."""
    out: list[ChildResult] = []
    for child in children:
        rows = db.execute_sql(
            "SELECT work_id, payload_json, created_at_ms FROM delivery "
            "WHERE session_id = ? AND kind = 'terminal' AND work_id IS NOT NULL "
            "ORDER BY created_at_ms, rowid",
            (child.id,),
        ).fetchall()
        for work_id, payload, at_ms in rows:
            state = _state(payload)
            out.append(_result(child, work_id, state, at_ms))
    out.sort(key=lambda r: r.at_ms)
    return out


def _state(payload: str) -> str:
    data = json.loads(payload or "{}")
    return str(data.get("state", "completed"))


def unread_results(parent_id: str, child_id: str | None = None) -> list[ChildResult]:
    """The terminal results of the parent's managed children its model has not read yet."""
    children = children_of(parent_id)
    if child_id is not None:
        children = [c for c in children if c.id == child_id]
    if not children:
        return []
    seen = read_ids(parent_id)
    return [r for r in results_of(children) if r.delivery_id not in seen]


def last_result(child: Session) -> ChildResult | None:
    """The child's newest terminal result, read or not."""
    results = results_of([child])
    return results[-1] if results else None
