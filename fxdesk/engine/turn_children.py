"""The parent-boundary injection (spec child-sessions §2.15, scenario 60).

Before each model call of a turn, the terminal results of the session's managed children that
its model has not read yet go into the turn as one user message: their terminal state and final
answer, never their tool activity nor their approvals (those are the person's). The message is a
history row listing the delivery ids it carries, written in the transaction that found them
unread, so each result reaches the model once, across restarts too.
"""

from __future__ import annotations

from collections.abc import Callable

from fxdesk.domain.child_agents import CHILD_RESULTS_KEY, describe_results
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind
from fxdesk.store import Store, child_results, history

CHILD_RESULTS_SOURCE = "sub-agents"


async def take_child_results(
    store: Store,
    session_id: str,
    work_id: str,
    step: int,
    now_ms: int,
    refuse_if_stopping: Callable[[], None],
) -> list[HistoryEntry]:
    """Append the unread results to the turn; the rows written (none: nothing unread)."""
    if not await store.read(lambda: child_results.has_children(session_id)):
        return []
    if not await store.read(lambda: child_results.unread_results(session_id)):
        return []

    def write() -> list[HistoryEntry]:
        refuse_if_stopping()
        unread = child_results.unread_results(session_id)  # again: decided in the write
        if not unread:
            return []
        row = HistoryEntry(
            session_id=session_id,
            seq=0,
            kind=EntryKind.USER,
            work_id=work_id,
            step=step,
            content=describe_results(unread),
            data={
                CHILD_RESULTS_KEY: [r.delivery_id for r in unread],
                "source": CHILD_RESULTS_SOURCE,
            },
            created_at_ms=now_ms,
        )
        return history.append_history(session_id, [row])

    return await store.write(write, label="child_results")
