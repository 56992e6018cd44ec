"""Events the engine publishes on its bus. Frozen dataclasses holding domain snapshots."""

from __future__ import annotations

from dataclasses import dataclass

from fxdesk.domain.model import Session, Workspace


@dataclass(frozen=True)
class WorkspaceAdded:
    workspace: Workspace


@dataclass(frozen=True)
class SessionAdded:
    session: Session


@dataclass(frozen=True)
class SessionChanged:
    """A session's durable record changed (state, name, parent, counters...)."""

    session: Session
    previous: Session | None = None
