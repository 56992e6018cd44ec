"""Running one work item: the session owner's "run one" step (spec child-sessions §3.9).

Take the session lock (busy elsewhere → ``external_busy``), admit the FIFO head in one
transaction (admission snapshot, notification policy and the turn's first history row with it),
run the turn, then apply its outcome, where a committed cancel always wins.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from fxdesk.domain import reasons
from fxdesk.domain import work as reducers
from fxdesk.domain.authority import AdmissionSnapshot, snapshot_mismatch
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import Session, SessionMode, SessionState, WorkStatus
from fxdesk.domain.notifications import NotificationPolicy
from fxdesk.domain.work import Change, CompletionDecision, WorkOutcome
from fxdesk.engine.events import HistoryAppended
from fxdesk.engine.providers import Resolved
from fxdesk.engine.slots import MORE_WORK, Admitted, Result, Slot
from fxdesk.engine.turn import TurnEnd, TurnOutcome, TurnRuntime
from fxdesk.providers.base import ProviderError
from fxdesk.store import StoreError, control, history, repo
from fxdesk.store.locks import SessionLock, SessionLockBusy

if TYPE_CHECKING:
    from fxdesk.engine.owner import SessionOwner

log = logging.getLogger(__name__)


async def run_one(owner: SessionOwner, slot: Slot) -> Result | str:
    lock = SessionLock(owner.lock_dir, slot.session_id)
    try:
        await _acquire(owner, lock)
    except SessionLockBusy as busy:
        log.info("session %s is busy in process %s", slot.session_id, busy.holder_pid)
        owner._mark_busy(slot.session_id, busy.holder_pid)
        return Result.EXTERNAL_BUSY
    except OSError:
        log.exception("session %s: cannot take its lock", slot.session_id)
        return Result.SESSION_FAILED
    try:
        owner._mark_busy(slot.session_id, None, busy=False)
        return await _run_locked(owner, slot)
    finally:
        lock.release()
        slot.live.clear()


async def _acquire(owner: SessionOwner, lock: SessionLock) -> None:
    if owner.lock_deadline_s <= 0:
        lock.acquire(0.0)
    else:
        await asyncio.to_thread(lock.acquire, owner.lock_deadline_s)


async def _run_locked(owner: SessionOwner, slot: Slot) -> Result | str:
    try:
        admitted = await _admit(owner, slot)
    except StoreError as exc:
        log.warning("session %s: admission not saved: %s", slot.session_id, exc)
        return Result.CONTROL_FAILED
    if isinstance(admitted, Result):
        return admitted
    slot.live.begin(admitted.item.id)
    resolved = admitted.resolved
    if isinstance(resolved, ProviderError):
        outcome = TurnOutcome(
            TurnEnd.FAILED, reasons.diagnostic(reasons.PROVIDER_FAILED, str(resolved))
        )
    else:
        outcome = await owner.runner.run(
            TurnRuntime(
                session=admitted.session,
                workspace=admitted.workspace,
                item=admitted.item,
                snapshot=admitted.snapshot,
                provider=resolved.provider,
                cancel=slot.cancel,
                stopping=lambda: slot.shutdown or owner.closed,
                live=slot.live,
                profile=resolved.profile,
            )
        )
    slot.model_calls += outcome.model_calls
    if slot.shutdown or owner.closed:
        return Result.OWNER_STOPPED  # nothing durable: recovery decides at the next start
    return await _complete(owner, slot, admitted, outcome)


async def _admit(owner: SessionOwner, slot: Slot) -> Admitted | Result:
    session_id = slot.session_id

    def read() -> tuple[Session | None, reducers.ControlRecord | None]:
        return repo.get_session(session_id), control.load_record(session_id, open_limit=1)

    session, record = await owner.store.read(read)
    if session is None or record is None:
        return Result.SESSION_FAILED
    index = reducers.next_runnable(record.items, slot.retry)
    if index is None:
        if record.mode == SessionMode.ONE_OFF and record.state == SessionState.COMPLETED:
            return Result.COMPLETED
        return Result.NO_WORK
    item = record.items[index]
    if session.is_child and session.parent_id is None:
        return Result.ADMISSION_FAILED  # a detached child cannot take work; nothing changes
    resolved: Resolved | ProviderError
    try:
        resolved = await owner.providers.resolve(session)
        resolved_model = resolved.model
    except ProviderError as exc:
        resolved = exc  # the turn reports the provider problem
        resolved_model = session.model or "default"
    try:
        snapshot: AdmissionSnapshot | None = owner.authority.capture(
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
    policy = NotificationPolicy.from_data(session.config.get("notifications"))
    workspace = await owner._workspace(session.workspace_id)
    now = owner.clock.now_ms()

    def write() -> tuple[str, Change | None, Session | None, int | None, list[HistoryEntry]]:
        current = control.load_record(session_id, open_limit=1)  # FIFO: the head decides
        if current is None:
            return "gone", None, None, None, []
        position = reducers.next_runnable(current.items, slot.retry)
        if position is None or current.items[position].id != item.id:
            return "moved", None, None, None, []
        if problem:
            change = reducers.fail_admission(current, item.id, now)
            control.save_change(change)
            control.reconcile_terminals(session_id, now, only=[item.id])
            return "failed", change, repo.get_session(session_id), None, []
        change = reducers.admit(current, position, now)
        control.save_change(change)
        assert snapshot is not None
        first = control.capture_policy(session_id, item.id, snapshot.to_json(), policy, now)
        opened = history.ensure_user_entry(item, now)
        return "admitted", change, repo.get_session(session_id), first, opened

    verdict, change, after, first_check, opened = await owner.store.write(write, label="admit")
    owner._publish(change, after)
    if opened:
        owner.bus.publish(HistoryAppended(session_id, tuple(opened)))
    if first_check is not None:
        owner.scheduler.register(session_id, item.id, first_check)
    if verdict == "moved":
        return await _admit(owner, slot)  # the queue changed under us: look again
    if verdict == "gone":
        return Result.SESSION_FAILED
    if verdict == "failed":
        log.warning("session %s: admission of %s failed: %s", session_id, item.id, problem)
        return Result.ADMISSION_FAILED
    assert change is not None and after is not None and snapshot is not None
    admitted_item = change.record.find(item.id)
    assert admitted_item is not None
    return Admitted(after, admitted_item, snapshot, policy, workspace, resolved)


async def _complete(
    owner: SessionOwner, slot: Slot, admitted: Admitted, outcome: TurnOutcome
) -> Result | str:
    session_id, work_id = slot.session_id, admitted.item.id
    failure: str | None = None
    if outcome.end == TurnEnd.COMPLETED:
        result_outcome = WorkOutcome.COMPLETED
    elif outcome.end == TurnEnd.PAUSED:
        result_outcome = WorkOutcome.PAUSED
    else:
        result_outcome = WorkOutcome.FAILED
        failure = outcome.diagnostic or (
            reasons.CANCELLED if outcome.end == TurnEnd.CANCELLED else reasons.TURN_NOT_COMMITTED
        )
    now = owner.clock.now_ms()

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
        decision, change, after = await owner.store.write(write, label="complete")
    except StoreError as exc:
        log.warning("session %s: completion of %s not saved: %s", session_id, work_id, exc)
        return Result.CONTROL_FAILED
    finally:
        owner.scheduler.wake(session_id)
    owner._publish(change, after)
    if decision == CompletionDecision.CANCELLATION_WON:
        return Result.CANCELLED
    if decision == CompletionDecision.STALE_WORK or change is None:
        return Result.CONTROL_FAILED
    finished = change.record.find(work_id)
    assert finished is not None
    if finished.status == WorkStatus.INTERRUPTED:
        return Result.PAUSED
    if finished.status == WorkStatus.AWAITING_APPROVAL:
        return Result.AWAITING_APPROVAL
    if finished.status == WorkStatus.FAILED:
        return Result.FAILED
    if change.record.mode == SessionMode.ONE_OFF:
        return Result.COMPLETED
    if reducers.next_runnable(change.record.items, slot.retry) is not None:
        return MORE_WORK
    return Result.IDLE
