"""The root session's inbox and its counters in SQL (called inside store jobs, like ``control``).

Every change here keeps ``agent_session_state`` in step with the rows in the same transaction
(spec agent-coordinator §4.6): ``pending_count`` = events pending or claimed, ``reserved_count`` =
unfinished background runs holding a completion slot; the invariant
``pending_count + reserved_count <= Limits.max_inbox`` is checked wherever a slot is *taken*
(admission, a new signal) and never where a reservation *turns into* an event, so no completion
can be lost. Recovery rebuilds the counters from the rows (``reconcile_counters``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from fxdesk.domain.agent_inbox import (
    EventKind,
    EventStatus,
    InboxEvent,
    Lane,
    Severity,
    SignalAccepted,
    SignalInput,
    SignalRefused,
    SignalStatus,
    completion_key,
    retry_delay_ms,
)
from fxdesk.domain.agent_runs import AgentRun, Counters, Limits, completion_payload, inbox_full
from fxdesk.store.schema import database_proxy as db

_COUNTED = "('pending', 'claimed')"
_EVENT_COLUMNS = (
    "id, root_session_id, run_id, kind, event_key, lane, status, requires_continuation, "
    "payload_json, severity, signal_key, dedupe_key, count, revision, attempts, lease_owner, "
    "lease_expires_at_ms, available_at_ms, created_at_ms, updated_at_ms, consumed_at_ms, "
    "last_error"
)


def _event(row: Sequence[Any]) -> InboxEvent:
    return InboxEvent(
        id=row[0],
        root_session_id=row[1],
        run_id=row[2],
        kind=EventKind(row[3]),
        event_key=row[4],
        lane=Lane(row[5]),
        status=EventStatus(row[6]),
        requires_continuation=bool(row[7]),
        payload=json.loads(row[8]),
        severity=Severity(row[9]) if row[9] else None,
        signal_key=row[10],
        dedupe_key=row[11],
        count=row[12],
        revision=row[13],
        attempts=row[14],
        lease_owner=row[15],
        lease_expires_at_ms=row[16],
        available_at_ms=row[17],
        created_at_ms=row[18],
        updated_at_ms=row[19],
        consumed_at_ms=row[20],
        last_error=row[21],
    )


# --- counters -------------------------------------------------------------------------------


def ensure_state(root_session_id: str, now: int) -> Counters:
    """The session's counters, creating its row (all zero) if it has none yet."""
    db.execute_sql(
        "INSERT OR IGNORE INTO agent_session_state (root_session_id, created_at_ms, "
        "updated_at_ms) VALUES (?, ?, ?)",
        (root_session_id, now, now),
    )
    return counters(root_session_id)


def counters(root_session_id: str) -> Counters:
    """The session's counters (zero when it never delegated)."""
    row = db.execute_sql(
        "SELECT pending_count, reserved_count, revision FROM agent_session_state "
        "WHERE root_session_id = ?",
        (root_session_id,),
    ).fetchone()
    return Counters() if row is None else Counters(row[0], row[1], row[2])


def touch(root_session_id: str, now: int, *, pending: int = 0, reserved: int = 0) -> int:
    """Apply counter deltas and bump the session's revision; returns the new revision.

    ``pending`` may not go below zero (the CHECK refuses it: a bug, and the transaction rolls
    back); a release of more reservations than held stops at zero (spec §3.14)."""
    ensure_state(root_session_id, now)
    row = db.execute_sql(
        "UPDATE agent_session_state SET pending_count = pending_count + ?, "
        "reserved_count = MAX(0, reserved_count + ?), revision = revision + 1, "
        "updated_at_ms = ? WHERE root_session_id = ? RETURNING revision",
        (pending, reserved, now, root_session_id),
    ).fetchone()
    return int(row[0])


def reserve(root_session_id: str, slots: int, limits: Limits, now: int) -> bool:
    """Take ``slots`` completion slots if they fit under ``limits.max_inbox`` (one conditional
    UPDATE: the check and the write cannot be separated)."""
    ensure_state(root_session_id, now)
    cursor = db.execute_sql(
        "UPDATE agent_session_state SET reserved_count = reserved_count + ?, updated_at_ms = ? "
        "WHERE root_session_id = ? AND pending_count + reserved_count + ? <= ?",
        (slots, now, root_session_id, slots, limits.max_inbox),
    )
    return bool(cursor.rowcount)


def reconcile_counters(now: int) -> tuple[str, ...]:
    """Rebuild every session's counters from the rows (spec §4.6); the sessions that were off."""
    rows = db.execute_sql(
        "SELECT s.root_session_id, s.pending_count, s.reserved_count, "
        f"(SELECT COUNT(*) FROM agent_inbox e WHERE e.root_session_id = s.root_session_id "
        f"AND e.status IN {_COUNTED}), "
        "(SELECT COUNT(*) FROM agent_run r WHERE r.root_session_id = s.root_session_id "
        "AND r.completion_slot_reserved = 1 "
        "AND r.status IN ('queued', 'running', 'waiting_children')) "
        "FROM agent_session_state s"
    ).fetchall()
    repaired = []
    for session_id, pending, reserved, real_pending, real_reserved in rows:
        if (pending, reserved) != (real_pending, real_reserved):
            db.execute_sql(
                "UPDATE agent_session_state SET pending_count = ?, reserved_count = ?, "
                "revision = revision + 1, updated_at_ms = ? WHERE root_session_id = ?",
                (real_pending, real_reserved, now, session_id),
            )
            repaired.append(session_id)
    return tuple(sorted(repaired))


# --- completions ----------------------------------------------------------------------------


def write_completion(run: AgentRun, now: int, *, consumed: bool, continuation: bool) -> bool:
    """Turn a finished background run's reservation into its completion event, once.

    The event key ``completion:<run id>`` is unique per session, so a second call (a retry, a
    second writer) finds it and changes nothing: True only when this call wrote it. Never checks
    capacity: the slot was reserved at admission (spec §4.5)."""
    if not run.completion_slot_reserved or not run.status.terminal:
        return False
    key = completion_key(run.id)
    exists = db.execute_sql(
        "SELECT 1 FROM agent_inbox WHERE root_session_id = ? AND event_key = ?",
        (run.root_session_id, key),
    ).fetchone()
    if exists is not None:
        return False
    revision = touch(run.root_session_id, now, pending=0 if consumed else 1, reserved=-1)
    status = EventStatus.CONSUMED if consumed else EventStatus.PENDING
    db.execute_sql(
        "INSERT INTO agent_inbox (id, root_session_id, run_id, kind, event_key, lane, status, "
        "requires_continuation, payload_json, revision, available_at_ms, created_at_ms, "
        "updated_at_ms, consumed_at_ms) VALUES (?, ?, ?, 'completion', ?, 'queue', ?, ?, ?, ?, "
        "?, ?, ?, ?)",
        (
            str(uuid.uuid4()),
            run.root_session_id,
            run.id,
            key,
            status.value,
            int(continuation and not consumed),
            json.dumps(completion_payload(run), sort_keys=True),
            revision,
            now,
            now,
            now,
            now if consumed else None,
        ),
    )
    return True


def signal_ids_of(run_id: str) -> tuple[str, ...]:
    """The signals a run raised, oldest first: read at the terminal commit, after execution."""
    rows = db.execute_sql(
        "SELECT id FROM agent_inbox WHERE run_id = ? AND kind = 'signal' "
        "ORDER BY created_at_ms, rowid",
        (run_id,),
    ).fetchall()
    return tuple(row[0] for row in rows)


def supersede_signals(run_id: str, now: int) -> int:
    """A cancelled run's undelivered signals become ``superseded``: kept, never delivered."""
    rows = db.execute_sql(
        "UPDATE agent_inbox SET status = 'superseded', lease_owner = NULL, "
        "lease_expires_at_ms = NULL, updated_at_ms = ? "
        f"WHERE run_id = ? AND kind = 'signal' AND status IN {_COUNTED} "
        "RETURNING root_session_id",
        (now, run_id),
    ).fetchall()
    if rows:
        touch(rows[0][0], now, pending=-len(rows))
    return len(rows)


# --- signals --------------------------------------------------------------------------------


def emit_signal(
    run_id: str, execution_id: str, signal: SignalInput, limits: Limits, now: int
) -> SignalAccepted:
    """The single writer of signals (spec §3.9), in one transaction.

    Refused (``SignalRefused``, nothing written) when the run is unknown, the execution is not
    the run's current one, the run is finished, its agent may not signal, or the inbox is full.
    A repeat of the same ``dedupe_key`` in the session within the window is counted on the first
    event and answered ``deduplicated`` with that event's id, even when the inbox is full."""
    run = db.execute_sql(
        "SELECT root_session_id, execution_id, status, signal_lane, agent_id FROM agent_run "
        "WHERE id = ?",
        (run_id,),
    ).fetchone()
    if run is None:
        raise SignalRefused("SIGNAL_RUN_GONE", f"no agent run {run_id!r}: the signal was dropped")
    root_session_id, stored_execution, status, lane_value, agent_id = run
    if stored_execution != execution_id:
        raise SignalRefused(
            "SIGNAL_STALE_EXECUTION",
            f"run {run_id} is now executed by {stored_execution!r}, not {execution_id!r}: "
            "a stale execution cannot raise signals",
        )
    if status not in ("queued", "running", "waiting_children"):
        raise SignalRefused(
            "SIGNAL_RUN_INACTIVE", f"run {run_id} is finished ({status}); it cannot raise signals"
        )
    if lane_value is None:
        raise SignalRefused(
            "SIGNAL_NOT_ALLOWED",
            f"agent {agent_id!r} may not raise signals (its definition says so)",
        )
    lane = Lane(lane_value)
    if signal.dedupe_key is not None:
        earlier = db.execute_sql(
            "SELECT id, count FROM agent_inbox WHERE root_session_id = ? AND kind = 'signal' "
            "AND dedupe_key = ? AND created_at_ms > ? "
            "AND status IN ('pending', 'claimed', 'consumed') "
            "ORDER BY created_at_ms DESC, rowid DESC LIMIT 1",
            (root_session_id, signal.dedupe_key, now - limits.signal_dedupe_window_ms),
        ).fetchone()
        if earlier is not None:
            revision = touch(root_session_id, now)
            db.execute_sql(
                "UPDATE agent_inbox SET count = count + 1, revision = ?, updated_at_ms = ? "
                "WHERE id = ?",
                (revision, now, earlier[0]),
            )
            return SignalAccepted(earlier[0], SignalStatus.DEDUPLICATED, lane, earlier[1] + 1)
    refusal = inbox_full(counters(root_session_id), limits)
    if refusal is not None:
        raise SignalRefused(refusal.code, refusal.message)
    revision = touch(root_session_id, now, pending=1)
    event_id = str(uuid.uuid4())
    payload = {
        "run_id": run_id,
        "agent_id": agent_id,
        "key": signal.key,
        "severity": signal.severity.value,
        "summary": signal.summary,
        "details": signal.details,
        "dedupe_key": signal.dedupe_key,
    }
    db.execute_sql(
        "INSERT INTO agent_inbox (id, root_session_id, run_id, kind, event_key, lane, status, "
        "requires_continuation, payload_json, severity, signal_key, dedupe_key, revision, "
        "available_at_ms, created_at_ms, updated_at_ms) "
        "VALUES (?, ?, ?, 'signal', ?, ?, 'pending', 1, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            event_id,
            root_session_id,
            run_id,
            f"signal:{event_id}",
            lane.value,
            json.dumps(payload, sort_keys=True),
            signal.severity.value,
            signal.key,
            signal.dedupe_key,
            revision,
            now,
            now,
            now,
        ),
    )
    return SignalAccepted(event_id, SignalStatus.ACCEPTED, lane, 1)


# --- delivery -------------------------------------------------------------------------------


def claim_due(
    root_session_id: str, owner: str, limits: Limits, now: int, *, lane: Lane | None = None
) -> list[InboxEvent]:
    """Lease the session's due pending events to ``owner`` (one delivery attempt each), oldest
    first. Claimed events still count against capacity until acknowledged or dead."""
    sql = (
        "UPDATE agent_inbox SET status = 'claimed', attempts = attempts + 1, lease_owner = ?, "
        "lease_expires_at_ms = ?, updated_at_ms = ? WHERE root_session_id = ? "
        "AND status = 'pending' AND available_at_ms <= ?"
    )
    params: list[Any] = [owner, now + limits.stale_lease_ms, now, root_session_id, now]
    if lane is not None:
        sql += " AND lane = ?"
        params.append(lane.value)
    ids = [row[0] for row in db.execute_sql(sql + " RETURNING id", params).fetchall()]
    if ids:
        touch(root_session_id, now)
    return sorted(
        (event for event in map(get_event, ids) if event is not None),
        key=lambda event: (event.created_at_ms, event.id),
    )


def acknowledge(event_ids: Sequence[str], owner: str, now: int) -> int:
    """Mark events ``owner`` claimed as delivered (``consumed``); returns how many it held."""
    done = 0
    for event_id in event_ids:
        row = db.execute_sql(
            "UPDATE agent_inbox SET status = 'consumed', consumed_at_ms = ?, lease_owner = NULL, "
            "lease_expires_at_ms = NULL, updated_at_ms = ? "
            "WHERE id = ? AND status = 'claimed' AND lease_owner = ? RETURNING root_session_id",
            (now, now, event_id, owner),
        ).fetchone()
        if row is not None:
            touch(row[0], now, pending=-1)
            done += 1
    return done


def delivery_failed(
    event_id: str, owner: str, error: str, limits: Limits, now: int
) -> EventStatus | None:
    """A claimed event could not be delivered: back to ``pending`` after a back-off, or ``dead``
    once it has had ``limits.max_delivery_attempts``. None when ``owner`` did not hold it."""
    row = db.execute_sql(
        "SELECT root_session_id, attempts FROM agent_inbox "
        "WHERE id = ? AND status = 'claimed' AND lease_owner = ?",
        (event_id, owner),
    ).fetchone()
    if row is None:
        return None
    return _give_back(event_id, row[0], row[1], error, limits, now)


def _give_back(
    event_id: str, session_id: str, attempts: int, error: str, limits: Limits, now: int
) -> EventStatus:
    dead = attempts >= limits.max_delivery_attempts
    status = EventStatus.DEAD if dead else EventStatus.PENDING
    revision = touch(session_id, now, pending=-1 if dead else 0)
    db.execute_sql(
        "UPDATE agent_inbox SET status = ?, lease_owner = NULL, lease_expires_at_ms = NULL, "
        "available_at_ms = ?, last_error = ?, revision = ?, updated_at_ms = ? WHERE id = ?",
        (
            status.value,
            now if dead else now + retry_delay_ms(attempts, limits.delivery_retry_ms),
            error,
            revision,
            now,
            event_id,
        ),
    )
    return status


def expire_leases(limits: Limits, now: int) -> tuple[int, int]:
    """Claims whose lease ran out go back to pending, or dead past the attempt limit (spec §3.8).
    Returns (handed back, dead)."""
    rows = db.execute_sql(
        "SELECT id, root_session_id, attempts FROM agent_inbox "
        "WHERE status = 'claimed' AND lease_expires_at_ms <= ? ORDER BY created_at_ms",
        (now,),
    ).fetchall()
    back = dead = 0
    for event_id, session_id, attempts in rows:
        status = _give_back(event_id, session_id, attempts, "delivery lease expired", limits, now)
        if status is EventStatus.DEAD:
            dead += 1
        else:
            back += 1
    return back, dead


# --- reads ----------------------------------------------------------------------------------


def get_event(event_id: str) -> InboxEvent | None:
    row = db.execute_sql(
        f"SELECT {_EVENT_COLUMNS} FROM agent_inbox WHERE id = ?", (event_id,)
    ).fetchone()
    return None if row is None else _event(row)


def list_inbox(root_session_id: str, *, counted_only: bool = False) -> list[InboxEvent]:
    """The session's events, oldest first (only pending and claimed ones if ``counted_only``)."""
    where = f" AND status IN {_COUNTED}" if counted_only else ""
    rows = db.execute_sql(
        f"SELECT {_EVENT_COLUMNS} FROM agent_inbox WHERE root_session_id = ?{where} "
        "ORDER BY created_at_ms, rowid",
        (root_session_id,),
    ).fetchall()
    return [_event(row) for row in rows]


def events_for_run(run_id: str) -> list[InboxEvent]:
    rows = db.execute_sql(
        f"SELECT {_EVENT_COLUMNS} FROM agent_inbox WHERE run_id = ? ORDER BY created_at_ms, rowid",
        (run_id,),
    ).fetchall()
    return [_event(row) for row in rows]


def sessions_with_due_events(now: int) -> list[tuple[str, bool]]:
    """Root sessions with pending events due now, and whether one of them asks for a
    continuation (an idle root starts one; otherwise they wait for its next turn)."""
    rows = db.execute_sql(
        "SELECT root_session_id, MAX(requires_continuation) FROM agent_inbox "
        "WHERE status = 'pending' AND available_at_ms <= ? GROUP BY root_session_id "
        "ORDER BY root_session_id",
        (now,),
    ).fetchall()
    return [(row[0], bool(row[1])) for row in rows]
