"""A root session's own git worktree: where it lives, its branch, the commit it started from.

A session chosen to run in a worktree (docs/worktrees.md) gets a new branch from the
repository's HEAD, checked out in a folder under the data folder; it, its sub-agents and its
background tasks work there, never in the person's checkout. The worktree is kept in the
session's ``config_json`` (``WORKTREE_KEY``), so it survives restarts. Whether new sessions of a
workspace get one by default is a setting of the workspace (``default_setting_key``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

WORKTREE_KEY = "worktree"  # in Session.config
BRANCH_PREFIX = "fxdesk/"


def default_setting_key(workspace_id: int) -> str:
    """The settings key of a workspace's default (a bool: new sessions get a worktree)."""
    return f"workspace.{workspace_id}.worktree"


def branch_for(session_id: str) -> str:
    """The branch a session's worktree gets: ``fxdesk/`` and the first part of its id."""
    return BRANCH_PREFIX + session_id.split("-")[0][:12]


@dataclass(frozen=True)
class Worktree:
    """A session's worktree, as its config keeps it.

    Attributes:
        path: The worktree's top folder (under the data folder), absolute.
        branch: The branch checked out there (``fxdesk/…``).
        base: The commit it started from, or last merged back at: what "changes" are against.
        repository: The main checkout's top folder (where merges land).
        subdir: The workspace's place inside its repository ('' at the top): the session works
            in ``path/subdir``, as it would have in ``repository/subdir``.
    """

    path: str
    branch: str
    base: str
    repository: str
    subdir: str = ""

    @property
    def folder(self) -> str:
        """The session's working folder: its tools' and commands' workspace."""
        if not self.subdir:
            return self.path
        return str(PurePosixPath(self.path) / self.subdir)

    def to_value(self) -> dict[str, str]:
        return {
            "path": self.path,
            "branch": self.branch,
            "base": self.base,
            "repository": self.repository,
            "subdir": self.subdir,
        }

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Worktree | None:
        """The worktree in a session's config, or None (none, or not readable as one)."""
        value = config.get(WORKTREE_KEY)
        if not isinstance(value, dict):
            return None
        try:
            return cls(
                path=str(value["path"]),
                branch=str(value["branch"]),
                base=str(value["base"]),
                repository=str(value["repository"]),
                subdir=str(value.get("subdir", "")),
            )
        except KeyError:
            return None


def folder_from_config_json(config: dict[str, Any]) -> str | None:
    """The working folder a root session's config names, or None (it has no worktree)."""
    worktree = Worktree.from_config(config)
    return None if worktree is None else worktree.folder


@dataclass(frozen=True)
class WorktreeStatus:
    """What a worktree holds now, for the person (``fxdesk worktree status``, the header).

    Attributes:
        worktree: Where and which branch.
        exists: Whether its folder is still there.
        head: The branch's commit now.
        ahead: Commits on the branch since ``base``.
        changed: Uncommitted changes, as ``git status --porcelain`` lines (untracked too).
        target: The branch checked out in the main checkout (where Merge lands), '' if detached.
    """

    worktree: Worktree
    exists: bool
    head: str = ""
    ahead: int = 0
    changed: tuple[str, ...] = ()
    target: str = ""

    @property
    def dirty(self) -> bool:
        return bool(self.changed)

    def to_value(self) -> dict[str, Any]:
        return {
            **self.worktree.to_value(),
            "folder": self.worktree.folder,
            "exists": self.exists,
            "head": self.head,
            "ahead": self.ahead,
            "changed": list(self.changed),
            "dirty": self.dirty,
            "target": self.target,
        }


@dataclass(frozen=True)
class MergeResult:
    """What a merge back did: ``how`` (``fast-forward`` or ``squash``), into which branch, and
    the commit the main checkout is at now."""

    how: str
    target: str
    commit: str
    commits: int
