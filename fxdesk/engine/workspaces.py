"""Workspace folders by id, read once from the store and kept (a workspace never moves)."""

from __future__ import annotations

from pathlib import Path

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
