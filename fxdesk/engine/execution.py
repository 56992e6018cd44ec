"""Running one work item: the session owner's "run one" step (spec child-sessions §3.9).

Take the session lock (busy elsewhere → ``external_busy``), admit the FIFO head in one
transaction (admission snapshot, report policy and the turn's first history row with it),
run the turn, then apply its outcome, where a committed cancel always wins.

The owner builds one ``ItemRunner`` and hands it every collaborator it needs; the runner knows
nothing of the owner itself, so the two modules do not import each other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain import reasons
from fxdesk.domain import work as reducers
from fxdesk.domain.authority import AdmissionSnapshot, snapshot_mismatch
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import Session, SessionMode, SessionState, WorkStatus
from fxdesk.domain.report_policy import ReportPolicy
from fxdesk.domain.work import Change, CompletionDecision, WorkOutcome
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.bus import EventBus
from fxdesk.engine.busy import BusyTracker
from fxdesk.engine.clock import Clock
from fxdesk.engine.events import HistoryAppended, publish_change
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.engine.report_scheduler import ReportScheduler
from fxdesk.engine.slots import Admission, Admitted, ItemOutcome, Result, Slot
from fxdesk.engine.turn import TurnEnd, TurnOutcome, TurnRunner, TurnRuntime
from fxdesk.engine.workspaces import WorkspacePaths
from fxdesk.providers.base import ProviderError
from fxdesk.store import Store, StoreError, control, history, repo
from fxdesk.store.locks import SessionLock, SessionLockBusy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _AdmissionCommit:
    """What the admission transaction did (it runs on the store's writer thread)."""

    verdict: Admission
    change: Change | None = None
    session: Session | None = None
    first_check_ms: int | None = None
    opened: list[HistoryEntry] = field(default_factory=list)


class ItemRunner:
    """Runs one work item of a session at a time, under the session's cross-process lock.

    Args:
        store: The store every transaction goes through.
        bus: Where committed changes are published.
        lock_dir: The folder of the per-session lock files.
        lock_deadline_s: How long to wait for a session lock another process holds (0: don't).
        providers: Finds the provider and profile of a session's next turn.
        runner: Runs the admitted item's turn.
        authority: Captures the admission snapshot (tools, model, permission mode).
        scheduler: Gets the first report check of each admitted item.
        clock: The time of admissions and completions.
        busy: Records sessions whose lock another process holds.
        workspaces: The folder each session's turn runs in.
        closed: Whether the owner is shutting down (then nothing more is written).
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        *,
        lock_dir: Path,
        lock_deadline_s: float,
        providers: ProviderResolver,
        runner: TurnRunner,
        authority: HostAuthority,
        scheduler: ReportScheduler,
        clock: Clock,
        busy: BusyTracker,
        workspaces: WorkspacePaths,
        closed: Callable[[], bool],
    ) -> None:
        self.store = store
        self.bus = bus
        self.lock_dir = lock_dir
        self.lock_deadline_s = lock_deadline_s
        self.providers = providers
        self.runner = runner
        self.authority = authority
        self.scheduler = scheduler
        self.clock = clock
        self.busy = busy
        self.workspaces = workspaces
        self.closed = closed

    async def run_one(self, slot: Slot) -> ItemOutcome:
        """Run the head of the slot's queue, if any, and say whether the drain goes on."""
        lock = SessionLock(self.lock_dir, slot.session_id)
        try:
            await self._acquire(lock)
        except SessionLockBusy as busy:
            log.info("session %s is busy in process %s", slot.session_id, busy.holder_pid)
            self.busy.mark_busy(slot.session_id, busy.holder_pid)
            return ItemOutcome(Result.EXTERNAL_BUSY)
        except OSError:
            log.exception("session %s: cannot take its lock", slot.session_id)
            return ItemOutcome(Result.SESSION_FAILED)
        try:
            self.busy.mark_free(slot.session_id)
            return await self._run_locked(slot)
        finally:
            lock.release()
            slot.live.clear()

    async def _acquire(self, lock: SessionLock) -> None:
        if self.lock_deadline_s <= 0:
            lock.acquire(0.0)
        else:  # waiting blocks: off the loop thread
            await asyncio.to_thread(lock.acquire, self.lock_deadline_s)

    def _stopping(self, slot: Slot) -> bool:
        return slot.shutdown or self.closed()

    async def _run_locked(self, slot: Slot) -> ItemOutcome:
        try:
            admitted = await self._admit(slot)
        except (StoreError, MemoryError) as exc:  # expected failures (spec §3.9 step 13)
            log.warning("session %s: admission not saved: %r", slot.session_id, exc)
            return ItemOutcome(Result.CONTROL_FAILED)
        if isinstance(admitted, Result):
            return ItemOutcome(admitted)
        slot.live.begin(admitted.item.id)
        resolved = admitted.resolved
        if isinstance(resolved, ProviderError):
            outcome = TurnOutcome(
                TurnEnd.FAILED, reasons.diagnostic(reasons.PROVIDER_FAILED, str(resolved))
            )
        else:
            outcome = await self.runner.run(
                TurnRuntime(
                    session=admitted.session,
                    workspace=admitted.workspace,
                    item=admitted.item,
                    snapshot=admitted.snapshot,
                    provider=resolved.provider,
                    cancel=slot.cancel,
                    stopping=lambda: self._stopping(slot),
                    live=slot.live,
                    profile=resolved.profile,
                    authority=self.authority,
                )
            )
        slot.model_calls += outcome.model_calls
        if self._stopping(slot):
            # Nothing durable: recovery decides at the next start.
            return ItemOutcome(Result.OWNER_STOPPED)
        return await self._complete(slot, admitted, outcome)

    async def _admit(self, slot: Slot) -> Admitted | Result:
        """Move the queue's head to running, or say why nothing runs (a ``Result``)."""
        session_id = slot.session_id

        def read() -> tuple[Session | None, reducers.ControlRecord | None, bool]:
            return (
                repo.get_session(session_id),
                control.load_record(session_id, open_limit=1),
                control.owes_terminals(session_id),
            )

        session, record, owed = await self.store.read(read)
        if session is None or record is None:
            return Result.SESSION_FAILED
        index = reducers.next_runnable(record.items, slot.retry)
        if index is None and owed:
            # Terminals an earlier cancel could not write come before "no work" (spec §3.9
            # step 7); with work to admit, the admission transaction writes them.
            now = self.clock.now_ms()
            await self.store.write(
                lambda: control.reconcile_terminals(session_id, now), label="terminals"
            )
        if index is None:
            if record.mode == SessionMode.ONE_OFF and record.state == SessionState.COMPLETED:
                return Result.COMPLETED
            return Result.NO_WORK
        item = record.items[index]
        if session.is_child and session.parent_id is None:
            return Result.ADMISSION_FAILED  # a detached child cannot take work; nothing changes
        resolved: Resolved | ProviderError
        try:
            resolved = await self.providers.resolve(session)
            resolved_model = resolved.model
        except ProviderError as exc:
            resolved = exc  # the turn reports the provider problem
            resolved_model = session.model or "default"
        try:
            snapshot: AdmissionSnapshot | None = self.authority.capture(
                session, item, resolved_model, session.effort
            )
            problem = (
                snapshot_mismatch(
                    snapshot,
                    parent_id=session.parent_id,
                    source_id=item.source_id,
                    model=resolved_model,
                    effort=session.effort,
                    permission_mode=session.permission_mode,
                )
                if snapshot is not None
                else "no snapshot"
            )
        except Exception as exc:
            log.warning("session %s: capture failed: %s", session_id, exc)
            snapshot, problem = None, f"capture failed: {exc}"
        policy = ReportPolicy.from_data(session.config.get("notifications"))
        workspace = await self.workspaces.for_session(session)
        now = self.clock.now_ms()

        def write() -> _AdmissionCommit:
            current = control.load_record(session_id, open_limit=1)  # FIFO: the head decides
            if current is None:
                return _AdmissionCommit(Admission.GONE)
            if owed:  # written before new work starts; if they cannot be, nothing is admitted
                control.reconcile_terminals(session_id, now)
            position = reducers.next_runnable(current.items, slot.retry)
            if position is None or current.items[position].id != item.id:
                return _AdmissionCommit(Admission.MOVED)
            if problem:
                change = reducers.fail_admission(current, item.id, now)
                control.save_change(change)
                control.reconcile_terminals(session_id, now, only=[item.id])
                return _AdmissionCommit(Admission.FAILED, change, repo.get_session(session_id))
            change = reducers.admit(current, position, now)
            control.save_change(change)
            assert snapshot is not None
            first = control.capture_policy(session_id, item.id, snapshot.to_json(), policy, now)
            opened = history.ensure_user_entry(item, now)
            return _AdmissionCommit(
                Admission.ADMITTED, change, repo.get_session(session_id), first, opened
            )

        commit = await self.store.write(write, label="admit")
        publish_change(self.bus, commit.change, commit.session)
        if commit.opened:
            self.bus.publish(HistoryAppended(session_id, tuple(commit.opened)))
        if commit.first_check_ms is not None:
            self.scheduler.register(session_id, item.id, commit.first_check_ms)
        if commit.verdict == Admission.MOVED:
            return await self._admit(slot)  # the queue changed under us: look again
        if commit.verdict == Admission.GONE:
            return Result.SESSION_FAILED
        if commit.verdict == Admission.FAILED:
            log.warning("session %s: admission of %s failed: %s", session_id, item.id, problem)
            return Result.ADMISSION_FAILED
        change, after = commit.change, commit.session
        assert change is not None and after is not None and snapshot is not None
        admitted_item = change.record.find(item.id)
        assert admitted_item is not None
        return Admitted(after, admitted_item, snapshot, policy, workspace, resolved)

    async def _complete(self, slot: Slot, admitted: Admitted, outcome: TurnOutcome) -> ItemOutcome:
        """Write the turn's outcome; a cancel committed meanwhile wins over it."""
        session_id, work_id = slot.session_id, admitted.item.id
        failure: str | None = None
        if outcome.end == TurnEnd.COMPLETED:
            result_outcome = WorkOutcome.COMPLETED
        elif outcome.end == TurnEnd.PAUSED:
            result_outcome = WorkOutcome.PAUSED
        else:
            result_outcome = WorkOutcome.FAILED
            failure = outcome.diagnostic or (
                reasons.CANCELLED
                if outcome.end == TurnEnd.CANCELLED
                else reasons.TURN_NOT_COMMITTED
            )
        now = self.clock.now_ms()

        def write() -> tuple[CompletionDecision, Change | None, Session | None]:
            # The running item is the head; the one after it decides the state afterwards.
            record = control.load_record(session_id, include=[work_id], open_limit=2)
            if record is None:
                return CompletionDecision.STALE_WORK, None, None
            chosen = result_outcome
            if chosen == WorkOutcome.PAUSED and history.history_proof(session_id) == work_id:
                chosen = WorkOutcome.COMPLETED  # the history commit landed after all
            decision, change = reducers.finish(
                record, work_id, chosen, now, failure if chosen == WorkOutcome.FAILED else None
            )
            if change is not None:
                control.save_change(change)
                control.reconcile_terminals(session_id, now, only=[work_id])
            return decision, change, repo.get_session(session_id) if change else None

        try:
            decision, change, after = await self.store.write(write, label="complete")
        except StoreError as exc:
            log.warning("session %s: completion of %s not saved: %s", session_id, work_id, exc)
            return ItemOutcome(Result.CONTROL_FAILED)
        finally:
            self.scheduler.wake(session_id)
        publish_change(self.bus, change, after)
        if decision == CompletionDecision.CANCELLATION_WON:
            return ItemOutcome(Result.CANCELLED)
        if decision == CompletionDecision.STALE_WORK or change is None:
            return ItemOutcome(Result.CONTROL_FAILED)
        finished = change.record.find(work_id)
        assert finished is not None
        if finished.status == WorkStatus.INTERRUPTED:
            return ItemOutcome(Result.PAUSED)
        if finished.status == WorkStatus.AWAITING_APPROVAL:
            return ItemOutcome(Result.AWAITING_APPROVAL)
        if finished.status == WorkStatus.FAILED:
            return ItemOutcome(Result.FAILED)
        if change.record.mode == SessionMode.ONE_OFF:
            return ItemOutcome(Result.COMPLETED)
        if reducers.next_runnable(change.record.items, slot.retry) is not None:
            return ItemOutcome.more_work()
        return ItemOutcome(Result.IDLE)
