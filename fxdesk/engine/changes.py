"""What a session changed in its workspace (issue 18 item 1): the Changes panel and
``fxdesk changes``.

Two sources, merged per file:

* the session's own history: every file its ``write_file``/``edit_file`` calls changed (marked
  "by this session"), with the diffs ``edit_file`` reported;
* in a git repository, the workspace against ``HEAD``: every modified, added, deleted or new
  file, whoever changed it (a command the agent ran, the person, another session), with git's
  diff; new files are diffed against nothing.

Reverting a file (git only: back to ``HEAD``; a new file is removed) and a patch of every change
(``git diff HEAD`` plus the new files) are here too. Git runs through ``git_worktree.git`` (an
argv list, ``-C folder``, a timeout); git's own words are passed on when it refuses.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind
from fxdesk.engine.errors import WorktreeError
from fxdesk.engine.git_worktree import git

FILE_TOOLS = frozenset({"write_file", "edit_file"})


class ChangesError(Exception):
    """A change that cannot be listed or reverted here, and why."""


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the workspace, with "/"
    status: str  # modified | added | deleted | renamed | edited (no git: from the history)
    added: int
    removed: int
    by_session: bool  # the session's own file tools changed it
    diff: str  # unified diff ("" when none is known)


@dataclass(frozen=True)
class Changes:
    folder: str
    git: bool
    files: tuple[FileChange, ...]
    note: str = ""  # why the list may be incomplete

    def patch(self) -> str:
        """Every known diff, one after another (``git apply`` takes it in a repository)."""
        diffs = [c.diff if c.diff.endswith("\n") else c.diff + "\n" for c in self.files if c.diff]
        return "".join(diffs)


def _git(folder: Path, *args: str, ok: Iterable[int] = (0,), stdin: str | None = None) -> str:
    """``git_worktree.git``, its refusal as a ``ChangesError`` (git's last line)."""
    try:
        done = git(folder, *args, check=False, stdin=stdin)
    except WorktreeError as exc:
        raise ChangesError(str(exc)) from exc
    if done.returncode not in ok:
        said = done.stderr.strip().splitlines()
        raise ChangesError(said[-1] if said else f"git {args[0]} failed ({done.returncode})")
    return done.stdout


def is_repository(folder: Path) -> bool:
    try:
        return _git(folder, "rev-parse", "--is-inside-work-tree").strip() == "true"
    except ChangesError:
        return False


def _counts(diff: str) -> tuple[int, int]:
    lines = diff.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return added, removed


def touched_by(entries: Iterable[HistoryEntry], folder: Path) -> dict[str, str]:
    """The files the session's file tools changed (relative path → the diffs ``edit_file``
    reported, joined), from its history: each call's ``path`` argument, if its result says it
    succeeded."""
    asked: dict[str, str] = {}
    touched: dict[str, str] = {}
    root = folder.resolve()
    for entry in entries:
        if entry.tool_name not in FILE_TOOLS or not entry.call_id:
            continue
        if entry.kind == EntryKind.TOOL_CALL:
            try:
                arguments = json.loads(entry.content or "{}")
            except json.JSONDecodeError:
                continue
            if isinstance(arguments, dict) and isinstance(arguments.get("path"), str):
                asked[entry.call_id] = arguments["path"]
            continue
        name = asked.get(entry.call_id)
        if entry.kind != EntryKind.TOOL_RESULT or not entry.data.get("ok") or not name:
            continue
        path = Path(name)
        try:
            full = (path if path.is_absolute() else root / path).resolve()
            key = full.relative_to(root).as_posix()
        except (OSError, ValueError):
            continue  # outside the workspace: not this panel's business
        text = entry.full_text or entry.content
        reported = text if entry.tool_name == "edit_file" and text.startswith("---") else ""
        touched[key] = touched.get(key, "") + reported

    return touched


def changes(folder: Path, touched: dict[str, str], base: str = "HEAD") -> Changes:
    """The workspace's changes against ``base`` (a worktree session's: the commit its branch
    started from, so what it committed shows too); blocking."""
    if not is_repository(folder):
        files = []
        for path, diff in sorted(touched.items()):
            added, removed = _counts(diff)
            files.append(FileChange(path, "edited", added, removed, True, diff))
        note = "Not a git repository: only the files this session's tools changed are listed."
        return Changes(str(folder), False, tuple(files), note)
    has_base = True
    try:
        _git(folder, "rev-parse", "--verify", "-q", f"{base}^{{commit}}")
    except ChangesError:
        has_base = False
    listed: list[tuple[str, str]] = []  # (git's letter, path) relative to the folder
    if has_base:
        names = _git(folder, "diff", "--name-status", "-z", "--no-renames", "--relative", base)
        parts = [p for p in names.split("\0") if p]
        listed += [(parts[k][:1], parts[k + 1]) for k in range(0, len(parts) - 1, 2)]
    others = "--others" if has_base else "--cached"
    new_files = _git(folder, "ls-files", others, "--others", "--exclude-standard", "-z")
    listed += [("?", p) for p in new_files.split("\0") if p]
    found: dict[str, FileChange] = {}
    for letter, path in listed:
        if path in found:
            continue
        if letter == "?":
            diff = _git(folder, "diff", "--no-color", "--no-index", "--", "/dev/null", path,
                        ok=(0, 1))  # fmt: skip
            state = "added"
        else:
            diff = _git(folder, "diff", "--no-color", "--no-ext-diff", base, "--", path)
            state = {"D": "deleted", "A": "added"}.get(letter, "modified")
        added, removed = _counts(diff)
        found[path] = FileChange(path, state, added, removed, path in touched, diff)
    for path, diff in touched.items():  # changed by the session, then committed or undone
        if path not in found:
            found[path] = FileChange(path, "edited", *_counts(diff), True, diff)
    note = "" if has_base else "The repository has no commit yet: every file shows as new."
    if has_base and base != "HEAD":
        note = f"Against {base[:10]}, where this session's worktree branch started."
    ordered = sorted(found.values(), key=lambda c: (not c.by_session, c.path))
    return Changes(str(folder), True, tuple(ordered), note)


def revert(folder: Path, change: FileChange) -> str:
    """Put ``change``'s file back as ``HEAD`` has it (a new file is removed); what was done."""
    if not is_repository(folder):
        raise ChangesError("only files in a git repository can be reverted (nothing to go back to)")
    target = (folder / change.path).resolve()
    if not target.is_relative_to(folder.resolve()):
        raise ChangesError(f"{change.path} is outside the workspace")
    if change.status == "added":
        tracked = _git(folder, "ls-files", "--", change.path).strip()
        if tracked:
            _git(folder, "rm", "-q", "--cached", "--", change.path)
        target.unlink(missing_ok=True)
        return f"removed the new file {change.path}"
    _git(folder, "checkout", "HEAD", "--", change.path)
    return f"put {change.path} back as the last commit has it"


def hunks(diff: str) -> tuple[str, list[str]]:
    """A one-file unified diff split into its header (up to the first ``@@``) and its hunks."""
    lines = diff.splitlines(keepends=True)
    starts = [k for k, line in enumerate(lines) if line.startswith("@@")]
    if not starts:
        return diff, []
    header = "".join(lines[: starts[0]])
    bounds = [*starts, len(lines)]
    return header, ["".join(lines[a:b]) for a, b in itertools.pairwise(bounds)]


def revert_hunk(folder: Path, change: FileChange, index: int) -> str:
    """Undo one hunk of ``change`` in the working tree (git only); what was done."""
    if not is_repository(folder):
        raise ChangesError("only changes in a git repository can be reverted in part")
    header, parts = hunks(change.diff)
    if not 0 <= index < len(parts):
        raise ChangesError(f"{change.path} has no hunk {index + 1}")
    patch = header + parts[index]
    if not patch.endswith("\n"):
        patch += "\n"
    try:
        _git(folder, "apply", "-R", "--recount", "--whitespace=nowarn", "-", stdin=patch)
    except ChangesError as exc:
        raise ChangesError(f"the hunk no longer matches the file ({exc})") from exc
    return f"undid hunk {index + 1} of {len(parts)} in {change.path}"


def side_by_side(diff: str) -> tuple[list[str], list[str]]:
    """The diff's hunks as two columns of equal length, each line marked as ``DiffView``
    colours it: the old text (``-`` removed, `` `` kept or a blank pad) and the new (``+``
    added). Headers are left out; each hunk starts with its ``@@`` line on both sides."""
    left: list[str] = []
    right: list[str] = []
    removed: list[str] = []
    added: list[str] = []

    def flush() -> None:
        for k in range(max(len(removed), len(added))):
            left.append(removed[k] if k < len(removed) else " ")
            right.append(added[k] if k < len(added) else " ")
        removed.clear()
        added.clear()

    _header, parts = hunks(diff)
    for hunk in parts:
        for line in hunk.splitlines():
            if line.startswith("@@"):
                flush()
                left.append(line)
                right.append(line)
            elif line.startswith("-"):
                removed.append(line)
            elif line.startswith("+"):
                added.append(line)
            elif not line.startswith("\\"):
                flush()
                left.append(line or " ")
                right.append(line or " ")
    flush()
    return left, right
