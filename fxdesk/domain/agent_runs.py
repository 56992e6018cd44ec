"""Agent runs as values: statuses, modes, outcomes, budgets and admission rules (issue 13).

An *agent run* is one delegated task: a durable record written before anything executes
(spec agent-coordinator §2.1), executed as a one-off child session of the caller, and closed by
exactly one terminal writer. Nothing here does I/O: ``store/agent_runs.py`` persists these values
and calls the pure checks below inside its transactions, so the rules live in one place.

The inbox side (events, lanes, signals) is in ``domain/agent_inbox.py``; the decisions taken on
the reference's oddities are listed in ``docs/agent-runs.md``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class RunStatus(enum.StrEnum):
    """Where a run is (spec §2.2). ``queued`` is the status a run is written with."""

    QUEUED = "queued"
    RUNNING = "running"
    WAITING_CHILDREN = "waiting_children"  # a foreground caller while its batch runs
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # fxdesk stopped while it was active; never re-run by itself

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset(
    {
        RunStatus.COMPLETED,
        RunStatus.FAILED,
        RunStatus.TIMED_OUT,
        RunStatus.CANCELLED,
        RunStatus.INTERRUPTED,
    }
)
ACTIVE_STATUSES = frozenset(set(RunStatus) - TERMINAL_STATUSES)

_ALLOWED: Mapping[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING} | TERMINAL_STATUSES),
    RunStatus.RUNNING: frozenset({RunStatus.WAITING_CHILDREN} | TERMINAL_STATUSES),
    RunStatus.WAITING_CHILDREN: frozenset({RunStatus.RUNNING} | TERMINAL_STATUSES),
    **{status: frozenset() for status in TERMINAL_STATUSES},
}


class RunMode(enum.StrEnum):
    """``foreground``: the caller's turn waits for the batch; ``background``: run ids at once,
    results later in the root session's inbox (spec §2.3)."""

    FOREGROUND = "foreground"
    BACKGROUND = "background"


ROOT_AGENT = "ROOT"  # the caller id recorded when the root session's own agent delegates


class AgentRunError(Exception):
    """A refusal with a stable ``code`` (tests assert on it) and a sentence for the model and
    the person (``str(error)``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class IllegalTransition(AgentRunError):
    def __init__(self, current: RunStatus, target: RunStatus) -> None:
        why = "it is finished" if current.terminal else "that is not a step a run takes"
        super().__init__("ILLEGAL_TRANSITION", f"a run cannot go from {current} to {target}: {why}")
        self.current = current
        self.target = target


class AdmissionRefused(AgentRunError):
    """A delegation refused before anything was written (spec §3.2, §3.3)."""


def allowed_targets(current: RunStatus) -> frozenset[RunStatus]:
    """The statuses a run in ``current`` may move to (none once terminal)."""
    return _ALLOWED[current]


def check_transition(current: RunStatus, target: RunStatus) -> None:
    """Raise ``IllegalTransition`` unless ``current -> target`` is a step a run may take.

    A terminal commit is allowed straight from ``queued`` (a run cancelled or timed out before
    it started); a terminal status never changes again (the single terminal writer)."""
    if target not in _ALLOWED[current]:
        raise IllegalTransition(current, target)


# --- limits and budgets ---------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """The knobs of spec §5, with its proposed defaults."""

    max_inbox: int = 32  # pending events + reserved completion slots, per root session
    max_concurrent_runs: int = 4  # also the largest background batch
    max_runs_per_tree: int = 16  # runs in one delegation tree (a root delegation and below)
    max_tree_depth: int = 4  # depth of a run: 1 when the root delegates, +1 per level
    max_delivery_attempts: int = 5  # then the inbox event is marked dead
    delivery_retry_ms: int = 2_000  # first retry delay; doubles per attempt
    stale_lease_ms: int = 60_000  # a claimed event not acknowledged within this goes back
    signal_dedupe_window_ms: int = 300_000
    summary_bytes: int = 500
    view_chars: int = 2_000  # long fields in lists and projections

    def __post_init__(self) -> None:
        for name in ("max_inbox", "max_concurrent_runs", "max_runs_per_tree", "max_tree_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.max_delivery_attempts < 1:
            raise ValueError("max_delivery_attempts must be at least 1")


@dataclass(frozen=True)
class Budget:
    """What a run may still spend below itself, recorded on the run (spec §2.1 ``budget_json``)."""

    remaining_runs: int
    remaining_depth: int

    def to_json(self) -> dict[str, int]:
        return {"remaining_runs": self.remaining_runs, "remaining_depth": self.remaining_depth}


@dataclass(frozen=True)
class Counters:
    """One root session's inbox counters (spec §2.8): a cache of the rows, kept in the same
    transactions and rebuilt by recovery."""

    pending: int = 0  # events pending or claimed
    reserved: int = 0  # completion slots held by unfinished background runs
    revision: int = 0

    def used(self) -> int:
        return self.pending + self.reserved


def inbox_full(counters: Counters, limits: Limits, wanted: int = 1) -> AdmissionRefused | None:
    """The refusal for taking ``wanted`` more slots, or None when they fit."""
    if counters.used() + wanted <= limits.max_inbox:
        return None
    if wanted == 1:
        detail = ""
    else:
        free = max(0, limits.max_inbox - counters.used())
        detail = f"; {wanted} needed, {free} free"
    return AdmissionRefused(
        "INBOX_FULL",
        f"inbox full: {counters.used()} of {limits.max_inbox} slots pending or reserved{detail}",
    )


def check_admission(
    mode: RunMode,
    batch: int,
    *,
    counters: Counters,
    limits: Limits,
    depth: int,
    tree_runs: int,
    caller_is_root: bool,
) -> None:
    """Raise ``AdmissionRefused`` unless a batch of ``batch`` runs at ``depth`` may start.

    ``tree_runs`` counts the runs already in the caller's delegation tree (0 when the root
    delegates: each root delegation starts a tree). Checked inside the admission transaction
    with the counters it read, so the answer cannot go stale before the write."""
    if batch < 1:
        raise AdmissionRefused("EMPTY_BATCH", "no tasks to delegate: the batch is empty")
    if mode is RunMode.BACKGROUND:
        if not caller_is_root:
            raise AdmissionRefused(
                "BG_NESTED_UNSUPPORTED",
                "only the root agent may start background runs; a sub-agent delegates in "
                "the foreground",
            )
        if batch > limits.max_concurrent_runs:
            raise AdmissionRefused(
                "BG_BATCH_TOO_LARGE",
                f"batch of {batch} is larger than the concurrent-run limit of "
                f"{limits.max_concurrent_runs}",
            )
    if depth > limits.max_tree_depth:
        raise AdmissionRefused(
            "DEPTH_EXCEEDED",
            f"delegation too deep: a run at depth {depth} exceeds the limit of "
            f"{limits.max_tree_depth}; do this task yourself",
        )
    if tree_runs + batch > limits.max_runs_per_tree:
        left = max(0, limits.max_runs_per_tree - tree_runs)
        raise AdmissionRefused(
            "TREE_BUDGET_EXCEEDED",
            f"run budget exhausted: this delegation tree has {tree_runs} of "
            f"{limits.max_runs_per_tree} runs, {left} left, and the batch asks for {batch}",
        )
    if mode is RunMode.BACKGROUND:
        refusal = inbox_full(counters, limits, batch)
        if refusal is not None:
            raise refusal


def child_budget(limits: Limits, depth: int, tree_runs_after: int) -> Budget:
    """What a run accepted at ``depth`` may still spend, with ``tree_runs_after`` runs in its
    tree once the batch is in."""
    return Budget(
        remaining_runs=max(0, limits.max_runs_per_tree - tree_runs_after),
        remaining_depth=max(0, limits.max_tree_depth - depth),
    )


# --- the record -----------------------------------------------------------------------------


@dataclass(frozen=True)
class NewRun:
    """What the coordinator decides before anything executes (spec §2.1): one per task."""

    id: str
    root_session_id: str
    caller_session_id: str  # the session whose turn delegated: the child's parent in the tree
    agent_id: str
    task: str
    mode: RunMode
    deadline_at_ms: int
    parent_run_id: str | None = None  # the calling named agent's run; None for the root agent
    caller_agent_id: str = ROOT_AGENT
    root_turn_id: str | None = None  # the caller's work item
    call_id: str | None = None  # the delegate tool call
    idempotency_key: str | None = None  # a retried tool call gets the runs it already made
    definition_hash: str = ""
    provider_profile: str = ""
    model_id: str = ""
    context: str | None = None
    signal_lane: str | None = None  # "queue" or "steer" when the agent may signal, else None
    child_session_id: str | None = None  # set now or once the child session exists

    def __post_init__(self) -> None:
        if not self.id or not self.agent_id:
            raise ValueError("a run needs an id and a named agent")
        if self.signal_lane not in (None, "queue", "steer"):
            raise ValueError(f"unknown signal lane {self.signal_lane!r}")


@dataclass(frozen=True)
class AgentRun:
    """One ``agent_run`` row as the store returns it."""

    id: str
    root_session_id: str
    caller_session_id: str
    child_session_id: str | None
    parent_run_id: str | None
    tree_id: str  # the top run of its delegation tree (its own id for a root delegation)
    group_id: str  # the batch it came in
    group_index: int
    caller_agent_id: str
    root_turn_id: str | None
    call_id: str | None
    idempotency_key: str | None
    agent_id: str
    definition_hash: str
    provider_profile: str
    model_id: str
    mode: RunMode
    depth: int
    execution_id: str
    runtime_generation: int
    owner_instance: str | None
    task: str
    context: str | None
    budget: Budget
    signal_lane: str | None
    deadline_at_ms: int
    completion_slot_reserved: bool
    status: RunStatus
    created_at_ms: int
    started_at_ms: int | None
    finished_at_ms: int | None
    updated_at_ms: int
    revision: int
    result: str | None = None
    summary: str | None = None
    error: str | None = None  # the failure, or the reason of a cancel / interruption
    tool_calls: int | None = None
    iterations: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    signal_ids: tuple[str, ...] = ()


# --- terminal outcomes ----------------------------------------------------------------------


@dataclass(frozen=True)
class TerminalOutcome:
    """How a run ended (spec §2.4). Build with the class methods; ``signal_ids`` are not part of
    it: the store reads them from the inbox in the terminal transaction, after execution
    (docs/agent-runs.md, oddity 1)."""

    status: RunStatus
    result: str | None = None
    error: str | None = None
    tool_calls: int | None = None
    iterations: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    detected_at_ms: int | None = None  # when a timeout was noticed; the deadline stays stored
    summary_failed: bool = False  # execution raised: no summary (spec §2.4)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.status.terminal:
            raise ValueError(f"{self.status} is not a terminal status")

    @classmethod
    def completed(
        cls,
        result: str,
        *,
        tool_calls: int = 0,
        iterations: int = 0,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost: float | None = None,
    ) -> TerminalOutcome:
        return cls(
            RunStatus.COMPLETED,
            result=result,
            tool_calls=tool_calls,
            iterations=iterations,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=cost,
        )

    @classmethod
    def failed(
        cls,
        error: str,
        *,
        tool_calls: int | None = None,
        iterations: int | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost: float | None = None,
        raised: bool = False,
    ) -> TerminalOutcome:
        return cls(
            RunStatus.FAILED,
            error=error,
            tool_calls=tool_calls,
            iterations=iterations,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost=cost,
            summary_failed=raised,
        )

    @classmethod
    def timed_out(cls, detected_at_ms: int) -> TerminalOutcome:
        return cls(
            RunStatus.TIMED_OUT, error="the run passed its deadline", detected_at_ms=detected_at_ms
        )

    @classmethod
    def cancelled(cls, reason: str) -> TerminalOutcome:
        return cls(RunStatus.CANCELLED, error=reason)

    @classmethod
    def interrupted(cls, reason: str) -> TerminalOutcome:
        return cls(RunStatus.INTERRUPTED, error=reason)

    def summary(self, limit_bytes: int = 500) -> str | None:
        """The short text stored beside the full result (spec §3.13)."""
        if self.summary_failed:
            return None
        text = self.result if self.status is RunStatus.COMPLETED else self.error
        return None if text is None else summarize(text, limit_bytes)


def summarize(text: str, limit_bytes: int = 500) -> str:
    """``text`` if it fits in ``limit_bytes`` of UTF-8, else the longest prefix that does and
    ends on a whole character, plus ``...`` (spec §3.13)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit_bytes:
        return text
    return encoded[:limit_bytes].decode("utf-8", errors="ignore") + "..."


def clip(text: str | None, chars: int) -> str | None:
    """A long field cut for lists and projections (spec §5 run-view truncation)."""
    if text is None or len(text) <= chars:
        return text
    return text[:chars] + "…"


def completion_payload(run: AgentRun) -> dict[str, Any]:
    """What the completion event of a finished run tells the root agent (spec §2.7)."""
    return {
        "run_id": run.id,
        "agent_id": run.agent_id,
        "status": run.status.value,
        "summary": run.summary,
        "error": run.error,
        "signal_ids": list(run.signal_ids),
        "child_session_id": run.child_session_id,
    }


# --- authorization --------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    """Who asks about runs: the root agent of a session (``run_id`` None) or a named agent
    running as run ``run_id`` in the tree of ``root_session_id`` (spec §3.12)."""

    root_session_id: str
    run_id: str | None = None

    @property
    def is_root(self) -> bool:
        return self.run_id is None


def unknown_run(run_id: str) -> AgentRunError:
    """The one answer for a run id the caller may not see, whether or not it exists (no leak)."""
    return AgentRunError("UNKNOWN_RUN", f"no agent run {run_id!r} in this session")


# --- recovery -------------------------------------------------------------------------------


@dataclass(frozen=True)
class InterruptedRun:
    run_id: str
    root_session_id: str
    child_session_id: str | None
    agent_id: str
    mode: RunMode


@dataclass(frozen=True)
class RecoveryReport:
    """What recovery on activation did (spec §3.8): the banner counts ``interrupted``."""

    generation: int
    interrupted: tuple[InterruptedRun, ...] = ()
    # Runs whose sub-agent had finished before the stop: closed with the child's outcome.
    settled: tuple[InterruptedRun, ...] = ()
    completion_events: int = 0  # completion events written for closed background runs
    reservations_released: int = 0
    leases_expired: int = 0  # claimed inbox events handed back to pending
    dead_lettered: int = 0  # events that ran out of delivery attempts
    counters_repaired: tuple[str, ...] = ()  # root sessions whose cached counters were wrong

    @property
    def changed(self) -> bool:
        return bool(self.interrupted or self.settled or self.leases_expired or self.dead_lettered)
