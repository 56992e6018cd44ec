"""Permission rules and how one matches a command or a path.

A rule names a tool and a pattern: a command for run_command (matched exactly, by leading words
or as a glob), a path glob for the file tools. ``domain.permissions`` decides with them; this
module only says whether a rule is about a given command or path. A deny rule matches the
command as written and the program behind its wrappers (``rule_variants``), and one whose
program a dynamic command may turn into (``deny_might_match``).
"""

from __future__ import annotations

import enum
import posixpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

from fxdesk.domain.shell import SimpleCommand, analyse
from fxdesk.domain.shell_programs import variants


class Verdict(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Scope(enum.StrEnum):
    """Where a rule was saved; the most specific first."""

    SESSION = "session"
    WORKSPACE = "workspace"
    GLOBAL = "global"


class Match(enum.StrEnum):
    """How a command rule matches: the same words, leading words, or fnmatch on the text."""

    EXACT = "exact"
    PREFIX = "prefix"
    GLOB = "glob"


class Access(enum.StrEnum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class PermissionRule:
    tool: str  # a tool name, or "*" for any tool
    pattern: str  # a command, or a path glob (absolute, ~/…, or relative to the workspace)
    action: Verdict
    scope: Scope
    match: Match = Match.EXACT  # commands only; path rules are globs
    id: int | None = None
    scope_key: str = ""  # the session or workspace id; the caller passes only rules that apply


_MAY_EXPAND = re.compile(r"[$`*?{]|\[.*\]|[<>]\(")  # a program name that may turn into another


@lru_cache(maxsize=1024)
def command_words(pattern: str) -> tuple[str, ...]:
    """A command rule's pattern read like a command: quotes removed, one word per argument."""
    analysis = analyse(pattern, cwd="/", home="/")
    if analysis.understood and len(analysis.commands) == 1:
        return analysis.commands[0].words
    return tuple(pattern.split())


def command_rule_matches(rule: PermissionRule, command: SimpleCommand) -> bool:
    """Whether a command rule names ``command`` as written (dynamic words included)."""
    if rule.pattern.strip() == "*":
        return True
    words = command_words(rule.pattern)
    if rule.match is Match.GLOB:
        return fnmatchcase(command.text, " ".join(words))
    if rule.match is Match.PREFIX:
        return bool(words) and command.words[: len(words)] == words
    return command.words == words


def path_rule_matches(rule: PermissionRule, path: str, workspace: str, home: str = "") -> bool:
    """Whether a path rule's glob matches ``path`` or a folder holding it (* crosses "/")."""
    pattern = rule.pattern.strip()
    if pattern == "*":
        return True
    if pattern.startswith("~"):
        if not home:  # unknown home: a deny or ask rule still guards any such path
            if rule.action is Verdict.ALLOW:
                return False
            pattern = "*" + pattern[1:]
        else:
            pattern = home + pattern[1:]
    if not pattern.startswith(("/", "*")):
        pattern = posixpath.join(workspace, pattern)
    pattern = posixpath.normpath(pattern) if not pattern.startswith("*") else pattern
    return fnmatchcase(path, pattern) or fnmatchcase(path, pattern.rstrip("/") + "/*")


def names_program(rule: PermissionRule) -> bool:
    """Whether a command rule names its program (`curl *`, `git fetch`), not any (`*`)."""
    first = (command_words(rule.pattern) or ("",))[0]
    return bool(first) and not any(char in first for char in "*?[")


def command_rule_applies(rule: PermissionRule, command: SimpleCommand) -> bool:
    if rule.action is Verdict.DENY:
        return deny_matches(rule, command)
    if rule.action is Verdict.ALLOW and command.dynamic:  # its words are not what will run
        return rule.pattern.strip() == "*"
    return command_rule_matches(rule, command)


def deny_matches(rule: PermissionRule, command: SimpleCommand) -> bool:
    """A deny rule matches the command as written, or the program behind wrappers and paths."""
    return any(command_rule_matches(rule, variant) for variant in rule_variants(command))


def deny_might_match(rule: PermissionRule, command: SimpleCommand) -> bool:
    """Whether a deny rule could match what a dynamic command turns into when it runs."""
    first = (command_words(rule.pattern) or ("",))[0]
    if rule.pattern.strip() == "*" or _MAY_EXPAND.search(first):
        return True
    names = {variant.words[0] for variant in rule_variants(command) if variant.words}
    return any(_MAY_EXPAND.search(name) or name == first for name in names)


def rule_variants(command: SimpleCommand) -> list[SimpleCommand]:
    """The command, then the program behind each wrapper (with its options) and git behind its
    global options, each also with the program's base name (/bin/rm → rm)."""
    return [
        SimpleCommand(words, " ".join(words), command.cwd, command.dynamic)
        for words in variants(command.words)
    ]
