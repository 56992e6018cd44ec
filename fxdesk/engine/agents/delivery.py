"""Delivering a root session's inbox to its agent (spec agent-coordinator §2.7, §4.8).

Inbox events reach the root agent as a message in its own queue, written in the same
transaction that claims and acknowledges them, so an event is delivered once and never lost:

* an event that asks for a continuation (a background run finished, a signal) wakes the root:
  idle, it gets a ``continuation`` work item and starts; running, the item is queued behind the
  current turn and runs when that turn ends (its next turn boundary);
* a ``steer``-lane event while the root runs goes in as a ``steer`` message: the running turn
  takes it at its next step boundary (the existing steer path);
* events that ask for none (the completions recovery wrote for interrupted runs) wait for the
  root's next turn: when the person sends a message, they go in as a steer message right
  behind it, so that turn's first model call sees them. Nothing runs by itself for them.

The message says it comes from the inbox (kind ``continuation``/``steer``, source ``inbox``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from fxdesk.domain.agent_inbox import EventKind, EventStatus, InboxEvent, Lane
from fxdesk.domain.agent_runs import Limits
from fxdesk.domain.model import Session, SessionState, WorkKind
from fxdesk.domain.work import Change
from fxdesk.engine.agents.events import InboxChanged
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import Clock
from fxdesk.engine.events import publish_change
from fxdesk.engine.owner import SessionOwner
from fxdesk.engine.sessions import enqueue_in_write
from fxdesk.store import Store, StoreError, agent_inbox, repo

log = logging.getLogger(__name__)

INBOX_SOURCE = "inbox"
DETAILS_CHARS = 600


def describe_events(events: Sequence[InboxEvent]) -> str:
    """The message the root agent reads for these events."""
    lines = [f"[inbox] {len(events)} update(s) from your sub-agents:"]
    for event in events:
        p = event.payload
        if event.kind is EventKind.COMPLETION:
            text = p.get("summary") or p.get("error") or ""
            line = f"- Run {p.get('run_id')} ({p.get('agent_id')}) {p.get('status')}"
            lines.append(f"{line}: {text}" if text else line)
        else:
            line = (
                f"- Signal {event.severity} {p.get('key')} from run {p.get('run_id')} "
                f"({p.get('agent_id')}): {p.get('summary')}"
            )
            if event.count > 1:
                line += f" (raised {event.count} times)"
            if p.get("details") is not None:
                details = json.dumps(p["details"], sort_keys=True)
                line += f"\n  details: {details[:DETAILS_CHARS]}"
            lines.append(line)
    return "\n".join(lines)


@dataclass(frozen=True)
class _Delivered:
    change: Change
    session: Session | None
    events: int


class InboxDelivery:
    """Delivers root sessions' inbox events as messages in their queues."""

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        owner: SessionOwner,
        clock: Clock,
        limits: Limits,
        lease_owner: str,
    ) -> None:
        self.store = store
        self.bus = bus
        self.owner = owner
        self.clock = clock
        self.limits = limits
        self.lease_owner = lease_owner

    async def wake(self, root_session_id: str) -> bool:
        """Deliver the root's due events if one asks for a continuation; True when a message
        was queued (and the root started)."""
        if self.owner.closed:
            return False
        running = self.owner.is_running(root_session_id)
        delivered = await self._deliver(root_session_id, running=running, with_prompt=False)
        if delivered:
            self.owner.start(root_session_id)
        return delivered

    async def attach_to_next_turn(self, root_session_id: str) -> bool:
        """The person queued a message: every due event goes in right behind it (a steer the
        turn takes before its first model call). The caller starts the session."""
        return await self._deliver(root_session_id, running=True, with_prompt=True)

    async def _deliver(self, root_id: str, *, running: bool, with_prompt: bool) -> bool:
        now = self.clock.now_ms()
        owner, limits = self.lease_owner, self.limits

        def write() -> _Delivered | None:
            session = repo.get_session(root_id)
            if session is None or session.state == SessionState.ARCHIVED or session.is_child:
                return None
            due = [
                e
                for e in agent_inbox.list_inbox(root_id, counted_only=True)
                if e.status is EventStatus.PENDING and e.available_at_ms <= now
            ]
            if not due or not (with_prompt or any(e.requires_continuation for e in due)):
                return None
            claimed = agent_inbox.claim_due(root_id, owner, limits, now)
            if not claimed:
                return None
            steer = with_prompt or (running and any(e.lane is Lane.STEER for e in claimed))
            kind = WorkKind.STEER if steer else WorkKind.CONTINUATION
            change = enqueue_in_write(root_id, describe_events(claimed), kind, INBOX_SOURCE, now)
            agent_inbox.acknowledge([e.id for e in claimed], owner, now)
            return _Delivered(change, repo.get_session(root_id), len(claimed))

        try:
            delivered = await self.store.write(write, label="inbox_delivery")
        except StoreError as exc:  # nothing claimed: the next wake or the person's turn retries
            log.warning("inbox of %s not delivered yet: %s", root_id, exc)
            return False
        if delivered is None:
            return False
        publish_change(self.bus, delivered.change, delivered.session)
        self.bus.publish(InboxChanged(root_id))
        log.info("inbox of %s: %d event(s) delivered", root_id, delivered.events)
        return True
