"""Whether an agent's tool action runs, asks the person first, or is refused (spec §6).

Rules name a tool and a pattern: a command for run_command, a path glob for file tools. A deny rule
wins wherever it sits. Otherwise only the matching rules of the most specific scope count (session,
then workspace, then global), and inside one scope ask beats allow. Where no rule decides, the
permission mode does: `ask` allows only reads inside the workspace, `auto` also writes there, and
`yolo` (and `unrestricted`, which is yolo without the sandbox) allows everything no deny rule
forbids (it ignores ask rules), except that yolo never writes outside the workspace unless an
allow rule names the path: it never asks, and an allowed write outside would be let through the
sandbox, so ``echo x >> ~/.bashrc`` would change the person's shell with no question.

Commands in auto mode depend on what they run in (``Request.confinement``). Where the OS sandbox
holds them, what stays inside it runs without asking: any command, reads anywhere (hidden paths
are refused by the engine's path guard), `cd` anywhere, writes inside the workspace, lines only
partly understood. What must leave it asks: a write outside the workspace (the sandbox then
grants that path), a protected path (the engine's path guard), and a command that needs the
network (``domain.network_commands``, or the agent's word) while the workspace does not give
the network: "needs the network (auto mode runs commands without it)". An allow rule that names
the program (`curl *`, not `*`) covers its network too. ``Decision.network`` lists those
commands: once allowed, the call runs with the network. Where no sandbox holds, auto mode asks
before each command no rule allows, saying why.

A command line is cut into parts by `fxdesk.domain.shell`: every simple command, every file it
writes or reads through a redirection and every directory it may move to (the caller passes the
files and directories resolved, links followed). Each part is decided on its own; the line is
denied if any part is, asks if any part asks, and runs only when every part is allowed. Deny
rules are a guard rail, not a sandbox: they match what the line says, also behind wrappers and
their options (`sudo -u x rm`, `timeout -s KILL 5 rm`, `/bin/rm` match `rm *`; `git -C . push`
matches `git push`), but cannot see what a program does once started. A command that runs text
the line does not show as a command (`eval`, `sh -c`, `xargs`, `find -exec`, …) and a line fxdesk
does not fully understand count as matching every deny rule: they ask, even in yolo mode.

The domain knows no tool by name except run_command, whose rules are commands. A path rule covers
the tool it names and every tool with the same access, and a tool that touches nothing is always
allowed; which tools those are the caller says in ``Request.known`` (built from what each tool
declares). A request without it knows no other tool: a rule covers only the tool it names (or
`*`), and no tool is always allowed.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.network_commands import REASON as NETWORK_REASON
from fxdesk.domain.network_commands import needs_network
from fxdesk.domain.rules import (
    Access,
    Match,
    PermissionRule,
    Scope,
    Verdict,
    command_rule_applies,
    command_rule_matches,
    command_words,
    deny_matches,
    deny_might_match,
    names_program,
    path_rule_matches,
)
from fxdesk.domain.shell import CommandAnalysis, SimpleCommand
from fxdesk.domain.shell_programs import runs_anything

# The rule types and matching live in ``domain.rules``; callers may name them from here.
__all__ = [
    "DIRECTORY_COMMANDS",
    "RUN_COMMAND",
    "Access",
    "Confinement",
    "Decision",
    "KnownTools",
    "Match",
    "PermissionRule",
    "Request",
    "Scope",
    "Target",
    "Verdict",
    "approval_id",
    "command_rule_matches",
    "command_words",
    "decide",
    "fingerprint",
    "path_rule_matches",
    "stricter",
]

RUN_COMMAND = "run_command"
DIRECTORY_COMMANDS = frozenset({"cd", "pushd", "popd"})  # judged by where they move, not by rule


@dataclass(frozen=True)
class Target:
    path: str  # absolute, symlinks already followed by the caller
    access: Access
    inside: bool  # inside the workspace


@dataclass(frozen=True)
class KnownTools:
    """The tools the caller knows, by what each declares it touches.

    A path rule for any tool in ``reading`` covers every read (a read tool's path, a `cd` into a
    folder); one for any tool in ``writing`` covers every write (a write tool's path, a file a
    command writes). Tools in ``inert`` touch nothing outside the conversation and are always
    allowed. Empty, the default, means no tool is known: each rule covers only the tool it names.
    """

    reading: frozenset[str] = frozenset()
    writing: frozenset[str] = frozenset()
    inert: frozenset[str] = frozenset()

    def with_access(self, access: Access) -> frozenset[str]:
        return self.reading if access is Access.READ else self.writing


@dataclass(frozen=True)
class Confinement:
    """What a command will run in, as the caller knows it.

    Attributes:
        sandboxed: The OS sandbox holds it (``tools/sandbox.py``): auto mode then lets it run
            without asking, unless it must leave the sandbox. Not sandboxed (no sandbox on
            this machine), auto mode asks before each command no rule allows.
        network: The workspace gives commands the network without asking.
        why_not: Why there is no sandbox ('' when there is one), for the reason.
    """

    sandboxed: bool
    network: bool = False
    why_not: str = ""


@dataclass(frozen=True)
class Request:
    tool: str
    workspace: str
    targets: tuple[Target, ...] = ()  # file paths; for run_command the files it writes and reads
    command: CommandAnalysis | None = None  # run_command only
    home: str = ""  # expands ~ in rule patterns
    known: KnownTools = KnownTools()  # the other tools, so a rule covers those of its access
    directories: tuple[Target, ...] = ()  # run_command: where its `cd`s lead, links followed
    # run_command: what it will run in. None (unknown) judges it as before the sandbox: auto
    # mode asks before any command no rule allows, with no word about a sandbox.
    confinement: Confinement | None = None
    wants_network: bool = False  # run_command: the agent said the line needs the network


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str  # one plain sentence
    uncovered: tuple[str, ...] = ()  # the parts not allowed yet, shown to the person
    rule: PermissionRule | None = None  # the deciding rule, if one decided
    # The commands that need the network the sandbox of auto mode lacks (asked about, or let
    # through by an allow rule naming them): once allowed, the call runs with the network.
    network: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Part:
    label: str
    verdict: Verdict
    reason: str
    rule: PermissionRule | None = None
    network: bool = False  # a command that needs the network (see ``Decision.network``)


_YOLO = "yolo mode allows what no deny rule forbids"
SANDBOX_TEMP = "/tmp"  # in the sandbox, the session's own folder (tools/sandbox.py)
_YOLO_OUTSIDE = (
    "{label}, outside the workspace: yolo mode never asks and keeps to the sandbox, so it "
    "writes outside only where an allow rule names the path (auto and ask mode ask)"
)
_COMMAND_TOOLS = frozenset({RUN_COMMAND, "*"})
_MODE_ORDER = tuple(PermissionMode)  # ask < auto < yolo < unrestricted
_SCOPE_ORDER = (Scope.SESSION, Scope.WORKSPACE, Scope.GLOBAL)


def decide(mode: PermissionMode, rules: Sequence[PermissionRule], request: Request) -> Decision:
    """Allow, ask or deny ``request`` under ``mode`` and ``rules`` (already filtered by scope)."""
    judge = _Judge(mode, tuple(rules), request)
    if request.command is not None or request.tool == RUN_COMMAND:
        return _combine(judge.command_parts())
    if request.targets:
        tools = frozenset({"*", request.tool})
        return _combine([judge.target(target, tools) for target in request.targets])
    return _combine([judge.tool()])


def fingerprint(tool: str, arguments: str) -> str:
    """sha256 of the tool name and its JSON arguments with key order and spacing normalised."""
    try:
        canonical = json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (ValueError, RecursionError):
        canonical = arguments  # malformed JSON: the raw text, which no canonical form equals
    return _sha256(tool, canonical)


def approval_id(session_id: str, work_id: str, fingerprint: str) -> str:
    """The stable id of one approval: 64 hex characters from (session, work item, fingerprint)."""
    return _sha256(session_id, work_id, fingerprint)


def stricter(a: PermissionMode, b: PermissionMode) -> PermissionMode:
    """The stricter of two modes (ask < auto < yolo < unrestricted): a child never gets more
    than its parent."""
    return min(a, b, key=_MODE_ORDER.index)


def _sha256(*fields: str) -> str:
    # JSON keeps the fields apart, so ("ab", "c") and ("a", "bc") differ.
    encoded = json.dumps(list(fields), ensure_ascii=True).encode("ascii")
    return hashlib.sha256(encoded).hexdigest()


def _combine(parts: Sequence[_Part]) -> Decision:
    pending = tuple(
        dict.fromkeys(part.label for part in parts if part.verdict is not Verdict.ALLOW)
    )
    network = tuple(dict.fromkeys(part.label for part in parts if part.network))
    denied = [part for part in parts if part.verdict is Verdict.DENY]
    asking = [part for part in parts if part.verdict is Verdict.ASK]
    if denied or asking:
        first = (denied or asking)[0]
        verdict = Verdict.DENY if denied else Verdict.ASK
        reason = first.reason + _more(len(pending) - 1)
        return Decision(verdict, reason, pending, first.rule, network)
    if len(parts) == 1:
        return Decision(Verdict.ALLOW, parts[0].reason, (), parts[0].rule, network)
    count = "both parts" if len(parts) == 2 else f"all {len(parts)} parts"
    return Decision(Verdict.ALLOW, f"{count} are allowed", network=network)


def _more(others: int) -> str:
    if others <= 0:
        return ""
    if others == 1:
        return ", and 1 more part needs approval"
    return f", and {others} more parts need approval"


def _describe(rule: PermissionRule, *, command: bool) -> str:
    kind = f" ({rule.match})" if command else ""
    return f"the {rule.scope} rule {rule.tool} `{rule.pattern}`{kind}"


def _inside(path: str, workspace: str) -> bool:
    path, workspace = posixpath.normpath(path), posixpath.normpath(workspace)
    return path == workspace or path.startswith(workspace.rstrip("/") + "/")


class _Judge:
    """Decides the parts of one request."""

    def __init__(self, mode: PermissionMode, rules: tuple[PermissionRule, ...], request: Request):
        self.mode = mode
        self.rules = rules
        self.request = request
        self.yolo = mode.never_asks
        # yolo keeps to the sandbox (no write outside the workspace unless a rule names it);
        # unrestricted is yolo without it.
        self.sandboxed = mode is not PermissionMode.UNRESTRICTED
        confinement = request.confinement
        # A command that runs in the sandbox sees its own /tmp (the session's), not the machine's.
        self.in_sandbox = self.sandboxed and confinement is not None and confinement.sandboxed
        auto = mode is PermissionMode.AUTO and confinement is not None
        # Auto mode with the sandbox holding: what stays inside runs without asking.
        self.contained = auto and confinement is not None and confinement.sandboxed
        self.network_off = self.contained and confinement is not None and not confinement.network
        # Auto mode where no sandbox holds: each command asks unless a rule allows it.
        self.unconfined_why = "" if self.contained or not auto else _no_sandbox(confinement)

    # rule selection --------------------------------------------------------------------------

    def pick(self, applies: Callable[[PermissionRule], bool]) -> PermissionRule | None:
        """The deciding rule: any deny, else ask or allow from the most specific scope."""
        matching = [rule for rule in self.rules if applies(rule)]
        ranked = sorted(matching, key=lambda rule: _SCOPE_ORDER.index(rule.scope))
        deny = next((rule for rule in ranked if rule.action is Verdict.DENY), None)
        if deny is not None:
            return deny
        counted = [
            rule
            for rule in ranked
            if rule.action is Verdict.ALLOW or (rule.action is Verdict.ASK and not self.yolo)
        ]
        if not counted:
            return None
        scope = counted[0].scope
        here = [rule for rule in counted if rule.scope is scope]
        return next((rule for rule in here if rule.action is Verdict.ASK), here[0])

    def first_deny(
        self, applies: Callable[[PermissionRule], bool], tools: Iterable[str]
    ) -> PermissionRule | None:
        names = frozenset(tools)
        denying = [r for r in self.rules if r.action is Verdict.DENY and r.tool in names]
        return next((rule for rule in denying if applies(rule)), None)

    # run_command -----------------------------------------------------------------------------

    def command_parts(self) -> list[_Part]:
        analysis = self.request.command or CommandAnalysis(
            (), (), (), (), False, ("was not given to the permission check",)
        )
        parts = [self.simple(command) for command in analysis.commands]
        parts += [
            self.target(target, frozenset({"*"}), command=True)
            for target in self.file_targets(analysis)
        ]
        parts += [self.dynamic_path(raw, Access.WRITE) for raw in analysis.dynamic_writes]
        parts += [self.dynamic_path(raw, Access.READ) for raw in analysis.dynamic_reads]
        parts += [self.directory(target) for target in self.directory_targets(analysis)]
        if not analysis.understood:
            parts.append(self.not_understood(analysis))
        return parts

    def file_targets(self, analysis: CommandAnalysis) -> tuple[Target, ...]:
        """The files the line writes and reads: as the caller resolved them (links followed),
        or, for an access it gave none of, lexically rather than not at all."""
        given = self.request.targets
        found = list(given)
        for access, paths in ((Access.WRITE, analysis.writes), (Access.READ, analysis.reads)):
            if not any(target.access is access for target in given):
                found += [Target(p, access, _inside(p, self.request.workspace)) for p in paths]
        return tuple(found)

    def directory_targets(self, analysis: CommandAnalysis) -> tuple[Target, ...]:
        if self.request.directories:
            return self.request.directories
        workspace = self.request.workspace
        return tuple(Target(d, Access.READ, _inside(d, workspace)) for d in analysis.directories)

    def guarded(self) -> frozenset[str]:
        """The tools whose deny rules a command line can reach: commands, reads and writes."""
        known = self.request.known
        return _COMMAND_TOOLS | known.reading | known.writing

    def simple(self, command: SimpleCommand) -> _Part:
        label = command.text
        rule = self.pick(lambda r: r.tool in _COMMAND_TOOLS and command_rule_applies(r, command))
        if rule is not None and rule.action is Verdict.DENY:
            return self.by_rule(label, rule, command=True)
        if command.dynamic:
            risky = self.first_deny(lambda r: deny_might_match(r, command), _COMMAND_TOOLS)
            if risky is not None:
                why = f"`{label}` uses values only known when it runs"
                described = _describe(risky, command=True)
                return _Part(label, Verdict.ASK, f"{why}, and {described} might match it")
        indirect = runs_anything(command.words)
        if indirect:
            guard = self.first_deny(lambda _: True, self.guarded())
            if guard is not None:
                described = _describe(guard, command=guard.tool in _COMMAND_TOOLS)
                return _Part(label, Verdict.ASK, f"{indirect}, and {described} might match it")
        network = self.network_need(command)
        if rule is not None:
            if network and rule.action is Verdict.ALLOW and not names_program(rule):
                return self.needs_network(label, network)
            return self.by_rule(label, rule, command=True, network=bool(network))
        if self.yolo:
            return _Part(label, Verdict.ALLOW, _YOLO)
        if command.words and command.words[0] in DIRECTORY_COMMANDS:
            return _Part(label, Verdict.ALLOW, f"`{label}` only changes directory")
        if network:
            return self.needs_network(label, network)
        if self.contained:
            return _Part(label, Verdict.ALLOW, f"auto mode runs `{label}` in the sandbox")
        if self.unconfined_why:
            return _Part(label, Verdict.ASK, self.unconfined_why)
        if command.dynamic:
            why = f"`{label}` uses values only known when it runs, so only a `*` rule can cover it"
            return _Part(label, Verdict.ASK, why)
        return _Part(label, Verdict.ASK, f"`{label}` is not covered by any rule")

    def by_rule(
        self, label: str, rule: PermissionRule, *, command: bool, network: bool = False
    ) -> _Part:
        described = _describe(rule, command=command)
        subject = f"`{label}`" if command else label
        if rule.action is Verdict.DENY:
            return _Part(label, Verdict.DENY, f"{subject} is denied by {described}", rule)
        if rule.action is Verdict.ASK:
            return _Part(label, Verdict.ASK, f"{described} asks before {subject}", rule, network)
        return _Part(label, Verdict.ALLOW, f"{subject} is allowed by {described}", rule, network)

    def network_need(self, command: SimpleCommand) -> str:
        """Why ``command`` needs the network auto mode's sandbox lacks, as the reason says it
        ('' when it does not, or when the sandbox has the network)."""
        if not self.network_off or (command.words and command.words[0] in DIRECTORY_COMMANDS):
            return ""
        if needs_network(command.words):
            return f"`{command.text}` {NETWORK_REASON}"
        if self.request.wants_network:
            return f"`{command.text}`: the agent says it {NETWORK_REASON}"
        return ""

    def needs_network(self, label: str, reason: str) -> _Part:
        return _Part(label, Verdict.ASK, reason, network=True)

    # files and directories -------------------------------------------------------------------

    def path_rule(self, path: str, tools: frozenset[str]) -> PermissionRule | None:
        workspace, home = self.request.workspace, self.request.home
        return self.pick(lambda r: r.tool in tools and path_rule_matches(r, path, workspace, home))

    def target(self, target: Target, tools: frozenset[str], *, command: bool = False) -> _Part:
        verb = "reads" if target.access is Access.READ else "writes"
        label = f"{verb} {target.path}"
        same_access = self.request.known.with_access(target.access)
        rule = self.path_rule(target.path, tools | same_access)
        if rule is not None:
            return self.by_rule(label, rule, command=False)
        temp = not target.inside and _inside(target.path, SANDBOX_TEMP)
        if command and self.in_sandbox and target.access is Access.WRITE and temp:
            return _Part(label, Verdict.ALLOW, f"{label}: the sandbox's own /tmp")
        if self.yolo:
            if target.access is Access.WRITE and not target.inside and self.sandboxed:
                return _Part(label, Verdict.DENY, _YOLO_OUTSIDE.format(label=label))
            return _Part(label, Verdict.ALLOW, _YOLO)
        if command and self.contained and target.access is Access.READ:
            return _Part(label, Verdict.ALLOW, f"{label}: the sandbox lets commands read it")
        if not target.inside:
            return _Part(label, Verdict.ASK, f"{label}, outside the workspace")
        if target.access is Access.WRITE and self.mode is PermissionMode.ASK:
            return _Part(label, Verdict.ASK, f"{label}; ask mode asks before every write")
        return _Part(label, Verdict.ALLOW, f"{label}, inside the workspace")

    def dynamic_path(self, raw: str, access: Access) -> _Part:
        verb, preposition = ("writes", "to") if access is Access.WRITE else ("reads", "from")
        label = f"{verb} {raw}"
        guard = self.first_deny(lambda _: True, {"*", *self.request.known.with_access(access)})
        if self.yolo and guard is None:
            return _Part(label, Verdict.ALLOW, _YOLO)
        if self.contained and guard is None:
            return _Part(label, Verdict.ALLOW, f"{label}: the sandbox holds wherever it leads")
        reason = f"{verb} {preposition} `{raw}`, a path only known when it runs"
        if guard is not None:
            reason += f", so {_describe(guard, command=False)} cannot be checked"
        return _Part(label, Verdict.ASK, reason)

    def directory(self, target: Target) -> _Part:
        label = f"cd {target.path}"
        rule = self.path_rule(target.path, frozenset({"*"}) | self.request.known.reading)
        if rule is not None:
            return self.by_rule(label, rule, command=False)
        if self.yolo or target.inside:
            return _Part(label, Verdict.ALLOW, f"`{label}` stays inside the workspace")
        if self.contained:
            return _Part(label, Verdict.ALLOW, f"`{label}`: the sandbox holds wherever it moves")
        return _Part(label, Verdict.ASK, f"`{label}` moves outside the workspace")

    def not_understood(self, analysis: CommandAnalysis) -> _Part:
        label = analysis.source.strip() or "the command"
        why = analysis.problems[0] if analysis.problems else "is not understood"
        pseudo = SimpleCommand(tuple(label.split()), " ".join(label.split()), "", True)
        denying = self.first_deny(lambda r: deny_matches(r, pseudo), _COMMAND_TOOLS)
        if denying is not None:
            return self.by_rule(label, denying, command=True)
        guard = self.first_deny(lambda _: True, self.guarded())
        if self.yolo and guard is None:
            return _Part(label, Verdict.ALLOW, _YOLO)
        if self.contained and guard is None:
            return _Part(label, Verdict.ALLOW, f"auto mode runs it in the sandbox ({why})")
        reason = f"fxdesk could not fully understand this command ({why})"
        return _Part(label, Verdict.ASK, reason)

    # other tools -----------------------------------------------------------------------------

    def tool(self) -> _Part:
        name = self.request.tool
        rule = self.pick(lambda r: r.tool in ("*", name) and r.pattern.strip() in ("*", name))
        if rule is not None:
            return self.by_rule(name, rule, command=False)
        if name in self.request.known.inert:
            return _Part(name, Verdict.ALLOW, f"`{name}` is always allowed")
        if self.yolo:
            return _Part(name, Verdict.ALLOW, _YOLO)
        return _Part(name, Verdict.ASK, f"`{name}` is not covered by any rule")


def _no_sandbox(confinement: Confinement | None) -> str:
    why = confinement.why_not if confinement is not None and confinement.why_not else "unknown"
    return f"no sandbox on this machine: {why}; auto mode asks before each command"
