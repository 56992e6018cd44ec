"""What a shell command line does, read without running it (spec child-sessions §6).

`analyse` parses a line with bashlex and walks the tree. It lists every simple command wherever it
sits (pipelines, lists, subshells, groups, loops, command and process substitutions), the files the
line redirects to or hands to `tee`, and the directories `cd`, `pushd` and `popd` move to. Paths are
lexical; the caller resolves symlinks. A `cd` may fail, so a later command may run in any of several
directories: a relative write is listed once for each directory it may land in.

The permission check trusts this module to see at least everything bash will run, and bashlex
does not always read a line as bash does. So static words are re-read from the source, and the line
is ``understood=False`` (the person is asked) wherever the two could differ: `$'…'` strings,
backslashes next to backticks, commands inside `${…}` or an unquoted here-document, here-documents
bashlex places on the wrong lines, words or substitutions it ends early, text it skipped; and for
constructs we do not follow (functions, arithmetic, `case`, `[[ … ]]`, `coproc`, `time`, a `cd` we
cannot place). Two bashlex 0.18 bugs are patched when bashlex is first loaded: an endless loop on
`${` without `}`, and here-documents whose delimiter is quoted (`<<'EOF'`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.shell_words import (
    ASSIGNMENT,
    QUOTING,
    Word,
    after_wrappers,
    breaks_word,
    cd_refusal,
    expands,
    load_bashlex,
    read_word,
    tee_files,
)

MAX_COMMAND_CHARS = 100_000
_MAX_PLACES = 16  # directories one command may run in before we give up following `cd`

_WRITING = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_HEREDOCS = frozenset({"<<", "<<-"})
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_DIRECTORY_BUILTINS = frozenset({"cd", "pushd", "popd"})
_UNKNOWN_DIRECTORY_AFTER = frozenset({"source", ".", "eval", "trap"})  # may `cd` out of sight
_CD_OPTIONS = re.compile(r"-[LPe@]+")


@dataclass(frozen=True)
class SimpleCommand:
    """One command as bash will start it.

    ``cwd`` is "" when the directory cannot be known (after `source`, `eval` or an unmatched
    `popd`).
    """

    words: tuple[str, ...]  # argv after quote removal; assignments such as X=1 included
    text: str  # " ".join(words), for display and glob rules
    cwd: str
    dynamic: bool  # a word holds an expansion only known when it runs ($X, $(…), `…`, <(…))


@dataclass(frozen=True)
class Redirect:
    target: str  # absolute and lexical ("..", kept for the caller to resolve), or raw if dynamic
    writes: bool
    dynamic: bool


@dataclass(frozen=True)
class CommandAnalysis:
    commands: tuple[SimpleCommand, ...]
    redirects: tuple[Redirect, ...]
    writes: tuple[str, ...]  # files written (redirects and `tee`), never /dev/null and friends
    directories: tuple[str, ...]  # every directory `cd`/`pushd`/`popd` may move to
    understood: bool
    problems: tuple[str, ...]  # why it is not understood, then what is only known when it runs
    dynamic_writes: tuple[str, ...] = ()  # raw text of write destinations only known when it runs
    source: str = ""  # the line as given


def analyse(command: str, *, cwd: str, home: str) -> CommandAnalysis:
    """What ``command`` runs, writes and where it moves, starting in ``cwd``; never raises."""
    if not command.strip(" \t\n") or _only_comments(command):
        return CommandAnalysis((), (), (), (), True, (), (), command)
    if len(command) > MAX_COMMAND_CHARS:
        return _not_understood(command, f"is longer than {MAX_COMMAND_CHARS} characters")
    try:
        nodes = load_bashlex().parse(command)
    except NotImplementedError as exc:
        return _not_understood(command, f"uses a construct fxdesk does not follow ({exc})")
    except Exception as exc:  # bashlex raises assorted errors on malformed input
        return _not_understood(command, f"could not be parsed ({exc})")
    walker = _Walker(command, home, nodes)
    try:
        skipped = _skipped(command, nodes)
        if skipped:
            walker.block(f"has text bashlex skipped (`{skipped}`)")
        walker.sequence(nodes, (_Place(posixpath.normpath(cwd)),))
    except Exception as exc:  # fail closed: an analysis we could not finish is not understood
        return _not_understood(command, f"could not be analysed (internal error: {exc!r})")
    return walker.result()


def _skipped(source: str, nodes: Sequence[Any]) -> str:
    """Text outside every parsed node that is not a blank, separator or comment ("" if none).

    bashlex stops quietly in places (it reads one line of a multi-line `$(…)`); this is the
    check that it read the whole line.
    """
    covered = [False] * len(source)
    heredocs = [doc for node in nodes for doc in _heredocs(node)]
    for span in (*nodes, *heredocs):
        start, end = span.pos
        covered[start:end] = [True] * (end - start)
    i = 0
    while i < len(source):
        c = source[i]
        if covered[i] or c in " \t\n;&":
            i += 1
        elif c == "\\" and source[i + 1 : i + 2] == "\n":
            i += 2
        elif c == "#" and (i == 0 or source[i - 1] in " \t\n;&"):
            newline = source.find("\n", i)
            i = len(source) if newline < 0 else newline
        else:
            return source[i : i + 20]
    return ""


def _heredocs(node: Any) -> Iterator[Any]:
    if getattr(node, "kind", None) == "heredoc":
        yield node
    for name in ("parts", "list", "redirects", "command", "output", "heredoc"):
        child = getattr(node, name, None)
        for item in child if isinstance(child, list) else [child]:
            if hasattr(item, "kind"):
                yield from _heredocs(item)


def _only_comments(command: str) -> bool:
    # bashlex fails on a line that is nothing but a comment; bash runs nothing for it.
    lines = command.split("\n")
    return all(not line.strip(" \t") or line.lstrip(" \t").startswith("#") for line in lines)


def _not_understood(command: str, why: str) -> CommandAnalysis:
    return CommandAnalysis((), (), (), (), False, (why,), (), command)


# --- directories the shell may be in --------------------------------------------------------


@dataclass(frozen=True)
class _Place:
    cwd: str | None  # None: unknown
    stack: tuple[str | None, ...] = ()  # the `pushd` stack, most recent first


_Places = tuple[_Place, ...]  # the first is where every `cd` so far succeeded
_UNKNOWN: _Places = (_Place(None),)


@dataclass(frozen=True)
class _Flow:
    """Where the shell may be after a command, when it succeeded and when it failed."""

    ok: _Places
    failed: _Places

    @property
    def after(self) -> _Places:
        return _union(self.ok, self.failed)


def _same(places: _Places) -> _Flow:
    return _Flow(places, places)


def _union(*groups: _Places) -> _Places:
    return tuple(dict.fromkeys(place for group in groups for place in group))


def _collapse(path: str) -> str:
    """``path`` without "." and empty parts; ".." stays, since only the caller can resolve it."""
    return "/" + "/".join(part for part in path.split("/") if part not in ("", "."))


def _words_text(node: Any) -> str:
    return str(getattr(node, "word", ""))


# --- the walk ---------------------------------------------------------------------------------


class _Walker:
    """Walks bashlex's tree in execution order, following the directory through the line."""

    def __init__(self, source: str, home: str, nodes: Sequence[Any] = ()) -> None:
        self.source = source
        self.heredoc_spans = [doc.pos for node in nodes for doc in _heredocs(node)]
        self.home = posixpath.normpath(home) if home else "/"
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.writes: list[str] = []
        self.dynamic_writes: list[str] = []
        self.directories: list[str] = []
        self.blockers: list[str] = []
        self.notes: list[str] = []

    def result(self) -> CommandAnalysis:
        if "`" in self.source and "\\" in self.source:
            # Inside backticks bash removes backslashes before parsing again; bashlex does not.
            self.block("mixes backslashes with backtick substitution")
        if "CDPATH" in self.source:
            self.block("changes CDPATH, which moves `cd` where fxdesk cannot follow")
        return CommandAnalysis(
            commands=tuple(dict.fromkeys(self.commands)),
            redirects=tuple(dict.fromkeys(self.redirects)),
            writes=tuple(dict.fromkeys(self.writes)),
            directories=tuple(dict.fromkeys(self.directories)),
            understood=not self.blockers,
            problems=tuple(dict.fromkeys(self.blockers + self.notes)),
            dynamic_writes=tuple(dict.fromkeys(self.dynamic_writes)),
            source=self.source,
        )

    def block(self, why: str) -> None:
        self.blockers.append(why)

    # nodes -----------------------------------------------------------------------------------

    def sequence(self, nodes: Sequence[Any], places: _Places) -> _Flow:
        flow = _same(places)
        for node in nodes:
            flow = self.node(node, flow.after)
        return flow

    def node(self, node: Any, places: _Places) -> _Flow:
        flow = self._dispatch(node, places)
        if len(flow.after) > _MAX_PLACES:
            self.block("changes directory in more ways than fxdesk follows")
            return _same(flow.after[:_MAX_PLACES])
        return flow

    def _dispatch(self, node: Any, places: _Places) -> _Flow:
        kind = node.kind
        if kind == "command":
            return self.simple(node, places)
        if kind == "list":
            return self.list_(node.parts, places)
        if kind == "pipeline":
            return self.pipeline(node, places)
        if kind == "compound":
            return self.compound(node, places)
        if kind in ("if", "for", "while", "until"):
            return self.control(node, places)
        if kind in ("reservedword", "operator", "pipe"):
            return _same(places)
        if kind == "function":
            self.block("defines a shell function")
        else:
            self.block(f"uses a construct fxdesk does not follow ({kind})")
        return _same(places)

    def list_(self, parts: Sequence[Any], places: _Places) -> _Flow:
        """`a && b || c; d & e`: && and || bind tighter than ; & and newlines."""
        result, start = _same(places), places
        chain: _Flow | None = None
        joiner = ""
        for part in parts:
            if part.kind != "operator":
                chain = self.node(part, start) if chain is None else self.join(chain, joiner, part)
            elif part.op in ("&&", "||"):
                joiner = part.op
            elif chain is not None:
                # A chain sent to the background runs in a subshell: its `cd`s stay there.
                result = _same(start) if part.op == "&" else chain
                start, chain = result.after, None
        return chain if chain is not None else result

    def join(self, left: _Flow, joiner: str, node: Any) -> _Flow:
        if joiner == "&&":
            right = self.node(node, left.ok)
            return _Flow(right.ok, _union(left.failed, right.failed))
        right = self.node(node, left.failed)
        return _Flow(_union(left.ok, right.ok), right.failed)

    def pipeline(self, node: Any, places: _Places) -> _Flow:
        negated = any(part.kind == "reservedword" and part.word == "!" for part in node.parts)
        members = [part for part in node.parts if part.kind not in ("pipe", "reservedword")]
        if len(members) == 1:  # `! cd x` runs in this shell
            flow = self.node(members[0], places)
        else:  # every side of a pipe runs in a subshell
            for member in members:
                self.node(member, places)
            flow = _same(places)
        return _Flow(flow.failed, flow.ok) if negated else flow

    def compound(self, node: Any, places: _Places) -> _Flow:
        if self.source.startswith("((", node.pos[0]):
            self.block("uses an arithmetic command (( … ))")
        for redirect in getattr(node, "redirects", ()):
            self.redirect(redirect, places)
        parts = list(getattr(node, "list", ()))
        subshell = bool(parts) and parts[0].kind == "reservedword" and parts[0].word == "("
        flow = self.sequence([part for part in parts if part.kind != "reservedword"], places)
        return _same(places) if subshell else flow

    def control(self, node: Any, places: _Places) -> _Flow:
        """if / for / while / until: any branch may run, a loop body any number of times."""
        current = places
        for part in node.parts:
            if part.kind == "reservedword":
                continue
            if part.kind == "word":  # the name and the words a `for` loop runs over
                self.substitutions(self.word(part), current)
                continue
            current = _union(current, self.node(part, current).after)
        if node.kind != "if" and current != places:
            self.block("changes directory inside a loop")
        return _same(current)

    # simple commands -------------------------------------------------------------------------

    def simple(self, node: Any, places: _Places) -> _Flow:
        words = [self.word(part) for part in node.parts if part.kind != "redirect"]
        texts = tuple(word.text for word in words)
        if texts:
            name_at = next((i for i, t in enumerate(texts) if not ASSIGNMENT.match(t)), None)
            dynamic = any(word.dynamic for word in words) or (
                name_at is not None and expands(texts[name_at])
            )
            text = " ".join(texts)
            cwd = places[0].cwd or ""
            self.commands.append(SimpleCommand(texts, text, cwd, dynamic))
            if dynamic:
                self.notes.append(f"`{text}` uses values only known when it runs")
        for word in words:
            self.substitutions(word, places)
        for part in node.parts:
            if part.kind == "redirect":
                self.redirect(part, places)
        return self.effect(words, places)

    def substitutions(self, word: Word, places: _Places) -> None:
        for command in word.substituted:  # each runs in a subshell: its `cd`s stay there
            self.node(command, places)

    def word(self, node: Any) -> Word:
        """One word, read for what expands when it runs.

        Where bashlex finds expansions is trusted; its quote removal is not (it mishandles
        backslashes next to quotes), so static words are re-read from the source.
        """
        expanding, substituted = self.expansions(node)
        raw = self.source[node.pos[0] : node.pos[1]]
        reading = read_word(raw)
        parsed = _words_text(node)
        if reading.trouble:
            self.block(f"`{raw}` {reading.trouble}")
        elif reading.dynamic and not expanding:
            self.block(f"bash and bashlex read `{raw}` differently")
        elif not reading.dynamic and not QUOTING.search(raw) and reading.text != parsed:
            self.block(f"bashlex placed `{parsed}` where the line has `{raw}`")
        dynamic = expanding or reading.dynamic
        text = parsed if dynamic or reading.trouble else reading.text
        return Word(text, node, dynamic, substituted, reading.tilde)

    def expansions(self, node: Any) -> tuple[bool, tuple[Any, ...]]:
        """Whether bashlex found expansions in a word, and the commands substituted into it."""
        expanding = False
        substituted: list[Any] = []
        base = node.pos[0]
        outside = list(self.source[base : node.pos[1]])  # the word without its expansions
        for part in getattr(node, "parts", ()):
            if part.kind == "parameter":
                value = str(getattr(part, "value", ""))
                expanding = expanding or bool(value)  # a bare `$` is a dollar sign
                if any(s in value for s in ("$(", "`", "<(", ">(")):
                    self.block("runs a command inside ${…}, which fxdesk cannot read")
                start, end = part.pos
            elif part.kind in ("commandsubstitution", "processsubstitution"):
                expanding = True
                substituted.append(part.command)
                start, end = part.pos[0], self.substitution_end(part)
            else:
                if part.kind != "tilde":
                    self.block(f"uses a construct fxdesk does not follow ({part.kind})")
                continue
            outside[start - base : end - base] = [""] * len(outside[start - base : end - base])
        if expanding and breaks_word("".join(outside)):
            # bashlex's tokenizer takes `#` inside $(…) for a comment and runs the word on
            self.block("has a word bash and bashlex end in different places")
        return expanding, tuple(substituted)

    def substitution_end(self, substitution: Any) -> int:
        """Where a substitution really ends. bashlex parses only its first line, so check that
        nothing but blanks comes between what it parsed and the closing ) or `."""
        closer = "`" if self.source.startswith("`", substitution.pos[0]) else ")"
        ends = [doc.pos[1] for doc in _heredocs(substitution.command)]
        rest = self.source[max([substitution.command.pos[1], *ends]) :].lstrip(" \t\n;")
        if not rest.startswith(closer):
            self.block(f"has a substitution bashlex read only in part (`{rest[:20]}`)")
            return int(substitution.pos[1])
        return len(self.source) - len(rest) + 1

    def effect(self, words: list[Word], places: _Places) -> _Flow:
        """How a command moves the shell: `cd` and friends; files `tee` writes."""
        args = after_wrappers(words)
        if not args:
            return _same(places)
        name = posixpath.basename(args[0].text)
        if args[0].text in _DIRECTORY_BUILTINS:
            return self.change_directory(args[0].text, args[1:], places)
        if args[0].dynamic or args[0].text in _UNKNOWN_DIRECTORY_AFTER:
            return _same(_UNKNOWN)
        if name == "tee":
            for word in tee_files(args[1:]):
                self.record(word, places, writes=True)
        return _same(places)

    # redirects and paths ---------------------------------------------------------------------

    def redirect(self, node: Any, places: _Places) -> None:
        if node.type in _HEREDOCS:
            self.heredoc(node)
            return
        target = node.output
        if not hasattr(target, "kind"):  # 2>&1, >&-: a file descriptor, not a file
            return
        word = self.word(target)
        self.substitutions(word, places)
        if node.type == "<<<":  # a here-string is text, not a file
            return
        if node.type == ">&" and QUOTING.search(self.source[target.pos[0] : target.pos[1]]):
            # bash removes quotes twice from a csh-style `>&file` name: 1\' becomes 1, not 1'
            word = Word(word.text, target, True)
        self.record(word, places, writes=node.type in _WRITING)

    def body_follows_its_line(self, redirect: Any) -> bool:
        """Whether the body starts right after the line holding `<<` (and the bodies of earlier
        here-documents on that line), as in bash. Inside a multi-line ( … ) or { … } bashlex
        reads it a line late, taking a command for text."""
        doc = getattr(redirect, "heredoc", None)
        if doc is None:
            return False
        start, end = redirect.output.pos[1], doc.pos[0]
        gap = list(self.source[start:end])
        earlier = 0
        for other in self.heredoc_spans:
            if start <= other[0] and other[1] <= end:
                gap[other[0] - start : other[1] - start] = [""] * (other[1] - other[0])
                earlier += 1
        rest = "".join(gap)
        newline = rest.find("\n")
        return newline >= 0 and rest[newline:] == "\n" * (1 + earlier)

    def heredoc(self, node: Any) -> None:
        if not self.body_follows_its_line(node):
            self.block("has a here-document bashlex reads from the wrong lines")
        delimiter = _words_text(node.output)
        reading = read_word(delimiter)
        if reading.dynamic or reading.trouble:
            self.block(f"ends a here-document at `{delimiter}`, which fxdesk cannot read")
            return
        quoted = reading.text != delimiter  # then bash leaves the body as it is
        body = str(getattr(getattr(node, "heredoc", None), "value", "") or "")
        if not quoted and ("$(" in body or "`" in body):
            self.block("runs a command inside a here-document")
        if any(line.lstrip("\t").startswith(reading.text) for line in body.split("\n")[:-1]):
            # Inside $(…) bash also ends a here-document at `EOF)`; bashlex only at `EOF`.
            self.block(f"has a here-document line starting with its delimiter `{reading.text}`")

    def record(self, word: Word, places: _Places, *, writes: bool) -> None:
        """A file the line reads or writes, once for each directory it may be relative to."""
        if not word.text:
            return  # bash refuses an empty file name before running the command
        for place in places:
            path, unknown = self.path(word, place.cwd)
            self.redirects.append(Redirect(path, writes, unknown))
            if writes and unknown:
                self.dynamic_writes.append(path)
                self.notes.append(f"writes to `{word.text}`, a path only known when it runs")
            elif writes and path not in _NOT_FILES:
                self.writes.append(path)

    def path(self, word: Word, cwd: str | None) -> tuple[str, bool]:
        """The word as an absolute path from ``cwd``, and whether it is only known when it runs."""
        expanded = None if word.dynamic or expands(word.text) else self.tilde(word, cwd)
        if expanded is None:
            return word.text, True
        if expanded.startswith("/"):
            return _collapse(expanded), False
        if cwd is None:
            return word.text, True
        return _collapse(f"{cwd}/{expanded}"), False

    def tilde(self, word: Word, cwd: str | None) -> str | None:
        """The word with a leading ~ or ~+ expanded; None for ~user, ~- and the like."""
        if word.tilde is None:
            return word.text
        if word.tilde == "~":
            return self.home + word.text[1:]
        if word.tilde == "~+" and cwd is not None:
            return cwd + word.text[2:]
        return None

    # cd, pushd, popd -------------------------------------------------------------------------

    def change_directory(self, name: str, args: list[Word], places: _Places) -> _Flow:
        if name == "popd":
            return self.popd(args, places)
        operands = list(args)
        physical = False
        while name == "cd" and operands and _CD_OPTIONS.fullmatch(operands[0].text):
            option = operands.pop(0).text
            physical = physical or "P" in option
        if operands and operands[0].text == "--":
            operands.pop(0)
        why = cd_refusal(name, [word.text for word in operands], physical)
        if why:
            self.block(why)
            return _same(places)
        moved: list[_Place] = []
        for place in places:
            target = self.destination(operands[0] if operands else None, place.cwd)
            if target is None:
                continue
            self.directories.append(target)
            stack = (place.cwd, *place.stack) if name == "pushd" else place.stack
            moved.append(_Place(target, stack))
        return _Flow(_union(tuple(moved)) or places, places)

    def destination(self, word: Word | None, cwd: str | None) -> str | None:
        if word is None:
            return self.home
        if word.dynamic or expands(word.text):
            self.block(f"moves to `{word.text}`, a directory only known when it runs")
            return None
        if not word.text:
            return cwd if cwd is not None else None
        expanded = self.tilde(word, cwd)
        if expanded is None:
            self.block(f"moves to `{word.text}`, a directory fxdesk cannot know")
            return None
        if cwd is None and not expanded.startswith("/"):
            self.block(f"moves to `{word.text}` from a directory fxdesk cannot know")
            return None
        return posixpath.normpath(posixpath.join(cwd or "/", expanded))

    def popd(self, args: list[Word], places: _Places) -> _Flow:
        if args:
            self.block("uses `popd` with arguments")
            return _same(places)
        moved: list[_Place] = []
        for place in places:
            if place.stack:
                if place.stack[0] is not None:
                    self.directories.append(place.stack[0])
                moved.append(_Place(place.stack[0], place.stack[1:]))
            else:  # the shell's own stack, from before this line, is not ours to see
                moved.append(_Place(None))
        return _Flow(_union(tuple(moved)), places)
