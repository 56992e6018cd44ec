"""Property tests of the work-queue reducers: random admit/finish/cancel/recover sequences."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fxdesk.domain.model import SessionMode, SessionState, WorkKind, WorkStatus
from fxdesk.domain.work import (
    Change,
    CompletionDecision,
    ControlEvent,
    ControlRecord,
    WorkItem,
    WorkOutcome,
    admit,
    cancel,
    enqueue,
    finish,
    next_runnable,
    recover,
)

OPS = st.one_of(
    st.tuples(st.just("enqueue")),
    st.tuples(st.just("admit"), st.booleans()),
    st.tuples(st.just("finish"), st.integers(0, 12), st.sampled_from(list(WorkOutcome))),
    st.tuples(st.just("cancel")),
    st.tuples(st.just("recover"), st.integers(-1, 12)),
)


@settings(max_examples=400, deadline=None)
@given(mode=st.sampled_from(list(SessionMode)), ops=st.lists(OPS, max_size=40))
def test_reducer_invariants(mode: SessionMode, ops: list[tuple[object, ...]]) -> None:
    rec = ControlRecord("s", mode, SessionState.IDLE, 0, 1, ())
    events: list[ControlEvent] = []
    cancelled: set[str] = set()
    finished: dict[str, WorkStatus] = {}

    def apply(change: Change | None) -> None:
        nonlocal rec
        if change is None:
            return
        assert change.record.generation == rec.generation + 1  # one batch, one revision
        assert {e.revision for e in change.events} == {change.record.generation}
        rec = change.record
        events.extend(change.events)

    for now, op in enumerate(ops, start=1):
        if op[0] == "enqueue":
            n = len(rec.items)
            new = WorkItem(
                f"w{n}", "s", n, "src", WorkKind.PROMPT, "x", WorkStatus.PENDING, None, now, now
            )
            apply(enqueue(rec, new, now))
        elif op[0] == "admit":
            retry = bool(op[1])
            index = next_runnable(rec.items, retry)
            if index is not None:
                # FIFO: everything before the admitted item is finished
                assert all(i.status.terminal for i in rec.items[:index])
                apply(admit(rec, index, now))
        elif op[0] == "finish":
            index = int(op[1])  # type: ignore[call-overload]
            if index < len(rec.items):
                work_id = rec.items[index].id
                outcome = op[2]
                assert isinstance(outcome, WorkOutcome)
                reason = "boom" if outcome == WorkOutcome.FAILED else None
                decision, change = finish(rec, work_id, outcome, now, reason)
                if work_id in cancelled:
                    assert decision == CompletionDecision.CANCELLATION_WON
                apply(change)
        elif op[0] == "cancel":
            _count, change = cancel(rec, "stop", now)
            apply(change)
        else:
            index = int(op[1])  # type: ignore[call-overload]
            committed = rec.items[index].id if 0 <= index < len(rec.items) else None
            _stats, change = recover(rec, committed, now)
            apply(change)
            if change is not None:
                assert next_runnable(rec.items, retry=False) is None  # nothing runs by itself
        for work_item in rec.items:
            if work_item.status == WorkStatus.CANCELLED:
                cancelled.add(work_item.id)
            if work_item.id in cancelled:
                assert work_item.status == WorkStatus.CANCELLED  # a committed cancel is final
            if work_item.id in finished:
                assert work_item.status == finished[work_item.id]  # terminal is forever
            if work_item.status.terminal:
                finished[work_item.id] = work_item.status
        # event sequences are contiguous from 1, revisions never decrease
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        assert rec.next_event_sequence == len(events) + 1
        revisions = [e.revision for e in events]
        assert revisions == sorted(revisions)
        assert sum(1 for i in rec.items if i.status == WorkStatus.RUNNING) <= 1
