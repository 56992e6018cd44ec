"""Attack lines against the permission decision, in every mode (issue 11 item 3).

Each class of the issue's list is a table of lines (many generated from a few forms), decided in
ask, auto and yolo. What "held" means for each class:

- code run by an expansion, shell state changed: not understood, so ask and auto ask even when a
  `*` rule allows every command, and yolo asks while any deny rule exists;
- a read outside the workspace: ask and auto ask (every command allowed), a deny rule on the path
  denies in every mode;
- a deny rule for a program: denied in every mode behind any wrapper or git option; a command
  that runs commands the line does not show asks in every mode while a deny rule exists.

Yolo with no rule at all allows everything (the sandbox is its guarantee, issue 11 item 1).
"""

from __future__ import annotations

import itertools
import posixpath

import pytest

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import (
    Access,
    Decision,
    KnownTools,
    Match,
    PermissionRule,
    Request,
    Scope,
    Target,
    Verdict,
    decide,
)
from fxdesk.domain.shell import analyse

WS = "/work/proj"
HOME = "/home/u"
ASK, AUTO, YOLO = PermissionMode.ASK, PermissionMode.AUTO, PermissionMode.YOLO
MODES = (ASK, AUTO, YOLO)
TOOLS = KnownTools(
    reading=frozenset({"read_file", "list_dir", "glob", "grep"}),
    writing=frozenset({"edit_file", "write_file"}),
    inert=frozenset({"echo"}),
)


def rule(
    pattern: str,
    action: Verdict = Verdict.DENY,
    *,
    tool: str = "run_command",
    match: Match = Match.PREFIX,
) -> PermissionRule:
    return PermissionRule(tool, pattern, action, Scope.GLOBAL, match)


EVERY_COMMAND = (rule("*", Verdict.ALLOW, match=Match.GLOB),)
DENY_RM = (rule("rm"),)
DENY_RM_GLOB = (rule("rm *", match=Match.GLOB),)
DENY_SSH_READS = (rule("~/.ssh/*", tool="read_file", match=Match.GLOB),)
DENY_ETC_WRITES = (rule("/etc/*", tool="write_file", match=Match.GLOB),)


def inside(path: str) -> bool:
    path = posixpath.normpath(path)
    return path == WS or path.startswith(WS + "/")


def decision(line: str, mode: PermissionMode, rules: tuple[PermissionRule, ...]) -> Decision:
    """As the engine decides, paths judged lexically (the engine resolves links first)."""
    analysis = analyse(line, cwd=WS, home=HOME)
    targets = tuple(
        Target(path, access, inside(path))
        for access, paths in ((Access.WRITE, analysis.writes), (Access.READ, analysis.reads))
        for path in paths
    )
    return decide(mode, rules, Request("run_command", WS, targets, analysis, HOME, TOOLS))


def held(line: str, rules: tuple[PermissionRule, ...], *, yolo_rules: tuple = ()) -> None:
    """Ask and auto ask although every command is allowed; yolo does not allow under a guard."""
    for mode in (ASK, AUTO):
        verdict = decision(line, mode, (*EVERY_COMMAND, *rules)).verdict
        assert verdict is Verdict.ASK, f"{mode}: {verdict} for {line!r}"
    guarded = decision(line, YOLO, (*EVERY_COMMAND, *rules, *yolo_rules))
    assert guarded.verdict is not Verdict.ALLOW, f"yolo allowed {line!r}: {guarded.reason}"


# --- expansions that execute, and the shell's view of where it is --------------------------------

EXECUTING = (
    "for y in '$(touch /tmp/x)'; do <<< ${y@P}; done", "y='$(touch /tmp/x)'; echo ${y@P}",
    "x='a[$(touch /tmp/x)]'; echo ${z[x]}", "x='a[$(touch /tmp/x)]'; echo ${v:x}",
    "echo ${y:=$'\\x24(id)'}", "cat < ${!v}", "for y in '$(id)'; do cat > ${y@P}; done",
    "cat <<< ${y@P}", "echo ${#a[x]}", "x='a[$(id)]'; echo ${@:x}",
    "test -v 'a[$(touch /tmp/x)]'", "printf -v 'a[$(touch /tmp/x)]' 1",
    "read 'a[$(touch /tmp/x)]' <<< 1", "x='a[$(id)]'; declare -i y; y=x", "let 'a[$(id)]'",
    "declare -n r='a[$(id)]'; echo $r", "PS4='$(id)'; set -x; true", "a[$i]=1",
    "cat <<EOF\n${y@P}\nEOF", "mapfile -C 'id #' -c 1 <<< x",
)  # fmt: skip
MOVING = (
    "for PWD in /etc; do echo x >> ~+/passwd; done", "for HOME in /etc; do echo > ~/x; done",
    "HOME=/etc; echo x > ~/passwd", "PWD=/etc; echo > ~+/x", "read HOME <<< /etc; echo > ~/x",
    "printf -v HOME /etc; echo > ~/x", "export HOME=/etc; echo > ~/x", "CDPATH=/ cd etc",
    "HOME=/etc cd; echo > x", "set -P; cd link; cd ..; echo > x", "shopt -s cdable_vars; cd v",
    "for OLDPWD in /etc; do cd -; done", "PATH=.:$PATH ls", "IFS=/; x=a/rm/b; $x",
    "declare -n h=HOME; h=/etc; echo > ~/x", "unset HOME; echo > ~/x",
)  # fmt: skip


@pytest.mark.parametrize("line", EXECUTING + MOVING)
def test_lines_fxdesk_cannot_read_ask_in_ask_and_auto_and_under_any_deny_rule_in_yolo(
    line: str,
) -> None:
    for guard in (DENY_RM, DENY_SSH_READS, DENY_ETC_WRITES):
        held(line, guard)


@pytest.mark.parametrize("line", EXECUTING[:4])
def test_yolo_without_any_rule_allows_what_the_sandbox_contains(line: str) -> None:
    assert decision(line, YOLO, ()).verdict is Verdict.ALLOW


# --- reads ---------------------------------------------------------------------------------------

SECRETS = ("~/.ssh/id_rsa", "/home/u/.ssh/id_ed25519", "~/.ssh/../.ssh/config")
READS = (
    "< {}", "cat < {}", "cat 0< {}", 'echo "$(< {})"', "cat <<< $(< {})", "diff <(cat < {}) x",
    "while read l; do echo $l; done < {}", "{{ cat; }} < {}", "(cat) < {}", "x=$(< {}) true",
    "cat 3< {} <&3", "cat <> {}", "echo `cat < {}`", "ls; cat < {} &", "! cat < {}",
)  # fmt: skip


@pytest.mark.parametrize(
    ("reader", "secret"),
    [pytest.param(r, s, id=f"{r}|{s}") for r, s in itertools.product(READS, SECRETS)],
)
def test_a_read_of_a_secret_asks_and_a_deny_rule_on_it_denies_in_every_mode(
    reader: str, secret: str
) -> None:
    line = reader.format(secret)
    for mode in (ASK, AUTO):
        asked = decision(line, mode, EVERY_COMMAND)
        assert asked.verdict is Verdict.ASK, asked.reason
        assert any(part.startswith("reads /home/u/.ssh/") for part in asked.uncovered)
    for mode in MODES:
        denied = decision(line, mode, (*EVERY_COMMAND, *DENY_SSH_READS))
        assert denied.verdict is Verdict.DENY, f"{mode}: {denied.reason}"


@pytest.mark.parametrize(
    "line", ["< /proc/$PPID/environ", "cat < $F", 'cat < "$HOME/.ssh/id_rsa"', "cat < ~-/x"]
)
def test_a_read_only_known_when_it_runs_asks_and_yolo_asks_under_a_read_deny_rule(
    line: str,
) -> None:
    held(line, (), yolo_rules=DENY_SSH_READS)
    assert decision(line, YOLO, ()).verdict is Verdict.ALLOW


def test_the_environment_of_fxdesk_is_a_read_outside_the_workspace() -> None:
    asked = decision("< /proc/1/environ", AUTO, ())
    assert asked.verdict is Verdict.ASK
    assert asked.uncovered == ("reads /proc/1/environ",)
    assert asked.reason == "reads /proc/1/environ, outside the workspace"


def test_reads_inside_the_workspace_are_allowed_in_ask_and_auto() -> None:
    for mode in (ASK, AUTO):
        assert decision("cat < notes.txt", mode, EVERY_COMMAND).verdict is Verdict.ALLOW


# --- deny rules behind wrappers ------------------------------------------------------------------

WRAPPERS = (
    "exec -a name", "exec -cl", "env -u X", "env -i", "env X=1 Y=2", "env --unset=X", "env --",
    "env -", "env -iu X", "env -C /tmp", "timeout -s KILL 5", "timeout --signal=KILL 5",
    "timeout -k 1 5", "timeout 5", "timeout --foreground 1m", "stdbuf -oL", "stdbuf -o L -e 0",
    "stdbuf --output=L", "nice -n 5", "nice -5", "nice --adjustment=5", "nice", "nohup",
    "setsid -f", "setsid", "sudo -u root", "sudo -E -u root --", "sudo --user=root", "sudo",
    "doas -u root", "command -p", "command", "builtin", "/usr/bin/env", "ionice -c 3",
    "chroot /", "flock /tmp/l", "busybox", "time -f %e", "X=1", "unbuffer",
)  # fmt: skip
TARGETS = ("rm -rf ~", "/bin/rm -rf ~", "rm")


@pytest.mark.parametrize(
    ("wrappers", "target"),
    [
        pytest.param(w, t, id=f"{w}|{t}")
        for w, t in itertools.chain(
            itertools.product(WRAPPERS, TARGETS),
            (  # two and three wrappers deep
                (f"{a} {b}", "rm -rf ~")
                for a, b in itertools.product(WRAPPERS[::3], WRAPPERS[1::4])
            ),
            ((f"sudo -u root {w} nice -n 5", "rm") for w in WRAPPERS[::5]),
        )
    ],
)
def test_a_deny_rule_holds_behind_wrappers_in_every_mode(wrappers: str, target: str) -> None:
    line = f"{wrappers} {target}"
    for mode in MODES:
        for rules in (DENY_RM, DENY_RM_GLOB) if " " in target else (DENY_RM,):
            assert decision(line, mode, (*EVERY_COMMAND, *rules)).verdict is Verdict.DENY, (
                mode,
                rules[0].pattern,
            )
    if target == "rm -rf ~":
        exact = (rule("rm -rf ~", match=Match.EXACT),)
        assert decision(line, YOLO, exact).verdict is Verdict.DENY


@pytest.mark.parametrize("line", ["command -v rm", "command -V rm", "echo rm", "sudo -l"])
def test_naming_the_program_without_running_it_is_not_denied(line: str) -> None:
    assert decision(line, YOLO, DENY_RM).verdict is Verdict.ALLOW


# --- commands that run commands the line does not show -------------------------------------------

INDIRECT = (
    "eval rm -rf ~", "eval \"$X\"", "trap 'rm -rf ~' EXIT", "alias ls=rm", "source ./x.sh",
    ". ./x.sh", "sh -c 'rm -rf ~'", "bash -c 'rm -rf ~'", "bash -lc 'rm -rf ~'", "zsh -c x",
    "dash -ec x", "bash -o pipefail -c x", "echo rm -rf ~ | sh", "bash < script",
    "bash <(echo rm)", "bash -s", "bash /dev/stdin", "bash -", "xargs rm < list",
    "xargs -0 -I{} sh -c x", "find . -exec rm {} +", "find . -execdir rm {} ;",
    "find . -ok rm {} ;", "find . -okdir rm {} ;", "env -S 'rm -rf ~'", "env -iS'rm -rf ~'",
    "env --split-string='rm x'", "exec bash -c x", "nice -n 5 bash -c x", "sudo sh -c x",
    "timeout 5 xargs rm", "command eval x", "builtin eval x", "mapfile -C 'rm x #' -c 1 < f",
    "compgen -C 'rm x' y", "hash -p /bin/rm ls", "git -c alias.x='!rm -rf ~' x",
    "git -c core.pager='rm -rf ~' log", "git -c core.fsmonitor=./x status",
    "git --config-env=core.pager=P log", "git --exec-path=. status", "LD_PRELOAD=./x.so ls",
    "export LD_PRELOAD=./x.so", "GIT_SSH_COMMAND='rm -rf ~' git fetch", "BASH_ENV=x bash s.sh",
    "watch rm x", "su -c 'rm x'", "flock l -c 'rm x'", "script -c 'rm x' log", "parallel rm",
    "sg users 'rm x'", "enable -f ./x.so rm", "fc -s",
    # A script file the agent may have written (the attack suite: `echo 'rm f' > s.sh; bash s.sh`).
    "sh script.sh", "bash -e ./build.sh", "bash /tmp/s.sh", "zsh scripts/x.zsh",
)  # fmt: skip


@pytest.mark.parametrize("line", INDIRECT)
def test_indirection_asks_in_every_mode_while_a_deny_rule_exists(line: str) -> None:
    for mode in MODES:
        for rules in (DENY_RM, DENY_SSH_READS, DENY_ETC_WRITES):
            verdict = decision(line, mode, (*EVERY_COMMAND, *rules)).verdict
            assert verdict is not Verdict.ALLOW, (mode, rules[0].pattern)


@pytest.mark.parametrize("line", INDIRECT[:6])
def test_indirection_without_deny_rules_is_judged_as_any_command(line: str) -> None:
    assert decision(line, YOLO, ()).verdict is Verdict.ALLOW
    assert decision(line, AUTO, ()).verdict is Verdict.ASK


@pytest.mark.parametrize(
    "line",
    [
        "sh /usr/share/doc/x/setup.sh", "trap - EXIT", "trap '' INT",
        "git -c color.ui=never log", "git -c core.quotepath=off status", "find . -name '*.py'",
        "alias", "trap -p",
    ],
)  # fmt: skip
def test_plain_commands_are_not_taken_for_indirection(line: str) -> None:
    assert decision(line, YOLO, DENY_RM).verdict is Verdict.ALLOW


# --- git's global options ------------------------------------------------------------------------

GIT_OPTIONS = (
    "-C .", "-C a -C b", "-c user.name=x", "-c color.ui=never", "--git-dir=.git",
    "--git-dir .git", "--work-tree=.", "--work-tree .", "--no-pager", "-P", "-p", "--paginate",
    "--bare", "--namespace=x", "--namespace x", "--no-replace-objects", "--literal-pathspecs",
    "--no-optional-locks", "-C . --no-pager -c user.email=a@b",
)  # fmt: skip


@pytest.mark.parametrize(
    ("options", "after"),
    [
        pytest.param(o, a, id=f"{o}|{a}")
        for o, a in itertools.product(GIT_OPTIONS, ("", " origin main", " --force"))
    ],
)
def test_a_git_subcommand_rule_holds_through_global_options(options: str, after: str) -> None:
    for line in (f"git {options} push{after}", f"/usr/bin/git {options} push{after}",
                 f"sudo git {options} push{after}"):  # fmt: skip
        for mode in MODES:
            prefix = decision(line, mode, (*EVERY_COMMAND, rule("git push")))
            assert prefix.verdict is Verdict.DENY, (line, mode)
        if not after:
            exact = (rule("git push", match=Match.EXACT),)
            assert decision(line, YOLO, exact).verdict is Verdict.DENY, line


def test_other_git_subcommands_are_not_denied_by_a_push_rule() -> None:
    assert decision("git -C . status", YOLO, (rule("git push"),)).verdict is Verdict.ALLOW
    assert decision("git -C push status", YOLO, (rule("git push"),)).verdict is Verdict.ALLOW


# --- writes behind wrappers ----------------------------------------------------------------


@pytest.mark.parametrize("wrappers", [w for w in WRAPPERS if not w.startswith(("time", "X="))])
def test_a_write_by_tee_behind_a_wrapper_is_judged(wrappers: str) -> None:
    line = f"echo x | {wrappers} tee -a ~/.bashrc"
    for mode in (ASK, AUTO):
        asked = decision(line, mode, EVERY_COMMAND)
        assert asked.verdict is Verdict.ASK, asked.reason
        assert "writes /home/u/.bashrc" in asked.uncovered
    denied = (rule("~/.bashrc", tool="write_file", match=Match.GLOB),)
    assert decision(line, YOLO, denied).verdict is Verdict.DENY


def test_reads_are_judged_even_when_the_caller_resolved_only_the_writes() -> None:
    analysis = analyse("cat < ~/.ssh/id_rsa > out", cwd=WS, home=HOME)
    writes = (Target(f"{WS}/out", Access.WRITE, True),)
    for targets in ((), writes):
        request = Request("run_command", WS, targets, analysis, HOME, TOOLS)
        assert decide(AUTO, EVERY_COMMAND, request).uncovered == ("reads /home/u/.ssh/id_rsa",)
        assert decide(YOLO, DENY_SSH_READS, request).verdict is Verdict.DENY
