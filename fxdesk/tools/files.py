"""File tools: ``read_file``, ``list_dir`` and ``edit_file`` (``glob`` and ``grep`` are in
``search.py``).

Every path goes through ``resolve_in_workspace`` inside the worker thread, before anything is
read or written, so ``../`` and symlinks that lead out of the workspace are refused. Blocking I/O
runs in ``asyncio.to_thread``; expected failures become ``ToolResult.error``.
"""

from __future__ import annotations

import asyncio
import difflib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from fxdesk.tools.base import (
    PathOutsideWorkspace,
    Tool,
    ToolContext,
    ToolResult,
    bounded,
    no_follow,
    resolve_in_workspace,
)

SNIFF_BYTES = 8 * 1024
# read_file keeps at most this much text (full_output included) so a huge log cannot exhaust
# memory; the model is told where it stopped and can ask for a later line range.
READ_CHAR_LIMIT = 16 * 1024 * 1024
LIST_LIMIT = 1000
LINE_CHAR_LIMIT = 1024 * 1024
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})


class _Refused(Exception):
    """An expected failure, carried out of the worker thread as the model's error message."""


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PATH = {"type": "string", "description": "Path relative to the workspace."}


async def _run(work: Callable[[], ToolResult], what: str) -> ToolResult:
    """Run ``work`` in a thread and turn the expected failures into tool errors."""
    try:
        return await asyncio.to_thread(work)
    except (PathOutsideWorkspace, _Refused) as exc:
        return ToolResult.error(str(exc))
    except OSError as exc:
        return ToolResult.error(f"cannot {what}: {exc.strerror or exc}")


def _root(ctx: ToolContext) -> Path:
    """Where paths must stay: the workspace, or anywhere once reaching out was allowed."""
    return Path("/") if ctx.outside_ok else Path(ctx.workspace).resolve()


def _show(path: Path, root: Path) -> str:
    """``path`` as the model should see it: relative to the workspace (absolute outside it)."""
    if root == Path("/"):
        return str(path)
    relative = os.path.relpath(path, root)
    return "." if relative == "." else PurePosixPath(relative).as_posix()


def _existing(ctx: ToolContext, raw: str) -> Path:
    target = resolve_in_workspace(ctx.workspace, raw, outside_ok=ctx.outside_ok)
    if not target.exists():
        raise _Refused(f"{raw} does not exist")
    return target


def _existing_file(ctx: ToolContext, raw: str) -> Path:
    target = _existing(ctx, raw)
    if target.is_dir():
        raise _Refused(f"{raw} is a directory, not a file; use list_dir to see what it holds")
    if not target.is_file():
        # A FIFO or device would block the worker thread forever, or never end.
        raise _Refused(f"{raw} is not a regular file")
    return target


def _looks_binary(head: bytes) -> bool:
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


def _sniff(path: Path) -> bool:
    with open(path, "rb", opener=no_follow) as handle:
        return _looks_binary(handle.read(SNIFF_BYTES))


def _lines(path: Path) -> Iterator[str]:
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


class ReadFileTool(Tool):
    name = "read_file"
    description = (
        "Read a text file from the workspace, with line numbers. Use start_line/end_line "
        "(1-based, inclusive) to read part of a long file."
    )
    parameters = _schema(
        {
            "path": _PATH,
            "start_line": {"type": "integer", "description": "First line to show (1-based)."},
            "end_line": {"type": "integer", "description": "Last line to show (inclusive)."},
        },
        ["path"],
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = str(args["path"])
        start = args.get("start_line", 1)
        end = args.get("end_line")
        if not isinstance(start, int) or start < 1:
            return ToolResult.error("start_line must be a whole number of 1 or more")
        if end is not None and (not isinstance(end, int) or end < start):
            return ToolResult.error("end_line must be a whole number not below start_line")

        def read() -> ToolResult:
            target = _existing_file(ctx, raw)
            size = target.stat().st_size
            if _sniff(target):
                raise _Refused(f"{raw} is a binary file ({size} bytes); not shown")
            shown: list[str] = []
            chars, total, stopped = 0, 0, False
            for number, line in enumerate(_lines(target), 1):
                total = number
                if number < start:
                    continue
                if end is not None and number > end:
                    break
                if chars > READ_CHAR_LIMIT:
                    stopped = True
                    break
                shown.append(f"{number:6}\t{line}")
                chars += len(line) + 8
            if total == 0:
                return ToolResult(True, f"{raw} is empty", data={"lines": 0})
            if not shown:
                raise _Refused(f"start_line {start} is past the end of {raw} ({total} lines)")
            if stopped:
                shown.append(f"[... stopped at line {total - 1}; read on with start_line={total}]")
            output, full = bounded("\n".join(shown))
            return ToolResult(True, output, full, {"path": _show(target, _root(ctx))})

        return await _run(read, f"read {raw}")


class ListDirTool(Tool):
    name = "list_dir"
    description = (
        "List a folder in the workspace: sorted, folders end with '/', files show their size."
    )
    parameters = _schema({"path": {**_PATH, "description": "Folder to list (default .)."}}, [])

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = str(args.get("path", "."))

        def listing() -> ToolResult:
            root = _root(ctx)
            folder = _existing(ctx, raw)
            if not folder.is_dir():
                raise _Refused(f"{raw} is a file, not a folder; use read_file to read it")
            with os.scandir(folder) as entries:
                everything = sorted(entries, key=lambda entry: entry.name)
            lines = [_describe(entry, root) for entry in everything[:LIST_LIMIT]]
            if len(everything) > LIST_LIMIT:
                lines.append(f"[... {len(everything) - LIST_LIMIT} more entries not shown]")
            output, full = bounded("\n".join(lines) if lines else f"{raw} is empty")
            return ToolResult(True, output, full, {"entries": len(everything)})

        return await _run(listing, f"list {raw}")


def _describe(entry: os.DirEntry[str], root: Path) -> str:
    if entry.is_symlink():
        # Say where a link goes only when it stays inside; never stat what lies outside.
        try:
            target = resolve_in_workspace(root, entry.path)
        except PathOutsideWorkspace:
            return f"{entry.name} -> (outside the workspace)"
        return f"{entry.name} -> {_show(target, root)}"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    try:
        return f"{entry.name}  ({entry.stat(follow_symlinks=False).st_size} bytes)"
    except OSError:
        return entry.name


class EditFileTool(Tool):
    name = "edit_file"
    description = (
        "Replace one exact piece of text in a file. old_text must occur exactly once; include "
        "surrounding lines to make it unique. Returns a unified diff."
    )
    parameters = _schema(
        {
            "path": _PATH,
            "old_text": {"type": "string", "description": "The exact text to replace."},
            "new_text": {"type": "string", "description": "The text to put in its place."},
        },
        ["path", "old_text", "new_text"],
    )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw, old, new = str(args["path"]), str(args["old_text"]), str(args["new_text"])
        if not old:
            return ToolResult.error("old_text must not be empty; use write_file for new files")

        def edit() -> ToolResult:
            target = _existing_file(ctx, raw)
            # The rename below would succeed on a read-only file; its mode says not to.
            if not os.access(target, os.W_OK):
                raise _Refused(f"{raw} is read-only")
            with open(target, "rb", opener=no_follow) as handle:
                data = handle.read()
            try:
                # Strict: rewriting replaced characters would silently damage the file.
                before = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _Refused(f"{raw} is not UTF-8 text; edit_file will not rewrite it") from exc
            count = _occurrences(before, old)
            if count == 0:
                raise _Refused(f"old_text was not found in {raw}")
            if count > 1:
                raise _Refused(
                    f"old_text occurs {count} times in {raw}; include more context so it "
                    "matches once"
                )
            after = before.replace(old, new, 1)
            _write_atomically(target, after.encode("utf-8"))
            name = _show(target, _root(ctx))
            diff = _unified_diff(before, after, name)
            output, full = bounded(diff or f"{raw}: old_text equals new_text; nothing changed")
            return ToolResult(True, output, full, {"path": name})

        return await _run(edit, f"edit {raw}")


def _occurrences(text: str, part: str) -> int:
    """Count overlapping matches too: 'aa' in 'aaa' is ambiguous, not unique."""
    count, at = 0, text.find(part)
    while at != -1:
        count += 1
        at = text.find(part, at + 1)
    return count


def _write_atomically(target: Path, content: bytes) -> None:
    """Write beside the file and rename over it, so a crash never leaves half a file."""
    mode = target.stat().st_mode
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".fxdesk-")
    try:
        with open(fd, "wb") as handle:
            handle.write(content)
        os.chmod(temporary, mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _unified_diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    # Like git: a last line without a newline gets a marker instead of running into the next.
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def file_tools() -> list[Tool]:
    from fxdesk.tools.search import GlobTool, GrepTool

    return [ReadFileTool(), ListDirTool(), GlobTool(), GrepTool(), EditFileTool()]
