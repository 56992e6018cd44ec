"""Work queues as pure reducers (spec child-sessions §3.1–3.8). No I/O.

A ``ControlRecord`` is a session's queue state: its *open* work items (not yet completed, failed or
cancelled) in FIFO order, plus any finished item a caller asked for by id. Finished items never
change again and every rule skips them, so leaving the rest of a long history out changes nothing.

Each reducer returns a ``Change``: the record after, the items that changed, and the control events
to append. One call is one batch: the generation (revision) moves by exactly one, and every event
of the batch carries it, with contiguous sequence numbers.
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass, replace

from fxdesk.domain import reasons
from fxdesk.domain.frozen import quick_init
from fxdesk.domain.model import SessionMode, SessionState, WorkKind, WorkStatus

OPEN = frozenset({WorkStatus.PENDING, WorkStatus.RUNNING, WorkStatus.AWAITING_APPROVAL})
UNFINISHED = OPEN | {WorkStatus.INTERRUPTED}


class InvalidWorkState(ValueError):
    """The transition does not apply to the item's state."""


class WorkOutcome(enum.StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    AWAITING_APPROVAL = "awaiting_approval"
    PAUSED = "paused"


class CompletionDecision(enum.StrEnum):
    COMMITTED = "committed"
    CANCELLATION_WON = "cancellation_won"
    STALE_WORK = "stale_work"


class WaitTransition(enum.StrEnum):
    """Result of moving a running item to/from awaiting_approval."""

    CHANGED = "changed"
    ALREADY_IN_STATE = "already_in_state"
    CANCELLATION_WON = "cancellation_won"
    STALE_WORK = "stale_work"


@quick_init
@dataclass(frozen=True)
class WorkItem:
    """One message to a session; it runs as one turn."""

    id: str
    session_id: str
    position: int
    source_id: str
    kind: WorkKind
    content: str
    status: WorkStatus
    reason: str | None
    created_at_ms: int
    updated_at_ms: int


@quick_init
@dataclass(frozen=True)
class ControlEvent:
    """One appended control event (kind ``work_transition`` unless stated)."""

    session_id: str
    sequence: int
    revision: int
    kind: str
    at_ms: int
    work_id: str | None = None
    previous: WorkStatus | None = None
    current: WorkStatus | None = None
    reason: str | None = None


@quick_init
@dataclass(frozen=True)
class ControlRecord:
    session_id: str
    mode: SessionMode
    state: SessionState
    generation: int
    next_event_sequence: int
    items: tuple[WorkItem, ...]
    updated_at_ms: int = 0
    parent_id: str | None = None
    archived_from: SessionState | None = None

    def find(self, work_id: str) -> WorkItem | None:
        for item in self.items:
            if item.id == work_id:
                return item
        return None


@quick_init
@dataclass(frozen=True)
class Change:
    record: ControlRecord
    items: tuple[WorkItem, ...]
    events: tuple[ControlEvent, ...]


@dataclass(frozen=True)
class RestartRecovery:
    interrupted: int = 0
    completed: int = 0


# --- derived state and selection ------------------------------------------------------------


def remaining_state(items: tuple[WorkItem, ...] | list[WorkItem]) -> SessionState | None:
    """The state of the first unfinished item in FIFO order, or ``None`` (spec §3.2)."""
    for item in items:
        if item.status == WorkStatus.RUNNING:
            return SessionState.RUNNING
        if item.status == WorkStatus.AWAITING_APPROVAL:
            return SessionState.AWAITING_APPROVAL
        if item.status == WorkStatus.INTERRUPTED:
            return SessionState.INTERRUPTED
        if item.status == WorkStatus.PENDING:
            return SessionState.QUEUED
    return None


def next_runnable(items: tuple[WorkItem, ...] | list[WorkItem], retry: bool) -> int | None:
    """Index of the item to run next (spec §3.3), or ``None``.

    An interrupted or approval-blocked head blocks everything behind it unless ``retry``; a
    running item means something is already in flight.
    """
    for index, item in enumerate(items):
        if item.status.terminal:
            continue
        if item.status == WorkStatus.PENDING:
            return index
        if item.status in (WorkStatus.INTERRUPTED, WorkStatus.AWAITING_APPROVAL):
            return index if retry else None
        return None  # running
    return None


# --- reducers ---------------------------------------------------------------------------------


Update = tuple[WorkItem, WorkStatus | None, str | None]


def _transition_event(
    record: ControlRecord,
    sequence: int,
    revision: int,
    now_ms: int,
    item: WorkItem,
    previous: WorkStatus | None,
    reason: str | None,
) -> ControlEvent:
    return ControlEvent(
        session_id=record.session_id,
        sequence=sequence,
        revision=revision,
        kind="work_transition",
        at_ms=now_ms,
        work_id=item.id,
        previous=previous,
        current=item.status,
        reason=reason,
    )


def _apply(
    record: ControlRecord,
    updates: list[Update],
    state: SessionState,
    now_ms: int,
    items_after: tuple[WorkItem, ...] | None = None,
) -> Change:
    """One batch: each (item after, previous status, event reason) gets one event; the
    generation moves by one and every event carries it. ``items_after``: the record's items
    with the updates already in place, when the caller has them (a new item added)."""
    revision = record.generation + 1
    sequence = record.next_event_sequence
    if len(updates) == 1 and items_after is not None:
        # One new item (enqueue, on every send): nothing to merge into the items (issue 17).
        item, previous, event_reason = updates[0]
        event = _transition_event(record, sequence, revision, now_ms, item, previous, event_reason)
        after = ControlRecord(
            session_id=record.session_id,
            mode=record.mode,
            state=state,
            generation=revision,
            next_event_sequence=sequence + 1,
            items=items_after,
            updated_at_ms=now_ms,
            parent_id=record.parent_id,
            archived_from=record.archived_from,
        )
        return Change(after, (item,), (event,))
    events = []
    for item, previous, event_reason in updates:
        events.append(
            _transition_event(record, sequence, revision, now_ms, item, previous, event_reason)
        )
        sequence += 1
    changed = {item.id: item for item, _, _ in updates}
    # Built directly rather than with ``dataclasses.replace``: this runs on every durable
    # transition, and ``replace`` costs as much again as the construction (issue 17).
    after = ControlRecord(
        session_id=record.session_id,
        mode=record.mode,
        state=state,
        generation=revision,
        next_event_sequence=sequence,
        items=(
            tuple(changed.get(item.id, item) for item in record.items)
            if items_after is None
            else items_after
        ),
        updated_at_ms=now_ms,
        parent_id=record.parent_id,
        archived_from=record.archived_from,
    )
    return Change(after, tuple(changed.values()), tuple(events))


def enqueue(record: ControlRecord, item: WorkItem, now_ms: int) -> Change:
    """Queue a new pending item at the end (the manager's send / create-with-prompt)."""
    if item.status != WorkStatus.PENDING or item.reason is not None:
        raise InvalidWorkState("a new work item must be pending without a reason")
    if record.find(item.id) is not None:
        raise InvalidWorkState(f"work item {item.id} already exists")
    items = (*record.items, item)
    state = record.state
    if state != SessionState.ARCHIVED:
        state = remaining_state(items) or state
    return _apply(record, [(item, None, None)], state, now_ms, items)


def admit(record: ControlRecord, index: int, now_ms: int) -> Change:
    """Move the item at ``index`` to running (spec §3.4); an interrupted item's reason clears."""
    if not 0 <= index < len(record.items):
        raise InvalidWorkState(f"no work item at index {index}")
    item = record.items[index]
    if item.status not in (
        WorkStatus.PENDING,
        WorkStatus.INTERRUPTED,
        WorkStatus.AWAITING_APPROVAL,
    ):
        raise InvalidWorkState(f"work item {item.id} is {item.status.value}")
    if item.reason is not None and item.status != WorkStatus.INTERRUPTED:
        raise InvalidWorkState(f"work item {item.id} carries a reason but is not interrupted")
    admitted = replace(item, status=WorkStatus.RUNNING, reason=None, updated_at_ms=now_ms)
    return _apply(record, [(admitted, item.status, None)], SessionState.RUNNING, now_ms)


def _settled_state(
    record: ControlRecord, items: tuple[WorkItem, ...], outcome: SessionState
) -> SessionState:
    remaining = remaining_state(items)
    if remaining is not None:
        return remaining
    return outcome if record.mode == SessionMode.ONE_OFF else SessionState.IDLE


def finish(
    record: ControlRecord,
    work_id: str,
    outcome: WorkOutcome,
    now_ms: int,
    failure_reason: str | None = None,
) -> tuple[CompletionDecision, Change | None]:
    """Apply a turn's outcome, unless a committed cancel already won (spec §3.5)."""
    if failure_reason is not None:
        if outcome != WorkOutcome.FAILED:
            raise reasons.InvalidReason("a failure reason is only allowed on a failed outcome")
        reasons.validate_failure_reason(failure_reason)
    item = record.find(work_id)
    if item is None:
        return CompletionDecision.STALE_WORK, None
    if item.status == WorkStatus.CANCELLED:
        return CompletionDecision.CANCELLATION_WON, None
    if item.status != WorkStatus.RUNNING:
        return CompletionDecision.STALE_WORK, None
    item_reason: str | None = None  # only "paused" is kept on the item itself
    event_reason: str | None = None
    if outcome == WorkOutcome.COMPLETED:
        status = WorkStatus.COMPLETED
    elif outcome == WorkOutcome.FAILED:
        status = WorkStatus.FAILED
        event_reason = failure_reason or reasons.TURN_NOT_COMMITTED
    elif outcome == WorkOutcome.AWAITING_APPROVAL:
        status = WorkStatus.AWAITING_APPROVAL
    else:
        status = WorkStatus.INTERRUPTED
        item_reason = event_reason = reasons.PAUSED
    updated = replace(item, status=status, reason=item_reason, updated_at_ms=now_ms)
    items = tuple(updated if i.id == work_id else i for i in record.items)
    if status == WorkStatus.AWAITING_APPROVAL:
        state = SessionState.AWAITING_APPROVAL
    elif status == WorkStatus.INTERRUPTED:
        state = SessionState.INTERRUPTED
    else:
        state = _settled_state(
            record,
            items,
            SessionState.COMPLETED if status == WorkStatus.COMPLETED else SessionState.FAILED,
        )
    change = _apply(record, [(updated, item.status, event_reason)], state, now_ms)
    return CompletionDecision.COMMITTED, change


def fail_admission(record: ControlRecord, work_id: str, now_ms: int) -> Change:
    """A pending item whose admission failed becomes failed (spec §3.9 steps 11–12)."""
    item = record.find(work_id)
    if item is None or item.status != WorkStatus.PENDING:
        raise InvalidWorkState(f"work item {work_id} is not pending")
    updated = replace(item, status=WorkStatus.FAILED, updated_at_ms=now_ms)
    items = tuple(updated if i.id == work_id else i for i in record.items)
    state = _settled_state(record, items, SessionState.FAILED)
    return _apply(record, [(updated, WorkStatus.PENDING, reasons.ADMISSION_FAILED)], state, now_ms)


def cancel(record: ControlRecord, reason: str, now_ms: int) -> tuple[int, Change | None]:
    """Cancel every pending, running and approval-waiting item in one batch (spec §3.6)."""
    reason = reasons.validate_reason(reason)
    updates: list[Update] = []
    for item in record.items:
        if item.status in OPEN:
            cancelled = replace(
                item, status=WorkStatus.CANCELLED, reason=reason, updated_at_ms=now_ms
            )
            updates.append((cancelled, item.status, reason))
    if not updates:
        return 0, None
    changed = {u[0].id: u[0] for u in updates}
    items = tuple(changed.get(i.id, i) for i in record.items)
    state = record.state
    if state != SessionState.ARCHIVED:
        if record.mode == SessionMode.ONE_OFF:
            state = SessionState.CANCELLED
        else:
            state = remaining_state(items) or SessionState.IDLE
    return len(updates), _apply(record, updates, state, now_ms)


def recover(
    record: ControlRecord,
    committed_work_id: str | None,
    now_ms: int,
    *,
    include_pending: bool = True,
    abandoned: Collection[str] = (),
) -> tuple[RestartRecovery, Change | None]:
    """After a restart: unfinished items become interrupted, or completed when the committed
    history proves their turn finished (spec §3.7). Nothing becomes runnable.

    ``include_pending=False`` leaves pending items alone (a live process may be about to start
    them, or they were queued for whichever process runs next), except those in ``abandoned``:
    the process that queued them to run them is gone.
    """
    updates: list[Update] = []
    interrupted = completed = 0
    for item in record.items:
        if item.status not in OPEN:
            continue
        if item.status == WorkStatus.PENDING and not include_pending and item.id not in abandoned:
            continue
        if item.id == committed_work_id and item.status != WorkStatus.PENDING:
            done = replace(item, status=WorkStatus.COMPLETED, reason=None, updated_at_ms=now_ms)
            updates.append((done, item.status, None))
            completed += 1
        else:
            stopped = replace(
                item,
                status=WorkStatus.INTERRUPTED,
                reason=reasons.RESTART_INTERRUPTED,
                updated_at_ms=now_ms,
            )
            updates.append((stopped, item.status, reasons.RESTART_INTERRUPTED))
            interrupted += 1
    if not updates:
        return RestartRecovery(), None
    changed = {u[0].id: u[0] for u in updates}
    items = tuple(changed.get(i.id, i) for i in record.items)
    state = record.state
    if state != SessionState.ARCHIVED:
        if interrupted:
            state = SessionState.INTERRUPTED
        elif record.mode == SessionMode.ONE_OFF:
            state = SessionState.COMPLETED
        else:
            state = remaining_state(items) or SessionState.IDLE
    return RestartRecovery(interrupted, completed), _apply(record, updates, state, now_ms)


def set_awaiting_approval(
    record: ControlRecord, work_id: str, now_ms: int
) -> tuple[WaitTransition, Change | None]:
    """A running item starts waiting for an approval (spec §6.2 step 3.2)."""
    return _wait_change(record, work_id, WorkStatus.AWAITING_APPROVAL, now_ms)


def resume_from_approval(
    record: ControlRecord, work_id: str, now_ms: int
) -> tuple[WaitTransition, Change | None]:
    """The approval was answered (or its registration failed): back to running."""
    return _wait_change(record, work_id, WorkStatus.RUNNING, now_ms)


def _wait_change(
    record: ControlRecord, work_id: str, target: WorkStatus, now_ms: int
) -> tuple[WaitTransition, Change | None]:
    item = record.find(work_id)
    if item is None:
        return WaitTransition.STALE_WORK, None
    if item.status == WorkStatus.CANCELLED:
        return WaitTransition.CANCELLATION_WON, None
    if item.status == target:
        return WaitTransition.ALREADY_IN_STATE, None
    if item.status not in (WorkStatus.RUNNING, WorkStatus.AWAITING_APPROVAL):
        return WaitTransition.STALE_WORK, None
    updated = replace(item, status=target, updated_at_ms=now_ms)
    state = (
        SessionState.AWAITING_APPROVAL
        if target == WorkStatus.AWAITING_APPROVAL
        else SessionState.RUNNING
    )
    return WaitTransition.CHANGED, _apply(record, [(updated, item.status, None)], state, now_ms)


def archive(record: ControlRecord, reason: str, now_ms: int) -> Change:
    """Close: cancel the queue and archive, remembering the state it was archived from."""
    _count, change = cancel(record, reason, now_ms)
    current = change.record if change else record
    archived_from = current.state
    after = replace(
        current,
        state=SessionState.ARCHIVED,
        archived_from=archived_from,
        generation=current.generation + (0 if change else 1),
        updated_at_ms=now_ms,
    )
    event = ControlEvent(
        session_id=record.session_id,
        sequence=after.next_event_sequence,
        revision=after.generation,
        kind="lifecycle_changed",
        at_ms=now_ms,
        reason="archived",
    )
    after = replace(after, next_event_sequence=after.next_event_sequence + 1)
    items = change.items if change else ()
    events = (change.events if change else ()) + (event,)
    return Change(after, items, events)


def committed_work_id(
    last_work_id: str | None, history_empty: bool, last_turn_interrupted: bool
) -> str | None:
    """The work id the history proves committed: the session's last work id, unless the history
    is empty or ends in an interrupted turn (spec §3.7, scenario 4)."""
    if last_work_id is None or history_empty or last_turn_interrupted:
        return None
    return last_work_id


def relationship_changed(record: ControlRecord, parent_id: str | None, now_ms: int) -> Change:
    """Detach (``parent_id`` None) or reparent: one ``relationship_changed`` event."""
    revision = record.generation + 1
    event = ControlEvent(
        session_id=record.session_id,
        sequence=record.next_event_sequence,
        revision=revision,
        kind="relationship_changed",
        at_ms=now_ms,
        reason=f"parent {parent_id}" if parent_id else "detached",
    )
    after = replace(
        record,
        parent_id=parent_id,
        generation=revision,
        next_event_sequence=record.next_event_sequence + 1,
        updated_at_ms=now_ms,
    )
    return Change(after, (), (event,))


def cancel_item(record: ControlRecord, work_id: str, reason: str, now_ms: int) -> Change | None:
    """Take one pending item out of the queue (the person removed it); None if not pending."""
    reason = reasons.validate_reason(reason)
    item = record.find(work_id)
    if item is None or item.status != WorkStatus.PENDING:
        return None
    cancelled = replace(item, status=WorkStatus.CANCELLED, reason=reason, updated_at_ms=now_ms)
    items = tuple(cancelled if i.id == work_id else i for i in record.items)
    state = record.state
    if state != SessionState.ARCHIVED:
        state = remaining_state(items) or (
            SessionState.CANCELLED if record.mode == SessionMode.ONE_OFF else SessionState.IDLE
        )
    return _apply(record, [(cancelled, WorkStatus.PENDING, reason)], state, now_ms)


def consume_steer(record: ControlRecord, work_id: str, into: str, now_ms: int) -> Change | None:
    """A pending steer message was delivered into the running turn ``into``: it is done."""
    item = record.find(work_id)
    if item is None or item.status != WorkStatus.PENDING:
        return None
    done = replace(item, status=WorkStatus.COMPLETED, updated_at_ms=now_ms)
    items = tuple(done if i.id == work_id else i for i in record.items)
    state = remaining_state(items) or record.state
    return _apply(record, [(done, WorkStatus.PENDING, f"steered into {into}")], state, now_ms)
