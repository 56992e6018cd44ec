"""Files a line reads through its input redirections, wherever they sit (issue 11 item 3)."""

from __future__ import annotations

import itertools

import pytest

from fxdesk.domain.shell import analyse

WS = "/work/proj"
HOME = "/home/u"

# How a line reads a file F: {} is the file as written.
READERS = (
    "cat < {}", "cat 0< {}", "cat 3< {}", "< {}", "0<{}", "cat <> {}", "echo $(< {})",
    'echo "$(< {})"', "cat <<< $(< {})", "cat <<< \"$(cat < {})\"", "cat <(cat < {})",
    "diff <(sort < {}) b", "{{ cat; }} < {}", "( cat ) < {}", "while read l; do :; done < {}",
    "if true; then cat < {}; fi", "for i in a; do cat < {}; done", "x=$(< {}) ls",
    "ls > $(cat < {})", "echo `cat < {}`", "true && cat < {} || false", "ls | cat < {}",
    "echo a; cat < {} &", "! cat < {}", "cat < {} > out", "cd src; cat < {}",
)  # fmt: skip
# The file as written, and where it is.
FILES = (
    ("/etc/passwd", "/etc/passwd"), ("~/.ssh/id_rsa", f"{HOME}/.ssh/id_rsa"),
    ("../x", f"{WS}/../x"), ("'/proc/self/environ'", "/proc/self/environ"),
    ("~+/../k", f"{WS}/../k"), ('"a b"', f"{WS}/a b"),
)  # fmt: skip


@pytest.mark.parametrize(
    ("reader", "file"),
    [pytest.param(r, f, id=f"{r}|{f[0]}") for r, f in itertools.product(READERS, FILES)],
)
def test_every_input_redirection_is_a_read(reader: str, file: tuple[str, str]) -> None:
    written, path = file
    analysis = analyse(reader.format(written), cwd=WS, home=HOME)
    assert analysis.understood, analysis.problems
    expected = {path}
    if reader.startswith("cd src;") and not written.startswith(("/", "~/", "'/")):
        expected = {path, path.replace(WS, f"{WS}/src", 1)}  # the cd may have failed
    assert expected <= set(analysis.reads), analysis.reads


@pytest.mark.parametrize(
    "line",
    ["cat < $F", "cat < ~-/x", 'cat < "$HOME/.ssh/id_rsa"', "cat < /proc/$PPID/environ",
     "cat < *.txt", "cat < `echo f`", "cat 0< ${F}"],
)  # fmt: skip
def test_a_read_only_known_when_it_runs_is_listed_as_such(line: str) -> None:
    analysis = analyse(line, cwd=WS, home=HOME)
    assert analysis.understood
    assert analysis.dynamic_reads
    assert not analysis.reads


@pytest.mark.parametrize(
    "line",
    ["cat < /dev/null", "cat < /dev/stdin", "cat <<< text", "cat <<EOF\nx\nEOF", "cat <&3",
     "cat < <(ls)", "cat 0<&-", "head -c 4 < /dev/urandom", "make > log 2>&1"],
)  # fmt: skip
def test_what_is_not_a_file_is_not_a_read(line: str) -> None:
    analysis = analyse(line, cwd=WS, home=HOME)
    assert analysis.understood
    assert analysis.reads == ()
    assert analysis.dynamic_reads == ()


def test_read_write_redirection_is_both() -> None:
    analysis = analyse("cat <> f", cwd=WS, home=HOME)
    assert analysis.reads == (f"{WS}/f",)
    assert analysis.writes == (f"{WS}/f",)
