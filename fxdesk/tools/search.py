"""Search tools: ``glob`` (file names) and ``grep`` (file contents), bounded, inside the
workspace only (symlinks leading out are skipped, never followed). Neither enters nor names a
hidden path (``tools/protected.py``): ``glob`` walks the folders itself so it can leave them out
before looking inside.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
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
from fxdesk.tools.textfiles import SKIPPED_DIRS, existing, policy, reach, read_lines, sniff
from fxdesk.tools.workspace import (
    PathOutsideWorkspace,
    display_path,
    is_inside,
    resolve_in_workspace,
)

GLOB_LIMIT = 500
# Matches gathered before sorting: sorting needs them all, memory needs a ceiling.
GLOB_SCAN_LIMIT = 100_000
GREP_MATCH_LIMIT = 200
GREP_LINE_CHARS = 300


class GlobTool(Tool):
    name = "glob"
    description = (
        "Find files by name pattern, e.g. '**/*.py' or 'src/*.toml'. Paths are relative to the "
        "workspace and sorted."
    )
    parameters = schema(
        {
            "pattern": {"type": "string", "description": "Glob pattern; '**' spans folders."},
            "path": {"type": "string", "description": "Folder to search from (default .)."},
        },
        ["pattern"],
    )
    facts = ToolFacts(ToolAccess.READ, path_argument="path", path_default=".")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = str(args["pattern"])
        raw = str(args.get("path", "."))

        def find() -> ToolResult:
            root = reach(ctx)
            paths = policy(ctx)
            base = existing(ctx, raw, paths=paths)
            if not base.is_dir():
                raise Refused(f"{raw} is not a folder")
            try:
                matches = _glob_inside(base, pattern, root, paths)
            except (ValueError, NotImplementedError) as exc:
                raise Refused(f"invalid glob pattern {pattern!r}: {exc}") from exc
            if not matches:
                return ToolResult(True, f"no paths match {pattern!r}", data={"matches": 0})
            lines = matches[:GLOB_LIMIT]
            if len(matches) > GLOB_LIMIT:
                more = "at least " if len(matches) >= GLOB_SCAN_LIMIT else ""
                lines.append(f"[... {more}{len(matches) - GLOB_LIMIT} more paths not shown]")
            output, full = bounded("\n".join(lines))
            return ToolResult(True, output, full, {"matches": len(matches)})

        return await run_in_thread(find, f"search {raw}")


def _glob_inside(base: Path, pattern: str, root: Path, paths: PathPolicy) -> list[str]:
    if os.path.isabs(pattern):
        raise ValueError("the pattern must be relative; pass the folder as path")
    found: list[str] = []
    for match, where in _glob(base, pattern, paths):
        if not is_inside(where, root):
            continue  # a symlink (or '..') leading out of the workspace
        real = Path(where)
        # Keep the name the person sees (a link's own name) unless '..' made it leave the root.
        lexical = Path(os.path.normpath(match))
        shown = display_path(lexical if root in lexical.parents else real, root)
        found.append(shown_name(shown + "/" if real.is_dir() else shown))
        if len(found) >= GLOB_SCAN_LIMIT:
            break
    return sorted(set(found))


def _glob(base: Path, pattern: str, paths: PathPolicy) -> Iterator[tuple[Path, str]]:
    """``base.glob(pattern)`` as Python 3.11's pathlib reads it (``**`` a whole part that spans
    folders without following linked ones; other parts follow links; names starting with a dot
    match ``*``), except that a hidden path, by where it really is, is neither yielded nor
    entered. Each match as named and resolved; in no particular order, maybe twice.

    Raises:
        ValueError: An empty pattern, or ``**`` inside a part.
    """
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if not parts:
        raise ValueError(f"Unacceptable pattern: {pattern!r}")
    if any("**" in part and part != "**" for part in parts):
        raise ValueError("Invalid pattern: '**' can only be an entire path component")
    matchers = [_part_matcher(part) for part in parts]
    root = str(base)
    inner = paths.below(base)  # all a path resolved below base can be in

    def real_child(real: str, name: str, link: bool) -> str | None:
        """Where ``name`` in the folder really at ``real`` leads; None when it is hidden."""
        child = os.path.realpath(os.path.join(real, name)) if link else os.path.join(real, name)
        judge = inner if is_inside(child, root) else paths
        return child if judge.hidden(child) is None else None

    # (as named, where it really is, the part to match next)
    stack: list[tuple[str, str, int]] = [(root, root, 0)]
    spanned: set[tuple[str, int]] = set()  # '**' states done: '**/**' must not redo them
    while stack:
        path, real, index = stack.pop()
        if index == len(parts):
            yield Path(path), real
            continue
        last = index == len(parts) - 1
        matcher = matchers[index]
        if parts[index] == "**":
            if (real, index) in spanned:
                continue
            spanned.add((real, index))
            stack.append((path, real, index + 1))
            for entry in _entries(real):
                if _is_dir(entry, follow=False):
                    found = real_child(real, entry.name, link=False)
                    if found is not None:
                        stack.append((os.path.join(path, entry.name), found, index))
        elif matcher is None:  # a plain name (or '..'): no listing needed
            name = parts[index]
            child = os.path.join(real, name)
            if os.path.lexists(child) if last else os.path.isdir(child):
                found = real_child(real, name, link=name == ".." or os.path.islink(child))
                if found is not None:
                    stack.append((os.path.join(path, name), found, index + 1))
        else:
            for entry in _entries(real):
                if matcher(entry.name) and (last or _is_dir(entry, follow=True)):
                    found = real_child(real, entry.name, link=entry.is_symlink())
                    if found is not None:
                        stack.append((os.path.join(path, entry.name), found, index + 1))


def _part_matcher(part: str) -> Callable[[str], object] | None:
    """None for a plain name; else a case-sensitive ``fnmatch`` of one name (as pathlib on
    POSIX matches)."""
    if part == "**" or not any(char in part for char in "*?["):
        return None
    return re.compile(fnmatch.translate(part)).fullmatch


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []  # unreadable or gone: the rest is still searched


def _is_dir(entry: os.DirEntry[str], *, follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


class GrepTool(Tool):
    name = "grep"
    description = (
        "Search file contents with a regular expression (Python syntax). Prints "
        "'path:line: text'. Skips binary files and .git."
    )
    parameters = schema(
        {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "File or folder to search (default .)."},
            "glob": {"type": "string", "description": "Only files whose name matches, e.g. *.py"},
            "ignore_case": {"type": "boolean", "description": "Match regardless of case."},
        },
        ["pattern"],
    )
    facts = ToolFacts(ToolAccess.READ, path_argument="path", path_default=".")

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = str(args.get("path", "."))
        name_filter = str(args["glob"]) if args.get("glob") else None
        try:
            regex = re.compile(
                str(args["pattern"]), re.IGNORECASE if args.get("ignore_case") else 0
            )
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            return ToolResult.error(
                f"invalid regular expression {args['pattern']!r}: {exc.msg}{where}"
            )

        def search() -> ToolResult:
            root = reach(ctx)
            paths = policy(ctx)
            start = existing(ctx, raw, paths=paths)
            hits: list[str] = []
            skipped = 0
            for path, real in _files_under(start, root, name_filter, paths):
                try:
                    if sniff(real):
                        skipped += 1
                        continue
                    for number, line in enumerate(read_lines(real), 1):
                        if regex.search(line):
                            if len(line) > GREP_LINE_CHARS:
                                line = line[:GREP_LINE_CHARS] + " [...]"
                            hits.append(f"{shown_name(display_path(path, root))}:{number}: {line}")
                            if len(hits) > GREP_MATCH_LIMIT:
                                break
                except OSError:
                    skipped += 1  # unreadable: one file must not end the search
                if len(hits) > GREP_MATCH_LIMIT:
                    break
            data = {"matches": min(len(hits), GREP_MATCH_LIMIT), "skipped_files": skipped}
            if not hits:
                return ToolResult(True, f"no matches for {regex.pattern!r} in {raw}", data=data)
            if len(hits) > GREP_MATCH_LIMIT:
                hits[GREP_MATCH_LIMIT:] = [
                    f"[... stopped after {GREP_MATCH_LIMIT} matches; narrow the search]"
                ]
            output, full = bounded("\n".join(hits))
            return ToolResult(True, output, full, data)

        return await run_in_thread(search, f"search {raw}")


def _files_under(
    start: Path, root: Path, name_filter: str | None, paths: PathPolicy
) -> Iterator[tuple[Path, Path]]:
    """Files to search, in a stable order: ``start`` itself, or the files below it; each as
    found (how it is shown) and resolved (what is read: a linked file inside the workspace).
    Hidden folders are not entered, hidden files (or links to them) not read."""

    def wanted(path: Path) -> bool:
        if not name_filter:
            return True
        if "/" in name_filter:
            return PurePosixPath(display_path(path, root)).match(name_filter)
        return fnmatch.fnmatch(path.name, name_filter)

    if start.is_file():
        yield start, start
        return
    inner = paths.below(start)  # what a folder or file found below start (no link) may be in
    # Depth first in name order (like `rg --sort path`), with a stack rather than recursion
    # because folders can nest deeper than Python's recursion limit. Linked folders are not
    # entered: they could lead out of the workspace or loop forever.
    stack = [iter(_sorted_entries(start))]
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
        elif entry.is_dir(follow_symlinks=False):
            if entry.name not in SKIPPED_DIRS and inner.hidden(entry.path) is None:
                stack.append(iter(_sorted_entries(entry.path)))
        else:
            path = Path(entry.path)
            try:
                real = resolve_in_workspace(root, entry.path)
            except PathOutsideWorkspace:
                continue
            if (paths if entry.is_symlink() else inner).hidden(real) is not None:
                continue
            if real.is_file() and wanted(path):
                yield path, real


def _sorted_entries(folder: str | Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError:
        return []  # unreadable folder: search the rest


def search_tools() -> list[Tool]:
    return [GlobTool(), GrepTool()]
