"""Start-up recovery of many sessions in one transaction (runs on the store's writer thread)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from fxdesk.domain.model import Session, WorkStatus
from fxdesk.domain.work import Change, RestartRecovery, recover
from fxdesk.store import control, history, repo
from fxdesk.store.schema import database_proxy

log = logging.getLogger(__name__)

RecoveryHook = Callable[[str, Change, int], None]

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
    session_ids: list[str], now: int, include_pending: bool = True, snapshots: bool = True
) -> list[Recovered]:
    """Recover each session in its own savepoint, all in one transaction (writer thread).

    ``snapshots=False`` skips re-reading each changed session for its event (at start-up no
    view is listening yet; views load the catalog afterwards)."""
    results = []
    for session_id in session_ids:
        try:
            with database_proxy.atomic():
                record = control.load_record(session_id)
                if record is None:
                    continue
                proof = history.history_proof(session_id)
                stats, change = recover(record, proof, now, include_pending=include_pending)
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
