"""How bash reads one word, and bashlex loaded with the fixes fxdesk needs.

Split from :mod:`fxdesk.domain.shell`: quote removal up to the first expansion; the checks for
words bash would split, glob or brace-expand; the word-level rules of the walk (skipping
assignments and `command`/`builtin`, `tee`'s files, which `cd` we can follow); and the two
bashlex 0.18 patches.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from functools import cache
from typing import Any

GLOB = re.compile(r"[*?]|\[[^\]]+\]")
BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
QUOTING = re.compile(r"['\"\\\\$`]")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_WRAPPERS = frozenset({"builtin", "command"})
_PLAIN_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-]")
_EXPANDS_AFTER_DOLLAR = frozenset("({[" + string.ascii_letters + string.digits + "_@*#?-$!")


@dataclass(frozen=True)
class Reading:
    text: str  # after quote removal; meaningless when dynamic
    dynamic: bool = False
    tilde: str | None = None
    trouble: str = ""  # why bash may read it differently from bashlex


def read_word(raw: str) -> Reading:
    """Bash's quote removal for one word, stopping at the first expansion."""
    out: list[str] = []
    quoted = False  # inside "…"
    i = 0
    while i < len(raw):
        c, following = raw[i], raw[i + 1 : i + 2]
        if c == "'" and not quoted:
            end = raw.find("'", i + 1)
            if end < 0:
                return Reading("", trouble="has a quote bashlex closes differently")
            out.append(raw[i + 1 : end])
            i = end + 1
            continue
        if c == "\\":
            out.append(_unescaped(following, quoted))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == "$" and following == "'" and not quoted:
            return Reading("", trouble="uses $'…' quoting, which bashlex cannot read")
        elif _expansion_starts(c, following, quoted):
            return Reading("", dynamic=True)
        else:
            out.append(c)
        i += 1
    if quoted:
        return Reading("", trouble="has a quote bashlex closes differently")
    return Reading("".join(out), tilde=tilde_prefix(raw))


def _unescaped(following: str, quoted: bool) -> str:
    """What a backslash and the character after it stand for: nothing before a newline (a
    line continuation); the character itself outside double quotes or before one of the four
    bash unescapes inside them; else both, kept."""
    if following == "\n":
        return ""
    if not quoted or following in '$`"\\':
        return following or "\\"
    return "\\" + following


def breaks_word(text: str) -> bool:
    """Whether ``text`` has an unquoted blank or metacharacter, so bash would not read it as one
    word."""
    quote = ""
    escaped = False
    for c in text:
        if escaped:
            escaped = False
        elif c == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in " \t\n|&;()<>":
            return True
    return False


def _expansion_starts(c: str, following: str, quoted: bool) -> bool:
    if c == "`":
        return True
    if c == "$":  # $"…" is a translated string: unknown too
        return bool(following) and (
            following in _EXPANDS_AFTER_DOLLAR or (following == '"' and not quoted)
        )
    return c in "<>" and following == "(" and not quoted


def tilde_prefix(raw: str) -> str | None:
    prefix = raw.split("/", 1)[0]
    if not prefix.startswith("~") or QUOTING.search(prefix):
        return None
    return prefix


def expands(text: str) -> bool:
    """Whether bash would glob or brace-expand ``text`` (quoted or not: we cannot tell)."""
    return bool(GLOB.search(text) or BRACES.search(text))


@dataclass
class Word:
    text: str
    node: Any
    dynamic: bool
    substituted: tuple[Any, ...] = ()  # commands run by $(…), `…`, <(…) and >(…) in the word
    tilde: str | None = None  # an unquoted ~ prefix it starts with ("~", "~+", "~user")
    spans: list[tuple[int, int]] = field(default_factory=list)  # its expansions, in its text


def after_wrappers(words: list[Word]) -> list[Word]:
    """The words from the command name on: assignments and `builtin`/`command` skipped."""
    rest = list(words)
    while rest and ASSIGNMENT.match(rest[0].text):
        rest.pop(0)
    while len(rest) > 1 and rest[0].text in _WRAPPERS:
        name_at = 1
        while name_at < len(rest) - 1 and rest[name_at].text in ("-p", "--"):
            name_at += 1  # `command -p cd` still changes directory
        if rest[name_at].text.startswith("-"):
            break  # `command -v cd` only looks the name up
        rest = rest[name_at:]
    return rest


def tee_files(args: list[Word]) -> list[Word]:
    files: list[Word] = []
    options = True
    for word in args:
        if options and word.text == "--":
            options = False
        elif not (options and word.text.startswith("-") and word.text != "-"):
            files.append(word)
    return [word for word in files if word.text != "-"]


def cd_refusal(name: str, operands: list[str]) -> str:
    """Why we cannot follow this cd/pushd ("" when we can)."""
    if name == "pushd" and (not operands or operands[0][:1] in ("+", "-")):
        return "uses `pushd` to rotate the directory stack"
    if len(operands) > 1:
        return f"gives `{name}` more than one directory"
    if operands and operands[0] == "-":
        return f"uses `{name} -`, whose directory fxdesk cannot see"
    return ""


def plain_parameter(value: str) -> bool:
    """Whether a parameter expansion's inside (bashlex's ``value``: `v` for `$v` and `${v}`) is
    a name, a positional or a special parameter, and nothing bash would evaluate: `${v@P}`,
    `${!v}`, `${a[i]}`, `${v:1}`, `${v:=x}`, `${v/a/b}`, `${#v}` are not plain."""
    return bool(_PLAIN_PARAMETER.fullmatch(value))


def parameter_written(raw: str, value: str) -> bool:
    """Whether ``raw`` (the source where bashlex placed a parameter) is that parameter as
    written: `$v` or `${v}`. bashlex's positions shift after a line continuation."""
    return raw in (f"${value}", f"${{{value}}}")


def shown(raw: str, spans: list[tuple[int, int]]) -> str:
    """The word as bash reads it, for the person and the rules: quotes removed as bash removes
    them, each expansion (``spans``, offsets into ``raw``) kept exactly as the line writes it."""
    ends = dict(spans)
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(raw):
        if i in ends:
            out.append(raw[i : ends[i]])
            i = ends[i]
            continue
        c, following = raw[i], raw[i + 1 : i + 2]
        if c == "'" and not quoted:
            end = raw.find("'", i + 1)
            end = len(raw) if end < 0 else end
            out.append(raw[i + 1 : end])
            i = end + 1
            continue
        if c == "\\":
            out.append(_unescaped(following, quoted))
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        else:
            out.append(c)
        i += 1
    return "".join(out)


@cache
def load_bashlex() -> Any:
    """bashlex, imported (about 0.1 s: it builds its parser tables) the first time a command
    is analysed rather than whenever fxdesk starts, with its two fixes installed."""
    import bashlex  # type: ignore[import-untyped]
    import bashlex.errors  # type: ignore[import-untyped]
    import bashlex.heredoc  # type: ignore[import-untyped]
    import bashlex.subst  # type: ignore[import-untyped]

    _guard_unclosed_parameter(bashlex)
    _end_quoted_heredocs_like_bash(bashlex)
    return bashlex


def _guard_unclosed_parameter(bashlex: Any) -> None:
    """bashlex 0.18 loops forever on a word holding `${` with no `}` after it (such as a'${');
    make that a parse error. This only changes inputs that would otherwise never return."""
    original = bashlex.subst._paramexpand
    if getattr(original, "fxdesk_guard", False):
        return

    def paramexpand(parser: Any, string: str, index: int) -> Any:
        if string.startswith("${", index) and string.find("}", index + 2) == -1:
            raise bashlex.errors.ParsingError("bad substitution: no closing '}'", string, index)
        return original(parser, string, index)

    paramexpand.fxdesk_guard = True  # type: ignore[attr-defined]
    bashlex.subst._paramexpand = paramexpand


def _end_quoted_heredocs_like_bash(bashlex: Any) -> None:
    """bashlex 0.18 ends a here-document at a line equal to its delimiter as written, quotes and
    all, so `<<'EOF'` never ends (or ends at a line `'EOF'`, which bash reads as text). Compare
    lines with the delimiter after quote removal, as bash does (and as bashlex itself does for a
    here-document inside `$(…)`)."""
    original = bashlex.heredoc.makeheredoc
    if getattr(original, "fxdesk_guard", False):
        return

    def makeheredoc(tokenizer: Any, redirect: Any, lineno: int, killleading: bool) -> Any:
        word = redirect.output
        written = word.word
        reading = read_word(written)
        if reading.dynamic or reading.trouble or reading.text == written:
            return original(tokenizer, redirect, lineno, killleading)
        word.word = reading.text
        try:
            return original(tokenizer, redirect, lineno, killleading)
        finally:
            word.word = written

    makeheredoc.fxdesk_guard = True  # type: ignore[attr-defined]
    bashlex.heredoc.makeheredoc = makeheredoc
