"""Creating and listing sessions: durable first, then published on the bus."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.model import PermissionMode, Session, SessionMode, Workspace
from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import SessionAdded, WorkspaceAdded
from fxdesk.store import Store, repo


class InvalidWorkspace(ValueError):
    """The chosen workspace folder cannot be used."""


@dataclass(frozen=True)
class Catalog:
    """Everything the session tree shows, read in one snapshot."""

    workspaces: list[Workspace]
    sessions: list[Session]


def new_session_id() -> str:
    return uuid.uuid4().hex[:16]


def validate_workspace(path: str | os.PathLike[str]) -> Path:
    """The resolved workspace folder, or ``InvalidWorkspace`` saying why it cannot be used."""
    folder = Path(path).expanduser()
    if not folder.is_absolute():
        raise InvalidWorkspace(f"{folder} is not an absolute path")
    try:
        resolved = folder.resolve(strict=True)
    except OSError as exc:
        raise InvalidWorkspace(f"{folder} does not exist") from exc
    if not resolved.is_dir():
        raise InvalidWorkspace(f"{resolved} is not a folder")
    if not os.access(resolved, os.R_OK | os.X_OK):
        raise InvalidWorkspace(f"{resolved} cannot be read")
    return resolved


class SessionService:
    """Root-session creation and the catalog; the session owner (work queues) builds on it."""

    def __init__(self, store: Store, bus: EventBus) -> None:
        self._store = store
        self._bus = bus

    async def catalog(self, *, include_archived: bool = True) -> Catalog:
        def read() -> Catalog:
            return Catalog(
                repo.list_workspaces(), repo.list_sessions(include_archived=include_archived)
            )

        return await self._store.read(read)

    async def create_root(
        self,
        workspace_path: str | os.PathLike[str],
        *,
        name: str = "",
        permission_mode: PermissionMode = PermissionMode.ASK,
        profile: str | None = None,
    ) -> Session:
        """Create a root session in one transaction (its workspace too, if new)."""
        folder = validate_workspace(workspace_path)
        session_id = new_session_id()
        title = name.strip() or "New session"

        def write() -> tuple[Workspace, bool, Session]:
            at = repo.now_ms()
            workspace, is_new = repo.ensure_workspace(str(folder), folder.name or str(folder), at)
            session = repo.create_session(
                session_id=session_id,
                workspace=workspace,
                name=title,
                mode=SessionMode.PERSISTENT,
                permission_mode=permission_mode,
                profile=profile,
                at_ms=at,
            )
            return workspace, is_new, session

        workspace, is_new, session = await self._store.write(write, label="create_session")
        if is_new:
            self._bus.publish(WorkspaceAdded(workspace))
        self._bus.publish(SessionAdded(session))
        return session
