"""Workspace folders by id, read once from the store and kept (a workspace never moves), and
the folder a session works in: its tree's worktree when its root session has one
(docs/worktrees.md), else its workspace."""

from __future__ import annotations

from pathlib import Path

from fxdesk.domain.model import Session
from fxdesk.domain.worktrees import folder_from_config_json
from fxdesk.store import Store, repo


class WorkspacePaths:
    """A cache of workspace id → folder, refilled from the store on a miss."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._paths: dict[int, Path] = {}

    async def get(self, workspace_id: int) -> Path:
        """The workspace's folder; the current directory if the store does not know it."""
        path = self._paths.get(workspace_id)
        if path is None:
            workspaces = await self.store.read(repo.list_workspaces)
            self._paths.update({w.id: Path(w.path) for w in workspaces})
            path = self._paths.get(workspace_id, Path.cwd())
        return path

    async def for_session(self, session: Session) -> Path:
        """Where ``session``'s tools and commands work: the worktree its root session runs in
        (read from the store for a sub-agent), else the workspace's folder."""
        config = session.config
        if session.root_id != session.id:
            root_id = session.root_id
            root = await self.store.read(lambda: repo.get_session(root_id))
            config = root.config if root is not None else {}
        folder = folder_from_config_json(config)
        return Path(folder) if folder else await self.get(session.workspace_id)
