"""The git folders a command's git subcommands write, found on disk.

``domain.git_commands`` says, from the words alone, that `git commit` writes the repository
git finds from its folder (or ``-C``, or ``--git-dir``). Here that repository is found as git
finds it: the nearest folder upwards holding ``.git`` (only the named folder for `git init`); a
``.git`` *file* (a worktree, a submodule) leads to its ``gitdir`` and that folder's
``commondir`` (where objects, refs and the ``config`` live), as ``tools/protected.py`` reads
them. The permission check then asks for these folders as writes of a protected path, and once
allowed the sandbox binds them writable for that command.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fxdesk.domain.git_commands import GitWrite, git_writes
from fxdesk.domain.shell import SimpleCommand


def written_git_folders(commands: Sequence[SimpleCommand], home: str) -> dict[str, str]:
    """Every git folder (or git configuration file) the ``commands`` write, resolved, with the
    git command that writes it (for the approval's text). Reads the file system."""
    found: dict[str, str] = {}
    for command in commands:
        write = git_writes(command.words, command.cwd, home)
        if write is None:
            continue
        for path in folders(write):
            found.setdefault(str(path), write.command)
    return found


def folders(write: GitWrite) -> list[Path]:
    """The folders (or the file) ``write`` changes, resolved; [] when there is no repository
    there yet (a `git init` that creates one writes only the work tree)."""
    if write.config_file is not None:
        return [Path(os.path.realpath(write.config_file))]
    if write.git_dir is not None:
        return _with_common(Path(os.path.realpath(write.git_dir)))
    start = Path(os.path.realpath(write.start))
    for folder in [start] if write.exact else [start, *start.parents]:
        dot = folder / ".git"
        if dot.is_dir():
            return _with_common(Path(os.path.realpath(dot)))
        if dot.is_file():
            gitdir = _pointed(dot)
            return _with_common(gitdir) if gitdir is not None else [dot]
    return []


def _pointed(dot: Path) -> Path | None:
    """The folder a ``.git`` file's ``gitdir:`` line names, resolved."""
    try:
        first = dot.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    return Path(os.path.realpath(dot.parent / first.partition(":")[2].strip()))


def _with_common(gitdir: Path) -> list[Path]:
    """``gitdir`` and, for a worktree's, the common folder its ``commondir`` file names."""
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return found
    if common:
        path = Path(os.path.realpath(gitdir / common))
        if path != gitdir:
            found.append(path)
    return found
