"""The git folders a command's git subcommands write, found on disk.

``domain.git_commands`` says, from the words alone, that `git commit` writes the repository
git finds from its folder (or ``-C``, or ``--git-dir``). Here that repository is found as git
finds it: the nearest folder upwards holding ``.git`` (only the named folder for `git init`); a
``.git`` *file* (a worktree, a submodule) leads to its ``gitdir`` and that folder's
``commondir`` (where objects, refs and the ``config`` live), read by the helpers of
``tools/protected.py``. The permission check then asks for these folders as writes of a
protected path, and once allowed the sandbox binds them writable for that command.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fxdesk.domain.git_commands import GitWrite, git_writes
from fxdesk.domain.shell import SimpleCommand
from fxdesk.tools.protected import pointed_gitdir, with_common


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
        return with_common(Path(os.path.realpath(write.git_dir)))
    start = Path(os.path.realpath(write.start))
    for folder in [start] if write.exact else [start, *start.parents]:
        dot = folder / ".git"
        if dot.is_dir():
            return with_common(Path(os.path.realpath(dot)))
        if dot.is_file():
            gitdir = pointed_gitdir(dot)
            return with_common(gitdir) if gitdir is not None else [dot]
    return []
