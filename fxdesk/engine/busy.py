"""Which sessions another fxdesk process is running right now (it holds their lock)."""

from __future__ import annotations

from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import BusyElsewhere


class BusyTracker:
    """Session id → the holder's pid (None when unknown); publishes ``BusyElsewhere`` on change.

    Attributes:
        sessions: The sessions busy elsewhere; the owner exposes this dict as ``busy_elsewhere``.
    """

    def __init__(self, bus: EventBus) -> None:
        self.bus = bus
        self.sessions: dict[str, int | None] = {}

    def mark_busy(self, session_id: str, holder_pid: int | None) -> None:
        """Another process holds the session's lock (published every time: the pid may change)."""
        self.sessions[session_id] = holder_pid
        self.bus.publish(BusyElsewhere(session_id, True, holder_pid))

    def mark_free(self, session_id: str) -> None:
        """This process could take the lock; published only if the session was marked busy."""
        if session_id not in self.sessions:
            return
        del self.sessions[session_id]
        self.bus.publish(BusyElsewhere(session_id, False))
