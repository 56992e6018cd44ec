"""Executing one agent run as the work item of its one-off child session.

Write before run: the run is already accepted and its child session exists (with the task
queued) when this starts. ``execute`` marks the run running (fenced: a run closed first is left
alone), starts the child through the session owner, and waits for whichever comes first:

* the child's slot ends: its item's outcome (``store.run_outcome.child_outcome``) is committed;
* the run's cancel token fires (a cancel already committed the run): the child's work is
  cancelled, nothing more is written;
* the deadline passes: ``timed_out`` is committed first, then the child's work is cancelled.

Every terminal write is ``commit_terminal`` with the run's execution id and this process's
runtime generation, so a late result never overwrites a cancel, a timeout or recovery. When
fxdesk shuts down nothing is written: the next start's recovery interrupts the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from fxdesk.domain.agent_runs import AgentRun, Limits, RunStatus, TerminalOutcome
from fxdesk.engine.agents.events import AgentRunChanged
from fxdesk.engine.bus import EventBus
from fxdesk.engine.cancel import CancelToken
from fxdesk.engine.clock import Clock
from fxdesk.engine.owner import Result, SessionOwner
from fxdesk.store import Store, StoreError, agent_runs
from fxdesk.store.run_outcome import child_outcome

log = logging.getLogger(__name__)

# Slot results after which the child's item may still be unfinished (it waits for the person or
# a resume): the run keeps waiting for it until its deadline.
_UNFINISHED = frozenset(
    {Result.AWAITING_APPROVAL, Result.PAUSED, Result.EXTERNAL_BUSY, Result.NO_WORK}
)


@dataclass
class RunContext:
    """What executing one run needs from the coordinator."""

    store: Store
    bus: EventBus
    owner: SessionOwner
    clock: Clock
    limits: Limits
    generation: int
    closing: Callable[[], bool]


async def execute(ctx: RunContext, run: AgentRun, token: CancelToken) -> AgentRun | None:
    """Run ``run`` to its end; the run as stored afterwards (None when fxdesk stops first)."""
    now = ctx.clock.now_ms()
    started = await ctx.store.write(
        lambda: agent_runs.mark_running(run.id, run.execution_id, ctx.generation, now),
        label="run_started",
    )
    if not started:  # closed first (a cancel, a timeout): whoever closed it settled it
        return await ctx.store.read(lambda: agent_runs.get_run(run.id))
    ctx.bus.publish(AgentRunChanged(run.root_session_id, run.id, RunStatus.RUNNING.value))
    child = run.child_session_id
    assert child is not None, "a run executes in its child session"
    ctx.owner.start(child)
    outcome = await _wait(ctx, run, child, token)
    if outcome is None:
        return await ctx.store.read(lambda: agent_runs.get_run(run.id))
    return await commit(ctx, run, outcome)


async def _wait(
    ctx: RunContext, run: AgentRun, child: str, token: CancelToken
) -> TerminalOutcome | None:
    """The outcome to commit, or None (cancelled, or fxdesk stopping)."""
    while True:
        remaining_s = max(0.0, (run.deadline_at_ms - ctx.clock.now_ms()) / 1000)
        joined = asyncio.ensure_future(ctx.owner.join(child))
        cancelled = asyncio.ensure_future(token.wait())
        try:
            done, _ = await asyncio.wait(
                {joined, cancelled}, timeout=remaining_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            joined.cancel()
            cancelled.cancel()
        if ctx.closing():
            return None
        if cancelled in done:  # the cancel is committed: stop the child's work
            await _stop_child(ctx, child, token.reason or "cancelled")
            return None
        if joined not in done:  # the deadline passed
            detected = ctx.clock.now_ms()
            await commit(ctx, run, TerminalOutcome.timed_out(detected))
            await _stop_child(ctx, child, "the run passed its deadline")
            return None
        try:
            result = joined.result()
        except Exception as exc:  # the slot is gone (never started, owner closed)
            log.warning("run %s: its child %s could not be joined: %s", run.id, child, exc)
            return TerminalOutcome.failed(f"the sub-agent could not run: {exc}", raised=True)
        if result is Result.OWNER_STOPPED or ctx.owner.closed:
            return None
        outcome = await ctx.store.read(lambda: child_outcome(child))
        if outcome is not None:
            return outcome
        if result not in _UNFINISHED:
            return TerminalOutcome.failed(f"the sub-agent stopped: {result.value}")
        await _until_changed(ctx, child, run)


async def _until_changed(ctx: RunContext, child: str, run: AgentRun) -> None:
    """The child waits (for the person, a resume): wait for its session to change or start."""
    waiter = ctx.owner.waiter(child)
    try:
        remaining_s = max(0.05, (run.deadline_at_ms - ctx.clock.now_ms()) / 1000)
        await waiter.wait(min(remaining_s, 1.0))
    finally:
        waiter.close()


async def _stop_child(ctx: RunContext, child: str, reason: str) -> None:
    if ctx.closing() or ctx.owner.closed:
        return
    try:
        await ctx.owner.cancel(child, reason[:500])
    except Exception as exc:  # the run is already closed; the child stops at recovery at worst
        log.warning("could not cancel the sub-agent session %s: %s", child, exc)


async def commit(ctx: RunContext, run: AgentRun, outcome: TerminalOutcome) -> AgentRun | None:
    """The fenced terminal write; the run as stored afterwards (its current state when the
    commit was refused: a late result is dropped, and logged)."""
    now = ctx.clock.now_ms()
    try:
        done = await ctx.store.write(
            lambda: agent_runs.commit_terminal(
                run.id, run.execution_id, ctx.generation, outcome, ctx.limits, now
            ),
            label="run_terminal",
        )
    except StoreError as exc:
        log.error("run %s: its outcome could not be saved: %s", run.id, exc)
        return None
    if not done.applied:
        log.warning("%s", done.refusal)
        return done.run
    assert done.run is not None
    ctx.bus.publish(AgentRunChanged(run.root_session_id, run.id, done.run.status.value))
    return done.run
