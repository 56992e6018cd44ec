"""Helpers for the agent-run store tests: sessions, runs and one-line store calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fxdesk.domain.agent_inbox import InboxEvent, SignalInput, validate_signal
from fxdesk.domain.agent_runs import (
    AgentRun,
    Caller,
    Counters,
    Limits,
    NewRun,
    RunMode,
    TerminalOutcome,
)
from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.store import Store, agent_inbox, agent_runs, repo

T = TypeVar("T")

ROOT = "cli:test:dialog"
OTHER = "cli:other:dialog"
GEN = 1


def make_sessions(store: Store, *ids: str) -> None:
    def make() -> None:
        workspace, _ = repo.ensure_workspace("/w", "w", 1)
        for session_id in ids:
            repo.create_session(
                session_id=session_id,
                workspace=workspace,
                name=session_id,
                mode=SessionMode.PERSISTENT,
                permission_mode=PermissionMode.YOLO,
                at_ms=1,
            )

    store.write_blocking(make)


def new_run(
    run_id: str,
    *,
    mode: RunMode = RunMode.BACKGROUND,
    root: str = ROOT,
    parent: str | None = None,
    lane: str | None = "queue",
    key: str | None = None,
    agent: str = "researcher",
) -> NewRun:
    return NewRun(
        id=run_id,
        root_session_id=root,
        caller_session_id=root,
        agent_id=agent,
        task="work",
        mode=mode,
        deadline_at_ms=5_000 + 1_000,
        parent_run_id=parent,
        caller_agent_id="ROOT" if parent is None else "researcher",
        definition_hash="sha256:abc",
        provider_profile="research",
        model_id="m1",
        signal_lane=lane,
        idempotency_key=key,
    )


def accept(
    store: Store,
    *runs: NewRun,
    limits: Limits | None = None,
    now: int = 1_000,
    generation: int = GEN,
    owner: str | None = None,
) -> list[AgentRun]:
    return store.write_blocking(
        lambda: agent_runs.accept_runs(
            list(runs),
            generation=generation,
            limits=limits or Limits(),
            now=now,
            owner_instance=owner,
        )
    )


def commit(
    store: Store,
    run_id: str,
    outcome: TerminalOutcome,
    *,
    execution: str | None = None,
    generation: int = GEN,
    now: int = 2_000,
) -> agent_runs.TerminalCommit:
    return store.write_blocking(
        lambda: agent_runs.commit_terminal(
            run_id, execution or run_id, generation, outcome, Limits(), now
        )
    )


def signal(
    store: Store,
    run_id: str,
    sig: SignalInput | None = None,
    *,
    execution: str | None = None,
    limits: Limits | None = None,
    now: int = 1_500,
) -> Any:
    sig = sig or validate_signal(
        "err-rate", "warning", "error rate above 5%", {"current": 0.071}, "svc-a:err"
    )
    return store.write_blocking(
        lambda: agent_inbox.emit_signal(run_id, execution or run_id, sig, limits or Limits(), now)
    )


def read(store: Store, fn: Callable[[], T]) -> T:
    return store.read_blocking(fn)


def run_of(store: Store, run_id: str) -> AgentRun:
    run = store.read_blocking(lambda: agent_runs.get_run(run_id))
    assert run is not None
    return run


def counters(store: Store, root: str = ROOT) -> Counters:
    return store.read_blocking(lambda: agent_inbox.counters(root))


def inbox(store: Store, root: str = ROOT) -> list[InboxEvent]:
    return store.read_blocking(lambda: agent_inbox.list_inbox(root))


def root_caller(root: str = ROOT) -> Caller:
    return Caller(root)


def row_counts(store: Store) -> tuple[int, int, int, int]:
    """(runs, inbox events, pending, reserved) over the whole database."""
    runs = store.execute_for_tests("SELECT COUNT(*) FROM agent_run")[0][0]
    events = store.execute_for_tests("SELECT COUNT(*) FROM agent_inbox")[0][0]
    sums = store.execute_for_tests(
        "SELECT COALESCE(SUM(pending_count), 0), COALESCE(SUM(reserved_count), 0) "
        "FROM agent_session_state"
    )[0]
    return runs, events, sums[0], sums[1]
