"""The text the person approves is the line's own: words read from the source, expansions as
written, whatever comes before them (multibyte characters, here-documents, substitutions).

bashlex removes quotes badly next to backslashes and shifts its positions after a line
continuation; a word with expansions used to be shown as bashlex rebuilt it.
"""

from __future__ import annotations

import itertools

import pytest

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Request, decide
from fxdesk.domain.shell import analyse

WS = "/work/proj"
HOME = "/home/u"

# A word as the line writes it, and as the approval must show it: quotes removed as bash
# removes them, expansions exactly as written.
WORDS = (
    ('"é$X"', "é$X"), ('"日本$(ls)"', "日本$(ls)"), ("'ü'$Y", "ü$Y"), ('"\\\\\\\\$X"', "\\\\$X"),
    ('"a\\"b$X"', 'a"b$X'), ('c\\"$Y', 'c"$Y'), ("\"$(echo 'a b')\"", "$(echo 'a b')"),
    ('"${X}"z', "${X}z"), ('"$1"', "$1"), ("`id`", "`id`"), ('"`id`"x', "`id`x"),
    ('"ß"$(printf "%s" "ö")', 'ß$(printf "%s" "ö")'), ("$'x'", None), ('"\\$$X"', "$$X"),
    ('"€ $X $(date +%s)"', "€ $X $(date +%s)"), ('"\\\\"$X', "\\$X"),
    # bashlex drops a backslash quoted alone ('\') next to an expansion
    ("'\\'$(ls)", "\\$(ls)"), ("é$X'\\'", "é$X\\"), ('"a$X\\"\\\'"', 'a$X"\\\''),
    ("${Y}'\\'a\\${Y}", "${Y}\\a${Y}"),
)  # fmt: skip
# What may come before the word on the line (bashlex used to misplace what follows these).
BEFORE = (
    "", "echo é; ", "cat <<EOF\nü 日本\nEOF\n", "cat <<'E'\n$(x) 日\nE\n",
    ": \"$(cat <<EOF\nß\nEOF\n)\"; ", "echo 日本語 | cat; ", "cat <<-EOF\n\tö\n\tEOF\n",
)  # fmt: skip


@pytest.mark.parametrize(
    ("before", "word"),
    [pytest.param(b, w, id=f"{b!r}|{w[0]}") for b, w in itertools.product(BEFORE, WORDS)],
)
def test_the_approval_shows_the_words_as_the_line_writes_them(
    before: str, word: tuple[str, str | None]
) -> None:
    written, shown = word
    line = f"{before}rm -rf {written}"
    analysis = analyse(line, cwd=WS, home=HOME)
    if shown is None:  # $'…' is not read at all
        assert not analysis.understood
        return
    assert analysis.understood, analysis.problems
    [command] = [command for command in analysis.commands if command.words[:1] == ("rm",)]
    assert command.text == f"rm -rf {shown}"
    decision = decide(PermissionMode.AUTO, (), Request("run_command", WS, command=analysis))
    assert f"rm -rf {shown}" in decision.uncovered


@pytest.mark.parametrize(
    "line",
    [
        'echo "a\\\nb$X"',  # bashlex places $X on "\nb"
        "echo $X\\\nY $(id)",
        'echo "é\\\n$X"',
    ],
)
def test_a_parameter_bashlex_misplaces_is_not_shown_as_something_else(line: str) -> None:
    analysis = analyse(line, cwd=WS, home=HOME)
    assert not analysis.understood
    assert any("bashlex placed" in problem for problem in analysis.problems)


def test_a_not_understood_line_is_shown_whole() -> None:
    line = "cat <<EOF\n日本\nEOF\necho ${x@P} é"
    decision = decide(
        PermissionMode.AUTO,
        (),
        Request("run_command", WS, command=analyse(line, cwd=WS, home=HOME)),
    )
    assert line.strip() in decision.uncovered
