"""The agent coordinator: delegation, agent runs, cancellation, signals and recovery (issue 13).

One per App. ``start`` takes the next runtime generation and recovers what earlier activations
left unfinished (interrupted, their completions written once, nothing re-run), before any new
delegation. Then:

* ``delegate_foreground``: resolve every named agent, accept the batch in one transaction,
  create one one-off child session per run (clamped permission mode, the definition's prompt as
  its role text, its tool list), run them concurrently through the session owner and return
  their results in request order. A named-agent caller waits as ``waiting_children``.
* ``delegate_background``: the same admission (with inbox reservations), then run ids at once;
  each run executes as a task of its own, at most ``max_concurrent_runs`` at a time per root
  (the wait counts against its deadline); each completion lands in the root's inbox and wakes it
  (``delivery.InboxDelivery``).
* ``cancel_run`` / ``stop_all``: the store's cancel (cancel wins: one terminal writer), then the
  run's one cancel token fires, which cancels its child session's work.

Refusals are ``AgentRunError``s with a sentence the model reads (budgets, depth, inbox full).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fxdesk.domain.agent_definitions import AgentDefinition
from fxdesk.domain.agent_inbox import InboxEvent, SignalAccepted, SignalInput
from fxdesk.domain.agent_runs import (
    ROOT_AGENT,
    AdmissionRefused,
    AgentRun,
    AgentRunError,
    Caller,
    Counters,
    Limits,
    NewRun,
    RecoveryReport,
    RunMode,
    RunStatus,
    TerminalOutcome,
)
from fxdesk.domain.model import Session, SessionMode
from fxdesk.domain.permissions import stricter
from fxdesk.engine import agent_lookup
from fxdesk.engine.agents import runner
from fxdesk.engine.agents.delivery import InboxDelivery
from fxdesk.engine.agents.events import AgentRunChanged, InboxChanged
from fxdesk.engine.authority import AGENT_DENIED_TOOLS_KEY, AGENT_TOOLS_KEY
from fxdesk.engine.bus import EventBus
from fxdesk.engine.cancel import CancelToken
from fxdesk.engine.clock import Clock
from fxdesk.engine.owner import SessionOwner
from fxdesk.engine.sessions import SessionService
from fxdesk.engine.turn import MAX_ITERATIONS_KEY, ROLE_PROMPT_KEY
from fxdesk.store import Store, agent_inbox, agent_recovery, agent_runs, repo
from fxdesk.tools.agents.port import DelegateRequest, RunResult
from fxdesk.tools.agents.tools import EmitSignalTool

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 1800  # a run whose definition names no timeout
RUN_CONFIG_KEY = "agent_run"  # the child session's config: the run it executes


class AgentCoordinator:
    """Runs the agent runs of this process. ``start`` before the first delegation; ``stop``
    before the session owner shuts down (unfinished runs are left for the next recovery)."""

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        owner: SessionOwner,
        sessions: SessionService,
        clock: Clock,
        *,
        instance_id: str,
        limits: Limits | None = None,
        user_agents: Path | None = None,
        owner_alive: Callable[[str], bool] | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.owner = owner
        self.sessions = sessions
        self.clock = clock
        self.instance_id = instance_id
        self.limits = limits or Limits()
        self.user_agents = user_agents
        self.owner_alive = owner_alive
        self.generation = 0
        self.recovery: RecoveryReport | None = None
        self.closing = False
        self._tokens: dict[str, CancelToken] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._gates: dict[str, asyncio.Semaphore] = {}
        self.delivery = InboxDelivery(store, bus, owner, clock, self.limits, instance_id)

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self, *, recover: bool = True) -> RecoveryReport | None:
        """Take this activation's generation, then (``recover``) interrupt what earlier ones
        left unfinished; nothing is re-run and no continuation starts."""
        self.generation = await self.store.write(agent_runs.next_generation, label="generation")
        if not recover:
            return None
        generation, limits, now = self.generation, self.limits, self.clock.now_ms()
        stale = await self.store.read(lambda: agent_recovery.owners_of_stale_runs(generation))
        alive = self.owner_alive or (lambda _owner: False)
        live = await asyncio.to_thread(lambda: {o for o in stale if alive(o)})
        self.recovery = await self.store.write(
            lambda: agent_recovery.recover_on_activation(generation, limits, now, live_owners=live),
            label="agent_recovery",
        )
        if self.recovery.changed:
            log.info(
                "agent runs: %d interrupted, %d closed with their finished outcome, "
                "%d leases expired, %d dead",
                len(self.recovery.interrupted),
                len(self.recovery.settled),
                self.recovery.leases_expired,
                self.recovery.dead_lettered,
            )
            for interrupted in self.recovery.interrupted:
                self.bus.publish(
                    AgentRunChanged(interrupted.root_session_id, interrupted.run_id, "interrupted")
                )
            for closed in self.recovery.settled:
                run = await self.store.read(functools.partial(agent_runs.get_run, closed.run_id))
                status = run.status.value if run is not None else "completed"
                self.bus.publish(AgentRunChanged(closed.root_session_id, closed.run_id, status))
        return self.recovery

    async def stop(self) -> None:
        """Stop this process's runs without writing anything (recovery interrupts them)."""
        self.closing = True
        for token in list(self._tokens.values()):
            token.cancel("fxdesk is shutting down")
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- who calls ----------------------------------------------------------------------------

    async def _caller(self, session_id: str) -> tuple[Session, AgentRun | None]:
        """The calling session and the run it executes (None: not a named agent's run)."""

        def read() -> tuple[Session | None, AgentRun | None]:
            return repo.get_session(session_id), agent_runs.run_of_child_session(session_id)

        session, run = await self.store.read(read)
        if session is None:
            raise AgentRunError("NO_SESSION", f"no session {session_id}")
        return session, run

    async def caller_of(self, session_id: str) -> Caller:
        session, run = await self._caller(session_id)
        return Caller(session.root_id, None if run is None else run.id)

    async def _definitions(
        self, session: Session, requests: Sequence[DelegateRequest]
    ) -> list[AgentDefinition]:
        """Every requested agent resolved, before anything is written (spec §4.1)."""
        workspaces = await self.store.read(repo.list_workspaces)
        folder = next(w.path for w in workspaces if w.id == session.workspace_id)

        def read() -> list[AgentDefinition]:
            folders = agent_lookup.agent_folders(
                Path(folder), self.user_agents, agent_lookup.claude_user_folder()
            )
            entries = agent_lookup.lookup(folders)
            found = []
            for request in requests:
                entry = agent_lookup.find(entries, request.agent)
                if entry is None:
                    known = ", ".join(sorted({e.id for e in entries if not e.broken}))
                    raise AgentRunError(
                        "UNKNOWN_AGENT", f"no agent {request.agent!r} (known: {known})"
                    )
                if entry.definition is None:
                    raise AgentRunError(
                        "BROKEN_AGENT", entry.error or f"agent {request.agent!r} is broken"
                    )
                found.append(entry.definition)
            return found

        return await asyncio.to_thread(read)

    # --- admission ----------------------------------------------------------------------------

    async def _admit(
        self,
        session_id: str,
        work_id: str,
        call_id: str,
        requests: Sequence[DelegateRequest],
        mode: RunMode,
    ) -> tuple[list[AgentRun], Session, AgentRun | None]:
        if self.closing or self.generation == 0:
            raise AgentRunError("SHUTTING_DOWN", "fxdesk is shutting down: nothing was started")
        if not requests:
            raise AdmissionRefused("EMPTY_BATCH", "no tasks to delegate: the batch is empty")
        caller, caller_run = await self._caller(session_id)
        if mode is RunMode.BACKGROUND and (caller_run is not None or caller.is_child):
            raise AdmissionRefused(
                "BG_NESTED_UNSUPPORTED",
                "only the root agent may start background runs; a sub-agent delegates in "
                "the foreground",
            )
        definitions = await self._definitions(caller, requests)
        now = self.clock.now_ms()
        batch = [
            NewRun(
                id=str(uuid.uuid4()),
                root_session_id=caller.root_id,
                caller_session_id=caller.id,
                agent_id=definition.id,
                task=request.task,
                mode=mode,
                deadline_at_ms=now + 1000 * (definition.timeout_s or DEFAULT_TIMEOUT_S),
                parent_run_id=None if caller_run is None else caller_run.id,
                caller_agent_id=ROOT_AGENT if caller_run is None else caller_run.agent_id,
                root_turn_id=work_id,
                call_id=call_id,
                idempotency_key=f"{session_id}:{call_id}:{index}",
                definition_hash=definition.hash,
                provider_profile=definition.profile or caller.profile or "",
                model_id=definition.model or "",
                context=request.context,
                signal_lane=None
                if definition.signal_lane is None
                else definition.signal_lane.value,
            )
            for index, (request, definition) in enumerate(zip(requests, definitions, strict=True))
        ]
        generation, limits = self.generation, self.limits
        runs = await self.store.write(
            lambda: agent_runs.accept_runs(
                batch,
                generation=generation,
                limits=limits,
                now=now,
                owner_instance=self.instance_id,
            ),
            label="accept_runs",
        )
        for run in runs:
            self.bus.publish(AgentRunChanged(run.root_session_id, run.id, run.status.value))
        by_id = {new.id: d for new, d in zip(batch, definitions, strict=True)}
        prepared = []
        for run, request in zip(runs, requests, strict=True):
            if run.child_session_id is None:  # a replayed batch already has its children
                run = await self._make_child(
                    run, caller, by_id.get(run.id, definitions[0]), request
                )
            prepared.append(run)
        return prepared, caller, caller_run

    async def _make_child(
        self, run: AgentRun, caller: Session, definition: AgentDefinition, request: DelegateRequest
    ) -> AgentRun:
        """The run's one-off child session, its task queued (not started yet)."""
        mode = caller.permission_mode
        if definition.permission_mode is not None:
            mode = stricter(mode, definition.permission_mode)
        config: dict[str, Any] = {
            RUN_CONFIG_KEY: run.id,
            "agent_id": definition.id,
            ROLE_PROMPT_KEY: definition.prompt,
        }
        if definition.tools is not None:
            config[AGENT_TOOLS_KEY] = list(definition.tools)
        denied = list(definition.disallowed_tools)
        if not definition.may_signal:  # its signals would be refused: not offered at all
            denied.append(EmitSignalTool.name)
        config[AGENT_DENIED_TOOLS_KEY] = denied
        if definition.max_iterations is not None:
            config[MAX_ITERATIONS_KEY] = definition.max_iterations
        task = request.task if not request.context else f"{request.task}\n\n{request.context}"
        first_line = request.task.strip().splitlines()[0]
        child = await self.sessions.create_child(
            caller.id,
            name=f"{definition.id}: {first_line}"[:60],
            mode=SessionMode.ONE_OFF,
            first_message=task,
            permission_mode=mode,
            profile=definition.profile,
            model=definition.model,
            effort=definition.effort,
            config=config,
        )
        now = self.clock.now_ms()
        await self.store.write(
            lambda: agent_runs.set_child_session(run.id, child.id, now), label="run_child"
        )
        stored = await self.store.read(lambda: agent_runs.get_run(run.id))
        assert stored is not None
        return stored

    def _context(self) -> runner.RunContext:
        return runner.RunContext(
            self.store,
            self.bus,
            self.owner,
            self.clock,
            self.limits,
            self.generation,
            lambda: self.closing or self.owner.closed,
        )

    # --- foreground ---------------------------------------------------------------------------

    async def delegate_foreground(
        self, session_id: str, work_id: str, call_id: str, requests: Sequence[DelegateRequest]
    ) -> list[RunResult]:
        """Run the batch and return its results in request order (spec §3.2)."""
        runs, _caller, caller_run = await self._admit(
            session_id, work_id, call_id, requests, RunMode.FOREGROUND
        )
        ctx = self._context()
        if caller_run is not None:
            now = self.clock.now_ms()
            await self.store.write(
                lambda: agent_runs.mark_waiting_children(
                    caller_run.id, caller_run.execution_id, caller_run.runtime_generation, now
                ),
                label="run_waiting",
            )
        began = self.clock.now_ms()
        try:
            finished = await asyncio.gather(*(self._run_one(ctx, run) for run in runs))
        except asyncio.CancelledError:  # the caller's turn stopped: its children stop too
            await self._abandon(runs, "its caller stopped")
            raise
        finally:
            if caller_run is not None and not ctx.closing():
                now = self.clock.now_ms()
                await self.store.write(
                    lambda: agent_runs.restore_running(
                        caller_run.id, caller_run.execution_id, caller_run.runtime_generation, now
                    ),
                    label="run_restored",
                )
        return [_result(run, done, began) for run, done in zip(runs, finished, strict=True)]

    async def _run_one(self, ctx: runner.RunContext, run: AgentRun) -> AgentRun | None:
        token = self._tokens.setdefault(run.id, CancelToken())
        try:
            return await runner.execute(ctx, run, token)
        finally:
            self._tokens.pop(run.id, None)

    async def _abandon(self, runs: Sequence[AgentRun], reason: str) -> None:
        if self.closing or self.owner.closed:
            return  # nothing is written at shutdown: recovery interrupts them
        now = self.clock.now_ms()
        for run in runs:
            caller = Caller(run.root_session_id)
            try:
                await self.store.write(
                    functools.partial(
                        agent_runs.cancel_run,
                        caller,
                        run.id,
                        reason,
                        self.limits,
                        now,
                        suppress=True,
                    ),
                    label="run_abandoned",
                )
            except AgentRunError:
                continue
            if run.child_session_id is not None:
                await runner._stop_child(self._context(), run.child_session_id, reason)

    # --- background ---------------------------------------------------------------------------

    async def delegate_background(
        self, session_id: str, work_id: str, call_id: str, requests: Sequence[DelegateRequest]
    ) -> list[AgentRun]:
        """Accept the batch (reserving its inbox slots) and start it; the runs at once."""
        runs, _caller, _run = await self._admit(
            session_id, work_id, call_id, requests, RunMode.BACKGROUND
        )
        for run in runs:
            token = self._tokens.setdefault(run.id, CancelToken())
            task = asyncio.get_running_loop().create_task(
                self._background(run, token), name=f"agent-run:{run.id}"
            )
            self._tasks.add(task)
            task.add_done_callback(self._task_done)
        return runs

    def wake_inbox(self, root_session_id: str) -> None:
        """The person resumed ``root_session_id``: deliver its inbox events that wait to
        continue it. A background run can finish (its completion written, asking for a
        continuation) just before fxdesk stops or is killed, before the wake that would have
        delivered it; the next start must not run it by itself (recovery makes no model call),
        so it waits for the person, and resume is the person saying go on (found by the crash
        harness: such an event waited for ever)."""
        if self.closing:
            return
        task = asyncio.get_running_loop().create_task(
            self.delivery.wake(root_session_id), name=f"inbox-wake:{root_session_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s failed", task.get_name(), exc_info=task.exception())

    async def _background(self, run: AgentRun, token: CancelToken) -> None:
        ctx = self._context()
        gate = self._gates.setdefault(
            run.root_session_id, asyncio.Semaphore(self.limits.max_concurrent_runs)
        )
        try:
            waited = asyncio.ensure_future(gate.acquire())
            stopped = asyncio.ensure_future(token.wait())
            remaining_s = max(0.0, (run.deadline_at_ms - self.clock.now_ms()) / 1000)
            done, _ = await asyncio.wait(
                {waited, stopped}, timeout=remaining_s, return_when=asyncio.FIRST_COMPLETED
            )
            stopped.cancel()
            if waited not in done:
                waited.cancel()
                if waited.done() and not waited.cancelled():
                    gate.release()
                if stopped not in done and not ctx.closing():  # the deadline, still queued
                    await runner.commit(ctx, run, TerminalOutcome.timed_out(self.clock.now_ms()))
                return
            try:
                await runner.execute(ctx, run, token)
            finally:
                gate.release()
        finally:
            self._tokens.pop(run.id, None)
            if not ctx.closing():
                await self.delivery.wake(run.root_session_id)

    # --- cancel -------------------------------------------------------------------------------

    async def cancel_run(self, caller: Caller, run_id: str, reason: str, *, suppress: bool) -> bool:
        """Cancel a run the caller may see and the runs below it; False when finished.

        ``suppress`` (the person, a session stop) writes background completions already
        consumed: no continuation starts; the agent's own cancel (False) wakes the root."""
        now = self.clock.now_ms()
        before = await self.store.read(lambda: agent_runs.active_runs(caller.root_session_id))
        changed = await self.store.write(
            lambda: agent_runs.cancel_run(
                caller, run_id, reason, self.limits, now, suppress=suppress
            ),
            label="cancel_run",
        )
        if changed:
            await self._settle_cancelled(caller.root_session_id, before, reason)
        return changed

    async def stop_all(self, root_session_id: str, reason: str = "stopped by the person") -> int:
        """Cancel every unfinished run of a root session (continuations suppressed)."""
        now = self.clock.now_ms()
        before = await self.store.read(lambda: agent_runs.active_runs(root_session_id))
        count = await self.store.write(
            lambda: agent_runs.cancel_session(root_session_id, reason, self.limits, now),
            label="stop_all_agents",
        )
        if count:
            await self._settle_cancelled(root_session_id, before, reason)
        return count

    async def _settle_cancelled(
        self, root_session_id: str, before: Sequence[AgentRun], reason: str
    ) -> None:
        """After a committed cancel: fire our tokens, and cancel the child sessions' work
        durably (a run another fxdesk executes stops at its turn's next durable check)."""
        await self._fire_closed(root_session_id, reason)
        ids = [r.id for r in before]
        after = await self.store.read(lambda: [agent_runs.get_run(i) for i in ids])
        for run in after:
            if run is None or run.status is not RunStatus.CANCELLED:
                continue
            self.bus.publish(AgentRunChanged(root_session_id, run.id, run.status.value))
            if run.child_session_id is not None and run.id not in self._tokens:
                await runner._stop_child(self._context(), run.child_session_id, reason)
        self.bus.publish(InboxChanged(root_session_id))

    async def _fire_closed(self, root_session_id: str, reason: str) -> None:
        """Fire the token of every run of ours the store now has finished."""
        ids = list(self._tokens)
        runs = await self.store.read(lambda: [agent_runs.get_run(i) for i in ids])
        for run in runs:
            if run is not None and run.status.terminal and run.root_session_id == root_session_id:
                token = self._tokens.get(run.id)
                if token is not None:
                    token.cancel(reason)

    # --- signals and reads --------------------------------------------------------------------

    async def emit_signal(self, session_id: str, signal: SignalInput) -> SignalAccepted:
        _session, run = await self._caller(session_id)
        if run is None:
            raise AgentRunError("SIGNAL_NO_RUN", "emit_signal works only inside a sub-agent run")
        now, limits = self.clock.now_ms(), self.limits
        accepted = await self.store.write(
            lambda: agent_inbox.emit_signal(run.id, run.execution_id, signal, limits, now),
            label="emit_signal",
        )
        self.bus.publish(InboxChanged(run.root_session_id))
        if accepted.status.value == "accepted":
            await self.delivery.wake(run.root_session_id)
        return accepted

    async def list_runs(self, caller: Caller, limit: int = 200) -> list[AgentRun]:
        runs, _next = await self.store.read(lambda: agent_runs.list_runs(caller, limit=limit))
        return runs

    async def inbox(self, root_session_id: str) -> tuple[list[InboxEvent], Counters]:
        def read() -> tuple[list[InboxEvent], Counters]:
            return agent_inbox.list_inbox(root_session_id), agent_inbox.counters(root_session_id)

        return await self.store.read(read)

    async def get_run(self, run_id: str) -> AgentRun | None:
        return await self.store.read(lambda: agent_runs.get_run(run_id))


def _result(run: AgentRun, done: AgentRun | None, began_ms: int) -> RunResult:
    """A foreground run's result for its caller; a run fxdesk stopped reads as interrupted."""
    final = done or run
    status = final.status if final.status.terminal else RunStatus.INTERRUPTED
    finished = final.finished_at_ms or began_ms
    return RunResult(
        run_id=run.id,
        agent_id=run.agent_id,
        status=status.value,
        result=final.result or "",
        error=final.error,
        tool_calls=final.tool_calls or 0,
        iterations=final.iterations or 0,
        duration_ms=max(0, finished - (final.started_at_ms or final.created_at_ms)),
        child_session_id=final.child_session_id,
    )
