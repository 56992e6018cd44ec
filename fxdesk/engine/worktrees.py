"""A git worktree per root session (docs/worktrees.md): made at creation, acted on by the person
(status, Commit, Merge back, Create a patch, Discard), removed when the session closes.

``WorktreeService`` does the work: git in a worker thread (``engine/git_worktree.py``), one
action at a time per session, the worktree kept in the root session's config so it survives
restarts. ``WorktreePart`` is the facade's side (``Engine`` inherits it, so its file stays
small). Where the session's tools, commands and background tasks run follows from the config:
``WorkspacePaths.for_session`` and ``store.background.session_place``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import defaultdict
from pathlib import Path

from fxdesk.domain.model import Session, SessionState
from fxdesk.domain.worktrees import (
    WORKTREE_KEY,
    MergeResult,
    Worktree,
    WorktreeStatus,
    branch_for,
    default_setting_key,
)
from fxdesk.engine import git_worktree
from fxdesk.engine.bus import EventBus
from fxdesk.engine.errors import ErrorCode, SessionError, WorktreeDirty, WorktreeError
from fxdesk.engine.events import SessionChanged
from fxdesk.paths import WORKTREES
from fxdesk.store import Store, repo

log = logging.getLogger(__name__)


class WorktreeService:
    """Makes and acts on sessions' worktrees under ``data_dir/worktrees``."""

    def __init__(self, store: Store, bus: EventBus, data_dir: Path) -> None:
        self._store = store
        self._bus = bus
        self.folder = data_dir / WORKTREES
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def make(self, workspace: Path, session_id: str) -> Worktree:
        """A new branch from the HEAD of ``workspace``'s repository, checked out under the data
        folder for session ``session_id``; ``WorktreeError`` outside git or with no commit."""
        top, subdir, head = await asyncio.to_thread(git_worktree.find_repository, workspace)
        path = self.folder / session_id
        made = await asyncio.to_thread(
            git_worktree.create, top, path, branch_for(session_id), head, subdir
        )
        log.info("worktree made session=%s branch=%s base=%s", session_id, made.branch, head[:12])
        return made

    async def unmake(self, worktree: Worktree) -> None:
        """Remove a worktree just made for a session that was then not created."""
        await asyncio.to_thread(git_worktree.remove, worktree, delete_branch=True)

    async def of(self, session_id: str) -> tuple[Session, Worktree]:
        """The root session of ``session_id``'s tree and its worktree; ``WorktreeError`` when
        it has none."""
        session = await self._store.read(lambda: repo.get_session(session_id))
        if session is None:
            raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
        if session.root_id != session.id:
            root_id = session.root_id
            root = await self._store.read(lambda: repo.get_session(root_id))
            session = root if root is not None else session
        worktree = Worktree.from_config(session.config)
        if worktree is None:
            raise WorktreeError(f"session {session.id[:8]} runs in its workspace, not a worktree")
        return session, worktree

    async def status(self, session_id: str) -> WorktreeStatus:
        _, worktree = await self.of(session_id)
        return await asyncio.to_thread(git_worktree.status, worktree)

    async def commit(self, session_id: str, message: str) -> str:
        session, worktree = await self.of(session_id)
        async with self._locks[session.id]:
            made = await asyncio.to_thread(git_worktree.commit, worktree, message)
        self._changed(session)
        return made

    async def merge(self, session_id: str, how: str, message: str = "") -> MergeResult:
        """Merge the branch back (``fast-forward`` or ``squash``); its base moves to the
        merged commit, so what the session changes from now on is counted from there."""
        session, worktree = await self.of(session_id)
        async with self._locks[session.id]:
            result = await asyncio.to_thread(git_worktree.merge, worktree, how, message)
            moved = Worktree(
                worktree.path, worktree.branch, result.commit, worktree.repository, worktree.subdir
            )
            after = await self._store.write(
                lambda: repo.set_session_config(session.id, WORKTREE_KEY, moved.to_value()),
                label="worktree base",
            )
        log.info("worktree merged session=%s how=%s into=%s", session.id, how, result.target)
        self._changed(after or session)
        return result

    async def patch(self, session_id: str) -> str:
        session, worktree = await self.of(session_id)
        async with self._locks[session.id]:
            return await asyncio.to_thread(git_worktree.patch, worktree)

    async def check_close(self, session_id: str, *, force: bool) -> Worktree | None:
        """Before closing ``session_id``: its worktree (None for a sub-agent or a session
        without one), refused with ``WorktreeDirty`` when it holds uncommitted changes and
        not ``force``."""
        session = await self._store.read(lambda: repo.get_session(session_id))
        if session is None or session.root_id != session.id:
            return None
        worktree = Worktree.from_config(session.config)
        if worktree is None or force:
            return worktree
        now = await asyncio.to_thread(git_worktree.status, worktree)
        if now.dirty:
            raise WorktreeDirty(
                f"the worktree of session {session.id[:8]} ({worktree.branch}) has "
                f"{len(now.changed)} uncommitted change(s); commit them, or close with force "
                "to discard them"
            )
        return worktree

    async def remove(self, session_id: str, worktree: Worktree, *, delete_branch: bool) -> str:
        """Remove the worktree (and its branch when ``delete_branch`` or when it holds nothing
        unmerged); the sentence saying what was done."""
        async with self._locks[session_id]:
            said = await asyncio.to_thread(
                git_worktree.remove, worktree, delete_branch=delete_branch
            )
        self._locks.pop(session_id, None)
        log.info("worktree removed session=%s: %s", session_id, said)
        return said

    def _changed(self, session: Session) -> None:
        self._bus.publish(SessionChanged(session))


class WorktreePart:
    """Worktrees as the person acts on them (the Session menu, ``fxdesk worktree``). Needs
    ``_worktrees``, ``_store`` and ``close``."""

    _worktrees: WorktreeService
    _store: Store

    async def close(  # provided by Engine
        self, session_id: str, *, force: bool = False, keep_branch: bool = True
    ) -> str:
        raise NotImplementedError

    async def worktree_default(self, workspace_id: int) -> bool:
        """Whether new sessions in the workspace get their own worktree unless told."""
        key = default_setting_key(workspace_id)
        return bool(await self._store.read(lambda: repo.get_setting(key, False)))

    async def set_worktree_default(self, workspace_id: int, on: bool) -> None:
        key = default_setting_key(workspace_id)
        await self._store.write(lambda: repo.set_setting(key, on), label="worktree default")

    async def worktree_status(self, session_id: str) -> WorktreeStatus:
        """What the session's worktree holds (``WorktreeError`` if it runs without one)."""
        return await self._worktrees.status(session_id)

    async def worktree_commit(self, session_id: str, message: str) -> str:
        """Commit everything changed in the worktree on its branch; the new commit."""
        return await self._worktrees.commit(session_id, message)

    async def worktree_merge(self, session_id: str, how: str, message: str = "") -> MergeResult:
        """Merge the branch into the main checkout's branch: ``fast-forward`` or ``squash``."""
        return await self._worktrees.merge(session_id, how, message)

    async def worktree_patch(
        self, session_id: str, to: str | os.PathLike[str] | None = None
    ) -> str:
        """The worktree's changes since its base as a patch (written to ``to`` if given)."""
        text = await self._worktrees.patch(session_id)
        if to is not None:
            await asyncio.to_thread(Path(to).write_text, text, encoding="utf-8")
        return text

    async def worktree_discard(self, session_id: str) -> str:
        """Close the session (if open) and remove its worktree and branch, changes and commits
        with them: the person confirmed that first. What was done, as a sentence."""
        session, worktree = await self._worktrees.of(session_id)
        if session.state != SessionState.ARCHIVED:
            await self.close(session.id, force=True, keep_branch=False)
            return f"closed the session; removed the worktree and its branch {worktree.branch}"
        return await self._worktrees.remove(session.id, worktree, delete_branch=True)
