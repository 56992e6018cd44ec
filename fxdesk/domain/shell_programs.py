"""Which program a command starts behind its wrappers, and which commands run others unseen.

A deny rule names a program (`rm`, `git push`). Bash starts it also behind wrappers that take
options of their own (`exec -a name rm`, `env -u X rm`, `timeout -s KILL 5 rm`, `nice -n 5 rm`),
so :func:`program_starts` skips each wrapper with its options, their arguments and its operands as
that wrapper parses them (bundled short options, `--name=value`, `--`). Where an option is not one
we know, we cannot tell whether it takes an argument: both readings are kept, so a deny rule
matches either.

Some commands run command text the line does not spell out as a command: `eval`, `source`, `trap`,
`sh -c`, `xargs`, `find -exec`, `env -S`, a `git -c` setting, ... :func:`runs_anything` names them;
the permission check then counts them as matching every deny rule. Programs that interpret a
script of their own (`python -c`, `make`, `npm run`) are outside what a deny rule can see, as is
what any program does once started.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_MAX_STARTS = 32  # readings of one command line before we stop branching on unknown options


@dataclass(frozen=True)
class Options:
    """How one wrapper parses its arguments (getopt style) before the program it starts."""

    flags: str = ""  # short options taking no argument
    valued: str = ""  # short options taking an argument, attached (-n5) or the next word
    long_flags: frozenset[str] = frozenset()
    long_valued: frozenset[str] = frozenset()  # --name value or --name=value
    long_optional: frozenset[str] = frozenset()  # take a value only as --name=value
    operands: int = 0  # words before the program: timeout's duration, chroot's directory
    numeric: bool = False  # `nice -5`: a number as an option
    assignments: bool = False  # env NAME=VALUE ... before the program
    stops: str = ""  # short options after which no program follows (`command -v`)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: dict[str, Options] = {
    "builtin": Options(),
    "busybox": Options(),  # busybox rm: the applet is the next word
    "chroot": Options(
        long_flags=_names("skip-chdir"), long_valued=_names("userspec groups"), operands=1
    ),
    "command": Options(flags="p", stops="vV"),
    "doas": Options(flags="Lns", valued="Cu"),
    "env": Options(
        flags="i0v",
        valued="uCaS",  # -S also makes the command one to ask about (runs_anything)
        long_flags=_names("ignore-environment null debug list-signal-handling"),
        long_valued=_names("unset chdir argv0 split-string"),
        long_optional=_names("block-signal default-signal ignore-signal"),
        assignments=True,
    ),
    "exec": Options(flags="cl", valued="a"),
    "flock": Options(
        flags="sxunoF",
        valued="Ewc",  # -c also makes the command one to ask about (runs_anything)
        long_flags=_names("shared exclusive unlock nonblock close no-fork verbose"),
        long_valued=_names("conflict-exit-code wait timeout command"),
        operands=1,
    ),
    "ionice": Options(
        flags="t", valued="cnpPu", long_flags=_names("ignore"), long_valued=_names("class")
    ),
    "nice": Options(valued="n", long_valued=_names("adjustment"), numeric=True),
    "nohup": Options(),
    "setsid": Options(flags="cfw", long_flags=_names("ctty fork wait")),
    "stdbuf": Options(valued="ioe", long_valued=_names("input output error")),
    "sudo": Options(
        flags="AbEeHiKklnPSsVv",
        valued="CDghprTtUu",
        long_flags=_names(
            "askpass background preserve-env edit set-home login remove-timestamp "
            "reset-timestamp list non-interactive preserve-groups stdin shell validate version"
        ),
        long_valued=_names(
            "close-from chdir group host prompt role type command-timeout other-user user chroot"
        ),
    ),
    "time": Options(  # GNU time; bash's own `time` is a keyword the analysis does not follow
        flags="apqv",
        valued="fo",
        long_flags=_names("append portability quiet verbose"),
        long_valued=_names("format output"),
    ),
    "timeout": Options(
        flags="v",
        valued="sk",
        long_flags=_names("foreground preserve-status verbose"),
        long_valued=_names("signal kill-after"),
        operands=1,
    ),
    "unbuffer": Options(flags="p"),
}

SHELLS = frozenset({"ash", "bash", "csh", "dash", "fish", "ksh", "mksh", "rbash", "sh", "tcsh",
                    "yash", "zsh"})  # fmt: skip
# Shell options that take an argument (-o name, -O name, --rcfile file, ...).
_SHELL_VALUED = frozenset("oO")
_SHELL_LONG_VALUED = frozenset({"rcfile", "init-file", "init-command"})
_STDIN_SCRIPTS = ("-", "/dev/stdin", "/dev/fd/", "/proc/self/fd/")
# Run what follows them as a command line, whatever it is.
_ALWAYS_INDIRECT = {
    "eval": "`eval` runs text as a command line",
    "source": "`source` runs the commands of a file",
    ".": "`.` runs the commands of a file",
    "xargs": "`xargs` runs commands built from its input",
    "parallel": "`parallel` runs commands built from its input",
    "watch": "`watch` runs its command through `sh -c`",
    "su": "`su` runs a shell",
    "runuser": "`runuser` runs a shell",
    "sg": "`sg` runs its command through `sh -c`",
    "fc": "`fc` runs commands again from the history",
    "enable": "`enable` loads or turns off shell builtins",
}
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# `git -c key=value`: only settings that cannot name a program are known to be harmless
# (alias.*, core.pager, core.fsmonitor, core.sshCommand, diff.external, ... all run commands).
_SAFE_GIT_SETTINGS = re.compile(
    r"(color|advice|column|i18n|init|user|author|committer|log|format|status|blame|grep|"
    r"safe|pull|push|fetch|diff\.(renames|algorithm|context|noprefix|mnemonicprefix)"
    r"|core\.(quotepath|autocrlf|safecrlf|filemode|ignorecase|longpaths|abbrev|whitespace))"
    r"(\.|=|$)",
    re.IGNORECASE,
)
_GIT_FLAGS = frozenset({
    "-p", "-P", "--paginate", "--no-pager", "--bare", "--no-replace-objects", "--no-lazy-fetch",
    "--no-optional-locks", "--no-advice", "--literal-pathspecs", "--glob-pathspecs",
    "--noglob-pathspecs", "--icase-pathspecs", "--html-path", "--man-path", "--info-path",
    "--exec-path", "--version", "--help", "-v", "-h",
})  # fmt: skip
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                         "--super-prefix", "--list-cmds", "--attr-source"})  # fmt: skip
# Variables through which a program runs code the line does not show.
RUNS_FROM_ENVIRONMENT = frozenset({
    "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "BASH_ENV", "ENV", "PROMPT_COMMAND",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS",
    "SSH_ASKPASS", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "SHELLOPTS", "BASHOPTS",
})  # fmt: skip


def program_starts(words: Sequence[str]) -> list[int]:
    """Every index where a program may start: 0, past leading assignments, and past each
    wrapper with its options and operands (several when an unknown option may take a value)."""
    found: list[int] = [0]
    pending = [0]
    while pending and len(found) < _MAX_STARTS:
        start = pending.pop()
        at = start
        while at < len(words) and ASSIGNMENT.match(words[at]):
            at += 1
        if at >= len(words):
            continue
        following = [at] if at != start else []
        spec = WRAPPERS.get(posixpath.basename(words[at]))
        if spec is not None:
            following += _after_options(words, at + 1, spec)
        for index in following:
            if index not in found and index < len(words):
                found.append(index)
                pending.append(index)
    return found


def _after_options(words: Sequence[str], at: int, spec: Options) -> list[int]:
    """Where the program starts after a wrapper whose arguments begin at ``at``."""
    ends: list[int] = []
    branches = [at]
    seen: set[int] = set()
    while branches and len(seen) < _MAX_STARTS:
        i = branches.pop()
        if i in seen:
            continue
        seen.add(i)
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if spec.assignments and (ASSIGNMENT.match(word) or word == "-"):
                i += 1
                continue
            if not word.startswith("-") or word == "-":
                break
            step = _option_words(word, words[i + 1 : i + 2], spec)
            if step is None:  # an option we do not know: it may or may not take a value
                branches.append(i + 2)
                i += 1
                continue
            if step == 0:  # `command -v`: looks the name up, starts nothing
                i = len(words)
                break
            i += step
        ends.append(i + spec.operands)
    return ends


def _option_words(word: str, following: Sequence[str], spec: Options) -> int | None:
    """How many words one option takes (0: no program follows; None: unknown option)."""
    if word.startswith("--"):
        name, eq, _ = word[2:].partition("=")
        if name in spec.long_valued:
            return 1 if eq else 2
        if name in spec.long_flags or (name in spec.long_optional):
            return 1
        return None
    cluster = word[1:]
    if spec.numeric and cluster.isdigit():
        return 1
    for index, letter in enumerate(cluster):
        if letter in spec.stops:
            return 0
        if letter in spec.valued:
            return 1 if index < len(cluster) - 1 or not following else 2
        if letter not in spec.flags:
            return None
    return 1


def git_subcommand(words: Sequence[str]) -> tuple[str, ...] | None:
    """`git` with its global options (`-C dir`, `-c k=v`, `--git-dir=…`, `--no-pager`, …) left
    out, so a rule for `git push` sees `git -C . push`; None when ``words`` is not git or has
    none. An option git does not have ends the reading (git refuses it)."""
    if not words or posixpath.basename(words[0]) != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        name = word.split("=", 1)[0]
        if word in _GIT_FLAGS or (name in _GIT_VALUED and "=" in word and name.startswith("--")):
            i += 1
        elif word in _GIT_VALUED:
            i += 2
        elif name == "--exec-path":  # --exec-path=dir (a reason to ask, see runs_anything)
            i += 1
        else:
            break
    if i == 1 or i > len(words):
        return None
    return (words[0], *words[i:])


def variants(words: Sequence[str]) -> list[tuple[str, ...]]:
    """The command as written, then the program behind each wrapper (and git behind its
    global options), each also with the program's base name (/bin/rm → rm)."""
    found: list[tuple[str, ...]] = []
    for start in program_starts(words):
        rest = tuple(words[start:])
        found.append(rest)
        git = git_subcommand(rest)
        if git is not None:
            found.append(git)
    found += [(posixpath.basename(w[0]), *w[1:]) for w in found if w and "/" in w[0]]
    found += [
        (w[0], GIT_DOES_AS[w[1]], *w[2:])
        for w in found
        if len(w) > 1 and posixpath.basename(w[0]) == "git" and w[1] in GIT_DOES_AS
    ]
    return list(dict.fromkeys(found))


# git's plumbing that does what a porcelain command does: a rule for `git push` covers it too
# (the attack suite's `git send-pack ./remote.git main` pushed past a deny rule on `git push`).
GIT_DOES_AS = {
    "send-pack": "push",
    "http-push": "push",
    "receive-pack": "push",
    "fetch-pack": "fetch",
    "commit-tree": "commit",
    "update-ref": "reset",
}


def runs_anything(words: Sequence[str]) -> str:
    """Why this command may run commands the line does not spell out ("" when it does not)."""
    for why in _indirections(words):
        return why
    return ""


def _indirections(words: Sequence[str]) -> Iterator[str]:
    for start in program_starts(words):
        yield from _assignments(words[:start])
        rest = words[start:]
        name = posixpath.basename(rest[0]) if rest else ""
        args = list(rest[1:])
        if rest and _agent_made(rest[0]):
            yield (
                f"`{rest[0]}` is a program the agent could have made (a copy of any other "
                "under a new name)"
            )
        elif name in _ALWAYS_INDIRECT:
            yield _ALWAYS_INDIRECT[name]
        elif name in SHELLS:
            why = _shell(name, args)
            if why:
                yield why
        elif name == "trap" and _trap_sets_a_handler(args):
            yield "`trap` runs text as a command line when a signal arrives"
        elif name == "alias" and any("=" in arg for arg in args):
            yield "`alias` defines a name that runs other commands"
        elif name == "find" and _FIND_RUNS & set(args):
            yield "`find -exec` runs commands for the files it finds"
        elif name == "env" and _env_splits(args):
            yield "`env -S` splits its text into a command"
        elif name in ("mapfile", "readarray") and _has_short(args, "C"):
            yield f"`{name} -C` runs a callback command"
        elif name == "compgen" and (_has_short(args, "C") or _has_short(args, "F")):
            yield "`compgen -C` runs a command"
        elif name == "hash" and _has_short(args, "p"):
            yield "`hash -p` makes a command name start another program"
        elif name in ("flock", "script") and (_has_short(args, "c") or "--command" in args):
            yield f"`{name} -c` runs its command through a shell"
        elif name in ("export", "declare", "typeset", "local", "readonly"):
            yield from _assignments(args)
        elif name == "git":
            why = _git(args)
            if why:
                yield why


# Where the system's programs live: a program named by another path (`./r`, `bin/x`,
# `/tmp/r`, `~/x`) may be a renamed copy of any program, so no deny rule can tell what it is.
PROGRAM_FOLDERS = (
    "/usr/bin/",
    "/bin/",
    "/usr/sbin/",
    "/sbin/",
    "/usr/local/bin/",
    "/usr/local/sbin/",
    "/usr/libexec/",
    "/usr/lib/",
    "/opt/homebrew/bin/",
    "/nix/",
    "/run/current-system/sw/bin/",
)


# Where the system keeps scripts: not where an agent's command can write (the sandbox keeps them
# read-only), so `sh /usr/share/…/x.sh` runs what was there before the line.
SYSTEM_SCRIPTS = (*PROGRAM_FOLDERS, "/usr/share/", "/usr/lib/", "/usr/libexec/", "/etc/")


def _agent_made(program: str) -> bool:
    return "/" in program and not program.startswith(PROGRAM_FOLDERS)


def _assignments(words: Sequence[str]) -> Iterator[str]:
    for word in words:
        name = word.split("=", 1)[0].rstrip("+")
        if "=" in word and name in RUNS_FROM_ENVIRONMENT:
            yield f"`{name}` makes programs run code the line does not show"


def _shell(name: str, args: list[str]) -> str:
    """Why `bash …` runs commands the line does not spell out: text, a stream, or a script
    file anywhere but the system's folders ("" for `sh /usr/share/x/setup.sh`)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg.startswith("--"):
            if arg[2:] == "command" or arg.startswith("--command="):
                return f"`{name} --command` runs its text as a command line"
            i += 2 if arg[2:] in _SHELL_LONG_VALUED else 1
            continue
        if not arg.startswith(("-", "+")) or arg in ("-", "+"):
            break
        cluster = arg[1:]
        if "c" in cluster:
            return f"`{name} -c` runs its text as a command line"
        if "s" in cluster or "i" in cluster:
            return f"`{name} -{cluster}` runs commands from its input"
        i += 2 if _SHELL_VALUED & set(cluster) else 1
    script = args[i] if i < len(args) else None
    if script is None:
        return f"`{name}` without a script runs commands from its input"
    if script.startswith(_STDIN_SCRIPTS) or re.search(r"[$`]|[<>]\(", script):
        return f"`{name} {script}` runs commands it reads from a stream or a value"
    if not script.startswith(SYSTEM_SCRIPTS):
        # A file the agent may have just written (`echo 'rm f' > s.sh; bash s.sh`), like
        # `source`: the attack suite ran a denied program so.
        return f"`{name} {script}` runs the commands of a file the line does not show"
    return ""


def _trap_sets_a_handler(args: list[str]) -> bool:
    operands = [arg for arg in args if arg not in ("--",)]
    if not operands or operands[0] in ("-p", "-l", "-P"):
        return False
    return len(operands) >= 2 and operands[0] not in ("-", "")


def _env_splits(args: list[str]) -> bool:
    for arg in args:
        if arg == "--" or not arg.startswith("-"):
            return False
        if arg.startswith("--split-string") or (not arg.startswith("--") and "S" in arg):
            return True
    return False


def _has_short(args: list[str], letter: str) -> bool:
    return any(arg.startswith("-") and not arg.startswith("--") and letter in arg for arg in args)


def _git(args: list[str]) -> str:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg in ("-c", "--config-env") or arg.startswith("--config-env="):
            written = arg if "=" in arg else " ".join(args[i : i + 2])
            setting = written.split("=", 1)[1] if arg != "-c" else written[3:]
            if arg != "-c" or not _SAFE_GIT_SETTINGS.match(setting):
                return f"`git {written}` may set a command git runs"
        if arg.startswith("--exec-path="):
            return "`git --exec-path=…` makes git run its commands from another folder"
        i += 2 if arg in _GIT_VALUED else 1
    return ""
