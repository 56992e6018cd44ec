"""Which fxdesk process owns queued work (``work_item.owner_instance``, schema 4).

A work item records the fxdesk instance (``store/locks.py`` InstanceLock) whose engine queued it
to run it. Restart recovery interrupts pending work only once that process is gone, and leaves
the pending work of a live one alone. An item with no owner was queued without an engine (``fxdesk
send --no-wait``) for whichever fxdesk runs the session next: no restart interrupts it, and the
window runs it (``engine/handoff.py``).

Plain SQL; each call runs inside a store job, like ``control``.
"""

from __future__ import annotations

from collections.abc import Collection

from fxdesk.store.schema import database_proxy as db

_OPEN = "('pending', 'running', 'awaiting_approval', 'interrupted')"


class _QueueOwner:
    """The instance whose engine runs in this process: one per process, like the ``Store`` it
    writes through (``Store.open`` refuses a second)."""

    instance_id: str | None = None


_queue_owner = _QueueOwner()


def set_queue_owner(instance_id: str | None) -> None:
    """Record ``instance_id`` on the work items queued from now on (None: hand them off)."""
    _queue_owner.instance_id = instance_id


def queue_owner() -> str | None:
    """What a work item queued now records as its owner."""
    return _queue_owner.instance_id


def hand_off(work_id: str) -> bool:
    """Take the owner off a pending item: it is left to whichever fxdesk runs its session next
    (the window runs it, no restart interrupts it); False if it is no longer pending."""
    cursor = db.execute_sql(
        "UPDATE work_item SET owner_instance = NULL WHERE id = ? AND status = 'pending'",
        (work_id,),
    )
    return bool(cursor.rowcount)


def pending_owners(root_id: str | None = None) -> set[str]:
    """The fxdesk instances that queued pending work (handed-off work has none)."""
    sql = (
        "SELECT DISTINCT owner_instance FROM work_item "
        "WHERE status = 'pending' AND owner_instance IS NOT NULL"
    )
    params: tuple[str, ...] = ()
    if root_id is not None:
        sql += " AND session_id IN (SELECT id FROM session WHERE root_id = ? AND id != ?)"
        params = (root_id, root_id)
    return {row[0] for row in db.execute_sql(sql, params).fetchall()}


def pending_queued_by(session_id: str, owners: Collection[str]) -> set[str]:
    """The session's pending items that one of ``owners`` queued."""
    if not owners:
        return set()
    rows = db.execute_sql(
        "SELECT id FROM work_item WHERE session_id = ? AND status = 'pending' "
        f"AND owner_instance IN ({', '.join('?' * len(owners))})",
        (session_id, *owners),
    ).fetchall()
    return {row[0] for row in rows}


def handed_off_heads() -> list[str]:
    """Sessions whose next work is a pending item queued for whichever fxdesk runs next
    (``fxdesk send --no-wait``): nothing before it is running, waiting or interrupted."""
    rows = db.execute_sql(
        "SELECT w.session_id FROM work_item w JOIN session s ON s.id = w.session_id "
        "WHERE w.status = 'pending' AND w.owner_instance IS NULL AND s.state != 'archived' "
        "AND NOT (s.is_child = 1 AND s.parent_id IS NULL) "  # a detached child takes no work
        "AND NOT EXISTS (SELECT 1 FROM work_item h WHERE h.session_id = w.session_id "
        f"AND h.status IN {_OPEN} AND h.position < w.position) "
        "ORDER BY w.created_at_ms"
    ).fetchall()
    return [row[0] for row in rows]
