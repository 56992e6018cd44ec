"""Where a path leads, and whether that is inside the workspace.

One resolution for the tools and for the permission check (``engine/permissions.py``), so the
path a call is judged by is the path the tool then opens: ``~`` expanded, relative paths taken
from the workspace, symbolic links followed, and a path that does not exist yet resolved through
its existing parents (``os.path.realpath``, not ``Path.resolve(strict=True)``).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path, PurePosixPath


class PathOutsideWorkspace(ValueError):
    """A path resolved outside the workspace, and reaching out was not allowed."""


def resolve_path(workspace: Path, raw: str) -> Path:
    """``raw`` made absolute as the tools read it: ``~`` expanded, relative to the workspace
    (itself resolved), symlinks followed; nothing is checked.

    Args:
        workspace: The folder relative paths start from.
        raw: The path as the model wrote it.

    Returns:
        The absolute path with every symbolic link followed.
    """
    root = workspace.resolve()
    # Only a leading '~' means home: 'a/~b' is a file name.
    candidate = Path(os.path.expanduser(raw)) if raw.startswith("~") else Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    return Path(os.path.realpath(candidate))


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``root`` or lies below it. Both must be absolute and normalised
    (as ``resolve_path`` returns them); this compares names, it does not touch the disk."""
    path, root = os.fspath(path), os.fspath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve_in_workspace(workspace: Path, raw: str, *, outside_ok: bool = False) -> Path:
    """``resolve_path``, refused when it lands outside the workspace unless ``outside_ok``.

    Raises:
        PathOutsideWorkspace: The path leads out of the workspace (by ``..``, an absolute path
            or a symbolic link) and ``outside_ok`` is false.
    """
    resolved = resolve_path(workspace, raw)
    root = workspace.resolve()
    if not outside_ok and not is_inside(resolved, root):
        raise PathOutsideWorkspace(f"{raw} is outside the workspace {root}")
    return resolved


def display_path(path: Path, root: Path) -> str:
    """``path`` as the model should see it: relative to ``root``, or absolute when ``root`` is
    ``/`` (a call allowed to reach anywhere)."""
    if root == Path("/"):
        return str(path)
    relative = os.path.relpath(path, root)
    return "." if relative == "." else PurePosixPath(relative).as_posix()


def no_follow(path: str, flags: int) -> int:
    """An ``opener`` for ``open()`` on a path ``resolve_in_workspace`` returned: the last part
    must still not be a symbolic link. One created since the check (a process swapping the file
    for a link out of the workspace) is refused instead of followed."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(
                errno.ELOOP,
                "it became a symbolic link after it was checked; fxdesk did not follow it",
                path,
            ) from None
        raise
