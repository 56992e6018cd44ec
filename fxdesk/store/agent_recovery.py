"""Recovery of agent runs on activation (spec agent-coordinator §3.8, §4.12), in one transaction.

Runs left unfinished by an earlier runtime generation become ``interrupted``; a background one's
reservation becomes its completion event, written once (the unique event key), *without* a
continuation: nothing re-runs by itself, the root agent reads it at its next turn. A run whose
sub-agent had finished its task before fxdesk stopped (killed between the child's last commit
and the run's) is not interrupted: it gets the outcome the child's committed history proves,
so its result is not lost and nobody is tempted to run it again (found by the crash harness,
tests/reliability). Stale inbox
leases are handed back or dead-lettered, and the counters are rebuilt from the rows.

Several fxdesk processes may share the database (the window and ``fxdesk run``): the runs of an
earlier generation still owned by a live process (``live_owners``, the instances whose
``store/locks.py`` InstanceLock is held) are left alone, as work-item recovery does.
"""

from __future__ import annotations

from collections.abc import Collection

from fxdesk.domain.agent_runs import (
    InterruptedRun,
    Limits,
    RecoveryReport,
    RunMode,
    TerminalOutcome,
)
from fxdesk.store import agent_inbox, agent_runs
from fxdesk.store.run_outcome import child_outcome
from fxdesk.store.schema import database_proxy as db


def interrupt_reason(generation: int) -> str:
    return (
        f"fxdesk stopped while this run was active (runtime generation {generation}); "
        "it was not re-run"
    )


def owners_of_stale_runs(generation: int) -> set[str]:
    """The instances that own unfinished runs of earlier generations: the engine asks the OS
    which of them are still alive and passes those as ``live_owners``."""
    rows = db.execute_sql(
        "SELECT DISTINCT owner_instance FROM agent_run WHERE runtime_generation < ? "
        "AND owner_instance IS NOT NULL AND status IN ('queued', 'running', 'waiting_children')",
        (generation,),
    ).fetchall()
    return {row[0] for row in rows}


def recover_on_activation(
    generation: int, limits: Limits, now: int, *, live_owners: Collection[str] = ()
) -> RecoveryReport:
    """Interrupt what earlier activations left running; returns what was done.

    Idempotent: a second call finds nothing to interrupt and writes no second completion."""
    rows = db.execute_sql(
        "SELECT id, execution_id, runtime_generation, owner_instance, child_session_id "
        "FROM agent_run WHERE runtime_generation < ? "
        "AND status IN ('queued', 'running', 'waiting_children') ORDER BY created_at_ms, id",
        (generation,),
    ).fetchall()
    interrupted: list[InterruptedRun] = []
    settled: list[InterruptedRun] = []
    completions = released = 0
    for run_id, execution_id, run_generation, owner, child in rows:
        if owner is not None and owner in live_owners:
            continue
        finished = child_outcome(child) if child else None
        outcome = finished or TerminalOutcome.interrupted(interrupt_reason(run_generation))
        commit = agent_runs.commit_terminal(
            run_id, execution_id, run_generation, outcome, limits, now, continuation=False
        )
        run = commit.run
        if not commit.applied or run is None:
            continue
        (settled if finished else interrupted).append(
            InterruptedRun(
                run.id, run.root_session_id, run.child_session_id, run.agent_id, run.mode
            )
        )
        if run.mode is RunMode.BACKGROUND:
            released += 1
            completions += 1
    expired, dead = agent_inbox.expire_leases(limits, now)
    repaired = agent_inbox.reconcile_counters(now)
    return RecoveryReport(
        generation=generation,
        interrupted=tuple(interrupted),
        settled=tuple(settled),
        completion_events=completions,
        reservations_released=released,
        leases_expired=expired,
        dead_lettered=dead,
        counters_repaired=repaired,
    )
