"""Agent runs on a real SQLite file (migration 7, store/agent_runs.py, store/agent_inbox.py).

Tests named ``test_scenario_N_...`` are the storage-level part of spec agent-coordinator §6.
"""

from __future__ import annotations

import pytest

from fxdesk.domain.agent_inbox import EventKind, EventStatus, Lane, SignalRefused, SignalStatus
from fxdesk.domain.agent_runs import (
    AdmissionRefused,
    AgentRunError,
    Caller,
    Counters,
    Limits,
    RunMode,
    RunStatus,
    TerminalOutcome,
)
from fxdesk.store import Store, agent_inbox, agent_recovery, agent_runs
from tests.store.agent_fixtures import (
    GEN,
    OTHER,
    ROOT,
    accept,
    commit,
    counters,
    inbox,
    make_sessions,
    new_run,
    row_counts,
    run_of,
    signal,
)

FG = RunMode.FOREGROUND


@pytest.fixture
def runs_store(store: Store) -> Store:
    make_sessions(store, ROOT, OTHER)
    return store


def test_scenario_1_foreground_run_is_persisted_with_terminal_state(runs_store: Store) -> None:
    (run,) = accept(runs_store, new_run("r1", mode=FG))
    assert (run.status, run.mode, run.completion_slot_reserved) == (RunStatus.QUEUED, FG, False)
    assert (run.execution_id, run.runtime_generation, run.depth, run.tree_id) == (
        "r1",
        GEN,
        1,
        "r1",
    )
    assert (run.definition_hash, run.provider_profile, run.deadline_at_ms) == (
        "sha256:abc",
        "research",
        6_000,
    )
    assert commit(runs_store, "r1", TerminalOutcome.failed("provider unreachable")).applied
    stored = run_of(runs_store, "r1")
    assert (stored.agent_id, stored.mode, stored.status) == ("researcher", FG, RunStatus.FAILED)
    assert stored.finished_at_ms == 2_000 and stored.error == "provider unreachable"
    assert inbox(runs_store) == []  # a foreground run reports to its caller, not the inbox


def test_scenario_2_batch_keeps_request_order(runs_store: Store) -> None:
    runs = accept(runs_store, new_run("b", mode=FG), new_run("a", mode=FG))
    assert [r.id for r in runs] == ["b", "a"] and [r.group_index for r in runs] == [0, 1]
    assert len({r.group_id for r in runs}) == 1
    again = runs_store.read_blocking(lambda: agent_runs.group_runs(runs[0].group_id))
    assert [r.id for r in again] == ["b", "a"]


def test_scenario_3_other_session_cannot_read_or_cancel_and_sees_no_difference(
    runs_store: Store,
) -> None:
    accept(runs_store, new_run("r1"))
    other = Caller(OTHER)
    assert runs_store.read_blocking(lambda: agent_runs.visible_run(other, "r1")) is None
    errors = []
    for run_id in ("r1", "no-such-run"):
        with pytest.raises(AgentRunError) as caught:
            runs_store.write_blocking(
                lambda run_id=run_id: agent_runs.cancel_run(
                    Caller(OTHER), run_id, "x", Limits(), 3_000, suppress=False
                )
            )
        errors.append((caught.value.code, str(caught.value).replace(run_id, "ID")))
    assert errors[0] == errors[1] == ("UNKNOWN_RUN", "no agent run 'ID' in this session")
    assert run_of(runs_store, "r1").status is RunStatus.QUEUED


def test_scenario_4_a_refused_batch_writes_nothing(runs_store: Store) -> None:
    before = row_counts(runs_store)
    with pytest.raises(AdmissionRefused) as caught:
        accept(runs_store, *(new_run(f"r{i}") for i in range(5)))
    assert caught.value.code == "BG_BATCH_TOO_LARGE"
    assert row_counts(runs_store) == before == (0, 0, 0, 0)


def test_scenario_5_background_admission_reserves_its_completion(runs_store: Store) -> None:
    one = Limits(max_inbox=1)
    (run,) = accept(runs_store, new_run("r1"), limits=one)
    assert run.mode is RunMode.BACKGROUND and run.completion_slot_reserved
    assert counters(runs_store) == Counters(pending=0, reserved=1, revision=1)
    with pytest.raises(AdmissionRefused) as caught:
        accept(runs_store, new_run("r2"), limits=one)
    assert caught.value.code == "INBOX_FULL"
    assert str(caught.value) == "inbox full: 1 of 1 slots pending or reserved"
    assert commit(runs_store, "r1", TerminalOutcome.failed("boom")).applied
    (event,) = inbox(runs_store)
    assert (event.kind, event.status, event.requires_continuation) == (
        EventKind.COMPLETION,
        EventStatus.PENDING,
        True,
    )
    assert event.payload["status"] == "failed" and event.event_key == "completion:r1"
    assert (counters(runs_store).pending, counters(runs_store).reserved) == (1, 0)


def test_scenario_6_background_batch_admits_all(runs_store: Store) -> None:
    accept(runs_store, *(new_run(f"r{i}") for i in range(3)), limits=Limits(max_inbox=8))
    page, cursor = runs_store.read_blocking(lambda: agent_runs.list_runs(Caller(ROOT)))
    assert [r.id for r in page] == ["r0", "r1", "r2"] and cursor is None
    assert all(r.completion_slot_reserved for r in page)
    assert counters(runs_store).reserved == 3


def test_scenario_7_background_batch_larger_than_the_run_quota(runs_store: Store) -> None:
    with pytest.raises(AdmissionRefused) as caught:
        accept(
            runs_store,
            *(new_run(f"r{i}") for i in range(3)),
            limits=Limits(max_inbox=16, max_concurrent_runs=2),
        )
    assert str(caught.value) == "batch of 3 is larger than the concurrent-run limit of 2"
    # 13: a batch exactly at the limit is admitted
    accept(runs_store, new_run("a"), new_run("b"), limits=Limits(max_concurrent_runs=2))


def test_scenario_8_signal_persists_dedupes_and_fences(runs_store: Store) -> None:
    one = Limits(max_inbox=1)
    accept(runs_store, new_run("run-sig-1", mode=FG), limits=one)
    first = signal(runs_store, "run-sig-1", limits=one)
    assert (first.status, first.lane, first.count) == (SignalStatus.ACCEPTED, Lane.QUEUE, 1)
    again = signal(runs_store, "run-sig-1", limits=one, now=1_600)  # inbox now full
    assert (again.signal_id, again.status, again.count) == (
        first.signal_id,
        SignalStatus.DEDUPLICATED,
        2,
    )
    with pytest.raises(SignalRefused) as caught:
        signal(runs_store, "run-sig-1", execution="other-exec", limits=one)
    assert caught.value.code == "SIGNAL_STALE_EXECUTION"
    (event,) = inbox(runs_store)
    assert event.count == 2 and event.payload["details"] == {"current": 0.071}
    assert counters(runs_store).pending == 1


def test_signal_dedupe_window_is_five_minutes_from_the_first(runs_store: Store) -> None:
    accept(runs_store, new_run("r1", mode=FG))
    first = signal(runs_store, "r1", now=1_000)
    inside = signal(runs_store, "r1", now=1_000 + 299_999)
    later = signal(runs_store, "r1", now=1_000 + 300_000)
    assert inside.signal_id == first.signal_id and inside.status is SignalStatus.DEDUPLICATED
    assert later.signal_id != first.signal_id and later.status is SignalStatus.ACCEPTED


def test_scenario_9_terminal_commit_carries_the_signals_raised_during_execution(
    runs_store: Store,
) -> None:
    accept(runs_store, new_run("run-sig-carrier"), limits=Limits(max_inbox=8))
    assert runs_store.write_blocking(
        lambda: agent_runs.mark_running("run-sig-carrier", "run-sig-carrier", GEN, 1_100)
    )
    sent = signal(runs_store, "run-sig-carrier", limits=Limits(max_inbox=8))
    done = TerminalOutcome.completed("done", tool_calls=1, iterations=1)
    assert commit(runs_store, "run-sig-carrier", done).applied
    events = inbox(runs_store)
    assert [e.kind for e in events] == [EventKind.SIGNAL, EventKind.COMPLETION]
    assert events[1].payload["status"] == "completed"
    assert events[1].payload["signal_ids"] == [sent.signal_id]
    assert run_of(runs_store, "run-sig-carrier").signal_ids == (sent.signal_id,)


def test_scenario_10_signal_refused_when_finished_or_inbox_full(runs_store: Store) -> None:
    one = Limits(max_inbox=1)
    accept(runs_store, new_run("run-sig-2", mode=FG), limits=one)
    commit(runs_store, "run-sig-2", TerminalOutcome.cancelled("stop"))
    with pytest.raises(SignalRefused) as finished:
        signal(runs_store, "run-sig-2", limits=one)
    assert finished.value.code == "SIGNAL_RUN_INACTIVE"
    accept(runs_store, new_run("run-sig-3"), limits=one)  # reserved 1 = max
    with pytest.raises(SignalRefused) as full:
        signal(runs_store, "run-sig-3", limits=one)
    assert (full.value.code, str(full.value)) == (
        "INBOX_FULL",
        "inbox full: 1 of 1 slots pending or reserved",
    )
    assert [e.kind for e in inbox(runs_store)] == []


def test_scenario_11_signal_lane_is_read_from_the_stored_run(runs_store: Store) -> None:
    accept(runs_store, new_run("run-sig-steer", lane="steer"))
    assert run_of(runs_store, "run-sig-steer").signal_lane == "steer"
    sent = signal(runs_store, "run-sig-steer")
    assert sent.lane is Lane.STEER
    event = runs_store.read_blocking(lambda: agent_inbox.get_event(sent.signal_id))
    assert event is not None and event.lane is Lane.STEER
    accept(runs_store, new_run("mute", lane=None))
    with pytest.raises(SignalRefused, match="may not raise signals"):
        signal(runs_store, "mute")


def test_scenario_12_13_empty_and_nested_background_batches_are_refused(
    runs_store: Store,
) -> None:
    with pytest.raises(AdmissionRefused) as empty:
        accept(runs_store)
    assert empty.value.code == "EMPTY_BATCH"
    accept(runs_store, new_run("a", mode=FG))
    runs_store.write_blocking(lambda: agent_runs.mark_running("a", "a", GEN, 1_100))
    with pytest.raises(AdmissionRefused) as nested:
        accept(runs_store, new_run("b", parent="a"))
    assert nested.value.code == "BG_NESTED_UNSUPPORTED"
    assert row_counts(runs_store)[0] == 1


def test_scenario_14_window_cancel_while_queued_suppresses_the_continuation(
    runs_store: Store,
) -> None:
    accept(runs_store, new_run("r1"))

    def cancel() -> bool:
        return agent_runs.cancel_run(
            Caller(ROOT), "r1", "by the person", Limits(), 3_000, suppress=True
        )

    assert runs_store.write_blocking(cancel)
    assert run_of(runs_store, "r1").status is RunStatus.CANCELLED
    (event,) = inbox(runs_store)
    assert event.status is EventStatus.CONSUMED and not event.requires_continuation
    assert (counters(runs_store).pending, counters(runs_store).reserved) == (0, 0)
    assert not runs_store.write_blocking(cancel)
    assert len(inbox(runs_store)) == 1


def test_scenario_15_agent_cancel_wakes_the_root_and_supersedes_signals(
    runs_store: Store,
) -> None:
    accept(runs_store, new_run("r1"))
    signal(runs_store, "r1")
    assert runs_store.write_blocking(
        lambda: agent_runs.cancel_run(
            Caller(ROOT), "r1", "not needed", Limits(), 3_000, suppress=False
        )
    )
    by_kind = {e.kind: e for e in inbox(runs_store)}
    assert by_kind[EventKind.SIGNAL].status is EventStatus.SUPERSEDED
    completion = by_kind[EventKind.COMPLETION]
    assert completion.status is EventStatus.PENDING and completion.requires_continuation
    assert completion.payload["status"] == "cancelled"
    assert (counters(runs_store).pending, counters(runs_store).reserved) == (1, 0)


def test_scenario_16_a_late_result_after_cancel_is_dropped_and_says_so(runs_store: Store) -> None:
    accept(runs_store, new_run("r1"))
    runs_store.write_blocking(lambda: agent_runs.mark_running("r1", "r1", GEN, 1_100))
    runs_store.write_blocking(
        lambda: agent_runs.cancel_run(Caller(ROOT), "r1", "stop", Limits(), 3_000, suppress=False)
    )
    late = commit(runs_store, "r1", TerminalOutcome.completed("too late"))
    assert not late.applied
    assert late.refusal == (
        "run r1 was not finished as completed: it is already cancelled; "
        "this late result was dropped"
    )
    assert run_of(runs_store, "r1").status is RunStatus.CANCELLED
    assert len([e for e in inbox(runs_store) if e.kind is EventKind.COMPLETION]) == 1


def test_stale_execution_or_generation_cannot_finish_a_run(runs_store: Store) -> None:
    accept(runs_store, new_run("r1"))
    wrong_exec = commit(runs_store, "r1", TerminalOutcome.completed("x"), execution="old")
    assert not wrong_exec.applied and "execution 'r1', not 'old'" in (wrong_exec.refusal or "")
    wrong_gen = commit(runs_store, "r1", TerminalOutcome.completed("x"), generation=7)
    assert not wrong_gen.applied and "runtime generation 1, not 7" in (wrong_gen.refusal or "")
    assert not runs_store.write_blocking(lambda: agent_runs.mark_running("r1", "old", GEN, 1))
    assert run_of(runs_store, "r1").status is RunStatus.QUEUED and inbox(runs_store) == []


def test_scenario_17_restart_interrupts_without_rerunning(runs_store: Store) -> None:
    accept(runs_store, new_run("r1"), generation=1)
    runs_store.write_blocking(lambda: agent_runs.mark_running("r1", "r1", 1, 1_100))
    report = runs_store.write_blocking(
        lambda: agent_recovery.recover_on_activation(2, Limits(), 9_000)
    )
    assert [r.run_id for r in report.interrupted] == ["r1"]
    assert (report.completion_events, report.reservations_released) == (1, 1)
    run = run_of(runs_store, "r1")
    assert run.status is RunStatus.INTERRUPTED and "runtime generation 1" in (run.error or "")
    (event,) = inbox(runs_store)
    assert event.status is EventStatus.PENDING and event.payload["status"] == "interrupted"
    assert not event.requires_continuation  # the root is not re-run by itself
    assert (counters(runs_store).pending, counters(runs_store).reserved) == (1, 0)
    again = runs_store.write_blocking(
        lambda: agent_recovery.recover_on_activation(3, Limits(), 9_500)
    )
    assert again.interrupted == () and len(inbox(runs_store)) == 1


def test_recovery_leaves_runs_of_a_live_process_alone(runs_store: Store) -> None:
    accept(runs_store, new_run("mine"), generation=1, owner="p-alive")
    accept(runs_store, new_run("gone"), generation=1, owner="p-dead")
    owners = runs_store.read_blocking(lambda: agent_recovery.owners_of_stale_runs(2))
    assert owners == {"p-alive", "p-dead"}
    report = runs_store.write_blocking(
        lambda: agent_recovery.recover_on_activation(2, Limits(), 9_000, live_owners={"p-alive"})
    )
    assert [r.run_id for r in report.interrupted] == ["gone"]
    assert run_of(runs_store, "mine").status is RunStatus.QUEUED
    # the live process still finishes its own run with its own generation
    assert commit(runs_store, "mine", TerminalOutcome.completed("ok"), generation=1).applied


def test_scenario_18_nested_foreground_waits_for_its_children(runs_store: Store) -> None:
    accept(runs_store, new_run("A", mode=FG))
    assert runs_store.write_blocking(lambda: agent_runs.mark_running("A", "A", GEN, 1_100))
    (child,) = accept(runs_store, new_run("B", mode=FG, parent="A"))
    assert runs_store.write_blocking(lambda: agent_runs.mark_waiting_children("A", "A", GEN, 1_200))
    assert run_of(runs_store, "A").status is RunStatus.WAITING_CHILDREN
    assert (child.parent_run_id, child.depth, child.caller_agent_id, child.tree_id) == (
        "A",
        2,
        "researcher",
        "A",
    )
    assert child.budget.remaining_depth == Limits().max_tree_depth - 2
    assert runs_store.write_blocking(lambda: agent_runs.restore_running("A", "A", GEN, 1_300))
    assert not runs_store.write_blocking(lambda: agent_runs.restore_running("A", "A", GEN, 1_400))
    assert run_of(runs_store, "A").status is RunStatus.RUNNING


def _tree(store: Store) -> None:
    """A -> B -> C and a sibling S of A, all foreground in ROOT."""
    for run_id, parent in (("A", None), ("S", None), ("B", "A"), ("C", "B")):
        accept(store, new_run(run_id, mode=FG, parent=parent))
        store.write_blocking(lambda run_id=run_id: agent_runs.mark_running(run_id, run_id, GEN, 1))


def test_scenario_19_an_agent_sees_only_its_own_tree(runs_store: Store) -> None:
    _tree(runs_store)
    agent_a = Caller(ROOT, "A")
    assert runs_store.read_blocking(lambda: agent_runs.visible_run(agent_a, "C")) is not None
    assert runs_store.read_blocking(lambda: agent_runs.visible_run(agent_a, "S")) is None
    assert runs_store.read_blocking(lambda: agent_runs.visible_run(Caller(ROOT, "B"), "A")) is None
    page, _ = runs_store.read_blocking(lambda: agent_runs.list_runs(agent_a))
    assert sorted(r.id for r in page) == ["A", "B", "C"]
    everything, _ = runs_store.read_blocking(lambda: agent_runs.list_runs(Caller(ROOT)))
    assert sorted(r.id for r in everything) == ["A", "B", "C", "S"]


def test_cancelling_a_run_cancels_everything_below_it(runs_store: Store) -> None:
    _tree(runs_store)
    assert runs_store.write_blocking(
        lambda: agent_runs.cancel_run(Caller(ROOT), "A", "stop", Limits(), 5, suppress=True)
    )
    statuses = {r: run_of(runs_store, r).status for r in "ABCS"}
    assert statuses == {
        "A": RunStatus.CANCELLED,
        "B": RunStatus.CANCELLED,
        "C": RunStatus.CANCELLED,
        "S": RunStatus.RUNNING,
    }
    assert run_of(runs_store, "C").error == "its caller was cancelled: stop"


def test_scenario_20_result_only_once_finished(runs_store: Store) -> None:
    accept(runs_store, new_run("r1", mode=FG))
    caller = Caller(ROOT)
    assert runs_store.read_blocking(lambda: agent_runs.visible_result(caller, "r1")) is None
    runs_store.write_blocking(lambda: agent_runs.mark_running("r1", "r1", GEN, 1))
    assert runs_store.read_blocking(lambda: agent_runs.visible_result(caller, "r1")) is None
    commit(runs_store, "r1", TerminalOutcome.completed("x" * 10_000, tool_calls=3, iterations=2))
    result = runs_store.read_blocking(lambda: agent_runs.visible_result(caller, "r1"))
    assert result is not None and result.result == "x" * 10_000
    assert (result.tool_calls, result.iterations) == (3, 2)


def test_scenario_22_23_stop_all_agents_and_summaries(runs_store: Store) -> None:
    accept(runs_store, *(new_run(f"r{i}") for i in range(3)))
    commit(runs_store, "r0", TerminalOutcome.completed("é" * 400))  # 800 bytes
    stopped = runs_store.write_blocking(
        lambda: agent_runs.cancel_session(ROOT, "gateway shutdown", Limits(), 4_000)
    )
    assert stopped == 2
    assert [e.status for e in inbox(runs_store)] == [
        EventStatus.PENDING,
        EventStatus.CONSUMED,
        EventStatus.CONSUMED,
    ]
    assert counters(runs_store).reserved == 0
    assert run_of(runs_store, "r0").summary == "é" * 250 + "..."


def test_stop_all_agents_has_no_page_limit(runs_store: Store) -> None:
    many = Limits(max_runs_per_tree=300)
    for batch in range(5):
        accept(runs_store, *(new_run(f"r{batch}-{i}", mode=FG) for i in range(50)), limits=many)
    assert (
        runs_store.write_blocking(lambda: agent_runs.cancel_session(ROOT, "stop", many, 9)) == 250
    )


def test_scenario_24_keyset_pages(runs_store: Store) -> None:
    for i in range(3):
        accept(runs_store, new_run(f"r{i}", mode=FG), now=1_000 + i)
    page, cursor = runs_store.read_blocking(lambda: agent_runs.list_runs(Caller(ROOT), limit=2))
    assert [r.id for r in page] == ["r0", "r1"] and cursor == (1_001, "r1")
    rest, end = runs_store.read_blocking(
        lambda: agent_runs.list_runs(Caller(ROOT), after=cursor, limit=2)
    )
    assert [r.id for r in rest] == ["r2"] and end is None


def test_budgets_refuse_a_runaway_recursion(runs_store: Store) -> None:
    limits = Limits(max_tree_depth=3, max_runs_per_tree=4)
    parent = None
    for depth in range(1, 4):
        run_id = f"d{depth}"
        accept(runs_store, new_run(run_id, mode=FG, parent=parent), limits=limits)
        runs_store.write_blocking(
            lambda run_id=run_id: agent_runs.mark_running(run_id, run_id, GEN, 1)
        )
        parent = run_id
    with pytest.raises(AdmissionRefused) as deep:
        accept(runs_store, new_run("d4", mode=FG, parent="d3"), limits=limits)
    assert deep.value.code == "DEPTH_EXCEEDED" and "depth 4 exceeds the limit of 3" in str(
        deep.value
    )
    with pytest.raises(AdmissionRefused) as wide:
        accept(
            runs_store,
            new_run("w1", mode=FG, parent="d1"),
            new_run("w2", mode=FG, parent="d1"),
            limits=limits,
        )
    assert wide.value.code == "TREE_BUDGET_EXCEEDED"
    assert "3 of 4 runs, 1 left, and the batch asks for 2" in str(wide.value)
    assert row_counts(runs_store)[0] == 3


def test_a_retried_batch_gets_the_runs_it_made(runs_store: Store) -> None:
    first = accept(runs_store, new_run("a", key="call-1:0"), new_run("b", key="call-1:1"))
    again = accept(runs_store, new_run("x", key="call-1:0"), new_run("y", key="call-1:1"))
    assert [r.id for r in again] == [r.id for r in first] == ["a", "b"]
    assert counters(runs_store).reserved == 2
    with pytest.raises(AdmissionRefused) as clash:
        accept(runs_store, new_run("a"))
    assert clash.value.code == "RUN_ID_CONFLICT"


def test_delivery_is_bounded_then_dead(runs_store: Store) -> None:
    limits = Limits(max_delivery_attempts=2, delivery_retry_ms=100)
    accept(runs_store, new_run("r1"), limits=limits)
    commit(runs_store, "r1", TerminalOutcome.completed("ok"))
    now = 3_000
    for attempt in (1, 2):
        (claimed,) = runs_store.write_blocking(
            lambda now=now: agent_inbox.claim_due(ROOT, "worker", limits, now)
        )
        assert claimed.attempts == attempt and counters(runs_store).pending == 1
        status = runs_store.write_blocking(
            lambda now=now, event_id=claimed.id: agent_inbox.delivery_failed(
                event_id, "worker", "the root session is archived", limits, now
            )
        )
        now += 1_000
    assert status is EventStatus.DEAD
    (event,) = inbox(runs_store)
    assert event.last_error == "the root session is archived" and counters(runs_store).pending == 0


def test_delivery_acknowledged_and_stale_leases_expire(runs_store: Store) -> None:
    limits = Limits(stale_lease_ms=60_000)
    accept(runs_store, new_run("r1"), new_run("r2"))
    commit(runs_store, "r1", TerminalOutcome.completed("ok"))
    commit(runs_store, "r2", TerminalOutcome.completed("ok"))
    claimed = runs_store.write_blocking(lambda: agent_inbox.claim_due(ROOT, "w1", limits, 3_000))
    assert (
        runs_store.write_blocking(lambda: agent_inbox.acknowledge([claimed[0].id], "w2", 3_001))
        == 0
    )
    assert (
        runs_store.write_blocking(lambda: agent_inbox.acknowledge([claimed[0].id], "w1", 3_001))
        == 1
    )
    assert counters(runs_store).pending == 1
    report = runs_store.write_blocking(
        lambda: agent_recovery.recover_on_activation(2, limits, 3_000 + 60_000)
    )
    assert (report.leases_expired, report.dead_lettered) == (1, 0)
    due = runs_store.read_blocking(lambda: agent_inbox.sessions_with_due_events(10**9))
    assert due == [(ROOT, True)]


def test_recovery_rebuilds_wrong_counters(runs_store: Store) -> None:
    accept(runs_store, new_run("r1"))
    runs_store.execute_for_tests(
        "UPDATE agent_session_state SET reserved_count = 9, pending_count = 4"
    )
    report = runs_store.write_blocking(
        lambda: agent_recovery.recover_on_activation(1, Limits(), 9_000)
    )
    assert report.counters_repaired == (ROOT,) and report.interrupted == ()
    assert (counters(runs_store).pending, counters(runs_store).reserved) == (0, 1)


def test_generations_count_up(runs_store: Store) -> None:
    assert runs_store.read_blocking(agent_runs.current_generation) == 0
    assert runs_store.write_blocking(agent_runs.next_generation) == 1
    assert runs_store.write_blocking(agent_runs.next_generation) == 2
    assert runs_store.read_blocking(agent_runs.current_generation) == 2


def test_child_session_is_recorded_once(runs_store: Store) -> None:
    accept(runs_store, new_run("r1"))
    assert runs_store.write_blocking(lambda: agent_runs.set_child_session("r1", OTHER, 5))
    assert not runs_store.write_blocking(lambda: agent_runs.set_child_session("r1", ROOT, 6))
    assert run_of(runs_store, "r1").child_session_id == OTHER
