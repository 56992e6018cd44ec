"""The engine's durable state: work queues, control events, deliveries and report policies.

Plain SQL on the hot paths (each call here runs inside a store job: ``await store.write(...)``),
mapped to and from the domain's frozen types. Reducers decide; these functions load and save.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.deliveries import Delivery, DeliveryKind, terminal_id
from fxdesk.domain.frozen import quick_init
from fxdesk.domain.model import Session, SessionMode, SessionState, WorkKind, WorkStatus
from fxdesk.domain.report_policy import ReportPolicy
from fxdesk.domain.work import Change, ControlEvent, ControlRecord, WorkItem
from fxdesk.store import owners
from fxdesk.store.repo import SESSION_COLUMNS, session_after_change, session_from_columns
from fxdesk.store.schema import database_proxy as db

_ITEM_COLUMNS = (
    "id, session_id, position, source_id, kind, content, status, reason, created_at_ms, "
    "updated_at_ms"
)
_OPEN = "('pending', 'running', 'awaiting_approval', 'interrupted')"
# Members by value for the rows read on every transition: ``WorkStatus(value)`` goes through
# ``EnumType.__call__`` (~0.4 µs each); the schema's CHECKs keep other values out.
_KINDS = {kind.value: kind for kind in WorkKind}
_STATUSES = {status.value: status for status in WorkStatus}
_MODES = {mode.value: mode for mode in SessionMode}
_STATES = {state.value: state for state in SessionState}


def _item(row: Sequence[Any]) -> WorkItem:
    return WorkItem(
        id=row[0],
        session_id=row[1],
        position=row[2],
        source_id=row[3],
        kind=_KINDS[row[4]],
        content=row[5],
        status=_STATUSES[row[6]],
        reason=row[7],
        created_at_ms=row[8],
        updated_at_ms=row[9],
    )


def load_record(
    session_id: str, include: Iterable[str] = (), open_limit: int | None = None
) -> ControlRecord | None:
    """A session's queue: its unfinished items (FIFO) plus the finished ones asked for.

    ``open_limit`` loads only the first N unfinished items: FIFO rules only ever look at the
    head (admission, queueing) or the head and the one after it (completion), so long queues
    need not be read whole for those.
    """
    session = db.execute_sql(
        "SELECT mode, state, generation, next_event_sequence, updated_at_ms, parent_id, "
        "archived_from FROM session WHERE id = ?",
        (session_id,),
    ).fetchone()
    if session is None:
        return None
    wanted = list(include)
    sql = f"SELECT {_ITEM_COLUMNS} FROM work_item WHERE session_id = ? AND status IN {_OPEN}"
    params: list[Any] = [session_id]
    sql += " ORDER BY position"
    if open_limit is not None:
        sql += " LIMIT ?"
        params.append(open_limit)
    rows = db.execute_sql(sql, params).fetchall()
    have = {row[0] for row in rows}
    missing = [work_id for work_id in wanted if work_id not in have]
    if missing:
        extra = db.execute_sql(
            f"SELECT {_ITEM_COLUMNS} FROM work_item WHERE id IN ({', '.join('?' * len(missing))})"
            " AND session_id = ?",
            (*missing, session_id),
        ).fetchall()
        rows = sorted([*rows, *extra], key=lambda row: row[2])
    return ControlRecord(
        session_id=session_id,
        mode=SessionMode(session[0]),
        state=SessionState(session[1]),
        generation=session[2],
        next_event_sequence=session[3],
        items=tuple(_item(row) for row in rows),
        updated_at_ms=session[4],
        parent_id=session[5],
        archived_from=SessionState(session[6]) if session[6] else None,
    )


# The session row, the next position and the head of the queue in one statement (a message is
# queued on each of them): the record's columns are the session's, so one row gives both.
_FOR_ENQUEUE = (
    f"SELECT {', '.join('s.' + c.strip() for c in SESSION_COLUMNS.split(','))}, "
    "(SELECT COALESCE(MAX(position), 0) FROM work_item WHERE session_id = s.id), "
    f"{', '.join('w.' + c.strip() for c in _ITEM_COLUMNS.split(','))} "
    "FROM session s LEFT JOIN work_item w ON w.id = (SELECT id FROM work_item "
    f"WHERE session_id = s.id AND status IN {_OPEN} ORDER BY position LIMIT 1) "
    "WHERE s.id = ?"
)
_SESSION_WIDTH = len(SESSION_COLUMNS.split(","))


@quick_init
@dataclass(frozen=True)
class EnqueueTarget:
    """What queueing a message reads (``load_for_enqueue``), in one statement.

    Attributes:
        record: the session's queue with its head only (``load_record(open_limit=1)``).
        position: the position a new item takes (one past the last).
        name: the session's name.
    """

    record: ControlRecord
    position: int
    name: str
    _row: tuple[Any, ...]

    def session(self) -> Session:
        """The session as read."""
        return session_from_columns(self._row)

    def session_after(self, change: Change) -> Session:
        """The session as ``change`` (saved with ``save_change``) leaves it."""
        return session_after_change(self._row, change.record)


def load_for_enqueue(session_id: str) -> EnqueueTarget | None:
    """The session's queue head, next position and row, read together; None without it."""
    row = db.obj.cursor().execute(_FOR_ENQUEUE, (session_id,)).fetchone()
    if row is None:
        return None
    head = row[_SESSION_WIDTH + 1 :]
    record = ControlRecord(
        session_id=session_id,
        mode=_MODES[row[6]],
        state=_STATES[row[11]],
        generation=row[13],
        next_event_sequence=row[14],
        items=(_item(head),) if head[0] is not None else (),
        updated_at_ms=row[17],
        parent_id=row[2],
        archived_from=_STATES[row[12]] if row[12] else None,
    )
    return EnqueueTarget(record, int(row[_SESSION_WIDTH]) + 1, row[5], row[:_SESSION_WIDTH])


def _settle_approvals(change: Change) -> None:
    """An approval never outlives its question: when its work item is cancelled (or ends) the
    pending approval is cancelled, and when a restart interrupts it, it goes stale (spec
    child-sessions §6.4). Same transaction as the item's change."""
    for item in change.items:
        if item.status == WorkStatus.INTERRUPTED:
            status = "stale"
        elif item.status in (WorkStatus.CANCELLED, WorkStatus.COMPLETED, WorkStatus.FAILED):
            status = "cancelled"
        else:
            continue
        db.execute_sql(
            "UPDATE approval SET status = ?, resolved_at_ms = ? "
            "WHERE work_id = ? AND status = 'pending'",
            (status, item.updated_at_ms, item.id),
        )


def save_change(change: Change) -> None:
    """Write a reducer's change: the session row, the changed items, the new events.

    One plain cursor for the three statements: this runs on every transition, and peewee's
    ``execute_sql`` wrapper costs more than some of them (errors reach ``errors.translate``
    as the driver's, which it reads as it reads peewee's). The database's own ``cursor()``
    (``db.obj``: the proxy's ``__getattr__`` costs ~1 µs a call), and enum members' values
    as ``_value_``, a plain attribute (``.value`` is a descriptor, ~0.4 µs; a member bound as
    it is goes through sqlite3's adaptation, slower still): issue 17, durable transitions."""
    record = change.record
    cursor = db.obj.cursor()
    cursor.execute(
        "UPDATE session SET state = ?, generation = ?, next_event_sequence = ?, "
        "updated_at_ms = ?, archived_from = ? WHERE id = ?",
        (
            record.state._value_,
            record.generation,
            record.next_event_sequence,
            record.updated_at_ms,
            record.archived_from._value_ if record.archived_from else None,
            record.session_id,
        ),
    )
    if change.items:
        cursor.executemany(
            f"INSERT INTO work_item ({_ITEM_COLUMNS}, owner_instance) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET status = excluded.status, "
            "reason = excluded.reason, updated_at_ms = excluded.updated_at_ms",
            [
                (
                    item.id,
                    item.session_id,
                    item.position,
                    item.source_id,
                    item.kind._value_,
                    item.content,
                    item.status._value_,
                    item.reason,
                    item.created_at_ms,
                    item.updated_at_ms,
                    owners.queue_owner(),  # kept as it was when the item already exists
                )
                for item in change.items
            ],
        )
        _settle_approvals(change)
    if change.events:
        cursor.executemany(
            "INSERT INTO control_event (session_id, sequence, revision, kind, work_id, previous, "
            "current, reason, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    event.session_id,
                    event.sequence,
                    event.revision,
                    event.kind,
                    event.work_id,
                    event.previous._value_ if event.previous else None,
                    event.current._value_ if event.current else None,
                    event.reason,
                    event.at_ms,
                )
                for event in change.events
            ],
        )


def list_items(session_id: str, limit: int = 200) -> list[WorkItem]:
    """The newest ``limit`` items in FIFO order (for ``fxdesk show`` and the queue view)."""
    rows = db.execute_sql(
        f"SELECT {_ITEM_COLUMNS} FROM work_item WHERE session_id = ? "
        "ORDER BY position DESC LIMIT ?",
        (session_id, limit),
    ).fetchall()
    return [_item(row) for row in reversed(rows)]


def get_item(work_id: str) -> WorkItem | None:
    row = db.execute_sql(
        f"SELECT {_ITEM_COLUMNS} FROM work_item WHERE id = ?", (work_id,)
    ).fetchone()
    return _item(row) if row else None


def failure_reason(work_id: str) -> str | None:
    """The reason on the event that finished the item (failures keep it there)."""
    row = db.execute_sql(
        "SELECT reason FROM control_event WHERE work_id = ? AND current IN "
        "('failed', 'cancelled', 'interrupted') ORDER BY sequence DESC LIMIT 1",
        (work_id,),
    ).fetchone()
    return row[0] if row else None


def sessions_with_open_work(
    root_id: str | None = None, include_pending: bool = True, dead_owners: Collection[str] = ()
) -> list[str]:
    """Sessions that have pending, running or approval-waiting work (the recovery sweep);
    with ``root_id``, only the sessions below that root. ``include_pending=False`` counts
    pending work only when one of ``dead_owners`` queued it."""
    if include_pending:
        where = "w.status IN ('pending', 'running', 'awaiting_approval')"
        params: list[str] = []
    else:
        owned = f"w.owner_instance IN ({', '.join('?' * len(dead_owners))})"
        where = "(w.status IN ('running', 'awaiting_approval')"
        where += f" OR (w.status = 'pending' AND {owned}))" if dead_owners else ")"
        params = list(dead_owners)
    sql = f"SELECT DISTINCT w.session_id FROM work_item w WHERE {where}"
    if root_id is not None:
        sql += " AND w.session_id IN (SELECT id FROM session WHERE root_id = ? AND id != ?)"
        params += [root_id, root_id]
    return [row[0] for row in db.execute_sql(sql, params).fetchall()]


# --- history ----------------------------------------------------------------------------------


def set_last_work_id(session_id: str, work_id: str) -> None:
    db.execute_sql("UPDATE session SET last_work_id = ? WHERE id = ?", (work_id, session_id))


# --- deliveries -------------------------------------------------------------------------------


def append_delivery(delivery: Delivery) -> bool:
    """Append unless a delivery with this id exists; True when it was new."""
    cursor = db.execute_sql(
        "INSERT OR IGNORE INTO delivery (id, session_id, target_id, work_id, kind, payload_json, "
        "created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            delivery.id,
            delivery.session_id,
            delivery.target_id,
            delivery.work_id,
            delivery.kind.value,
            json.dumps(delivery.payload, sort_keys=True),
            delivery.created_at_ms,
        ),
    )
    return bool(cursor.rowcount)


def deliveries(
    *,
    target_id: str | None = None,
    session_id: str | None = None,
    work_id: str | None = None,
    kind: DeliveryKind | None = None,
    limit: int = 1000,
) -> list[Delivery]:
    clauses, params = [], []
    if work_id is not None:
        clauses.append("work_id = ?")
        params.append(work_id)
    if target_id is not None:
        clauses.append("target_id = ?")
        params.append(target_id)
    if session_id is not None:
        clauses.append("session_id = ?")
        params.append(session_id)
    if kind is not None:
        clauses.append("kind = ?")
        params.append(kind.value)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = db.execute_sql(
        "SELECT id, session_id, target_id, kind, payload_json, work_id, created_at_ms "
        f"FROM delivery {where} ORDER BY created_at_ms, rowid LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [
        Delivery(r[0], r[1], r[2], DeliveryKind(r[3]), json.loads(r[4]), r[5], r[6]) for r in rows
    ]


def session_root_and_policy(session_id: str) -> tuple[str, ReportPolicy]:
    row = db.execute_sql(
        "SELECT root_id, config_json FROM session WHERE id = ?", (session_id,)
    ).fetchone()
    config = json.loads(row[1] or "{}") if row else {}
    return (row[0] if row else session_id), ReportPolicy.from_data(config.get("notifications"))


def terminal_delivery(item: WorkItem, root_id: str, at_ms: int) -> Delivery:
    return Delivery(
        id=terminal_id(item.session_id, item.id),
        session_id=item.session_id,
        target_id=root_id,
        kind=DeliveryKind.TERMINAL,
        payload={"state": item.status.value},
        work_id=item.id,
        created_at_ms=at_ms,
    )


def owed_terminals(
    session_id: str, at_ms: int, only: Iterable[str] | None = None
) -> list[Delivery]:
    """The terminal deliveries the session's finished items should have produced and lack
    (their captured policy, else the session's, decides which outcomes want one).

    ``only`` limits the check to those work ids; None checks every finished item.
    """
    root_id, default_policy = session_root_and_policy(session_id)
    sql = (
        f"SELECT {', '.join('w.' + c.strip() for c in _ITEM_COLUMNS.split(','))}, p.policy_json "
        "FROM work_item w LEFT JOIN work_policy p ON p.work_id = w.id "
        "WHERE w.session_id = ? AND w.status IN ('completed', 'failed', 'cancelled') "
        "AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.session_id = w.session_id "
        "AND d.work_id = w.id AND d.kind = 'terminal')"
    )
    params: list[Any] = [session_id]
    wanted = list(only) if only is not None else None
    if wanted is not None:
        if not wanted:
            return []
        sql += f" AND w.id IN ({', '.join('?' * len(wanted))})"
        params.extend(wanted)
    owed = []
    for row in db.execute_sql(sql, params).fetchall():
        item = _item(row[:10])
        policy = ReportPolicy.from_json(row[10]) if row[10] else default_policy
        if policy.wants_terminal(item.status):
            owed.append(terminal_delivery(item, root_id, at_ms))
    return owed


def owes_terminals(session_id: str) -> bool:
    """Whether a finished item of the session lacks the terminal delivery it should have."""
    return bool(owed_terminals(session_id, 0))


def reconcile_terminals(session_id: str, at_ms: int, only: Iterable[str] | None = None) -> int:
    """Write the terminal deliveries finished items should have produced and lack (idempotent:
    stable ids). ``only`` limits the check to those work ids. Returns how many were new."""
    return sum(1 for d in owed_terminals(session_id, at_ms, only) if append_delivery(d))


# The last control event whose finished item the start-up sweep has checked (a setting row).
TERMINAL_SWEEP_KEY = "terminal_sweep_event_id"


def sweep_terminals(at_ms: int) -> int:
    """Reconcile the terminals of every item that finished since the last sweep (start-up).

    A cancel commits its items first and their terminal deliveries in a transaction of their
    own, so a failure or a process end between the two leaves terminals unwritten. Only the
    control events after the last sweep are looked at, so the sweep costs what happened since
    the previous start, not the size of the database. Returns how many were written.
    """
    row = db.execute_sql(
        "SELECT value_json FROM setting WHERE key = ?", (TERMINAL_SWEEP_KEY,)
    ).fetchone()
    mark = int(json.loads(row[0])) if row else 0
    top = int(db.execute_sql("SELECT COALESCE(MAX(id), 0) FROM control_event").fetchone()[0])
    if top <= mark:
        return 0
    rows = db.execute_sql(
        "SELECT DISTINCT e.session_id, e.work_id FROM control_event e "
        "WHERE e.id > ? AND e.id <= ? AND e.current IN ('completed', 'failed', 'cancelled') "
        "AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.session_id = e.session_id "
        "AND d.work_id = e.work_id AND d.kind = 'terminal')",
        (mark, top),
    ).fetchall()
    by_session: dict[str, list[str]] = {}
    for session_id, work_id in rows:
        by_session.setdefault(session_id, []).append(work_id)
    written = sum(
        reconcile_terminals(session_id, at_ms, only=work_ids)
        for session_id, work_ids in by_session.items()
    )
    db.execute_sql(
        "INSERT INTO setting (key, value_json, updated_at_ms) VALUES (?, ?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value_json = excluded.value_json, "
        "updated_at_ms = excluded.updated_at_ms",
        (TERMINAL_SWEEP_KEY, json.dumps(top), at_ms),
    )
    return written


# --- work notification policies -------------------------------------------------------------


def capture_policy(
    session_id: str,
    work_id: str,
    admission_json: str,
    policy: ReportPolicy,
    at_ms: int,
) -> int | None:
    """Freeze the admission snapshot and the report policy of an admitted item.

    Returns the first interval check time, if the policy reports at intervals. A resumed item
    keeps its first policy (and its start time).
    """
    db.execute_sql(
        "UPDATE work_item SET admission_json = ? WHERE id = ?", (admission_json, work_id)
    )
    first = policy.first_check(at_ms)
    inserted = db.execute_sql(
        "INSERT OR IGNORE INTO work_policy (work_id, session_id, policy_json, started_at_ms, "
        "next_due_ms, stopped_at_ms) VALUES (?, ?, ?, ?, ?, ?)",
        (work_id, session_id, policy.to_json(), at_ms, first, None if first else at_ms),
    ).rowcount
    if inserted or first is None:
        return first
    existing = db.execute_sql(  # a resumed item keeps its first policy and its timing
        "SELECT next_due_ms, stopped_at_ms FROM work_policy WHERE work_id = ?", (work_id,)
    ).fetchone()
    return existing[0] if existing and existing[1] is None else None


def active_policies(session_id: str | None = None) -> list[tuple[str, str, int | None]]:
    """(session id, work id, next due) of the policies still running."""
    sql = "SELECT session_id, work_id, next_due_ms FROM work_policy WHERE stopped_at_ms IS NULL"
    params: tuple[Any, ...] = ()
    if session_id is not None:
        sql += " AND session_id = ?"
        params = (session_id,)
    return [(r[0], r[1], r[2]) for r in db.execute_sql(sql, params).fetchall()]


def events(session_id: str, after_sequence: int = 0, limit: int = 50) -> list[ControlEvent]:
    rows = db.execute_sql(
        "SELECT sequence, revision, kind, work_id, previous, current, reason, created_at_ms "
        "FROM control_event WHERE session_id = ? AND sequence > ? ORDER BY sequence LIMIT ?",
        (session_id, after_sequence, limit),
    ).fetchall()
    return [
        ControlEvent(
            session_id=session_id,
            sequence=r[0],
            revision=r[1],
            kind=r[2],
            at_ms=r[7],
            work_id=r[3],
            previous=WorkStatus(r[4]) if r[4] else None,
            current=WorkStatus(r[5]) if r[5] else None,
            reason=r[6],
        )
        for r in rows
    ]


def policy_state(work_id: str) -> tuple[ReportPolicy, int, int | None, bool] | None:
    """(policy, started at, next due, stopped) of a work item's captured policy."""
    row = db.execute_sql(
        "SELECT policy_json, started_at_ms, next_due_ms, stopped_at_ms FROM work_policy "
        "WHERE work_id = ?",
        (work_id,),
    ).fetchone()
    if row is None:
        return None
    return ReportPolicy.from_json(row[0]), row[1], row[2], row[3] is not None


def set_policy_due(work_id: str, next_due_ms: int | None) -> None:
    db.execute_sql(
        "UPDATE work_policy SET next_due_ms = ? WHERE work_id = ?", (next_due_ms, work_id)
    )


def stop_policies(session_id: str, at_ms: int, work_id: str | None = None) -> int:
    """Mark the session's (or one item's) running policies stopped; how many were."""
    sql = "UPDATE work_policy SET stopped_at_ms = ? WHERE session_id = ? AND stopped_at_ms IS NULL"
    params: tuple[Any, ...] = (at_ms, session_id)
    if work_id is not None:
        sql += " AND work_id = ?"
        params += (work_id,)
    return int(db.execute_sql(sql, params).rowcount)


def item_status(work_id: str) -> tuple[WorkStatus | None, bool]:
    """The item's status, and whether a steer message waits for its session."""
    row = db.execute_sql(
        "SELECT w.status, EXISTS (SELECT 1 FROM work_item s WHERE s.session_id = w.session_id "
        "AND s.kind = 'steer' AND s.status = 'pending') FROM work_item w WHERE w.id = ?",
        (work_id,),
    ).fetchone()
    return (WorkStatus(row[0]), bool(row[1])) if row else (None, False)


def last_failed_sessions() -> set[str]:
    """Sessions whose newest work item failed (the tree marks them)."""
    rows = db.execute_sql(
        "SELECT w.session_id FROM work_item w WHERE w.status = 'failed' AND w.position = "
        "(SELECT MAX(position) FROM work_item WHERE session_id = w.session_id)"
    ).fetchall()
    return {row[0] for row in rows}


def queue_counts() -> dict[str, tuple[int, int]]:
    """Per session: (queued messages, unfinished items) for the tree's badges."""
    rows = db.execute_sql(
        "SELECT session_id, SUM(status = 'pending'), COUNT(*) FROM work_item "
        "WHERE status IN ('pending', 'running', 'awaiting_approval', 'interrupted') "
        "GROUP BY session_id"
    ).fetchall()
    return {row[0]: (int(row[1]), int(row[2])) for row in rows}
