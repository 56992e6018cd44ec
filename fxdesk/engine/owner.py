"""The session owner: runs every session's queue, root or child (spec child-sessions §3.9–3.12).

One asyncio task (a *slot*) per session with work. ``start`` never loses a wake: a start that
arrives while the slot runs makes it look at its queue again, or, when that run ends paused or
stopped, a new slot serves it. A slot is registered only once its task exists. Each item runs
under the session's cross-process lock, so one session never runs two items at once, here or in
another process.

Durable first, live second: ``cancel`` commits the cancellation, then signals the running turn,
then writes the terminal deliveries in a transaction of their own (a failure there is repaired
later); a late successful turn can never overwrite the cancel. ``shutdown`` writes nothing:
unfinished work stays as it is for the next start's recovery.

The owner composes its collaborators: an ``ItemRunner`` runs one item, a ``BusyTracker`` knows
which sessions another process runs, ``WorkspacePaths`` caches workspace folders; it keeps the
slots, the cached results and the waiters itself.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
from pathlib import Path

from fxdesk import messages
from fxdesk.domain import reasons
from fxdesk.domain import work as reducers
from fxdesk.domain.live import LiveSnapshot
from fxdesk.domain.model import Session
from fxdesk.domain.work import Change
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.bus import EventBus
from fxdesk.engine.busy import BusyTracker
from fxdesk.engine.cancel import CancelToken
from fxdesk.engine.clock import Clock, SystemClock
from fxdesk.engine.errors import OwnerClosed, SessionNotActive, SessionNotFound, WorkActive
from fxdesk.engine.events import RecoveryReport, publish_change
from fxdesk.engine.execution import ItemRunner
from fxdesk.engine.providers import ProviderResolver
from fxdesk.engine.recovery import OwnerAlive, dead_queue_owners, recover_sessions
from fxdesk.engine.report_scheduler import ReportScheduler
from fxdesk.engine.slots import COMPLETION_CACHE, Drain, Result, Slot, StartResult
from fxdesk.engine.turn import TurnRunner
from fxdesk.engine.waiters import SessionWaiter, WaiterRegistry
from fxdesk.engine.workspaces import WorkspacePaths
from fxdesk.store import Store, StoreError, approvals, control, repo
from fxdesk.store.locks import SessionLock, SessionLockBusy

__all__ = [
    "OwnerClosed",
    "Result",
    "SessionNotActive",
    "SessionNotFound",
    "SessionOwner",
    "StartResult",
    "WorkActive",
]

log = logging.getLogger(__name__)

# A run ending so is not repeated in the same slot when a start arrived meanwhile: whoever
# joined it hears this result first, and a new slot then serves that start (spec §3.10).
_RESTART_RESULTS = frozenset({Result.AWAITING_APPROVAL, Result.PAUSED, Result.OWNER_STOPPED})


class SessionOwner:
    """Runs sessions' work. Create one per process; ``shutdown`` before the store closes.

    Args:
        store: The store every transaction goes through.
        bus: Where committed changes are published.
        lock_dir: The folder of the per-session lock files.
        providers: Finds the provider and profile of a session's next turn.
        runner: Runs one turn.
        authority: Captures admission snapshots; by default one allowing the runner's tools.
        lock_deadline_s: How long to wait for a session lock another process holds.
        scheduler: Interval and terminal reports; by default none are scheduled.
        clock: The engine's time; by default the scheduler's, else the system clock.
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        *,
        lock_dir: Path,
        providers: ProviderResolver,
        runner: TurnRunner,
        authority: HostAuthority | None = None,
        lock_deadline_s: float = 0.0,
        scheduler: ReportScheduler | None = None,
        clock: Clock | None = None,
    ) -> None:
        # Fixed at construction: the item runner below is handed these same objects.
        self.store = store
        self.bus = bus
        self.lock_dir = lock_dir
        self.providers = providers
        self.runner = runner
        self.authority = authority or HostAuthority(tool_names=tuple(runner.tools.names))
        self.lock_deadline_s = lock_deadline_s
        self.scheduler = scheduler or ReportScheduler(None, None)
        self.clock = clock or (scheduler.clock if scheduler and scheduler.clock else SystemClock())
        self.closed = False
        self._slots: dict[str, Slot] = {}
        self._completions: collections.OrderedDict[str, Result] = collections.OrderedDict()
        self.waiters = WaiterRegistry()
        self._busy = BusyTracker(bus, lock_dir)
        # Session id -> the pid of the process that holds its lock (None when unknown).
        self.busy_elsewhere: dict[str, int | None] = self._busy.sessions
        self._items = ItemRunner(
            store,
            bus,
            lock_dir=lock_dir,
            lock_deadline_s=lock_deadline_s,
            providers=providers,
            runner=runner,
            authority=self.authority,
            scheduler=self.scheduler,
            clock=self.clock,
            busy=self._busy,
            workspaces=WorkspacePaths(store),
            closed=lambda: self.closed,
        )

    # --- start / join ------------------------------------------------------------------------

    def start(self, session_id: str, retry: bool = False) -> StartResult:
        """Run the session's queue; ``retry`` also resumes interrupted or approval-held work.

        A start that finds the slot running is never lost: the slot looks at its queue again
        when its run ends, or, when that run ended paused or stopped, a new slot is started for
        it (spec §3.10). If the slot cannot be made, ``start`` raises and nothing is registered.
        """
        if self.closed:
            raise OwnerClosed("the session owner is shut down")
        slot = self._slots.get(session_id)
        if slot is not None and not slot.finished:
            self._completions.pop(session_id, None)
            slot.retry = slot.retry or retry
            slot.wake_requested = True
            return StartResult.ALREADY_RUNNING
        self._spawn(Slot(session_id, retry))
        self._completions.pop(session_id, None)
        return StartResult.STARTED

    def _spawn(self, slot: Slot) -> None:
        """Give ``slot`` its task and register it, in that order: a slot is registered only
        once its task exists, and a failure leaves nothing behind (spec scenario 24)."""
        worker = self._worker(slot)
        try:
            slot.task = asyncio.get_running_loop().create_task(
                worker, name=f"session-{slot.session_id}"
            )
        except BaseException:
            worker.close()  # never started: no "coroutine was never awaited"
            raise
        try:
            self._slots[slot.session_id] = slot
        except BaseException:
            slot.task.cancel()  # cancelled before its first step: the worker never runs
            raise

    async def join(self, session_id: str) -> Result:
        """Wait for the session's slot to finish; its final result (consumes a cached one)."""
        slot = self._slots.get(session_id)
        if slot is not None and slot.task is not None:
            result = await asyncio.shield(slot.task)
            self._completions.pop(session_id, None)
            return result
        if session_id in self._completions:
            return self._completions.pop(session_id)
        raise SessionNotActive(session_id)

    def last_result(self, session_id: str) -> Result | None:
        slot = self._slots.get(session_id)
        if slot is not None and slot.finished:
            return slot.result
        return self._completions.get(session_id)

    def is_running(self, session_id: str) -> bool:
        slot = self._slots.get(session_id)
        return slot is not None and not slot.finished

    def external_busy(self, session_id: str) -> bool:
        return (
            session_id in self.busy_elsewhere
            or self.last_result(session_id) == Result.EXTERNAL_BUSY
        )

    def live_snapshot(self, session_id: str) -> LiveSnapshot | None:
        slot = self._slots.get(session_id)
        return slot.live.snapshot() if slot is not None and not slot.finished else None

    def waiter(self, session_id: str) -> SessionWaiter:
        return self.waiters.register(session_id)

    @property
    def completion_count(self) -> int:
        return len(self._completions)

    @property
    def active_slots(self) -> int:
        return sum(1 for s in self._slots.values() if not s.finished)

    async def _worker(self, slot: Slot) -> Result:
        prior = slot.prior
        result = Result.CONTROL_FAILED
        try:
            while True:
                result = await self._drain(slot)
                if not slot.wake_requested or result in _RESTART_RESULTS or self._stopping(slot):
                    break
                # A start arrived while this run was going: look at the queue again.
                if result != Result.NO_WORK:
                    prior = result
                slot.wake_requested = False
                slot.cancel = CancelToken()
            if result == Result.NO_WORK and prior is not None:
                result = prior  # an extra wake does not hide the real outcome
        except Exception as exc:
            log.exception("session %s: worker failed", slot.session_id)
            messages.error(
                f"fxdesk hit a bug while running session {slot.session_id}.",
                key=f"worker:{slot.session_id}",
                details=f"{type(exc).__name__}: {exc}",
            )
            result = Result.CONTROL_FAILED
        finally:
            slot.result = result
            slot.finished = True
            slot.live.clear()
            if self._slots.get(slot.session_id) is slot:
                del self._slots[slot.session_id]
            self._completions[slot.session_id] = result
            self._completions.move_to_end(slot.session_id)
            while len(self._completions) > COMPLETION_CACHE:
                self._completions.popitem(last=False)
            self.waiters.signal(slot.session_id)
            if slot.wake_requested and not self.closed:
                self._restart(slot)
            elif result == Result.EXTERNAL_BUSY and not self.closed:
                # Its work stays queued here: run it once the other process lets go.
                self._busy.watch(
                    slot.session_id,
                    functools.partial(self._start_freed, slot.session_id, slot.retry),
                )
        return result

    def _start_freed(self, session_id: str, retry: bool) -> None:
        """The session another process held is free: run its queue here (unless closing, or a
        start here already runs it)."""
        if not self.closed and not self.is_running(session_id):
            self.start(session_id, retry=retry)

    def _stopping(self, slot: Slot) -> bool:
        return slot.shutdown or self.closed

    def _restart(self, finished: Slot) -> None:
        """Serve a start that arrived while ``finished`` ran and that its run could not take
        (it ended paused, awaiting approval or stopped): a new slot, with the wake's retry
        flag. Whoever joined ``finished`` has its result; the new slot's run is a new one."""
        slot = Slot(finished.session_id, finished.retry)
        if finished.result != Result.NO_WORK:
            slot.prior = finished.result  # a new run that finds nothing keeps this outcome
        try:
            self._spawn(slot)
        except Exception as exc:  # MemoryError, a closing loop: the next start tries again
            log.exception("session %s: cannot restart for a pending start", slot.session_id)
            messages.error(
                f"fxdesk could not run session {slot.session_id} again; resume it to continue.",
                key=f"worker:{slot.session_id}",
                details=f"{type(exc).__name__}: {exc}",
            )
            return
        self._completions.pop(slot.session_id, None)

    async def _drain(self, slot: Slot) -> Result:
        while True:
            outcome = await self._items.run_one(slot)
            if outcome.drain == Drain.STOP:
                return outcome.result

    # --- cancel ------------------------------------------------------------------------------

    async def cancel(self, session_id: str, reason: str = reasons.CANCELLED_BY_PERSON) -> int:
        """Cancel every pending, running and approval-waiting item: durable first, then the
        live turn is told, then the terminal deliveries are written (spec §3.12).

        Returns how many items changed. The terminals are a transaction of their own, so a
        failure writing them neither fails the cancel nor keeps the turn running; it is logged
        and repaired later (by the next cancel, the next item the session runs, a report poll
        or the next start's recovery). Safe to repeat: a repeat returns 0 and still writes a
        missing terminal.

        Raises:
            SessionNotFound: no such session.
            StoreError: the cancel itself could not be saved (then nothing changed).
        """
        reason = reasons.validate_reason(reason)
        now = self.clock.now_ms()

        def write() -> tuple[int, Change | None, Session | None]:
            record = control.load_record(session_id)
            if record is None:
                raise SessionNotFound(session_id)
            count, change = reducers.cancel(record, reason, now)
            if change is None:
                return count, None, None
            control.save_change(change)
            return count, change, repo.get_session(session_id)

        count, change, after = await self.store.write(write, label="cancel")
        publish_change(self.bus, change, after)
        self.complete_committed_cancellation(session_id, reason)
        if not self.closed:  # after shutdown began nothing is written: the next start sweeps
            await self.repair_terminals(session_id)
        return count

    async def repair_terminals(self, session_id: str) -> int:
        """Write the terminal deliveries the session's finished items lack, in a transaction
        of their own; a failure is logged (the next reconciliation point repairs it)."""
        now = self.clock.now_ms()
        try:
            return await self.store.write(
                lambda: control.reconcile_terminals(session_id, now), label="terminals"
            )
        except StoreError as exc:
            log.warning("session %s: terminal deliveries not saved yet: %s", session_id, exc)
            return 0

    def complete_committed_cancellation(self, session_id: str, reason: str = "cancelled") -> None:
        """The live part of a cancel that is already durable: stop the turn, wake waiters."""
        slot = self._slots.get(session_id)
        if slot is not None:
            slot.cancel.cancel(reason)
        self.waiters.signal(session_id)
        self.scheduler.wake(session_id)

    async def stop_reports(self, session_id: str) -> None:
        """After a close or detach: stop the session's policies durably, then drop their
        schedules; if that cannot be saved, wake them so the next poll stops them."""
        now = self.clock.now_ms()
        try:
            await self.store.write(
                lambda: control.stop_policies(session_id, now), label="stop_policies"
            )
        except StoreError as exc:
            log.warning("session %s: report cleanup deferred: %s", session_id, exc)
            self.scheduler.wake(session_id)
            return
        self.scheduler.remove_session(session_id)

    async def stop_live_work(self, session_id: str, reason: str = "closed") -> None:
        """After a durable close: stop the session's running turn without writing its result,
        and wait for the slot to end."""
        slot = self._slots.get(session_id)
        self.waiters.signal(session_id)
        if slot is None or slot.task is None:
            await self.runner.acp_agents.stop(session_id)
            return
        slot.shutdown = True
        slot.cancel.cancel(reason)
        await asyncio.gather(slot.task, return_exceptions=True)
        await self.runner.acp_agents.stop(session_id)  # its external agent, if one runs

    # --- recovery ----------------------------------------------------------------------------

    async def recover(
        self,
        root_id: str | None = None,
        *,
        include_pending: bool = True,
        chunk: int = 200,
        publish_sessions: bool = True,
        exclusive: bool = False,
        owner_alive: OwnerAlive | None = None,
    ) -> RecoveryReport:
        """After a start: unfinished work becomes interrupted (or completed, when the history
        proves it); sessions another live process holds are reported and left alone. Nothing
        runs until resumed (spec §3.7, §3.12 "recover"). With ``root_id``, only the sessions
        below that root are looked at ("recoverTree").

        Pending work never started, so which of it a restart abandons is the caller's rule:
        ``include_pending=True`` takes all of it (the spec's single process); with False,
        ``owner_alive`` judges each item by the fxdesk instance that queued it: the pending
        work of a dead one is interrupted, of a live one kept, and work queued for whichever
        fxdesk runs next (no owner: ``fxdesk send --no-wait``) is never interrupted.

        ``exclusive`` means no other fxdesk process exists (the caller holds the instance lock
        exclusively until this has committed): then no session lock needs proving, only this
        process's own running sessions are left alone. Taking a thousand lock files costs more
        than the rest."""
        dead_owners: frozenset[str] = frozenset()
        if owner_alive is not None and not include_pending:
            dead_owners = await dead_queue_owners(self.store, root_id, owner_alive)
        session_ids = await self.store.read(
            lambda: control.sessions_with_open_work(root_id, include_pending, dead_owners)
        )
        totals = collections.Counter[str]()
        busy_ids: list[str] = []
        interrupted_ids: list[str] = []
        for start in range(0, len(session_ids), chunk):
            locks: list[SessionLock] = []
            try:
                free: list[str] = []
                for session_id in session_ids[start : start + chunk]:
                    if exclusive:
                        if session_id in self._slots:  # running here: counted, not touched
                            totals["busy"] += 1
                            busy_ids.append(session_id)
                        else:
                            free.append(session_id)
                        continue
                    lock = SessionLock(self.lock_dir, session_id)
                    try:
                        lock.acquire(0.0)
                    except SessionLockBusy as busy:
                        totals["busy"] += 1
                        busy_ids.append(session_id)
                        if session_id not in self._slots:  # our own running work is not "busy"
                            self._busy.mark_busy(session_id, busy.holder_pid)
                        continue
                    locks.append(lock)
                    free.append(session_id)
                outcomes = await self.store.write(
                    functools.partial(
                        recover_sessions,
                        free,
                        self.clock.now_ms(),
                        include_pending,
                        publish_sessions,
                        dead_owners,
                    ),
                    label="recover",
                )
            finally:
                for lock in locks:
                    lock.release()
            for outcome in outcomes:
                if outcome.failed:
                    totals["failed"] += 1
                    continue
                self._busy.mark_free(outcome.session_id)
                if outcome.change is not None:
                    totals["changed"] += 1
                    totals["interrupted"] += outcome.stats.interrupted
                    totals["completed"] += outcome.stats.completed
                    if outcome.stats.interrupted:
                        interrupted_ids.append(outcome.session_id)
                    publish_change(self.bus, outcome.change, outcome.session)
        # Approvals whose work was interrupted go stale, of cancelled or finished work are
        # cancelled (spec §6.4), also those a crash left behind after the item's change.
        now = self.clock.now_ms()
        await self.store.write(lambda: approvals.reconcile(now), label="approvals_reconcile")
        if root_id is None:
            await self._sweep_terminals(now)
        report = RecoveryReport(
            sessions_changed=totals["changed"],
            work_interrupted=totals["interrupted"],
            work_completed=totals["completed"],
            sessions_external_busy=totals["busy"],
            sessions_failed=totals["failed"],
            busy_sessions=tuple(busy_ids),
            interrupted_sessions=tuple(interrupted_ids),
        )
        log.info("recovery: %s", report)
        self.bus.publish(report)
        return report

    async def _sweep_terminals(self, now: int) -> None:
        """Terminals a cancel committed but never wrote (the process ended, or the write
        failed, in between); a failure here is logged and the next start sweeps again."""
        try:
            written = await self.store.write(
                lambda: control.sweep_terminals(now), label="terminal_sweep"
            )
        except StoreError as exc:
            log.warning("recovery: terminal deliveries not repaired yet: %s", exc)
            return
        if written:
            log.info("recovery: %d missing terminal deliveries written", written)

    # --- shutdown ----------------------------------------------------------------------------

    async def shutdown(self) -> None:
        """Stop every slot and release every waiter. Writes nothing durable."""
        if self.closed:
            return
        self.closed = True
        self.waiters.closed = True
        slots = list(self._slots.values())
        for slot in slots:
            slot.shutdown = True
            slot.cancel.cancel("fxdesk is shutting down")
        self.waiters.signal_all()
        self.runner.close()  # approval waits released, new asks refused (spec §5.5 step 3)
        await self.scheduler.stop()
        await self._busy.close()
        tasks = [slot.task for slot in slots if slot.task is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.runner.acp_agents.stop_all()
        log.info("session owner stopped (%d running sessions left for recovery)", len(tasks))
