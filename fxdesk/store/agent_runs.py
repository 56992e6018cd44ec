"""Agent run records in SQL (called inside store jobs, like ``control``; issue 13).

A run is written before anything executes and closed by exactly one terminal writer (spec
agent-coordinator §4). Every transition is one conditional ``UPDATE ... WHERE id = ? AND
execution_id = ? AND runtime_generation = ? AND status IN (...)`` whose row count says whether it
applied, so the runner's commit, a cancel and recovery race safely across threads and processes:
whichever commits first wins, the others find the run finished and write nothing. The completion
event of a background run is written by the winner in the same transaction
(``agent_inbox.write_completion``), so it exists exactly once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.agent_runs import (
    ACTIVE_STATUSES,
    AdmissionRefused,
    AgentRun,
    Budget,
    Caller,
    Limits,
    NewRun,
    RunMode,
    RunStatus,
    TerminalOutcome,
    allowed_targets,
    check_admission,
    child_budget,
    unknown_run,
)
from fxdesk.store import agent_inbox
from fxdesk.store.faults import Steps, no_steps
from fxdesk.store.schema import database_proxy as db

_ACTIVE = "('queued', 'running', 'waiting_children')"
_COLUMNS = (
    "id, root_session_id, caller_session_id, child_session_id, parent_run_id, tree_id, "
    "group_id, group_index, caller_agent_id, root_turn_id, call_id, idempotency_key, agent_id, "
    "definition_hash, provider_profile, model_id, mode, depth, execution_id, "
    "runtime_generation, owner_instance, task, context, budget_json, signal_lane, "
    "deadline_at_ms, completion_slot_reserved, status, created_at_ms, started_at_ms, "
    "finished_at_ms, updated_at_ms, revision, result, summary, error, tool_calls, iterations, "
    "prompt_tokens, completion_tokens, cost, signal_ids_json"
)
_INSERTED = _COLUMNS.split(", ")[:33]


def _run(row: Sequence[Any]) -> AgentRun:
    budget = json.loads(row[23])
    return AgentRun(
        id=row[0],
        root_session_id=row[1],
        caller_session_id=row[2],
        child_session_id=row[3],
        parent_run_id=row[4],
        tree_id=row[5],
        group_id=row[6],
        group_index=row[7],
        caller_agent_id=row[8],
        root_turn_id=row[9],
        call_id=row[10],
        idempotency_key=row[11],
        agent_id=row[12],
        definition_hash=row[13],
        provider_profile=row[14],
        model_id=row[15],
        mode=RunMode(row[16]),
        depth=row[17],
        execution_id=row[18],
        runtime_generation=row[19],
        owner_instance=row[20],
        task=row[21],
        context=row[22],
        budget=Budget(budget["remaining_runs"], budget["remaining_depth"]),
        signal_lane=row[24],
        deadline_at_ms=row[25],
        completion_slot_reserved=bool(row[26]),
        status=RunStatus(row[27]),
        created_at_ms=row[28],
        started_at_ms=row[29],
        finished_at_ms=row[30],
        updated_at_ms=row[31],
        revision=row[32],
        result=row[33],
        summary=row[34],
        error=row[35],
        tool_calls=row[36],
        iterations=row[37],
        prompt_tokens=row[38],
        completion_tokens=row[39],
        cost=row[40],
        signal_ids=tuple(json.loads(row[41])) if row[41] else (),
    )


def get_run(run_id: str) -> AgentRun | None:
    """The run, with no authorization: for the engine's own bookkeeping only."""
    row = db.execute_sql(f"SELECT {_COLUMNS} FROM agent_run WHERE id = ?", (run_id,)).fetchone()
    return None if row is None else _run(row)


# --- runtime generation ---------------------------------------------------------------------


def next_generation() -> int:
    """Start a new process activation: the next runtime generation (1 on a fresh database)."""
    row = db.execute_sql(
        "INSERT INTO runtime_meta (key, value) VALUES ('runtime_generation', 1) "
        "ON CONFLICT (key) DO UPDATE SET value = value + 1 RETURNING value"
    ).fetchone()
    return int(row[0])


def current_generation() -> int:
    row = db.execute_sql(
        "SELECT value FROM runtime_meta WHERE key = 'runtime_generation'"
    ).fetchone()
    return 0 if row is None else int(row[0])


# --- admission ------------------------------------------------------------------------------


def accept_runs(
    batch: Sequence[NewRun],
    *,
    generation: int,
    limits: Limits,
    now: int,
    owner_instance: str | None = None,
    steps: Steps = no_steps,
) -> list[AgentRun]:
    """Admit a batch: budgets, capacity reservation and every row, all or nothing.

    Runs in the caller's one transaction: the checks read the counters they then change, the
    reservation is a conditional UPDATE, and any failure (a refusal, a fault, a crash) leaves no
    row and no reservation (docs/agent-runs.md, oddity 2). A batch whose idempotency keys were
    already accepted (a retried tool call) gets the runs it made the first time.

    Raises:
        AdmissionRefused: ``EMPTY_BATCH``, ``BG_NESTED_UNSUPPORTED``, ``BG_BATCH_TOO_LARGE``,
            ``DEPTH_EXCEEDED``, ``TREE_BUDGET_EXCEEDED``, ``INBOX_FULL``, ``PARENT_INACTIVE``,
            ``RUN_ID_CONFLICT``; nothing written.
    """
    if not batch:
        raise AdmissionRefused("EMPTY_BATCH", "no tasks to delegate: the batch is empty")
    first = batch[0]
    shared = {(r.root_session_id, r.caller_session_id, r.parent_run_id, r.mode) for r in batch}
    if len(shared) != 1:
        raise ValueError("a batch has one caller, one root session and one mode")
    replay = _replayed(batch)
    if replay is not None:
        return replay
    parent = get_run(first.parent_run_id) if first.parent_run_id else None
    if first.parent_run_id is not None:
        if parent is None or parent.root_session_id != first.root_session_id:
            raise unknown_run(first.parent_run_id)
        if parent.status.terminal:
            raise AdmissionRefused(
                "PARENT_INACTIVE",
                f"the calling run {parent.id} is {parent.status}: it cannot delegate",
            )
    depth = 1 if parent is None else parent.depth + 1
    tree_runs = 0 if parent is None else _tree_size(parent.tree_id)
    steps("checked")
    state = agent_inbox.ensure_state(first.root_session_id, now)
    steps("state")
    check_admission(
        first.mode,
        len(batch),
        counters=state,
        limits=limits,
        depth=depth,
        tree_runs=tree_runs,
        caller_is_root=parent is None,
    )
    background = first.mode is RunMode.BACKGROUND
    if background and not agent_inbox.reserve(first.root_session_id, len(batch), limits, now):
        raise AdmissionRefused("INBOX_FULL", "inbox full: the reservation did not fit")
    steps("reserved")
    revision = agent_inbox.touch(first.root_session_id, now)
    steps("revision")
    group_id = str(uuid.uuid4())
    budget = child_budget(limits, depth, tree_runs + len(batch))
    placeholders = ", ".join("?" * len(_INSERTED))
    for index, new in enumerate(batch):
        values = (
            new.id,
            new.root_session_id,
            new.caller_session_id,
            new.child_session_id,
            new.parent_run_id,
            new.id if parent is None else parent.tree_id,
            group_id,
            index,
            new.caller_agent_id,
            new.root_turn_id,
            new.call_id,
            new.idempotency_key,
            new.agent_id,
            new.definition_hash,
            new.provider_profile,
            new.model_id,
            new.mode.value,
            depth,
            new.id,  # the execution id starts as the run id (spec §2.1)
            generation,
            owner_instance,
            new.task,
            new.context,
            json.dumps(budget.to_json(), sort_keys=True),
            new.signal_lane,
            new.deadline_at_ms,
            int(background),
            RunStatus.QUEUED.value,
            now,
            None,
            None,
            now,
            revision,
        )
        db.execute_sql(
            f"INSERT INTO agent_run ({', '.join(_INSERTED)}) VALUES ({placeholders})", values
        )
        steps(f"insert:{index}")
    return group_runs(group_id)


def _replayed(batch: Sequence[NewRun]) -> list[AgentRun] | None:
    """The runs an identical earlier batch made, or None; a partial match is a conflict."""
    ids = [r.id for r in batch]
    keys = [r.idempotency_key for r in batch if r.idempotency_key is not None]
    marks = ", ".join("?" * len(ids))
    found_ids = db.execute_sql(f"SELECT id FROM agent_run WHERE id IN ({marks})", ids).fetchall()
    found: list[Any] = []
    if keys:
        found = db.execute_sql(
            f"SELECT id, group_id FROM agent_run WHERE idempotency_key IN "
            f"({', '.join('?' * len(keys))})",
            keys,
        ).fetchall()
    if keys and len(found) == len(batch) == len(keys) and len({row[1] for row in found}) == 1:
        return group_runs(found[0][1])
    if found_ids or found:
        raise AdmissionRefused(
            "RUN_ID_CONFLICT", "some of these runs already exist; nothing new was started"
        )
    return None


def _tree_size(tree_id: str) -> int:
    row = db.execute_sql("SELECT COUNT(*) FROM agent_run WHERE tree_id = ?", (tree_id,)).fetchone()
    return int(row[0])


def set_child_session(run_id: str, child_session_id: str, now: int) -> bool:
    """Record the one-off child session that executes the run (only once)."""
    cursor = db.execute_sql(
        "UPDATE agent_run SET child_session_id = ?, updated_at_ms = ? "
        "WHERE id = ? AND child_session_id IS NULL",
        (child_session_id, now, run_id),
    )
    return bool(cursor.rowcount)


# --- fenced transitions ---------------------------------------------------------------------


def _move(
    run_id: str,
    execution_id: str,
    generation: int,
    source: RunStatus,
    target: RunStatus,
    now: int,
) -> bool:
    """One fenced, conditional step ``source -> target``; whether it applied."""
    assert target in allowed_targets(source), (source, target)
    started = ", started_at_ms = COALESCE(started_at_ms, ?)" if target is RunStatus.RUNNING else ""
    row = db.execute_sql(
        f"UPDATE agent_run SET status = ?, updated_at_ms = ?{started} WHERE id = ? "
        "AND execution_id = ? AND runtime_generation = ? AND status = ? RETURNING root_session_id",
        (
            target.value,
            now,
            *((now,) if started else ()),
            run_id,
            execution_id,
            generation,
            source.value,
        ),
    ).fetchone()
    if row is None:
        return False
    revision = agent_inbox.touch(row[0], now)
    db.execute_sql("UPDATE agent_run SET revision = ? WHERE id = ?", (revision, run_id))
    return True


def mark_running(run_id: str, execution_id: str, generation: int, now: int) -> bool:
    """``queued -> running``; False when the run was closed first (the caller backs off)."""
    return _move(run_id, execution_id, generation, RunStatus.QUEUED, RunStatus.RUNNING, now)


def mark_waiting_children(run_id: str, execution_id: str, generation: int, now: int) -> bool:
    """``running -> waiting_children`` while a foreground batch of the run executes."""
    return _move(
        run_id, execution_id, generation, RunStatus.RUNNING, RunStatus.WAITING_CHILDREN, now
    )


def restore_running(run_id: str, execution_id: str, generation: int, now: int) -> bool:
    """``waiting_children -> running`` once the batch is back."""
    return _move(
        run_id, execution_id, generation, RunStatus.WAITING_CHILDREN, RunStatus.RUNNING, now
    )


@dataclass(frozen=True)
class TerminalCommit:
    """The answer of ``commit_terminal``: ``applied`` and the run as stored, or why not."""

    applied: bool
    run: AgentRun | None
    refusal: str | None = None


def _close(
    run_id: str,
    outcome: TerminalOutcome,
    limits: Limits,
    now: int,
    where: str,
    params: Sequence[Any],
) -> AgentRun | None:
    """Make the run terminal if ``where`` still holds; the run as stored after, or None."""
    signal_ids = agent_inbox.signal_ids_of(run_id)
    cursor = db.execute_sql(
        "UPDATE agent_run SET status = ?, finished_at_ms = ?, updated_at_ms = ?, result = ?, "
        "summary = ?, error = ?, tool_calls = ?, iterations = ?, prompt_tokens = ?, "
        "completion_tokens = ?, cost = ?, signal_ids_json = ?, timed_out_at_ms = ? "
        f"WHERE id = ? AND status IN {_ACTIVE}{where} RETURNING root_session_id",
        (
            outcome.status.value,
            now,
            now,
            outcome.result,
            outcome.summary(limits.summary_bytes),
            outcome.error,
            outcome.tool_calls,
            outcome.iterations,
            outcome.prompt_tokens,
            outcome.completion_tokens,
            outcome.cost,
            json.dumps(list(signal_ids)),
            outcome.detected_at_ms,
            run_id,
            *params,
        ),
    ).fetchone()
    if cursor is None:
        return None
    revision = agent_inbox.touch(cursor[0], now)
    db.execute_sql("UPDATE agent_run SET revision = ? WHERE id = ?", (revision, run_id))
    return get_run(run_id)


def commit_terminal(
    run_id: str,
    execution_id: str,
    generation: int,
    outcome: TerminalOutcome,
    limits: Limits,
    now: int,
    *,
    continuation: bool | None = None,
) -> TerminalCommit:
    """The runner's terminal write, fenced by execution id and runtime generation (spec §4.3).

    Applies only while the run is unfinished and still belongs to this execution of this
    generation; then, in the same transaction, a background run's reservation becomes its
    completion event (with the terminal status and the signal ids read now, after execution).
    The event starts a continuation of the root unless the run was interrupted (or
    ``continuation`` says otherwise: recovery starts nothing).
    A refused commit writes nothing and says why (the late result is dropped)."""
    run = _close(
        run_id,
        outcome,
        limits,
        now,
        " AND execution_id = ? AND runtime_generation = ?",
        (execution_id, generation),
    )
    if run is not None:
        if continuation is None:
            continuation = outcome.status is not RunStatus.INTERRUPTED
        agent_inbox.write_completion(run, now, consumed=False, continuation=continuation)
        return TerminalCommit(True, get_run(run_id))
    current = get_run(run_id)
    if current is None:
        return TerminalCommit(False, None, f"no agent run {run_id!r}: the result was dropped")
    if current.status.terminal:
        why = f"it is already {current.status}"
    elif current.execution_id != execution_id:
        why = f"it now belongs to execution {current.execution_id!r}, not {execution_id!r}"
    else:
        why = f"it belongs to runtime generation {current.runtime_generation}, not {generation}"
    return TerminalCommit(
        False,
        current,
        f"run {run_id} was not finished as {outcome.status}: {why}; this late result was dropped",
    )


def cancel_run(
    caller: Caller, run_id: str, reason: str, limits: Limits, now: int, *, suppress: bool
) -> bool:
    """Cancel a run of the caller's tree and every unfinished run below it (cancel wins).

    ``suppress`` (the window, a session stop, shutdown) writes the completion event already
    consumed so no continuation starts; otherwise (the agent's own cancel) it is pending and
    wakes the root. Undelivered signals of every cancelled run are superseded. False when the
    run was already finished; ``AgentRunError('UNKNOWN_RUN')`` for an id the caller cannot see,
    whether it exists or not (no existence leak)."""
    if visible_run(caller, run_id) is None:
        raise unknown_run(run_id)
    closed = _cancel_one(run_id, reason, limits, now, suppress)
    if closed:
        below = db.execute_sql(
            "WITH RECURSIVE below(id) AS (SELECT id FROM agent_run WHERE parent_run_id = ? "
            "UNION SELECT r.id FROM agent_run r JOIN below b ON r.parent_run_id = b.id) "
            f"SELECT id FROM agent_run WHERE id IN below AND status IN {_ACTIVE}",
            (run_id,),
        ).fetchall()
        for (child,) in below:
            _cancel_one(child, f"its caller was cancelled: {reason}", limits, now, suppress)
    return closed


def _cancel_one(run_id: str, reason: str, limits: Limits, now: int, suppress: bool) -> bool:
    run = _close(run_id, TerminalOutcome.cancelled(reason), limits, now, "", ())
    if run is None:
        return False
    agent_inbox.write_completion(run, now, consumed=suppress, continuation=not suppress)
    agent_inbox.supersede_signals(run_id, now)
    return True


def cancel_session(root_session_id: str, reason: str, limits: Limits, now: int) -> int:
    """ "Stop all agents": cancel every unfinished run of the session (no 200-run cap),
    continuations suppressed; returns how many were cancelled."""
    rows = db.execute_sql(
        f"SELECT id FROM agent_run WHERE root_session_id = ? AND status IN {_ACTIVE} "
        "ORDER BY depth, created_at_ms, id",
        (root_session_id,),
    ).fetchall()
    return sum(_cancel_one(run_id, reason, limits, now, True) for (run_id,) in rows)


# --- authorization and reads ----------------------------------------------------------------


def visible_run(caller: Caller, run_id: str) -> AgentRun | None:
    """The run if ``caller`` may see it, else None, the same as for an unknown id.

    The root agent sees every run of its session; a named agent sees its own run and the runs
    below it, never siblings or ancestors (spec §3.12)."""
    run = get_run(run_id)
    if run is None or run.root_session_id != caller.root_session_id:
        return None
    if caller.run_id is None or caller.run_id == run_id:
        return run
    row = db.execute_sql(
        "WITH RECURSIVE up(id, parent) AS (SELECT id, parent_run_id FROM agent_run WHERE id = ? "
        "UNION SELECT r.id, r.parent_run_id FROM agent_run r JOIN up u ON r.id = u.parent) "
        "SELECT 1 FROM up WHERE id = ?",
        (run_id, caller.run_id),
    ).fetchone()
    return run if row is not None else None


def visible_result(caller: Caller, run_id: str) -> AgentRun | None:
    """``visible_run``, but only once the run is finished (spec §3.10 ``get_result``)."""
    run = visible_run(caller, run_id)
    return run if run is not None and run.status.terminal else None


def list_runs(
    caller: Caller, *, after: tuple[int, str] | None = None, limit: int = 50
) -> tuple[list[AgentRun], tuple[int, str] | None]:
    """A page of the runs the caller may see, oldest first, keyset by (created_at, id); the
    cursor of the next page, or None when this page was the last."""
    sql = f"SELECT {_COLUMNS} FROM agent_run WHERE root_session_id = ?"
    params: list[Any] = [caller.root_session_id]
    if caller.run_id is not None:
        sql += (
            " AND id IN (WITH RECURSIVE below(id) AS (SELECT ? UNION SELECT r.id FROM agent_run r "
            "JOIN below b ON r.parent_run_id = b.id) SELECT id FROM below)"
        )
        params.append(caller.run_id)
    if after is not None:
        sql += " AND (created_at_ms, id) > (?, ?)"
        params.extend(after)
    rows = db.execute_sql(
        sql + " ORDER BY created_at_ms, id LIMIT ?", (*params, limit + 1)
    ).fetchall()
    runs = [_run(row) for row in rows[:limit]]
    more = len(rows) > limit
    return runs, ((runs[-1].created_at_ms, runs[-1].id) if more and runs else None)


def group_runs(group_id: str) -> list[AgentRun]:
    """A batch's runs in request order (foreground results come back in this order)."""
    rows = db.execute_sql(
        f"SELECT {_COLUMNS} FROM agent_run WHERE group_id = ? ORDER BY group_index, id",
        (group_id,),
    ).fetchall()
    return [_run(row) for row in rows]


def active_runs(root_session_id: str | None = None) -> list[AgentRun]:
    """Unfinished runs (of one session, or all), oldest first."""
    sql = f"SELECT {_COLUMNS} FROM agent_run WHERE status IN {_ACTIVE}"
    params: tuple[str, ...] = ()
    if root_session_id is not None:
        sql += " AND root_session_id = ?"
        params = (root_session_id,)
    rows = db.execute_sql(sql + " ORDER BY created_at_ms, id", params).fetchall()
    return [_run(row) for row in rows]


def run_of_child_session(child_session_id: str) -> AgentRun | None:
    """The run a one-off child session executes (None for any other session)."""
    row = db.execute_sql(
        f"SELECT {_COLUMNS} FROM agent_run WHERE child_session_id = ? "
        "ORDER BY created_at_ms DESC LIMIT 1",
        (child_session_id,),
    ).fetchone()
    return None if row is None else _run(row)


def runs_by_prefix(prefix: str, limit: int = 2) -> list[AgentRun]:
    """Runs whose id starts with ``prefix`` (a person types a short id)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = db.execute_sql(
        f"SELECT {_COLUMNS} FROM agent_run WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
        (escaped + "%", limit),
    ).fetchall()
    return [_run(row) for row in rows]


def overdue_runs(now: int) -> list[AgentRun]:
    """Unfinished runs whose deadline has passed (the coordinator times them out)."""
    return [run for run in active_runs() if run.deadline_at_ms <= now]


assert {RunStatus(s) for s in ("queued", "running", "waiting_children")} == ACTIVE_STATUSES
