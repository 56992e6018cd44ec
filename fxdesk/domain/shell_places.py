"""Where the shell may be: `cd`, `pushd` and `popd` followed as bash does, without the disk.

Split from :mod:`fxdesk.domain.shell`. A place is bash's ``$PWD`` as text. Bash's `cd` is
logical: it removes ``..`` with the name before it, as text, and goes there if that directory
exists; if it does not, it falls back to the path as written, where ``..`` is resolved by the
file system *after* following symbolic links (`cd link/../tmp` with `link` → /etc lands in /tmp
when the workspace has no tmp). `cd -P` resolves every link, and ``$PWD`` becomes the resolved
path. Only the file system knows either, and the line itself may change it, so:

- a ``..`` is removed as text only where that cannot differ from the file system: after a name of
  the directory the line started in (the caller passes it resolved), or when the result is a
  directory the shell already stands in or below (so it exists); otherwise bash may land in either
  place, and both are listed: the text with ``..`` removed, and the path as written, which the
  caller resolves (``os.path.realpath`` reads ``..`` as the file system does);
- after `cd -P`, the place is the path as written, *anchored*: a later ``..`` right after it stays
  in the text, so resolving the text gives where bash is (the parent of the resolved path).

Every place is a path the caller resolves (symbolic links followed) before judging it, and so are
the files written or read relative to it.

CDPATH: `cd name` (not /…, ./…, ../…, . or ..) tries each CDPATH entry before the current
directory. The caller passes the CDPATH the command will get (``None`` or "" when unset); every
entry is a place the shell may land in. A line that sets CDPATH itself is not understood.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fxdesk.domain.shell_words import Word, cd_refusal, expands


@dataclass(frozen=True)
class Place:
    """One directory the shell may be in.

    ``cwd`` is None when it cannot be known (after `source`, `eval` or an unmatched `popd`).
    The first ``anchored`` names of ``cwd`` only the file system can place (after `cd -P`, or a
    `cd` that may have fallen back to the path as written): ``..`` never removes them.
    """

    cwd: str | None
    anchored: int = 0
    stack: tuple[tuple[str | None, int], ...] = ()  # the `pushd` stack, most recent first


Places = tuple[Place, ...]  # the first is where every `cd` so far succeeded
UNKNOWN: Places = (Place(None),)


@dataclass(frozen=True)
class Flow:
    """Where the shell may be after a command, when it succeeded and when it failed."""

    ok: Places
    failed: Places

    @property
    def after(self) -> Places:
        return union(self.ok, self.failed)


def same(places: Places) -> Flow:
    return Flow(places, places)


def union(*groups: Places) -> Places:
    return tuple(dict.fromkeys(place for group in groups for place in group))


def parts(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


def text(names: list[str]) -> str:
    return "/" + "/".join(names)


def searched_by_cdpath(operand: str) -> bool:
    """Whether bash looks ``operand`` up in CDPATH (bash's ``absolute_pathname`` is false)."""
    return not (
        operand.startswith("/") or operand in (".", "..") or operand.startswith(("./", "../"))
    )


class Mover:
    """Follows `cd`, `pushd` and `popd` through a line, listing every directory they may reach.

    Args:
        home: $HOME, for `cd` and `~`.
        start: Where the line starts, with symbolic links resolved.
        cdpath: The CDPATH bash will have ("" or None: unset).
        block: Called with why the line cannot be followed.
    """

    def __init__(
        self, home: str, start: str, cdpath: str | None, block: Callable[[str], None]
    ) -> None:
        self.home = home
        self.start = parts(start)
        self.cdpath = cdpath or ""
        self.block = block
        self.directories: list[str] = []

    def tilde(self, word: Word, cwd: str | None) -> str | None:
        """The word with a leading ~ or ~+ expanded; None for ~user, ~- and the like."""
        if word.tilde is None:
            return word.text
        if word.tilde == "~":
            return self.home + word.text[1:]
        if word.tilde == "~+" and cwd is not None:
            return cwd + word.text[2:]
        return None

    def change_directory(self, name: str, args: list[Word], places: Places) -> Flow:
        if name == "popd":
            return self.popd(args, places)
        operands = list(args)
        physical = False
        while name == "cd" and operands and _is_cd_option(operands[0].text):
            for letter in operands.pop(0).text[1:]:  # the last of -L and -P wins, as in bash
                physical = {"P": True, "L": False}.get(letter, physical)
        if operands and operands[0].text == "--":
            operands.pop(0)
        why = cd_refusal(name, [word.text for word in operands])
        if why:
            self.block(why)
            return same(places)
        moved: list[Place] = []
        for place in places:
            landings = self.landings(operands[0] if operands else None, place, physical)
            for cwd, anchored in landings:
                self.directories.append(cwd)
                stack = ((place.cwd, place.anchored), *place.stack)
                moved.append(Place(cwd, anchored, stack if name == "pushd" else place.stack))
        return Flow(union(tuple(moved)) or places, places)

    def landings(self, word: Word | None, place: Place, physical: bool) -> list[tuple[str, int]]:
        """Every (cwd, anchored) `cd WORD` may land in from ``place`` ([] when it cannot be
        followed: the line is then blocked, or the operand is empty and bash stays)."""
        if word is None:
            operand = self.home
        elif word.dynamic or expands(word.text):
            self.block(f"moves to `{word.text}`, a directory only known when it runs")
            return []
        elif not word.text:  # `cd ''` stays, unless CDPATH leads it to an entry
            operand = ""
        else:
            expanded = self.tilde(word, place.cwd)
            if expanded is None:
                self.block(f"moves to `{word.text}`, a directory fxdesk cannot know")
                return []
            operand = expanded
        tried = [operand]
        if self.cdpath and searched_by_cdpath(operand):
            tried = [self.in_cdpath(entry, operand) for entry in self.cdpath.split(":")]
            tried.append(operand)
        found: list[tuple[str, int]] = []
        for attempt in tried:
            if not attempt:
                if place.cwd is not None:
                    found.append((place.cwd, place.anchored))
            elif attempt.startswith("/"):
                found += self.join([], 0, parts(attempt), physical, place)
            elif place.cwd is None:
                self.block(f"moves to `{attempt}` from a directory fxdesk cannot know")
            else:
                here = parts(place.cwd)
                found += self.join(here, place.anchored, parts(attempt), physical, place)
        return list(dict.fromkeys(found))

    def in_cdpath(self, entry: str, operand: str) -> str:
        """``entry/operand`` as bash builds it (an empty entry is the current directory, a
        leading ~ is $HOME); "" for an entry fxdesk cannot expand (then the line is blocked)."""
        if entry.startswith("~"):
            if entry != "~" and not entry.startswith("~/"):
                self.block(f"has a CDPATH entry `{entry}` fxdesk cannot expand")
                return ""
            entry = self.home + entry[1:]
        if not entry:
            return operand
        return f"{entry.rstrip('/')}/{operand}" if operand else entry

    def join(
        self, base: list[str], anchored: int, names: list[str], physical: bool, place: Place
    ) -> list[tuple[str, int]]:
        """Where bash lands for ``names`` from ``base``: one place, or two when the file system
        decides between the text with ``..`` removed and the path as written."""
        written = [*base, *names]
        if physical:  # $PWD becomes the path with every link resolved: the caller's to resolve
            return [(text(written), len(written))]
        stack, fixed = list(base), anchored
        checked: list[list[str]] = []  # the path before each `..` that removed a name
        for name in names:
            if name != "..":
                stack.append(name)
            elif len(stack) > fixed:
                if not self.physical(stack, fixed):
                    checked.append(list(stack))
                stack.pop()
            elif stack:  # right after an anchor: the parent of what the file system resolves
                stack.append("..")
                fixed = len(stack)
        logical = (text(stack), fixed)
        # Bash takes the text with `..` removed when each path before a `..` and the result are
        # directories; the ones the shell stands in, or above, are.
        exists = self.physical(stack, fixed) or _stands_in(_above(stack), place)
        if checked and not (exists and all(_stands_in(path, place) for path in checked)):
            return [logical, (text(written), len(written))]
        return [logical]

    def physical(self, names: list[str], anchored: int) -> bool:
        """Whether ``names`` is the start directory or above it: no symbolic link in it."""
        return anchored == 0 and names == self.start[: len(names)]

    def popd(self, args: list[Word], places: Places) -> Flow:
        if args:
            self.block("uses `popd` with arguments")
            return same(places)
        moved: list[Place] = []
        for place in places:
            if place.stack:
                cwd, anchored = place.stack[0]
                if cwd is not None:
                    self.directories.append(cwd)
                moved.append(Place(cwd, anchored, place.stack[1:]))
            else:  # the shell's own stack, from before this line, is not ours to see
                moved.append(Place(None))
        return Flow(union(tuple(moved)), places)


def _is_cd_option(word: str) -> bool:
    return len(word) > 1 and word[0] == "-" and all(letter in "LPe@" for letter in word[1:])


def _stands_in(names: list[str], place: Place) -> bool:
    """Whether ``names`` is ``place`` or a directory above it (so it exists, as a directory)."""
    if place.cwd is None:
        return False
    here = parts(place.cwd)
    return len(names) >= place.anchored and names == here[: len(names)]


def _above(names: list[str]) -> list[str]:
    """``names`` without its trailing ``..``: the parent of a directory that exists exists."""
    end = len(names)
    while end and names[end - 1] == "..":
        end -= 1
    return names[:end]
