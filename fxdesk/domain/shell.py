"""What a shell command line does, read without running it (spec child-sessions §6).

`analyse` parses a line with bashlex and walks the tree. It lists every simple command wherever it
sits (pipelines, lists, subshells, groups, loops, command and process substitutions), the files the
line redirects to or hands to `tee` (also behind wrappers), the files its input redirections read,
and the directories `cd`, `pushd` and `popd` may move to (:mod:`fxdesk.domain.shell_places`).
Paths are lexical; the caller resolves symlinks. A `cd` may fail, so a later command may run in
any of several directories: a relative write is listed once for each directory it may land in.

The permission check trusts this module to see at least everything bash will run, and bashlex
does not always read a line as bash does. So words are re-read from the source (expansions kept
as written, for the approval and the rules), and the line is ``understood=False`` (the person is
asked) wherever the two could differ: `$'…'` strings, backslashes next to backticks, commands
inside `${…}` or an unquoted here-document, here-documents bashlex places on the wrong lines,
words or substitutions it ends early, parameters it misplaces, text it skipped; for constructs we
do not follow (functions, arithmetic, `case`, `[[ … ]]`, `coproc`, `time`, a `cd` we cannot
place); and wherever bash may do what the line does not show: a parameter expansion other than
`$name`/`${name}` (`${v@P}`, `${!v}`, subscripts and offsets are evaluated, even as arithmetic
that runs commands), a line that sets what the analysis reads bash by (PWD, HOME, PATH, CDPATH,
…) or has bash evaluate a name (:mod:`fxdesk.domain.shell_variables`). Two bashlex 0.18 bugs are
patched when bashlex is first loaded: an endless loop on `${` without `}`, and here-documents
whose delimiter is quoted (`<<'EOF'`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.shell_places import UNKNOWN, Flow, Mover, Place, Places, same, union
from fxdesk.domain.shell_programs import program_starts
from fxdesk.domain.shell_variables import command_trouble, loop_trouble
from fxdesk.domain.shell_words import (
    ASSIGNMENT,
    QUOTING,
    Word,
    after_wrappers,
    breaks_word,
    expands,
    load_bashlex,
    parameter_written,
    plain_parameter,
    read_word,
    shown,
    tee_files,
)

MAX_COMMAND_CHARS = 100_000
_MAX_PLACES = 16  # directories one command may run in before we give up following `cd`

_WRITING = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_HEREDOCS = frozenset({"<<", "<<-"})
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_NOT_READ_FILES = _NOT_FILES | {"/dev/stdin", "/dev/zero", "/dev/random", "/dev/urandom"}
_DIRECTORY_BUILTINS = frozenset({"cd", "pushd", "popd"})
# may `cd` out of sight
_UNKNOWN_DIRECTORY_AFTER = frozenset({"source", ".", "eval", "trap", "enable"})
# In an unquoted here-document bash expands $name and ${name}; anything else may run code.
_BODY_PARAMETER = re.compile(r"\$\{(?![A-Za-z_][A-Za-z0-9_]*\}|[0-9]+\}|[@*#?$!-]\})|\$\[")


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
    reads: tuple[str, ...] = ()  # files read by input redirections (`< f`, `0< f`, `<> f`)
    dynamic_reads: tuple[str, ...] = ()  # raw text of read sources only known when it runs


def analyse(command: str, *, cwd: str, home: str, cdpath: str | None = None) -> CommandAnalysis:
    """What ``command`` runs, reads, writes and where it moves; never raises.

    Args:
        command: The line as the agent wrote it.
        cwd: Where it starts, symbolic links resolved (a ``..`` after one of its names is read
            as text).
        home: $HOME as bash will have it.
        cdpath: $CDPATH as bash will have it (None or "": unset).
    """
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
    walker = _Walker(command, home, nodes, posixpath.normpath(cwd), cdpath)
    try:
        skipped = _skipped(command, nodes)
        if skipped:
            walker.block(f"has text bashlex skipped (`{skipped}`)")
        walker.sequence(nodes, (Place(posixpath.normpath(cwd)),))
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


# --- paths ------------------------------------------------------------------------------------


def _collapse(path: str) -> str:
    """``path`` without "." and empty parts; ".." stays, since only the caller can resolve it."""
    return "/" + "/".join(part for part in path.split("/") if part not in ("", "."))


def _words_text(node: Any) -> str:
    return str(getattr(node, "word", ""))


# --- the walk ---------------------------------------------------------------------------------


class _Walker:
    """Walks bashlex's tree in execution order, following the directory through the line."""

    def __init__(
        self, source: str, home: str, nodes: Sequence[Any], cwd: str, cdpath: str | None
    ) -> None:
        self.source = source
        self.heredoc_spans = [doc.pos for node in nodes for doc in _heredocs(node)]
        self.mover = Mover(posixpath.normpath(home) if home else "/", cwd, cdpath, self.block)
        self.commands: list[SimpleCommand] = []
        self.redirects: list[Redirect] = []
        self.writes: list[str] = []
        self.dynamic_writes: list[str] = []
        self.reads: list[str] = []
        self.dynamic_reads: list[str] = []
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
            directories=tuple(dict.fromkeys(self.mover.directories)),
            understood=not self.blockers,
            problems=tuple(dict.fromkeys(self.blockers + self.notes)),
            dynamic_writes=tuple(dict.fromkeys(self.dynamic_writes)),
            source=self.source,
            reads=tuple(dict.fromkeys(self.reads)),
            dynamic_reads=tuple(dict.fromkeys(self.dynamic_reads)),
        )

    def block(self, why: str) -> None:
        self.blockers.append(why)

    # nodes -----------------------------------------------------------------------------------

    def sequence(self, nodes: Sequence[Any], places: Places) -> Flow:
        flow = same(places)
        for node in nodes:
            flow = self.node(node, flow.after)
        return flow

    def node(self, node: Any, places: Places) -> Flow:
        flow = self._dispatch(node, places)
        if len(flow.after) > _MAX_PLACES:
            self.block("changes directory in more ways than fxdesk follows")
            return same(flow.after[:_MAX_PLACES])
        return flow

    def _dispatch(self, node: Any, places: Places) -> Flow:
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
            return same(places)
        if kind == "function":
            self.block("defines a shell function")
        else:
            self.block(f"uses a construct fxdesk does not follow ({kind})")
        return same(places)

    def list_(self, parts: Sequence[Any], places: Places) -> Flow:
        """`a && b || c; d & e`: && and || bind tighter than ; & and newlines."""
        result, start = same(places), places
        chain: Flow | None = None
        joiner = ""
        for part in parts:
            if part.kind != "operator":
                chain = self.node(part, start) if chain is None else self.join(chain, joiner, part)
            elif part.op in ("&&", "||"):
                joiner = part.op
            elif chain is not None:
                # A chain sent to the background runs in a subshell: its `cd`s stay there.
                result = same(start) if part.op == "&" else chain
                start, chain = result.after, None
        return chain if chain is not None else result

    def join(self, left: Flow, joiner: str, node: Any) -> Flow:
        if joiner == "&&":
            right = self.node(node, left.ok)
            return Flow(right.ok, union(left.failed, right.failed))
        right = self.node(node, left.failed)
        return Flow(union(left.ok, right.ok), right.failed)

    def pipeline(self, node: Any, places: Places) -> Flow:
        negated = any(part.kind == "reservedword" and part.word == "!" for part in node.parts)
        members = [part for part in node.parts if part.kind not in ("pipe", "reservedword")]
        if len(members) == 1:  # `! cd x` runs in this shell
            flow = self.node(members[0], places)
        else:  # every side of a pipe runs in a subshell
            for member in members:
                self.node(member, places)
            flow = same(places)
        return Flow(flow.failed, flow.ok) if negated else flow

    def compound(self, node: Any, places: Places) -> Flow:
        if self.source.startswith("((", node.pos[0]):
            self.block("uses an arithmetic command (( … ))")
        for redirect in getattr(node, "redirects", ()):
            self.redirect(redirect, places)
        parts = list(getattr(node, "list", ()))
        subshell = bool(parts) and parts[0].kind == "reservedword" and parts[0].word == "("
        flow = self.sequence([part for part in parts if part.kind != "reservedword"], places)
        return same(places) if subshell else flow

    def control(self, node: Any, places: Places) -> Flow:
        """if / for / while / until: any branch may run, a loop body any number of times."""
        current = places
        if node.kind == "for" and len(node.parts) > 1:
            why = loop_trouble(_words_text(node.parts[1]))
            if why:
                self.block(why)
        for part in node.parts:
            if part.kind == "reservedword":
                continue
            if part.kind == "word":  # the name and the words a `for` loop runs over
                self.substitutions(self.word(part), current)
                continue
            current = union(current, self.node(part, current).after)
        if node.kind != "if" and current != places:
            self.block("changes directory inside a loop")
        return same(current)

    # simple commands -------------------------------------------------------------------------

    def simple(self, node: Any, places: Places) -> Flow:
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
            why = command_trouble(texts)
            if why:
                self.block(why)
        for word in words:
            self.substitutions(word, places)
        for part in node.parts:
            if part.kind == "redirect":
                self.redirect(part, places)
        return self.effect(words, places)

    def substitutions(self, word: Word, places: Places) -> None:
        for command in word.substituted:  # each runs in a subshell: its `cd`s stay there
            self.node(command, places)

    def word(self, node: Any) -> Word:
        """One word, read for what expands when it runs.

        Where bashlex finds expansions is trusted; its quote removal is not (it mishandles
        backslashes next to quotes), so words are re-read from the source: a static word whole,
        a dynamic one with its expansions kept as the line writes them.
        """
        expanding, substituted, spans = self.expansions(node)
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
        text = shown(raw, spans) if dynamic or reading.trouble else reading.text
        return Word(text, node, dynamic, substituted, reading.tilde, spans)

    def expansions(self, node: Any) -> tuple[bool, tuple[Any, ...], list[tuple[int, int]]]:
        """Whether bashlex found expansions in a word, the commands substituted into it, and
        where each expansion is (offsets into the word)."""
        expanding = False
        substituted: list[Any] = []
        spans: list[tuple[int, int]] = []
        base = node.pos[0]
        outside = list(self.source[base : node.pos[1]])  # the word without its expansions
        for part in getattr(node, "parts", ()):
            if part.kind == "parameter":
                value = str(getattr(part, "value", ""))
                expanding = expanding or bool(value)  # a bare `$` is a dollar sign
                start, end = part.pos
                written = self.source[start:end]
                if any(s in value for s in ("$(", "`", "<(", ">(")):
                    self.block("runs a command inside ${…}, which fxdesk cannot read")
                elif not parameter_written(written, value):
                    self.block(f"bashlex placed `${{{value}}}` where the line has `{written}`")
                elif value and not plain_parameter(value):
                    self.block(f"uses `{written}`, an expansion bash may evaluate as code")
            elif part.kind in ("commandsubstitution", "processsubstitution"):
                expanding = True
                substituted.append(part.command)
                start, end = part.pos[0], self.substitution_end(part)
            else:
                if part.kind != "tilde":
                    self.block(f"uses a construct fxdesk does not follow ({part.kind})")
                continue
            outside[start - base : end - base] = [""] * len(outside[start - base : end - base])
            spans.append((start - base, end - base))
        if expanding and breaks_word("".join(outside)):
            # bashlex's tokenizer takes `#` inside $(…) for a comment and runs the word on
            self.block("has a word bash and bashlex end in different places")
        return expanding, tuple(substituted), spans

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

    def effect(self, words: list[Word], places: Places) -> Flow:
        """How a command moves the shell: `cd` and friends; files `tee` writes, also behind
        wrappers (`sudo tee`, `timeout 5 tee`)."""
        args = after_wrappers(words)
        if not args:
            return same(places)
        if args[0].text in _DIRECTORY_BUILTINS:
            return self.mover.change_directory(args[0].text, args[1:], places)
        for start in program_starts([word.text for word in words]):
            if posixpath.basename(words[start].text) == "tee" and not words[start].dynamic:
                for word in tee_files(words[start + 1 :]):
                    self.record(word, places, writes=True)
        if args[0].dynamic or args[0].text in _UNKNOWN_DIRECTORY_AFTER:
            return same(UNKNOWN)
        return same(places)

    # redirects and paths ---------------------------------------------------------------------

    def redirect(self, node: Any, places: Places) -> None:
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
        if word.spans == [(0, target.pos[1] - target.pos[0])] and self.source.startswith(
            ("<(", ">("), target.pos[0]
        ):
            return  # `< <(cmd)`, `> >(cmd)`: a pipe to a command, listed on its own
        if node.type == ">&" and QUOTING.search(self.source[target.pos[0] : target.pos[1]]):
            # bash removes quotes twice from a csh-style `>&file` name: 1\' becomes 1, not 1'
            word = Word(word.text, target, True)
        writes = node.type in _WRITING
        self.record(word, places, writes=writes, reads=not writes or node.type == "<>")

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
        elif not quoted and _BODY_PARAMETER.search(body):
            self.block("has an expansion inside a here-document that bash may evaluate as code")
        if any(line.lstrip("\t").startswith(reading.text) for line in body.split("\n")[:-1]):
            # Inside $(…) bash also ends a here-document at `EOF)`; bashlex only at `EOF`.
            self.block(f"has a here-document line starting with its delimiter `{reading.text}`")

    def record(self, word: Word, places: Places, *, writes: bool, reads: bool = False) -> None:
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
            if reads and unknown:
                self.dynamic_reads.append(path)
                self.notes.append(f"reads from `{word.text}`, a path only known when it runs")
            elif reads and path not in _NOT_READ_FILES:
                self.reads.append(path)

    def path(self, word: Word, cwd: str | None) -> tuple[str, bool]:
        """The word as an absolute path from ``cwd``, and whether it is only known when it runs."""
        expanded = None if word.dynamic or expands(word.text) else self.mover.tilde(word, cwd)
        if expanded is None:
            return word.text, True
        if expanded.startswith("/"):
            return _collapse(expanded), False
        if cwd is None:
            return word.text, True
        return _collapse(f"{cwd}/{expanded}"), False
