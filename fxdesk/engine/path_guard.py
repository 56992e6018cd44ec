"""The protected and hidden paths (``tools/protected.py``) in the permission decision.

Applied by ``PermissionService.check`` on top of the mode and rules (``domain.permissions``), to
every path a call names (a file tool's path, a file a command writes):

- **hidden**: denied in every mode, whatever a rule says. The file tools refuse them too.
- **protected, written**: in ``ask`` and ``auto`` mode the person is asked, with the reason "a
  protected path (.git): …". In ``yolo`` mode, which never asks, the write is refused: the
  sandbox keeps these paths read-only in every mode (issue 11: "yolo: no questions, still
  sandboxed"), and the file tools keep to the same line. An allow rule whose fixed part names
  the protected path (``.git/hooks/*``, or the exact path "always allow" saved from an
  approval) is the person's explicit word and counts in every mode; a broad rule (``*``,
  ``**``) that only happens to cover it does not. A deny stays a deny. ``unrestricted`` mode
  (yolo without the sandbox) keeps to the same line: the check still refuses what it sees.

A git command that writes its repository (`git commit`, `git add`, ...: ``domain.git_commands``)
writes the git folder, and is judged as such a write: the reason names the git command.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import replace

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import (
    Access,
    Decision,
    PermissionRule,
    Request,
    Target,
    Verdict,
    path_rule_matches,
)
from fxdesk.tools.protected import Guarded, PathPolicy
from fxdesk.tools.workspace import is_inside

_GLOB_CHARS = "*?["


def guard(
    decision: Decision,
    request: Request,
    mode: PermissionMode,
    paths: PathPolicy,
    rules: Sequence[PermissionRule] = (),
    why: Mapping[str, str] | None = None,
) -> tuple[Decision, bool]:
    """``decision`` with the path policy applied.

    Args:
        decision: What the mode and rules decided for ``request``.
        request: The call, its paths resolved (symbolic links followed).
        mode: The permission mode it was decided under.
        paths: The protected and hidden paths of this workspace.
        rules: The rules it was decided with: when several parts were allowed (a command and
            the git folder it writes), an allow rule naming the protected path still counts.
        why: For a target written by a git command: that command (shown in the reason).

    Returns:
        The decision, and whether the call writes a protected path (a call that then runs was
        allowed to: its tool is told so).
    """
    for target in request.targets:
        hidden = paths.hidden(target.path)
        if hidden is not None:
            label = _label(target)
            reason = (
                f"{label}: {hidden.label} is hidden from the agent ({hidden.why}); "
                "fxdesk refuses it in every mode"
            )
            return Decision(Verdict.DENY, reason, (label,)), False
    protected = [
        (target, found)
        for target in request.targets
        if target.access is Access.WRITE and (found := paths.protected(target.path)) is not None
    ]
    if not protected:
        return decision, False
    if decision.verdict is Verdict.DENY and (decision.rule is not None or not mode.never_asks):
        return decision, True  # a deny rule's reason (yolo's own refusal: the path's, below)
    if decision.verdict is Verdict.ALLOW and (
        _names(decision.rule, protected, request) or _named(rules, protected, request)
    ):
        return decision, True
    target, found = protected[0]
    by = (why or {}).get(target.path)
    written = f" (`{by}` writes the repository)" if by else ""
    reason = f"a protected path ({found.label}): {_label(target)}{written}; {found.why}"
    if mode.never_asks:
        reason += (
            f", so it stays read-only in {mode} mode, which never asks"
            " (an allow rule naming that path lets it through)"
        )
        return Decision(Verdict.DENY, reason, (_label(target),)), True
    labels = [_label(target) for target, _ in protected]
    uncovered = tuple(dict.fromkeys([*decision.uncovered, *labels]))
    asking = reason + " (writing it needs your approval)"
    return replace(
        decision, verdict=Verdict.ASK, reason=asking, uncovered=uncovered, rule=None
    ), True


def _label(target: Target) -> str:
    verb = "reads" if target.access is Access.READ else "writes"
    return f"{verb} {target.path}"


def _named(
    rules: Sequence[PermissionRule], protected: list[tuple[Target, Guarded]], request: Request
) -> bool:
    """Whether, for every protected target, an allow rule for writes matches it and names it
    (the decision was allowed, so no deny or ask rule decided any part). A folder written as a
    whole (a git folder a git command writes) counts as matched by a rule for everything in
    it (``.git/**``)."""
    tools = {"*", *request.known.writing}
    allowing = [r for r in rules if r.action is Verdict.ALLOW and r.tool in tools]
    where = request.workspace, request.home
    return all(
        any(
            (
                path_rule_matches(r, target.path, *where)
                or path_rule_matches(r, target.path + "/", *where)
            )
            and _names(r, [(target, found)], request)
            for r in allowing
        )
        for target, found in protected
    )


def _names(
    rule: PermissionRule | None, protected: list[tuple[Target, Guarded]], request: Request
) -> bool:
    """Whether ``rule`` (the allow that decided) names every protected path written: the part
    of its pattern before any wildcard lies inside it."""
    if rule is None:
        return False
    pattern = rule.pattern.strip()
    if pattern.startswith("~"):
        if not request.home:
            return False
        pattern = request.home + pattern[1:]
    if not pattern.startswith("/"):
        pattern = posixpath.join(request.workspace, pattern)
    wild = min((pattern.find(c) for c in _GLOB_CHARS if c in pattern), default=-1)
    fixed = pattern if wild < 0 else pattern[: pattern.rfind("/", 0, wild) + 1]
    fixed = os.path.normpath(fixed)
    return all(is_inside(fixed, found.path) for _, found in protected)
