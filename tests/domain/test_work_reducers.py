"""Pure work-queue reducers: spec child-sessions scenarios 3, 4 and 62, plus edge cases."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from fxdesk.domain import reasons
from fxdesk.domain.model import SessionMode, SessionState, WorkKind, WorkStatus
from fxdesk.domain.work import (
    CompletionDecision,
    ControlRecord,
    InvalidWorkState,
    WaitTransition,
    WorkItem,
    WorkOutcome,
    admit,
    archive,
    cancel,
    committed_work_id,
    enqueue,
    fail_admission,
    finish,
    next_runnable,
    recover,
    remaining_state,
    resume_from_approval,
    set_awaiting_approval,
)


def item(work_id: str, position: int, status: WorkStatus = WorkStatus.PENDING) -> WorkItem:
    return WorkItem(
        id=work_id,
        session_id="child",
        position=position,
        source_id="parent",
        kind=WorkKind.TASK,
        content=f"do {work_id}",
        status=status,
        reason=None,
        created_at_ms=position,
        updated_at_ms=position,
    )


def record(*ids: str, mode: SessionMode = SessionMode.PERSISTENT) -> ControlRecord:
    items = tuple(item(work_id, n) for n, work_id in enumerate(ids))
    return ControlRecord(
        session_id="child",
        mode=mode,
        state=SessionState.QUEUED if items else SessionState.IDLE,
        generation=1,
        next_event_sequence=len(items) + 1,
        items=items,
    )


def status(rec: ControlRecord, work_id: str) -> WorkStatus:
    found = rec.find(work_id)
    assert found is not None
    return found.status


def test_scenario_3_fifo_precedence_and_completion() -> None:
    """Scenario 3, first bullets: FIFO admission, completion, then a cancelled late finish."""
    rec = record("first", "second")
    assert next_runnable(rec.items, retry=False) == 0
    change = admit(rec, 0, 10)
    rec = change.record
    assert rec.state == SessionState.RUNNING
    assert change.events[-1].kind == "work_transition"
    decision, change2 = finish(rec, "first", WorkOutcome.COMPLETED, 11)
    assert decision == CompletionDecision.COMMITTED and change2 is not None
    rec = change2.record
    assert rec.state == SessionState.QUEUED
    assert next_runnable(rec.items, retry=False) == 1

    rec = admit(rec, 1, 12).record
    count, cancelled = cancel(rec, "stop", 13)
    assert count == 1 and cancelled is not None
    rec = cancelled.record
    decision, late = finish(rec, "second", WorkOutcome.COMPLETED, 14)
    assert decision == CompletionDecision.CANCELLATION_WON and late is None
    assert status(rec, "second") == WorkStatus.CANCELLED
    assert cancelled.events[-1].reason == "stop"


def test_scenario_3_awaiting_approval_and_paused() -> None:
    rec = admit(record("w"), 0, 1).record
    _, change = finish(rec, "w", WorkOutcome.AWAITING_APPROVAL, 2)
    assert change is not None
    assert change.record.state == SessionState.AWAITING_APPROVAL
    assert change.events[-1].current == WorkStatus.AWAITING_APPROVAL

    one_off = admit(record("w", mode=SessionMode.ONE_OFF), 0, 1).record
    _, paused = finish(one_off, "w", WorkOutcome.PAUSED, 2)
    assert paused is not None
    assert paused.record.state == SessionState.INTERRUPTED
    stopped = paused.record.find("w")
    assert stopped is not None and stopped.status == WorkStatus.INTERRUPTED
    assert stopped.reason == reasons.PAUSED and paused.events[-1].reason == reasons.PAUSED


def test_scenario_3_restart_safety() -> None:
    stats, change = recover(record("pending"), None, 5)
    assert stats.interrupted == 1 and change is not None
    rec = change.record
    assert rec.items[0].reason == reasons.RESTART_INTERRUPTED
    assert next_runnable(rec.items, retry=False) is None
    assert next_runnable(rec.items, retry=True) == 0

    stats, change = recover(record("first", "second"), None, 5)
    assert stats.interrupted == 2 and change is not None
    rec = admit(change.record, 0, 6).record
    assert rec.items[0].reason is None  # resuming clears the restart reason
    rec = finish(rec, "first", WorkOutcome.COMPLETED, 7)[1].record  # type: ignore[union-attr]
    assert rec.state == SessionState.INTERRUPTED
    rec = admit(rec, 1, 8).record
    count, cancelled = cancel(rec, "no more", 9)
    assert count == 1 and cancelled is not None and cancelled.record.state == SessionState.IDLE

    stats, change = recover(record("first", "second"), None, 5)
    assert change is not None
    rec = admit(change.record, 0, 6).record
    count, cancelled = cancel(rec, "only head", 7)
    assert count == 1 and cancelled is not None
    assert cancelled.record.state == SessionState.INTERRUPTED
    assert status(cancelled.record, "second") == WorkStatus.INTERRUPTED


def test_scenario_3_derived_state_examples() -> None:
    done, stopped, cancelled = (
        item("a", 0, WorkStatus.COMPLETED),
        item("b", 1, WorkStatus.INTERRUPTED),
        item("c", 2, WorkStatus.CANCELLED),
    )
    assert remaining_state([done, stopped]) == SessionState.INTERRUPTED
    assert remaining_state([cancelled, stopped]) == SessionState.INTERRUPTED
    assert remaining_state([done, cancelled]) is None


def test_scenario_4_interrupted_history_never_proves_completion() -> None:
    assert committed_work_id("work-id", history_empty=False, last_turn_interrupted=True) is None
    assert committed_work_id("work-id", history_empty=False, last_turn_interrupted=False) == (
        "work-id"
    )
    assert committed_work_id("work-id", history_empty=True, last_turn_interrupted=False) is None


def test_recovery_completes_the_item_the_history_proves() -> None:
    rec = admit(record("a", "b"), 0, 1).record
    stats, change = recover(rec, "a", 2)
    assert (stats.completed, stats.interrupted) == (1, 1)
    assert change is not None and status(change.record, "a") == WorkStatus.COMPLETED
    # a pending item is never "completed" by history, even with its id
    stats, _ = recover(record("a"), "a", 3)
    assert (stats.completed, stats.interrupted) == (0, 1)


def test_recovery_of_a_one_off_with_nothing_interrupted_is_completed() -> None:
    rec = admit(record("a", mode=SessionMode.ONE_OFF), 0, 1).record
    _, change = recover(rec, "a", 2)
    assert change is not None and change.record.state == SessionState.COMPLETED


def test_one_batch_is_one_revision_with_contiguous_sequences() -> None:
    rec = record("a", "b", "c")
    count, change = cancel(admit(rec, 0, 1).record, "all", 2)
    assert count == 3 and change is not None
    assert {e.revision for e in change.events} == {rec.generation + 2}
    sequences = [e.sequence for e in change.events]
    assert sequences == list(range(sequences[0], sequences[0] + 3))
    assert change.record.next_event_sequence == sequences[-1] + 1


def test_cancel_with_nothing_to_cancel_changes_nothing() -> None:
    rec = recover(record("a"), None, 1)[1].record  # type: ignore[union-attr]
    assert cancel(rec, "late", 2) == (0, None)


@pytest.mark.parametrize("bad", ["", "x" * 513, b"\xff\xfe", "nul\x00inside", "é" * 257])
def test_cancel_reasons_are_validated(bad: str | bytes) -> None:
    with pytest.raises(reasons.InvalidReason):
        cancel(record("a"), bad, 1)  # type: ignore[arg-type]


def test_a_512_byte_reason_is_accepted() -> None:
    count, _ = cancel(record("a"), "é" * 256, 1)
    assert count == 1


def test_failure_reasons_only_on_failures_and_model_safe() -> None:
    rec = admit(record("a"), 0, 1).record
    with pytest.raises(reasons.InvalidReason):
        finish(rec, "a", WorkOutcome.COMPLETED, 2, failure_reason="nope")
    with pytest.raises(reasons.InvalidReason):
        finish(rec, "a", WorkOutcome.FAILED, 2, failure_reason="bell\x07")
    _, change = finish(rec, "a", WorkOutcome.FAILED, 2, failure_reason="provider_failed: 500")
    assert change is not None
    assert change.events[-1].reason == "provider_failed: 500"
    failed = change.record.find("a")
    assert failed is not None and failed.reason is None  # the reason lives on the event
    assert change.record.state == SessionState.IDLE


def test_finish_of_unknown_or_not_running_work_is_stale() -> None:
    rec = record("a")
    assert finish(rec, "nope", WorkOutcome.COMPLETED, 1) == (CompletionDecision.STALE_WORK, None)
    assert finish(rec, "a", WorkOutcome.COMPLETED, 1) == (CompletionDecision.STALE_WORK, None)


def test_admission_refusals() -> None:
    rec = record("a")
    with pytest.raises(InvalidWorkState):
        admit(rec, 5, 1)
    running = admit(rec, 0, 1).record
    with pytest.raises(InvalidWorkState):
        admit(running, 0, 2)
    odd = replace(
        rec, items=(replace(rec.items[0], status=WorkStatus.AWAITING_APPROVAL, reason="why"),)
    )
    with pytest.raises(InvalidWorkState):
        admit(odd, 0, 2)


def test_admission_failure_marks_the_item_failed() -> None:
    change = fail_admission(record("a", mode=SessionMode.ONE_OFF), "a", 1)
    assert status(change.record, "a") == WorkStatus.FAILED
    assert change.events[-1].reason == reasons.ADMISSION_FAILED
    assert change.record.state == SessionState.FAILED
    change = fail_admission(record("a", "b"), "a", 1)
    assert change.record.state == SessionState.QUEUED


def test_approval_wait_transitions() -> None:
    rec = admit(record("a"), 0, 1).record
    result, change = set_awaiting_approval(rec, "a", 2)
    assert result == WaitTransition.CHANGED and change is not None
    assert set_awaiting_approval(change.record, "a", 3)[0] == WaitTransition.ALREADY_IN_STATE
    result, back = resume_from_approval(change.record, "a", 4)
    assert result == WaitTransition.CHANGED and back is not None
    assert back.record.state == SessionState.RUNNING
    _, cancelled = cancel(change.record, "stop", 5)
    assert cancelled is not None
    assert resume_from_approval(cancelled.record, "a", 6)[0] == WaitTransition.CANCELLATION_WON
    assert set_awaiting_approval(rec, "zzz", 6)[0] == WaitTransition.STALE_WORK


def test_enqueue_appends_a_pending_item() -> None:
    rec = record()
    change = enqueue(rec, item("new", 0), 1)
    assert change.record.state == SessionState.QUEUED
    assert change.events[0].previous is None and change.events[0].current == WorkStatus.PENDING
    with pytest.raises(InvalidWorkState):
        enqueue(change.record, item("new", 1), 2)


def test_archive_cancels_and_remembers_where_it_came_from() -> None:
    """Scenario 54's reducer part: archived from idle, every item cancelled."""
    rec = admit(record("active", "queued"), 0, 1).record
    change = archive(rec, "closed", 2)
    assert change.record.state == SessionState.ARCHIVED
    assert change.record.archived_from == SessionState.IDLE
    assert {i.status for i in change.record.items} == {WorkStatus.CANCELLED}
    assert change.events[-1].kind == "lifecycle_changed"
    assert len({e.revision for e in change.events}) == 1


def test_scenario_62_failed_reducers_leave_no_partial_state() -> None:
    """Scenario 62 (intent): a reducer that raises leaves its input untouched; success gives
    the whole batch."""
    rec = admit(record("first", "second"), 0, 1).record
    snapshot = rec
    with pytest.raises(reasons.InvalidReason):
        cancel(rec, "", 2)
    assert rec == snapshot
    stats, change = recover(record("first", "second"), None, 2)
    assert stats.interrupted == 2 and change is not None and len(change.events) == 2
    count, change = cancel(record("first", "second"), "all", 2)
    assert count == 2 and change is not None and len(change.items) == 2


class _OutOfMemoryAt:
    """Counts what the wrapped constructors make; making the ``nth`` raises ``MemoryError``."""

    def __init__(self, nth: int) -> None:
        self.nth = nth
        self.made = 0

    def wrap(self, real: Any) -> Any:
        def make(*args: Any, **kwargs: Any) -> Any:
            self.made += 1
            if self.made == self.nth:
                raise MemoryError
            return real(*args, **kwargs)

        return make


@pytest.mark.parametrize("reducer", ["recover", "cancel"])
def test_scenario_62_out_of_memory_at_every_step_leaves_no_partial_state(
    monkeypatch: pytest.MonkeyPatch, reducer: str
) -> None:
    """Scenario 62: out of memory at each allocation of restart recovery and of cancel on
    [first, second] (each new item, event and record; Python's nearest to "every allocation"),
    one run per step: each failed run raises and leaves the record as it was; the run with
    no failure interrupts (or cancels) both in one batch."""
    from fxdesk.domain import work

    real_replace, real_event, real_record = work.replace, work.ControlEvent, work.ControlRecord
    rec = record("first", "second")
    unchanged = record("first", "second")
    failures = 0
    for nth in itertools.count(1):
        oom = _OutOfMemoryAt(nth)
        monkeypatch.setattr(work, "replace", oom.wrap(real_replace))
        monkeypatch.setattr(work, "ControlEvent", oom.wrap(real_event))
        monkeypatch.setattr(work, "ControlRecord", oom.wrap(real_record))
        try:
            if reducer == "recover":
                stats, change = work.recover(rec, None, 2)
                count = stats.interrupted
            else:
                count, change = work.cancel(rec, "all", 2)
        except MemoryError:
            failures += 1
            assert rec == unchanged
            continue
        break
    # Every allocation failed once (2 items, 2 events, the record), then none did.
    assert failures == oom.made >= 5
    expected = WorkStatus.INTERRUPTED if reducer == "recover" else WorkStatus.CANCELLED
    assert count == 2 and change is not None
    assert [i.status for i in change.record.items] == [expected, expected]
    assert len(change.items) == len(change.events) == 2
    assert {e.revision for e in change.events} == {rec.generation + 1}
