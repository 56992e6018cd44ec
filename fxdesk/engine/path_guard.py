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
  ``**``) that only happens to cover it does not. A deny stays a deny.
"""

from __future__ import annotations

import os
import posixpath

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Access, Decision, PermissionRule, Request, Target, Verdict
from fxdesk.tools.protected import Guarded, PathPolicy
from fxdesk.tools.workspace import is_inside

_GLOB_CHARS = "*?["


def guard(
    decision: Decision, request: Request, mode: PermissionMode, paths: PathPolicy
) -> tuple[Decision, bool]:
    """``decision`` with the path policy applied.

    Args:
        decision: What the mode and rules decided for ``request``.
        request: The call, its paths resolved (symbolic links followed).
        mode: The permission mode it was decided under.
        paths: The protected and hidden paths of this workspace.

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
    if decision.verdict is Verdict.DENY:
        return decision, True
    if decision.verdict is Verdict.ALLOW and _names(decision.rule, protected, request):
        return decision, True
    target, found = protected[0]
    reason = f"a protected path ({found.label}): {_label(target)}; {found.why}"
    if mode is PermissionMode.YOLO:
        reason += ", so it stays read-only in yolo mode, which never asks"
        return Decision(Verdict.DENY, reason, (_label(target),)), True
    labels = [_label(target) for target, _ in protected]
    uncovered = tuple(dict.fromkeys([*decision.uncovered, *labels]))
    return Decision(Verdict.ASK, reason + " (writing it needs your approval)", uncovered), True


def _label(target: Target) -> str:
    verb = "reads" if target.access is Access.READ else "writes"
    return f"{verb} {target.path}"


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
