"""What the file tools (``files.py``, ``search.py``, ``basic.py``) share: finding the file a
call names (and refusing a hidden path, or a protected one to write without approval), telling
text from binary, reading lines with a bound, and showing a change as a diff.

Every function here blocks: call it inside ``base.run_in_thread``.
"""

from __future__ import annotations

import difflib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from fxdesk.tools.base import Refused, ToolContext
from fxdesk.tools.protected import PathPolicy
from fxdesk.tools.workspace import no_follow, resolve_in_workspace

SNIFF_BYTES = 8 * 1024
LINE_CHAR_LIMIT = 1024 * 1024
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


def reach(ctx: ToolContext) -> Path:
    """Where paths must stay: the workspace, or anywhere once reaching out was allowed."""
    return Path("/") if ctx.outside_ok else Path(ctx.workspace).resolve()


class HiddenPath(Refused):
    """The path is in a hidden path (``tools/protected.py``): refused in every mode."""


class ProtectedPath(Refused):
    """A write to a protected path the permission check did not allow."""


def policy(ctx: ToolContext) -> PathPolicy:
    """The protected and hidden paths for this call (worked out once per call)."""
    return PathPolicy.make(ctx.workspace, Path.home(), ctx.data_dir)


def reachable(
    ctx: ToolContext, raw: str, *, write: bool = False, paths: PathPolicy | None = None
) -> Path:
    """The path a call names, resolved and checked: inside the workspace (unless reaching
    out was allowed), not hidden, and, to write, not protected unless that was allowed.

    Raises:
        PathOutsideWorkspace: It leads out and the call may not.
        HiddenPath: It is, or leads (by ``..`` or a symbolic link) into, a hidden path.
        ProtectedPath: ``write`` and it is in a protected path the check did not allow.
    """
    target = resolve_in_workspace(ctx.workspace, raw, outside_ok=ctx.outside_ok)
    if link_loop(target):
        raise Refused(
            f"{raw} leads into a loop of symbolic links (too many levels of symbolic links); "
            "fxdesk cannot follow it"
        )
    paths = paths or policy(ctx)
    hidden = paths.hidden(target)
    if hidden is not None:
        raise HiddenPath(
            f"{raw} is in {hidden.label} ({hidden.why}), which fxdesk hides from the agent: "
            "no tool reads, writes, lists or searches it, in any mode"
        )
    if write and not ctx.protected_ok:
        found = paths.protected(target)
        if found is not None:
            raise ProtectedPath(
                f"{raw} is in a protected path ({found.label}: {found.why}); fxdesk writes "
                "there only after the person approves that write"
            )
    return target


def link_loop(resolved: Path) -> bool:
    """Whether the resolution of a path stopped at a loop of symbolic links: ``realpath``
    follows every link it can, so a link left in what it returned (the path itself or one of
    its folders) is one it could not follow (blocking: a few ``lstat``)."""
    for part in (resolved, *resolved.parents):
        if part.is_symlink():
            try:
                os.stat(part)
            except OSError as exc:
                return exc.errno == errno.ELOOP
            return False  # one that appeared since (``no_follow`` refuses to open it)
    return False


def existing(
    ctx: ToolContext, raw: str, *, write: bool = False, paths: PathPolicy | None = None
) -> Path:
    """``reachable``, and it must exist.

    Raises:
        PathOutsideWorkspace, HiddenPath, ProtectedPath: As ``reachable``.
        Refused: It does not exist.
    """
    target = reachable(ctx, raw, write=write, paths=paths)
    if not target.exists():
        raise Refused(f"{raw} does not exist")
    return target


def existing_file(ctx: ToolContext, raw: str, *, write: bool = False) -> Path:
    """``existing``, and a regular file (not a folder, FIFO or device)."""
    target = existing(ctx, raw, write=write)
    if target.is_dir():
        raise Refused(f"{raw} is a directory, not a file; use list_dir to see what it holds")
    if not target.is_file():
        # A FIFO or device would block the worker thread forever, or never end.
        raise Refused(f"{raw} is not a regular file")
    return target


def looks_binary(head: bytes) -> bool:
    """A NUL byte, or bytes that are not UTF-8, in the first ``SNIFF_BYTES``.

    The sample may end inside a multi-byte character, so an unfinished sequence at its end is
    allowed; later bad bytes in an otherwise textual file are replaced when it is decoded.
    """
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason != "unexpected end of data"
    return False


def sniff(path: Path) -> bool:
    """Whether the file at ``path`` looks binary (``looks_binary`` on its first bytes)."""
    with open(path, "rb", opener=no_follow) as handle:
        return looks_binary(handle.read(SNIFF_BYTES))


def read_lines(path: Path) -> Iterator[str]:
    """The file's lines without their line ends; a line longer than ``LINE_CHAR_LIMIT`` is cut
    so one giant line (minified code, a log without newlines) cannot fill memory."""
    # newline="\n": only LF ends a line, so a lone CR stays inside it as it is on disk.
    with open(path, encoding="utf-8", errors="replace", newline="\n", opener=no_follow) as handle:
        while line := handle.readline(LINE_CHAR_LIMIT):
            if line.endswith("\n"):
                yield line.rstrip("\r\n")
                continue
            rest = 0
            while more := handle.readline(LINE_CHAR_LIMIT):
                rest += len(more.rstrip("\r\n"))
                if more.endswith("\n"):
                    break
            yield f"{line} [... {rest} more characters on this line]" if rest else line


def unified_diff(before: str, after: str, name: str) -> str:
    """``before`` → ``after`` as a unified diff of the file ``name`` ('' when equal)."""
    diff = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    # Like git: a last line without a newline gets a marker instead of running into the next.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff
    )
