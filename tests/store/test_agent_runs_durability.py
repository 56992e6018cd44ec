"""Agent runs under pressure: racing terminal writers on separate connections (real threads,
real file), random operation sequences against the capacity invariant, and faults injected at
every step of the admission transaction."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import peewee as pw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fxdesk.domain.agent_inbox import SignalRefused, validate_signal
from fxdesk.domain.agent_runs import (
    AdmissionRefused,
    Caller,
    Limits,
    RunMode,
    TerminalOutcome,
)
from fxdesk.store import Store, agent_inbox, agent_recovery, agent_runs
from fxdesk.store.errors import CommitFailed, CommitIndeterminate
from fxdesk.store.faults import Fault, FaultInjector, StepFault, StepFaults
from fxdesk.store.schema import database_proxy
from tests.store.agent_fixtures import (
    GEN,
    ROOT,
    accept,
    counters,
    inbox,
    make_sessions,
    new_run,
    row_counts,
    run_of,
)

# --- racing writers ---------------------------------------------------------------------------


def _on_own_connection(fn: Callable[[], Any]) -> Any:
    """Run ``fn`` in one BEGIN IMMEDIATE transaction on this thread's own connection to the
    file, as another process would (the store's writer thread has its own)."""
    db = database_proxy.obj
    assert isinstance(db, pw.SqliteDatabase)
    db.connect(reuse_if_open=True)
    try:
        with db.atomic("IMMEDIATE"):
            return fn()
    finally:
        db.close()


def _race(*writers: Callable[[], Any]) -> list[Any]:
    barrier = threading.Barrier(len(writers))
    results: list[Any] = [None] * len(writers)
    failures: list[BaseException] = []

    def work(index: int, writer: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout=10)
            results[index] = _on_own_connection(writer)
        except BaseException as exc:  # reported below, with the test's own message
            failures.append(exc)

    threads = [threading.Thread(target=work, args=pair) for pair in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not failures, failures
    return results


def test_racing_terminal_writers_exactly_one_wins(store: Store) -> None:
    make_sessions(store, ROOT)
    limits = Limits(max_inbox=64, max_concurrent_runs=4, max_runs_per_tree=64)
    winners: dict[str, int] = {"runner": 0, "late runner": 0, "cancel": 0, "recovery": 0}
    for round_ in range(20):
        run_id = f"race-{round_}"
        accept(store, new_run(run_id), limits=limits)
        store.write_blocking(lambda run_id=run_id: agent_runs.mark_running(run_id, run_id, GEN, 1))

        def runner(run_id: str = run_id) -> bool:
            outcome = TerminalOutcome.completed("done")
            return agent_runs.commit_terminal(run_id, run_id, GEN, outcome, limits, 10).applied

        def late_runner(run_id: str = run_id) -> bool:
            outcome = TerminalOutcome.failed("also done")
            return agent_runs.commit_terminal(run_id, run_id, GEN, outcome, limits, 11).applied

        def cancel(run_id: str = run_id) -> bool:
            return agent_runs.cancel_run(Caller(ROOT), run_id, "stop", limits, 12, suppress=False)

        def recovery() -> bool:
            report = agent_recovery.recover_on_activation(GEN + 1, limits, 13)
            return bool(report.interrupted)

        results = _race(runner, late_runner, cancel, recovery)
        assert sum(results) == 1, (round_, results)
        winners[list(winners)[results.index(True)]] += 1
        events = store.read_blocking(lambda run_id=run_id: agent_inbox.events_for_run(run_id))
        assert len(events) == 1 and events[0].payload["status"] == run_of(store, run_id).status
    assert counters(store).reserved == 0
    assert counters(store).pending == 20
    assert sum(winners.values()) == 20


# --- random sequences against the capacity invariant -------------------------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("background"), st.integers(1, 5)),
        st.tuples(st.just("foreground"), st.integers(1, 3)),
        st.tuples(st.just("signal"), st.integers(0, 30), st.sampled_from(["k1", "k2", None])),
        st.tuples(st.just("finish"), st.integers(0, 30)),
        st.tuples(st.just("cancel"), st.integers(0, 30), st.booleans()),
        st.tuples(st.just("deliver"), st.booleans()),
        st.tuples(st.just("recover")),
    ),
    max_size=30,
)
_sessions = itertools.count()


def _check_invariant(store: Store, root: str, limits: Limits) -> None:
    state = counters(store, root)
    assert state.pending + state.reserved <= limits.max_inbox
    real = store.execute_for_tests(
        "SELECT (SELECT COUNT(*) FROM agent_inbox WHERE root_session_id = ? "
        "AND status IN ('pending', 'claimed')), (SELECT COUNT(*) FROM agent_run "
        "WHERE root_session_id = ? AND mode = 'background' "
        "AND status IN ('queued', 'running', 'waiting_children'))",
        (root, root),
    )[0]
    assert (state.pending, state.reserved) == real
    # a finished background run has exactly one completion event, an unfinished one none
    bad = store.execute_for_tests(
        "SELECT r.id, r.status, (SELECT COUNT(*) FROM agent_inbox e WHERE e.run_id = r.id "
        "AND e.kind = 'completion') AS n FROM agent_run r WHERE r.root_session_id = ? "
        "AND r.mode = 'background' AND n != (r.status NOT IN "
        "('queued', 'running', 'waiting_children'))",
        (root,),
    )
    assert bad == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, max_inbox=st.integers(1, 6))
def test_capacity_invariant_under_random_sequences(
    store: Store, ops: list[tuple[Any, ...]], max_inbox: int
) -> None:
    root = f"s{next(_sessions)}"
    make_sessions(store, root)
    limits = Limits(max_inbox=max_inbox, max_concurrent_runs=4, max_runs_per_tree=100)
    made: list[str] = []
    now = 1_000
    generation = GEN  # raised by each "recover", as a restart would
    for op in ops:
        now += 100
        try:
            if op[0] in ("background", "foreground"):
                mode = RunMode(op[0])
                ids = [f"{root}-{len(made) + i}" for i in range(op[1])]
                batch = [new_run(run_id, mode=mode, root=root) for run_id in ids]
                accept(store, *batch, limits=limits, now=now, generation=generation)
                made.extend(ids)
            elif op[0] == "signal" and made:
                run_id = made[op[1] % len(made)]
                sig = validate_signal("k", "info", "something", None, op[2])
                store.write_blocking(
                    lambda run_id=run_id, sig=sig, now=now: agent_inbox.emit_signal(
                        run_id, run_id, sig, limits, now
                    )
                )
            elif op[0] == "finish" and made:
                run_id = made[op[1] % len(made)]
                store.write_blocking(
                    lambda run_id=run_id, now=now, g=generation: agent_runs.commit_terminal(
                        run_id, run_id, g, TerminalOutcome.completed("ok"), limits, now
                    )
                )
            elif op[0] == "cancel" and made:
                run_id = made[op[1] % len(made)]
                store.write_blocking(
                    lambda run_id=run_id, now=now, quiet=op[2]: agent_runs.cancel_run(
                        Caller(root), run_id, "stop", limits, now, suppress=quiet
                    )
                )
            elif op[0] == "deliver":

                def deliver(now: int = now, ok: bool = op[1]) -> None:
                    for event in agent_inbox.claim_due(root, "w", limits, now):
                        if ok:
                            agent_inbox.acknowledge([event.id], "w", now)
                        else:
                            agent_inbox.delivery_failed(event.id, "w", "no", limits, now)

                store.write_blocking(deliver)
            elif op[0] == "recover":
                generation += 1
                store.write_blocking(
                    lambda g=generation, now=now: agent_recovery.recover_on_activation(
                        g, limits, now
                    )
                )
        except (AdmissionRefused, SignalRefused):
            pass
        _check_invariant(store, root, limits)


# --- faults inside the admission transaction ---------------------------------------------------


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[tuple[Store, FaultInjector]]:
    faults = FaultInjector()
    opened = Store.open(tmp_path / "db.sqlite3", faults=faults)
    make_sessions(opened, ROOT)
    try:
        yield opened, faults
    finally:
        opened.close()


STEPS = ["checked", "state", "reserved", "revision", "insert:0", "insert:1", "insert:2"]


def _snapshot(store: Store) -> tuple[Any, ...]:
    return (
        row_counts(store),
        store.execute_for_tests("SELECT * FROM agent_session_state ORDER BY 1"),
        store.execute_for_tests("SELECT id, status FROM agent_run ORDER BY 1"),
    )


@pytest.mark.parametrize("step", STEPS)
def test_a_fault_at_any_admission_step_leaves_nothing(
    faulty: tuple[Store, FaultInjector], step: str
) -> None:
    store, _ = faulty
    accept(store, new_run("earlier"))  # a session with state already, so updates are visible
    before = _snapshot(store)
    hook = StepFaults(fail_at=step)
    batch = [new_run(f"r{i}") for i in range(3)]
    with pytest.raises(StepFault):
        store.write_blocking(
            lambda: agent_runs.accept_runs(
                batch, generation=GEN, limits=Limits(), now=2_000, steps=hook
            )
        )
    assert hook.seen[-1] == step
    assert _snapshot(store) == before
    accept(store, *batch)  # and the same batch goes in afterwards
    assert counters(store).reserved == 4


def test_every_step_is_reached_by_a_full_admission(faulty: tuple[Store, FaultInjector]) -> None:
    store, _ = faulty
    hook = StepFaults()
    store.write_blocking(
        lambda: agent_runs.accept_runs(
            [new_run(f"r{i}") for i in range(3)],
            generation=GEN,
            limits=Limits(),
            now=1,
            steps=hook,
        )
    )
    assert hook.seen == STEPS


def test_commit_faults_on_admission_and_terminal_writes(
    faulty: tuple[Store, FaultInjector],
) -> None:
    store, faults = faulty
    before = _snapshot(store)
    faults.fail(1, Fault.DEFINITE, label="admit")
    with pytest.raises(CommitFailed):
        store.write_blocking(
            lambda: agent_runs.accept_runs([new_run("r1")], generation=GEN, limits=Limits(), now=1),
            label="admit",
        )
    assert _snapshot(store) == before
    faults.fail(2, Fault.INDETERMINATE, label="admit")
    with pytest.raises(CommitIndeterminate):  # landed whole, the caller just did not hear
        store.write_blocking(
            lambda: agent_runs.accept_runs([new_run("r1")], generation=GEN, limits=Limits(), now=1),
            label="admit",
        )
    assert row_counts(store) == (1, 0, 0, 1)
    faults.fail(1, Fault.DEFINITE, label="finish")
    with pytest.raises(CommitFailed):
        store.write_blocking(
            lambda: agent_runs.commit_terminal(
                "r1", "r1", GEN, TerminalOutcome.completed("x"), Limits(), 5
            ),
            label="finish",
        )
    assert row_counts(store) == (1, 0, 0, 1) and inbox(store) == []
    assert run_of(store, "r1").status == "queued"
