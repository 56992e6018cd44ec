"""Permission rules and approvals in SQL (called inside store jobs, like ``control``).

Every function here runs on a store thread inside the job that called it; writers run inside the
writer's transaction, so an approval and the work item's move to ``awaiting_approval`` commit
together or not at all.
"""

from __future__ import annotations

import json
from typing import Any

from fxdesk.domain.approvals import Approval, ApprovalNotPending, ApprovalStatus
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.store.schema import database_proxy as db

_APPROVAL_COLUMNS = (
    "id, session_id, root_id, work_id, call_id, fingerprint, tool, label, explanation, "
    "detail_json, status, resolution_json, created_at_ms, resolved_at_ms"
)
_RULE_COLUMNS = "id, tool, pattern, match, action, scope, scope_key"


# --- rules -------------------------------------------------------------------------------------


def _rule(row: tuple[Any, ...]) -> PermissionRule:
    return PermissionRule(
        tool=row[1],
        pattern=row[2],
        match=Match(row[3]),
        action=Verdict(row[4]),
        scope=Scope(row[5]),
        scope_key=row[6],
        id=row[0],
    )


def add_rule(rule: PermissionRule, now_ms: int, note: str = "") -> PermissionRule:
    """Store ``rule`` (the same rule twice is stored once); the stored rule, with its id."""
    db.execute_sql(
        "INSERT OR IGNORE INTO permission_rule (tool, pattern, match, action, scope, scope_key, "
        "note, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            rule.tool,
            rule.pattern,
            rule.match.value,
            rule.action.value,
            rule.scope.value,
            rule.scope_key,
            note,
            now_ms,
        ),
    )
    row = db.execute_sql(
        f"SELECT {_RULE_COLUMNS} FROM permission_rule WHERE scope = ? AND scope_key = ? "
        "AND tool = ? AND pattern = ? AND match = ? AND action = ?",
        (
            rule.scope.value,
            rule.scope_key,
            rule.tool,
            rule.pattern,
            rule.match.value,
            rule.action.value,
        ),
    ).fetchone()
    return _rule(row)


def remove_rule(rule_id: int) -> bool:
    cursor = db.execute_sql("DELETE FROM permission_rule WHERE id = ?", (rule_id,))
    return bool(cursor.rowcount)


def list_rules(scope: Scope | None = None, scope_key: str | None = None) -> list[PermissionRule]:
    sql = f"SELECT {_RULE_COLUMNS} FROM permission_rule"
    where, args = [], []
    if scope is not None:
        where.append("scope = ?")
        args.append(scope.value)
    if scope_key is not None:
        where.append("scope_key = ?")
        args.append(scope_key)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY scope, scope_key, tool, pattern"
    return [_rule(row) for row in db.execute_sql(sql, args).fetchall()]


def rules_for(session_id: str, workspace_id: int) -> list[PermissionRule]:
    """The rules that apply to one session: its own, its workspace's and the global ones."""
    rows = db.execute_sql(
        f"SELECT {_RULE_COLUMNS} FROM permission_rule WHERE scope = 'global' "
        "OR (scope = 'workspace' AND scope_key = ?) OR (scope = 'session' AND scope_key = ?)",
        (str(workspace_id), session_id),
    ).fetchall()
    return [_rule(row) for row in rows]


# --- approvals ---------------------------------------------------------------------------------


def _approval(row: tuple[Any, ...]) -> Approval:
    return Approval(
        id=row[0],
        session_id=row[1],
        root_id=row[2],
        work_id=row[3],
        call_id=row[4],
        fingerprint=row[5],
        tool=row[6],
        label=row[7],
        explanation=row[8],
        detail=json.loads(row[9] or "{}"),
        status=ApprovalStatus(row[10]),
        resolution=json.loads(row[11] or "{}"),
        created_at_ms=row[12],
        resolved_at_ms=row[13],
    )


def get_approval(approval_id: str) -> Approval | None:
    row = db.execute_sql(
        f"SELECT {_APPROVAL_COLUMNS} FROM approval WHERE id = ?", (approval_id,)
    ).fetchone()
    return _approval(row) if row else None


def find_approvals(prefix: str, limit: int = 2) -> list[Approval]:
    """Approvals whose id starts with ``prefix`` (ids are hex: no LIKE wildcards in them)."""
    if not prefix or any(c not in "0123456789abcdef" for c in prefix):
        return []
    rows = db.execute_sql(
        f"SELECT {_APPROVAL_COLUMNS} FROM approval WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
        (prefix, prefix + "g", limit),
    ).fetchall()
    return [_approval(row) for row in rows]


def pending_approvals(session_id: str | None = None) -> list[Approval]:
    sql = f"SELECT {_APPROVAL_COLUMNS} FROM approval WHERE status = 'pending'"
    args: tuple[Any, ...] = ()
    if session_id is not None:
        sql += " AND session_id = ?"
        args = (session_id,)
    sql += " ORDER BY created_at_ms, id"
    return [_approval(row) for row in db.execute_sql(sql, args).fetchall()]


def approvals_of(session_id: str, limit: int = 200) -> list[Approval]:
    rows = db.execute_sql(
        f"SELECT {_APPROVAL_COLUMNS} FROM approval WHERE session_id = ? "
        "ORDER BY created_at_ms DESC, id LIMIT ?",
        (session_id, limit),
    ).fetchall()
    return [_approval(row) for row in rows]


def pending_counts() -> dict[str, int]:
    rows = db.execute_sql(
        "SELECT session_id, COUNT(*) FROM approval WHERE status = 'pending' GROUP BY session_id"
    ).fetchall()
    return {row[0]: int(row[1]) for row in rows}


def register(approval: Approval) -> Approval:
    """Record a pending approval. The same id again: a pending one, or one answered but not
    acted on yet (answered while no fxdesk was waiting, or just before a crash), is returned as
    it is; one that went stale, was cancelled or was already acted on is asked again."""
    existing = get_approval(approval.id)
    if existing is not None and (
        existing.pending
        or (
            (existing.allowed or existing.status == ApprovalStatus.DENIED)
            and "consumed_at" not in existing.resolution
        )
    ):
        return existing
    if existing is None:
        db.execute_sql(
            f"INSERT INTO approval ({_APPROVAL_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', '{}', ?, NULL)",
            (
                approval.id,
                approval.session_id,
                approval.root_id,
                approval.work_id,
                approval.call_id,
                approval.fingerprint,
                approval.tool,
                approval.label,
                approval.explanation,
                json.dumps(approval.detail, sort_keys=True),
                approval.created_at_ms,
            ),
        )
    else:
        db.execute_sql(
            "UPDATE approval SET status = 'pending', label = ?, explanation = ?, detail_json = ?, "
            "resolution_json = '{}', created_at_ms = ?, resolved_at_ms = NULL WHERE id = ?",
            (
                approval.label,
                approval.explanation,
                json.dumps(approval.detail, sort_keys=True),
                approval.created_at_ms,
                approval.id,
            ),
        )
    stored = get_approval(approval.id)
    assert stored is not None
    return stored


def answer(
    approval_id: str, status: ApprovalStatus, resolution: dict[str, Any], now_ms: int
) -> Approval:
    """Move a pending approval to ``status``; ``ApprovalNotPending`` when it is not pending."""
    cursor = db.execute_sql(
        "UPDATE approval SET status = ?, resolution_json = ?, resolved_at_ms = ? "
        "WHERE id = ? AND status = 'pending'",
        (status.value, json.dumps(resolution, sort_keys=True), now_ms, approval_id),
    )
    if not cursor.rowcount:
        existing = get_approval(approval_id)
        raise ApprovalNotPending(approval_id, existing.status if existing else None)
    stored = get_approval(approval_id)
    assert stored is not None
    return stored


def consume(approval_id: str, now_ms: int) -> None:
    """The turn acted on the answer: the same request later asks again."""
    db.execute_sql(
        "UPDATE approval SET resolution_json = json_set(resolution_json, '$.consumed_at', ?) "
        "WHERE id = ?",
        (now_ms, approval_id),
    )


def cancel_pending(session_id: str, now_ms: int, work_id: str | None = None) -> list[str]:
    """Pending approvals of a session (or one work item) become ``cancelled``; their ids."""
    sql = "SELECT id FROM approval WHERE status = 'pending' AND session_id = ?"
    args: list[Any] = [session_id]
    if work_id is not None:
        sql += " AND work_id = ?"
        args.append(work_id)
    ids = [row[0] for row in db.execute_sql(sql, args).fetchall()]
    for approval_id in ids:
        db.execute_sql(
            "UPDATE approval SET status = 'cancelled', resolved_at_ms = ? WHERE id = ?",
            (now_ms, approval_id),
        )
    return ids


def reconcile(now_ms: int) -> tuple[list[str], list[str]]:
    """After restart recovery (spec §6.4): pending approvals whose work was interrupted become
    ``stale``; those whose work was cancelled, failed or completed become ``cancelled``. Work
    still open (another live process is waiting on it) is left alone. (stale ids, cancelled ids)
    """
    stale = [
        row[0]
        for row in db.execute_sql(
            "SELECT a.id FROM approval a JOIN work_item w ON w.id = a.work_id "
            "WHERE a.status = 'pending' AND w.status = 'interrupted'"
        ).fetchall()
    ]
    cancelled = [
        row[0]
        for row in db.execute_sql(
            "SELECT a.id FROM approval a LEFT JOIN work_item w ON w.id = a.work_id "
            "WHERE a.status = 'pending' AND (w.id IS NULL "
            "OR w.status IN ('cancelled', 'failed', 'completed'))"
        ).fetchall()
    ]
    for ids, status in ((stale, "stale"), (cancelled, "cancelled")):
        for approval_id in ids:
            db.execute_sql(
                "UPDATE approval SET status = ?, resolved_at_ms = ? WHERE id = ?",
                (status, now_ms, approval_id),
            )
    return stale, cancelled
