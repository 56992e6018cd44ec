"""The durable poller behind the report scheduler: interval and terminal reports.

Each poll is one transaction: read the work item's captured policy and state, write at most one
delivery (stable ids: a repeated poll never duplicates it), move the next check, or stop the
policy. No model is ever called.
"""

from __future__ import annotations

from fxdesk.domain.deliveries import Delivery, DeliveryKind, interval_id
from fxdesk.domain.model import SessionState
from fxdesk.domain.report_policy import DURATION_ELAPSED, TERMINAL
from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import DeliveryAdded
from fxdesk.engine.report_scheduler import Poller, PollKind, PollOutcome
from fxdesk.store import Store, control, repo


class ReportPoller(Poller):
    def __init__(self, store: Store, bus: EventBus) -> None:
        self.store = store
        self.bus = bus
        self.calls = 0

    async def poll(self, session_id: str, work_id: str, now_ms: int) -> PollOutcome:
        self.calls += 1

        def job() -> tuple[PollOutcome, Delivery | None]:
            state = control.policy_state(work_id)
            item = control.get_item(work_id)
            session = repo.get_session(session_id)
            if state is None or state[3] or item is None or session is None:
                return PollOutcome(PollKind.INACTIVE), None
            policy, started, next_due, _stopped = state
            detached = session.is_child and session.parent_id is None
            if session.state == SessionState.ARCHIVED or detached:
                control.stop_policies(session_id, now_ms)
                return PollOutcome(PollKind.STOPPED), None
            if item.status.terminal and TERMINAL in policy.stop_conditions:
                control.reconcile_terminals(session_id, now_ms, only=[work_id])
                control.stop_policies(session_id, now_ms, work_id)
                return PollOutcome(PollKind.STOPPED), None
            ends = (
                started + policy.report_duration_ms
                if policy.report_duration_ms is not None
                else None
            )
            if ends is not None and now_ms >= ends:
                control.stop_policies(session_id, now_ms, work_id)
                return PollOutcome(PollKind.STOPPED), None
            interval = policy.report_interval_ms
            if next_due is None or interval is None:
                return PollOutcome(PollKind.INACTIVE), None
            if now_ms < next_due:
                return PollOutcome(PollKind.PENDING, next_due), None
            ticks = 1 + (now_ms - next_due) // interval
            following = next_due + ticks * interval
            if ends is not None:
                following = min(following, ends)
            delivery = Delivery(
                id=interval_id(session_id, work_id, next_due),
                session_id=session_id,
                target_id=session.root_id,
                kind=DeliveryKind.INTERVAL,
                payload={"state": item.status.value, "ticks": ticks},
                work_id=work_id,
                created_at_ms=now_ms,
            )
            added = control.append_delivery(delivery)
            if (
                ends is None
                and item.status.terminal
                and DURATION_ELAPSED not in (policy.stop_conditions)
            ):
                control.stop_policies(session_id, now_ms, work_id)
                return PollOutcome(PollKind.EMITTED, None, ticks), delivery if added else None
            control.set_policy_due(work_id, following)
            return PollOutcome(PollKind.EMITTED, following, ticks), delivery if added else None

        outcome, delivery = await self.store.write(job, label="poll")
        if delivery is not None:
            self.bus.publish(DeliveryAdded(delivery))
        return outcome
