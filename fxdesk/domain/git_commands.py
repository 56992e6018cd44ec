"""Which git commands write the repository's git folder (``.git``), in one table.

The sandbox keeps ``.git`` read-only (its ``config`` and hooks are programs git runs), so a
`git commit` the analysis did not count as a write of ``.git`` would not be asked about and would
then fail with "Read-only file system", with no way for the person to allow it. ``git_writes``
reads one simple command's words (behind wrappers, past git's global options) and says which
repository it writes, lexically: the engine finds the git folder on disk
(``engine/git_writes.py``) and asks for it as a write of a protected path.

Read-only subcommands (``status``, ``log``, ``diff``, ...) are in ``READS``; subcommands that
write are in ``WRITES``; those that write only in some forms (``branch``, ``tag``, ``config``,
``stash``, ...) are decided by ``_MIXED``. Anything else — an alias, an external ``git-foo``, a
subcommand only known when it runs — counts as a write: fxdesk cannot tell what it does, and
asking is better than a command that fails in the sandbox for a reason the person cannot see.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fxdesk.domain.shell_programs import ASSIGNMENT, program_starts

# Subcommands that never write the git folder (`status` refreshes the index only when it can,
# and carries on when the folder is read-only).
READS = frozenset({
    "status", "log", "diff", "show", "rev-parse", "ls-files", "grep", "blame", "annotate",
    "shortlog", "describe", "cat-file", "ls-tree", "rev-list", "for-each-ref", "show-ref",
    "show-branch", "name-rev", "whatchanged", "range-diff", "diff-tree", "diff-index",
    "diff-files", "check-ignore", "check-attr", "check-mailmap", "check-ref-format", "var",
    "help", "version", "count-objects", "verify-commit", "verify-tag", "verify-pack", "cherry",
    "format-patch", "archive", "ls-remote", "fsck", "merge-base", "merge-tree", "get-tar-commit-id",
    "request-pull", "difftool", "bugreport", "fmt-merge-msg", "interpret-trailers", "mailinfo",
    "mailsplit", "stripspace", "column", "credential", "show-index", "patch-id", "clone",
    "clean",  # writes the work tree only, which the sandbox lets through
})  # fmt: skip
# Subcommands that write it (objects, refs, the index, HEAD, the configuration, the reflog).
WRITES = frozenset({
    "add", "am", "bisect", "checkout", "cherry-pick", "commit", "commit-tree", "commit-graph",
    "fetch", "filter-branch", "gc", "maintenance", "merge", "mv", "pack-refs", "prune", "pull",
    "push",  # updates the remote-tracking refs
    "rebase", "repack", "rerere", "reset", "revert", "rm", "switch", "update-index", "update-ref",
    "update-server-info", "write-tree", "mktag", "mktree", "read-tree", "checkout-index",
    "unpack-objects", "index-pack", "fast-import", "prune-packed", "multi-pack-index",
    "replace", "submodule", "sparse-checkout", "restore", "apply", "hash-object", "notes",
    "reflog", "remote", "stash", "tag", "branch", "config", "worktree", "symbolic-ref", "init",
    "bundle", "merge-file", "mergetool", "citool", "gui", "p4", "svn", "send-email", "lfs",
})  # fmt: skip


@dataclass(frozen=True)
class GitWrite:
    """One git command that writes a git folder (or a git configuration file).

    Attributes:
        command: The git command as written (from the program on), for the approval.
        start: Where git starts looking for its repository (the command's folder, then each
            ``-C``), absolute and lexical.
        git_dir: The git folder named by ``--git-dir`` or ``GIT_DIR=`` (absolute, lexical), or
            None: git finds it from ``start`` upwards.
        exact: git uses the repository at ``start`` itself, never one above (``git init``).
        config_file: A configuration file written instead of the repository's
            (``git config --global`` / ``--file``), absolute and lexical; None otherwise.
    """

    command: str
    start: str
    git_dir: str | None = None
    exact: bool = False
    config_file: str | None = None


def git_writes(words: Sequence[str], cwd: str, home: str) -> GitWrite | None:
    """What the simple command ``words`` (run in ``cwd``) writes of a repository, if it is git
    and writes. Each place a program may start behind wrappers is tried; any that writes counts.

    Args:
        words: The command's words after quote removal (leading assignments included).
        cwd: The folder it runs in (absolute).
        home: The home folder (for ``--global``).
    """
    for start in program_starts(words):
        if start >= len(words) or posixpath.basename(words[start]) != "git":
            continue
        assigned = [w for w in words[:start] if ASSIGNMENT.match(w)]
        found = _one(words[start:], assigned, cwd, home)
        if found is not None:
            return found
    return None


_FLAGS = frozenset({
    "-p", "-P", "--paginate", "--no-pager", "--bare", "--no-replace-objects", "--no-lazy-fetch",
    "--no-optional-locks", "--no-advice", "--literal-pathspecs", "--glob-pathspecs",
    "--noglob-pathspecs", "--icase-pathspecs",
})  # fmt: skip
_VALUED = frozenset({"-c", "--namespace", "--config-env", "--super-prefix", "--attr-source",
                     "--work-tree"})  # fmt: skip
_ONLY_PRINTS = frozenset({"--version", "--help", "-v", "-h", "--html-path", "--man-path",
                          "--info-path", "--exec-path", "--list-cmds"})  # fmt: skip


def _one(words: Sequence[str], assigned: list[str], cwd: str, home: str) -> GitWrite | None:
    start = cwd
    git_dir: str | None = None
    for word in assigned:
        name, _, value = word.partition("=")
        if name == "GIT_DIR":
            git_dir = _absolute(cwd, value)
    i = 1
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        name, eq, value = word.partition("=")
        if word == "-C" and i + 1 < len(words):
            start = _absolute(start, words[i + 1])
            i += 2
        elif name == "--git-dir" and (eq or i + 1 < len(words)):
            git_dir = _absolute(start, value if eq else words[i + 1])
            i += 1 if eq else 2
        elif word in _FLAGS or (name in _VALUED and eq and name.startswith("--")):
            i += 1
        elif word in _VALUED:
            i += 2
        elif name in _ONLY_PRINTS:
            return None  # prints and stops (git runs no subcommand after these)
        else:
            return None  # an option git does not have: git refuses the command
    if i >= len(words):
        return None  # bare `git`: prints its usage
    sub, args = words[i], tuple(words[i + 1 :])
    if not writes(sub, args):
        return None
    command = " ".join(words)
    if sub == "config":
        target = _config_file(args, start, home)
        if target is not None:
            return GitWrite(command, start, git_dir, config_file=target)
    if sub == "init":
        operands = [a for a in args if not a.startswith("-")]
        folder = _absolute(start, operands[0]) if operands else start
        return GitWrite(command, folder, git_dir, exact=True)
    return GitWrite(command, start, git_dir)


def writes(subcommand: str, args: Sequence[str]) -> bool:
    """Whether ``git <subcommand> <args>`` writes the git folder (unknown: yes)."""
    mixed = _MIXED.get(subcommand)
    if mixed is not None:
        return mixed(list(args))
    # In WRITES, or unknown (an alias, an external command): asking is safer.
    return subcommand not in READS


def _listing(
    read_options: frozenset[str], list_flags: frozenset[str]
) -> Callable[[list[str]], bool]:
    """A subcommand that lists without operands (`git branch`, `git tag`) and writes with them,
    unless a listing flag makes its operands patterns."""

    def decide(args: list[str]) -> bool:
        if any(_option(a) in list_flags for a in args):
            return False
        for arg in args:
            if not arg.startswith("-"):
                return True  # an operand: creates it
            if _option(arg) not in read_options:
                return True  # -d, -m, -f, -a (annotate), ... or an option we do not know
        return False

    return decide


def _option(arg: str) -> str:
    return arg.partition("=")[0]


_BRANCH_READS = frozenset({
    "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--color",
    "--no-color", "--column", "--no-column", "--abbrev", "--no-abbrev", "-i", "--ignore-case",
    "-q", "--quiet",
})  # fmt: skip
_TAG_READS = frozenset({"--color", "--column", "--no-column", "-i", "--ignore-case", "-n"})
# Options that put `git branch` / `git tag` in list mode (what follows are patterns or values).
_LISTS = frozenset({"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged",
                    "--points-at", "--sort", "--format"})  # fmt: skip
_CONFIG_READS = frozenset({
    "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color",
    "--get-colorbool", "get", "list",
})  # fmt: skip
_CONFIG_OPTIONS = frozenset({  # options that say where or how, not what to do
    "--local", "--global", "--system", "--worktree", "--show-origin", "--show-scope", "-z",
    "--null", "--name-only", "--includes", "--no-includes", "--type", "--bool", "--int",
    "--bool-or-int", "--path", "--expiry-date", "--default",
})  # fmt: skip
_CONFIG_VALUED = frozenset({"-f", "--file", "--blob", "--type", "--default"})


def _config(args: list[str]) -> bool:
    """`git config`: reads with --get/--list (or the `get`/`list` verbs) or a lone name."""
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, _ = arg.partition("=")
        if arg in _CONFIG_READS or name in _CONFIG_READS:
            return False
        if not arg.startswith("-"):
            operands.append(arg)
        elif name not in _CONFIG_OPTIONS and name not in _CONFIG_VALUED:
            return True  # --unset, --add, --replace-all, --edit, ... or unknown
        i += 2 if (name in _CONFIG_VALUED and not eq) else 1
    return len(operands) != 1  # `git config user.name` reads it; with a value, it writes


def _config_file(args: Sequence[str], start: str, home: str) -> str | None:
    """Where a writing `git config` writes when not in the repository."""
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if arg == "--global":
            return posixpath.join(home, ".gitconfig")
        if arg == "--system":
            return "/etc/gitconfig"
        if name in ("-f", "--file"):
            raw = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            return _absolute(start, raw) if raw else None
    return None


def _verbs(reads: frozenset[str], default: bool) -> Callable[[list[str]], bool]:
    """A subcommand with verbs (`git stash list`): reads for ``reads``; no verb → ``default``."""

    def decide(args: list[str]) -> bool:
        verb = next((a for a in args if not a.startswith("-")), None)
        if verb is None:
            return default
        return verb not in reads

    return decide


def _restore(args: list[str]) -> bool:
    """`git restore` writes the index with --staged (-S, also bundled: -SW)."""
    return any(a == "--staged" or (a[:1] == "-" and a[1:2] != "-" and "S" in a) for a in args)


def _apply(args: list[str]) -> bool:
    """`git apply` changes the work tree only, unless told to use the index."""
    return any(_option(a) in _APPLY_INDEX for a in args)


_APPLY_INDEX = frozenset({"--index", "--cached", "--3way", "-3", "--intent-to-add", "-N"})


def _symbolic_ref(args: list[str]) -> bool:
    if any(a in ("-d", "--delete") for a in args):
        return True
    return len([a for a in args if not a.startswith("-")]) >= 2


def _hash_object(args: list[str]) -> bool:
    return "-w" in args


_MIXED: dict[str, Callable[[list[str]], bool]] = {
    "branch": _listing(_BRANCH_READS, _LISTS),
    "tag": _listing(_TAG_READS, _LISTS | frozenset({"-v", "--verify"})),
    "config": _config,
    "stash": _verbs(frozenset({"list", "show"}), default=True),
    "worktree": _verbs(frozenset({"list"}), default=True),
    "remote": _verbs(frozenset({"show", "get-url"}), default=False),
    "notes": _verbs(frozenset({"list", "show", "get-ref"}), default=False),  # bare: lists
    "reflog": _verbs(frozenset({"show", "exists"}), default=False),  # bare: shows
    "submodule": _verbs(frozenset({"status", "summary"}), default=False),  # bare: status
    "sparse-checkout": _verbs(frozenset({"list"}), default=True),
    "replace": _verbs(frozenset(), default=False),  # bare, -l: lists
    "bisect": _verbs(frozenset({"log", "visualize", "view", "terms"}), default=True),
    "restore": _restore,
    "apply": _apply,
    "symbolic-ref": _symbolic_ref,
    "hash-object": _hash_object,
}


def _absolute(base: str, path: str) -> str:
    return posixpath.normpath(posixpath.join(base, path))
