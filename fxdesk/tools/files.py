"""File tools: ``read_file``, ``list_dir`` and ``edit_file`` (``glob`` and ``grep`` are in
``search.py``, ``write_file`` in ``basic.py``).

Every path goes through ``textfiles.reachable`` inside the worker thread, before anything is
read or written, so ``../`` and symlinks that lead out of the workspace are refused, hidden paths
(``tools/protected.py``) always, and protected ones to write unless the check allowed it.
Blocking I/O runs in ``run_in_thread``; expected failures become ``ToolResult.error``.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxdesk.domain.text import shown_name
from fxdesk.tools.base import (
    Refused,
    Tool,
    ToolAccess,
    ToolContext,
    ToolFacts,
    ToolResult,
    bounded,
    run_in_thread,
    schema,
)
from fxdesk.tools.protected import PathPolicy
from fxdesk.tools.textfiles import (
    existing,
    existing_file,
    link_loop,
    policy,
    reach,
    read_lines,
    sniff,
    unified_diff,
)
from fxdesk.tools.workspace import (
    PathOutsideWorkspace,
    display_path,
    no_follow,
    resolve_in_workspace,
)

# read_file keeps at most this much text (full_output included) so a huge log cannot exhaust
# memory; the model is told where it stopped and can ask for a later line range.
READ_CHAR_LIMIT = 16 * 1024 * 1024
LIST_LIMIT = 1000

PATH = {"type": "string", "description": "Path relative to the workspace."}


class ReadFileTool(Tool):
    name = "read_file"
    description = (
        "Read a text file from the workspace, with line numbers. Use start_line/end_line "
        "(1-based, inclusive) to read part of a long file."
    )
    parameters = schema(
        {
            "path": PATH,
            "start_line": {"type": "integer", "description": "First line to show (1-based)."},
            "end_line": {"type": "integer", "description": "Last line to show (inclusive)."},
        },
        ["path"],
    )
    facts = ToolFacts(ToolAccess.READ, path_argument="path")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = str(args["path"])
        start = args.get("start_line", 1)
        end = args.get("end_line")
        if not isinstance(start, int) or start < 1:
            return ToolResult.error("start_line must be a whole number of 1 or more")
        if end is not None and (not isinstance(end, int) or end < start):
            return ToolResult.error("end_line must be a whole number not below start_line")

        def read() -> ToolResult:
            target = existing_file(ctx, raw)
            size = target.stat().st_size
            if sniff(target):
                raise Refused(f"{raw} is a binary file ({size} bytes); not shown")
            shown: list[str] = []
            chars, total, stopped = 0, 0, False
            for number, line in enumerate(read_lines(target), 1):
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
                raise Refused(f"start_line {start} is past the end of {raw} ({total} lines)")
            if stopped:
                shown.append(f"[... stopped at line {total - 1}; read on with start_line={total}]")
            output, full = bounded("\n".join(shown))
            return ToolResult(True, output, full, {"path": display_path(target, reach(ctx))})

        return await run_in_thread(read, f"read {raw}")


class ListDirTool(Tool):
    name = "list_dir"
    description = (
        "List a folder in the workspace: sorted, folders end with '/', files show their size. "
        "A name with a line break or bytes that are not UTF-8 is shown as a JSON string in "
        "double quotes; pass that string, unquoted by JSON, as the path to name the file."
    )
    parameters = schema({"path": {**PATH, "description": "Folder to list (default .)."}}, [])
    facts = ToolFacts(ToolAccess.READ, path_argument="path", path_default=".")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = str(args.get("path", "."))

        def listing() -> ToolResult:
            root = reach(ctx)
            paths = policy(ctx)
            folder = existing(ctx, raw, paths=paths)
            if not folder.is_dir():
                raise Refused(f"{raw} is a file, not a folder; use read_file to read it")
            with os.scandir(folder) as entries:
                # A hidden folder (~/.ssh when listing ~) is left out, not even named.
                everything = sorted(
                    (entry for entry in entries if paths.hidden(entry.path) is None),
                    key=lambda entry: entry.name,
                )
            lines = [_describe(entry, root, paths) for entry in everything[:LIST_LIMIT]]
            if len(everything) > LIST_LIMIT:
                lines.append(f"[... {len(everything) - LIST_LIMIT} more entries not shown]")
            output, full = bounded("\n".join(lines) if lines else f"{raw} is empty")
            return ToolResult(True, output, full, {"entries": len(everything)})

        return await run_in_thread(listing, f"list {raw}")


def _describe(entry: os.DirEntry[str], root: Path, paths: PathPolicy) -> str:
    name = shown_name(entry.name)
    if entry.is_symlink():
        # Say where a link goes only when it stays inside; never stat what lies outside.
        try:
            target = resolve_in_workspace(root, entry.path)
        except PathOutsideWorkspace:
            return f"{name} -> (outside the workspace)"
        if link_loop(target):
            return f"{name} -> (a loop of symbolic links)"
        if paths.hidden(target) is not None:
            return f"{name} -> (a hidden path)"
        return f"{name} -> {shown_name(display_path(target, root))}"
    if entry.is_dir(follow_symlinks=False):
        return f"{name}/"
    try:
        return f"{name}  ({entry.stat(follow_symlinks=False).st_size} bytes)"
    except OSError:
        return name


class EditFileTool(Tool):
    name = "edit_file"
    description = (
        "Replace one exact piece of text in a file. old_text must occur exactly once; include "
        "surrounding lines to make it unique. Returns a unified diff."
    )
    parameters = schema(
        {
            "path": PATH,
            "old_text": {"type": "string", "description": "The exact text to replace."},
            "new_text": {"type": "string", "description": "The text to put in its place."},
        },
        ["path", "old_text", "new_text"],
    )

    facts = ToolFacts(ToolAccess.WRITE, path_argument="path")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw, old, new = str(args["path"]), str(args["old_text"]), str(args["new_text"])
        if not old:
            return ToolResult.error(EMPTY_OLD_TEXT)

        def edit() -> ToolResult:
            change = plan_edit(ctx, raw, old, new)
            _write_atomically(change.target, change.after.encode("utf-8"))
            return change.result()

        return await run_in_thread(edit, f"edit {raw}")

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """The diff ``run`` would apply, or its refusal: the same plan, not written."""
        raw, old, new = str(args["path"]), str(args["old_text"]), str(args["new_text"])
        if not old:
            return ToolResult.error(EMPTY_OLD_TEXT)
        return await run_in_thread(lambda: plan_edit(ctx, raw, old, new).result(), f"edit {raw}")


EMPTY_OLD_TEXT = "old_text must not be empty; use write_file for new files"


@dataclass(frozen=True)
class Edit:
    """One ``edit_file`` call worked out: the file and its text before and after."""

    target: Path
    name: str  # as the model sees it
    raw: str  # as the model wrote it
    before: str
    after: str

    def result(self) -> ToolResult:
        """What the model is told once the edit is made: the diff."""
        diff = unified_diff(self.before, self.after, self.name)
        output, full = bounded(diff or f"{self.raw}: old_text equals new_text; nothing changed")
        return ToolResult(True, output, full, {"path": self.name})


def plan_edit(ctx: ToolContext, raw: str, old: str, new: str) -> Edit:
    """Work out an ``edit_file`` call without writing: both its run and its preview start here,
    so the preview refuses exactly what the run refuses.

    Raises:
        Refused: The file is read-only, not UTF-8, or ``old`` does not occur exactly once;
            it is hidden, or protected and the write was not allowed (``textfiles.reachable``).
        PathOutsideWorkspace: The path leads out of the workspace and the call may not.
        OSError: The file cannot be read.
    """
    target = existing_file(ctx, raw, write=True)
    # The rename that writes the edit would succeed on a read-only file; its mode says not to.
    if not os.access(target, os.W_OK):
        raise Refused(f"{raw} is read-only")
    with open(target, "rb", opener=no_follow) as handle:
        data = handle.read()
    try:
        # Strict: rewriting replaced characters would silently damage the file.
        before = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{raw} is not UTF-8 text; edit_file will not rewrite it") from exc
    count = occurrences(before, old)
    if count == 0:
        raise Refused(f"old_text was not found in {raw}")
    if count > 1:
        raise Refused(
            f"old_text occurs {count} times in {raw}; include more context so it matches once"
        )
    after = before.replace(old, new, 1)
    return Edit(target, display_path(target, reach(ctx)), raw, before, after)


def occurrences(text: str, part: str) -> int:
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


def file_tools() -> list[Tool]:
    return [ReadFileTool(), ListDirTool(), EditFileTool()]
