"""What the file tools (``files.py``, ``search.py``, ``basic.py``) share: finding the file a
call names, telling text from binary, reading lines with a bound, and showing a change as a diff.

Every function here blocks: call it inside ``base.run_in_thread``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import Path

from fxdesk.tools.base import Refused, ToolContext
from fxdesk.tools.workspace import no_follow, resolve_in_workspace

SNIFF_BYTES = 8 * 1024
LINE_CHAR_LIMIT = 1024 * 1024
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


def reach(ctx: ToolContext) -> Path:
    """Where paths must stay: the workspace, or anywhere once reaching out was allowed."""
    return Path("/") if ctx.outside_ok else Path(ctx.workspace).resolve()


def existing(ctx: ToolContext, raw: str) -> Path:
    """The path a call names, resolved and checked against the workspace; it must exist.

    Raises:
        PathOutsideWorkspace: It leads out and the call may not.
        Refused: It does not exist.
    """
    target = resolve_in_workspace(ctx.workspace, raw, outside_ok=ctx.outside_ok)
    if not target.exists():
        raise Refused(f"{raw} does not exist")
    return target


def existing_file(ctx: ToolContext, raw: str) -> Path:
    """``existing``, and a regular file (not a folder, FIFO or device)."""
    target = existing(ctx, raw)
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
