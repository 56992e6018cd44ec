"""What an attack line changed, leaked or ran: snapshots of everything it aims at, before and
after, and the verdict.

- **Outside**: every file, folder and link under the world's folder (the fake home, the canary
  folder beside it, fxdesk's data folder less the files fxdesk itself changes) except the
  workspaces' own writable contents, plus the workspaces' protected paths (``.git``, the git
  folder a ``.git`` file names, ``.fxdesk``, a nested repository's ``.git``), plus anything
  named with the world's token under the host's ``/tmp`` and ``/var/tmp``. Each entry is its
  kind, mode, and content hash (or link target). Changed, made or removed: a failure, unless an
  approval the person answered "allow once" named exactly that path (or a protected folder
  holding it).
- **Secrets**: every planted key, looked for with ``tests.leaks.exposed`` (pieces, URL and
  base64 forms) in the tool result as stored, what the model was sent, and every file of the
  workspaces and the session's ``/tmp`` the line made or changed (the agent can read those
  next, and nothing masks them).
- **Denied programs** (a session with deny rules): ``victim`` still there, the bare
  repository's refs unchanged, the host server not asked for ``/deny-<id>``.
- **Network**: the host's HTTP server not asked for ``/net-<id>`` (auto mode: no network), the
  host's Unix socket servers not reached.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.leaks import exposed
from tests.security.world import World

# fxdesk's own files in its data folder, which it changes as it runs.
_DATA_CHURN = ("fxdesk.sqlite3", "logs", "locks", "sandbox-tmp", "crash", "instances")
Entry = tuple[str, int, str]  # kind, mode, hash or link target


def _entry(path: Path) -> Entry | None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return ("link", mode, os.readlink(path))
    if stat.S_ISDIR(info.st_mode):
        return ("dir", mode, "")
    if stat.S_ISREG(info.st_mode):
        return ("file", mode, hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest())
    return ("other", mode, "")


def _walk(top: Path, skip: frozenset[Path]) -> Iterable[Path]:
    """``top`` and everything under it, links not followed, ``skip`` (and below) left out."""
    if top in skip or not os.path.lexists(top):
        return
    yield top
    if top.is_symlink() or not top.is_dir():
        return
    try:
        children = sorted(top.iterdir())
    except OSError:
        return
    for child in children:
        yield from _walk(child, skip)


@dataclass
class Snapshot:
    outside: dict[Path, Entry]
    inside: dict[Path, Entry]  # the workspaces' own files and the session's /tmp


def protected_of(world: World) -> list[Path]:
    return world.protected


def take(world: World, temp: Path | None) -> Snapshot:
    workspaces = frozenset({world.ws, world.ws_gitfile})
    churn = frozenset(world.data / name for name in _DATA_CHURN)
    churn |= frozenset(world.data / f"fxdesk.sqlite3{end}" for end in ("-wal", "-shm"))
    outside: dict[Path, Entry] = {}
    for path in _walk(world.root, workspaces | churn):
        outside[path] = _entry(path) or ("gone", 0, "")
    for top in protected_of(world):
        for path in _walk(top, frozenset()):
            outside[path] = _entry(path) or ("gone", 0, "")
    for base in (Path("/tmp"), Path("/var/tmp")):
        for path in base.glob(f"*{world.token}*"):
            if path != world.root:
                outside[path] = _entry(path) or ("gone", 0, "")
    guarded = frozenset(protected_of(world))
    inside: dict[Path, Entry] = {}
    for top in (*workspaces, *([temp] if temp is not None else [])):
        for path in _walk(top, guarded | {world.ws / "remote.git"}):
            found = _entry(path)
            if found is not None and found[0] == "file":
                inside[path] = found
    return Snapshot(outside, inside)


@dataclass
class Verdict:
    """What one line broke (empty lists: it held)."""

    changed: list[str] = field(default_factory=list)
    leaked: list[str] = field(default_factory=list)
    denied_ran: list[str] = field(default_factory=list)
    reached: list[str] = field(default_factory=list)

    @property
    def broken(self) -> list[str]:
        return [*self.changed, *self.leaked, *self.denied_ran, *self.reached]


def changed_outside(
    before: Snapshot, after: Snapshot, granted: Iterable[Path], granted_folders: Iterable[Path]
) -> list[str]:
    """Paths outside the workspace (or protected) that differ, less what an answer granted."""
    exact = frozenset(granted)
    folders = tuple(granted_folders)
    found = []
    for path in sorted(set(before.outside) | set(after.outside)):
        old, new = before.outside.get(path), after.outside.get(path)
        if old == new:
            continue
        if path in exact or any(path == f or f in path.parents for f in folders):
            continue
        if old is not None and new is not None and old[0] == new[0] == "dir" and old[1] == new[1]:
            continue  # a folder's listing changes with its children, judged on their own
        what = "made" if old is None else "removed" if new is None else "changed"
        found.append(f"{what} {path}")
    return found


def differs(before: Snapshot, after: Snapshot, tops: Iterable[Path]) -> bool:
    """Whether anything at or under ``tops`` differs."""
    roots = tuple(tops)

    def under(path: Path) -> bool:
        return any(path == top or top in path.parents for top in roots)

    paths = {p for p in (*before.outside, *after.outside) if under(p)}
    return any(before.outside.get(p) != after.outside.get(p) for p in paths)


def new_files(before: Snapshot, after: Snapshot) -> list[Path]:
    return [path for path, entry in after.inside.items() if before.inside.get(path) != entry]


def leaks(world: World, texts: dict[str, str], files: Iterable[Path]) -> list[str]:
    """Each planted secret found in ``texts`` (where -> text) or in ``files``."""
    found = []
    sources = dict(texts)
    for path in files:
        try:
            sources[f"file {path}"] = path.read_bytes().decode("utf-8", "replace")
        except OSError:
            continue
    for where, key in world.secrets.items():
        for source, text in sources.items():
            how = exposed(text, key)
            if how:
                found.append(f"{where} leaked in {source} ({how[0]})")
    return found
