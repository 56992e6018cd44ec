"""What the coordinator publishes on the engine's bus after each applied write (for the window)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AgentRunChanged:
    """A run of ``root_session_id`` was accepted, started, finished or cancelled."""

    root_session_id: str
    run_id: str
    status: str


@dataclass(frozen=True)
class InboxChanged:
    """The inbox of ``root_session_id`` changed (an event arrived or was delivered)."""

    root_session_id: str
