"""The analysis says "not understood" wherever bash may do what the line does not show.

Issue 11 item 3: expansions that evaluate code, variables the analysis reads bash by, arithmetic on
names and shell options that move `cd`. Each class is a table of forms placed in every context a
word can take, so a form caught in one place and missed in another fails.
"""

from __future__ import annotations

import itertools

import pytest

from fxdesk.domain.shell import CommandAnalysis, analyse

WS = "/work/proj"
HOME = "/home/u"


def read(line: str) -> CommandAnalysis:
    return analyse(line, cwd=WS, home=HOME)


def not_understood(line: str) -> list[str]:
    analysis = read(line)
    assert not analysis.understood, f"understood: {line!r}"
    assert analysis.problems
    assert all("internal error" not in problem for problem in analysis.problems)
    return list(analysis.problems)


# --- parameter expansions ---------------------------------------------------------------------

# Every ${…} form bash has beyond ${name}: transformations, indirection, subscripts (arithmetic),
# offsets (arithmetic), defaults and assignments, pattern removal and replacement, case, length.
EXPANSIONS = (
    "${v@P}", "${v@Q}", "${v@E}", "${v@A}", "${v@a}", "${v@U}", "${!v}", "${!v[@]}", "${!p*}",
    "${a[i]}", "${a[$i]}", "${a[0]}", "${a[@]}", "${z[y]}", "${v:1}", "${v:1:2}", "${v: -1}",
    "${v:x}", "${@:x}", "${v:=x}", "${v=x}", "${v:-x}", "${v-x}", "${v:+x}", "${v+x}", "${v:?x}",
    "${v?x}", "${v#a}", "${v##a}", "${v%a}", "${v%%a}", "${v/a/b}", "${v//a/b}", "${v/#a/b}",
    "${v^}", "${v^^}", "${v,}", "${v,,}", "${#v}", "${#a[@]}", "${PWD:=/etc}", "${y@P}",
)  # fmt: skip
# Where a word can stand: {} is the expansion.
CONTEXTS = (
    "echo {}", 'echo "{}"', "echo x{}y", "{} arg", "cat < {}", "cat > {}", "cat <<< {}",
    "cat <<< \"{}\"", "x={}", "X={} ls", "for i in {}; do echo; done", "cd {}", "echo $(echo {})",
    "cat <(echo {})", "( echo {} )", "{{ echo {}; }}", "if echo {}; then :; fi", "ls | tee {}",
    "while read l; do echo {}; done < f", "echo a && echo {}",
)  # fmt: skip


@pytest.mark.parametrize(
    ("context", "expansion"),
    [pytest.param(c, e, id=f"{c}|{e}") for c, e in itertools.product(CONTEXTS, EXPANSIONS)],
)
def test_every_expansion_beyond_a_plain_name_is_not_understood(
    context: str, expansion: str
) -> None:
    not_understood(context.format(expansion))


PLAIN = ("$v", "${v}", "$1", "${10}", "$@", "$*", "$#", "$?", "$$", "$!", "$-", "$0", "${_x9}")


@pytest.mark.parametrize(
    ("context", "expansion"),
    [
        pytest.param(c, e, id=f"{c}|{e}")
        for c, e in itertools.product(("echo {}", 'echo "{}"', "x={}", "cat <<< {}"), PLAIN)
    ],
)
def test_plain_parameters_stay_understood(context: str, expansion: str) -> None:
    analysis = read(context.format(expansion))
    assert analysis.understood, analysis.problems


@pytest.mark.parametrize("expansion", EXPANSIONS)
def test_an_unquoted_here_document_expanding_code_is_not_understood(expansion: str) -> None:
    not_understood(f"cat <<EOF\nline {expansion}\nEOF")


@pytest.mark.parametrize("body", ["$v ${v} $1 ${10} $@", "plain text", "50% off"])
def test_a_here_document_with_plain_parameters_is_understood(body: str) -> None:
    assert read(f"cat <<EOF\n{body}\nEOF").understood


@pytest.mark.parametrize("expansion", ["${v@P}", "${!v}", "${a[$(id)]}", "$[1+2]"])
def test_a_quoted_here_document_is_text(expansion: str) -> None:
    assert read(f"cat <<'EOF'\n{expansion}\nEOF").understood


def test_the_issue_s_line_is_not_understood() -> None:
    problems = not_understood("for y in '$(touch /tmp/x)'; do <<< ${y@P}; done")
    assert any("${y@P}" in problem for problem in problems)


# --- variables the analysis reads bash by -------------------------------------------------------

STATE = ("PWD", "HOME", "OLDPWD", "IFS", "PATH", "CDPATH", "PS4", "POSIXLY_CORRECT")
# How a line may set a variable V.
SETTERS = (
    "for {v} in /etc; do echo > ~+/x; done", "{v}=/etc", "{v}=/etc; echo > ~/x", "{v}+=x",
    "export {v}=/etc", "declare {v}=/etc", "typeset {v}=/etc", "local {v}=/etc",
    "readonly {v}=/etc", "read {v} <<< /etc", "read -r -p x {v}", "read -a {v} < f",
    "printf -v {v} /etc", "printf -v{v} /etc", "mapfile -t {v} < f", "readarray {v} < f",
    "getopts ab {v}", "wait -p {v}", "unset {v}", "unset -v {v}", "command read {v} < f",
    "builtin printf -v {v} x", "compgen -V {v} x", "true && {v}=/etc", "echo $(export {v}=/)",
)  # fmt: skip


@pytest.mark.parametrize(
    ("setter", "name"),
    [pytest.param(s, v, id=f"{s}|{v}") for s, v in itertools.product(SETTERS, STATE)],
)
def test_setting_a_variable_the_analysis_relies_on_is_not_understood(
    setter: str, name: str
) -> None:
    not_understood(setter.format(v=name))


@pytest.mark.parametrize("name", [n for n in STATE if n != "IFS"])
def test_a_prefix_assignment_of_shell_state_is_not_understood(name: str) -> None:
    # `HOME=/etc cd` goes to /etc; `PATH=. ls` runs ./ls
    not_understood(f"{name}=/etc cd")


def test_ifs_for_one_command_only_splits_expansions_already_read_as_unknown() -> None:
    assert read("while IFS= read -r line; do echo $line; done < f").understood
    assert read("IFS=, read -r a b <<< x,y").understood


ORDINARY = (
    "for x in a b; do echo; done", "read -r line", "x=1; y=$x", "export FOO=$BAR", "local x=$1",
    "printf -v out %s $y", "declare -a arr", "unset x", "echo $PATH $HOME ${PWD}",
)  # fmt: skip


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_variables_stay_understood(line: str) -> None:
    assert read(line).understood, read(line).problems


# --- arithmetic on names -------------------------------------------------------------------------

ARITHMETIC = (
    "test -v 'a[$(touch x)]'", "[ -v 'a[$(touch x)]' ]", "[ -R 'a[x]' ]",
    "printf -v 'a[$(touch x)]' 1", "read 'a[$(touch x)]' <<< 1", "declare 'a[$(touch x)]=1'",
    "export 'a[x]=1'", "local 'a[x]'", "unset 'a[$(touch x)]'", "a[$i]=1", "a[i]=1 ls",
    "a[0]+=x", "let x=y", "let 'x=a[$(touch f)]'", "declare -i n=x", "typeset -i n", "local -i n",
    "declare -n r=x", "declare -n r='a[$(touch x)]'", "local -n r=PATH", "declare -in x",
    "getopts a 'o[$(touch x)]'", "mapfile 'a[x]' < f", "x='a[$(touch f)]'; declare -i y; y=x",
    "declare $name=1", "read $name", "printf -v \"$n\" x",
)  # fmt: skip


@pytest.mark.parametrize("line", ARITHMETIC)
def test_bash_evaluating_a_name_as_arithmetic_is_not_understood(line: str) -> None:
    not_understood(line)


# --- shell options that change `cd` or what runs ------------------------------------------------

OPTIONS = (
    "set -P", "set -eP", "set -o physical", "set +o physical", "set -k", "set -o keyword",
    "set -o posix", "shopt -s cdable_vars", "shopt -s expand_aliases", "shopt -s extdebug",
    "shopt -s autocd", "shopt -o -s physical", "builtin set -P", "command shopt -s cdable_vars",
)  # fmt: skip


@pytest.mark.parametrize("option", OPTIONS)
def test_options_that_change_cd_or_aliases_are_not_understood(option: str) -> None:
    not_understood(f"{option}; cd link && cd .. && echo > f")


@pytest.mark.parametrize("line", ["set -euo pipefail", "set -x", "set -- a b", "shopt -s nullglob",
                                  "shopt -s globstar dotglob", "set +e"])  # fmt: skip
def test_ordinary_options_stay_understood(line: str) -> None:
    assert read(line).understood


# --- ~+ and ~- ---------------------------------------------------------------------------------


def test_tilde_minus_is_a_path_only_known_when_it_runs() -> None:
    analysis = read("echo x > ~-/a; cat < ~-/b")
    assert analysis.dynamic_writes == ("~-/a",)
    assert analysis.dynamic_reads == ("~-/b",)
    assert not analysis.writes and not analysis.reads
    not_understood("cd ~-")


def test_tilde_plus_follows_the_shell_and_stays_with_the_physical_path_after_cd_p() -> None:
    assert read("cd src && echo > ~+/a").writes == (f"{WS}/src/a",)
    # after `cd -P link`, $PWD is link resolved: the caller resolves the text, .. included
    assert read("cd -P link && echo > ~+/../a").writes == (f"{WS}/link/../a",)
