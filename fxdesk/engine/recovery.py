"""Start-up recovery of many sessions in one transaction (runs on the store's writer thread)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from fxdesk.domain.model import Session, WorkStatus
from fxdesk.domain.work import Change, RestartRecovery, recover
from fxdesk.store import Store, control, history, owners, repo
from fxdesk.store.schema import database_proxy

log = logging.getLogger(__name__)

RecoveryHook = Callable[[str, Change, int], None]
OwnerAlive = Callable[[str], bool]  # whether the fxdesk instance with this id still runs

# Called inside the recovery transaction for every session recovery changed, with the session
# id, the change and the time. The permissions issue registers one that marks approvals of
# interrupted work stale and of cancelled work cancelled (spec child-sessions §3.12 step 6).
RECOVERY_HOOKS: list[RecoveryHook] = []


@dataclass(frozen=True)
class Recovered:
    session_id: str
    stats: RestartRecovery = field(default_factory=RestartRecovery)
    change: Change | None = None
    session: Session | None = None
    failed: bool = False


def recover_sessions(
    session_ids: list[str],
    now: int,
    include_pending: bool = True,
    snapshots: bool = True,
    dead_owners: Collection[str] = (),
) -> list[Recovered]:
    """Recover each session in its own savepoint, all in one transaction (writer thread).

    ``snapshots=False`` skips re-reading each changed session for its event (at start-up no
    view is listening yet; views load the catalog afterwards). With ``include_pending=False``,
    the pending items that one of ``dead_owners`` queued are interrupted all the same: the
    process that was to run them is gone (spec §3.7)."""
    results = []
    for session_id in session_ids:
        try:
            with database_proxy.atomic():
                record = control.load_record(session_id)
                if record is None:
                    continue
                proof = history.history_proof(session_id)
                abandoned = owners.pending_queued_by(session_id, dead_owners)
                stats, change = recover(
                    record, proof, now, include_pending=include_pending, abandoned=abandoned
                )
                if change is not None:
                    control.save_change(change)
                    for hook in RECOVERY_HOOKS:
                        hook(session_id, change, now)
                    finished = [i.id for i in change.items if i.status == WorkStatus.COMPLETED]
                    control.reconcile_terminals(session_id, now, only=finished)
                session = repo.get_session(session_id) if change and snapshots else None
                results.append(Recovered(session_id, stats, change, session))
        except Exception:
            log.exception("recovery of session %s failed", session_id)
            results.append(Recovered(session_id, failed=True))
    return results


async def dead_queue_owners(
    store: Store, root_id: str | None, owner_alive: OwnerAlive
) -> frozenset[str]:
    """The fxdesk instances that queued pending work and are gone. A dead one stays dead (ids
    are never reused), so judging before the recovery transaction is safe."""
    queued_by = await store.read(lambda: owners.pending_owners(root_id))
    return frozenset(o for o in queued_by if not owner_alive(o))
