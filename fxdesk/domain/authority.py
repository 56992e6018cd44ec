"""What a turn may do: two views of the host's authority (spec child-sessions §2.6, §2.7, §6.1).

The *admission snapshot* is captured from the host's authority when an item is admitted and never
changes for that turn; later changes to tools, rules or grants show up in it at the next
admission (what the turn was admitted with, for the record and the report).

The *live authority* is resolved again for every tool action. The host can revoke (a tool, an
integration, a grant) at any moment; its ``generation`` then changes, and the next action sees
the new rights: a tool no longer there is ``unavailable``. A decision is only good for the
generation it was made under (``tool_decision``): the turn re-decides when the generation moved
before the action starts, so a revoked grant never lets one more action through.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict


@dataclass(frozen=True)
class Rule:
    tool: str
    pattern: str
    action: str  # allow | ask | deny


@dataclass(frozen=True)
class Grant:
    tool: str
    target: str


@dataclass(frozen=True)
class AdmissionSnapshot:
    parent_id: str | None
    source_id: str
    profile: str | None
    model: str
    effort: str | None
    permission_mode: PermissionMode
    sandbox: str = "none"
    tool_names: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    grants: tuple[Grant, ...] = ()
    integrations: tuple[str, ...] = ()
    authority_generation: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        data["permission_mode"] = self.permission_mode.value
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdmissionSnapshot:
        data = json.loads(text)
        return cls(
            parent_id=data["parent_id"],
            source_id=data["source_id"],
            profile=data.get("profile"),
            model=data["model"],
            effort=data.get("effort"),
            permission_mode=PermissionMode(data["permission_mode"]),
            sandbox=data.get("sandbox", "none"),
            tool_names=tuple(data.get("tool_names", ())),
            rules=tuple(Rule(**r) for r in data.get("rules", ())),
            grants=tuple(Grant(**g) for g in data.get("grants", ())),
            integrations=tuple(data.get("integrations", ())),
            authority_generation=int(data.get("authority_generation", 0)),
            extra=dict(data.get("extra", {})),
        )


def snapshot_mismatch(
    snapshot: AdmissionSnapshot,
    *,
    parent_id: str | None,
    source_id: str,
    model: str,
    effort: str | None,
    permission_mode: PermissionMode,
) -> str:
    """Why a captured snapshot does not match the session's record ('' when it does)."""
    checks = [
        ("permission mode", snapshot.permission_mode, permission_mode),
        ("parent", snapshot.parent_id, parent_id),
        ("source", snapshot.source_id, source_id),
        ("model", snapshot.model, model),
        ("effort", snapshot.effort, effort),
    ]
    for name, got, expected in checks:
        if got != expected:
            return f"{name} {got!r} does not match {expected!r}"
    return ""


class ToolDecision(enum.StrEnum):
    """What the live authority says about one tool action (spec §2.7)."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
    UNAVAILABLE = "unavailable"  # the host does not offer the tool (now)


@dataclass(frozen=True)
class LiveAuthority:
    """The host's authority at one moment, for one session's action (spec §2.7)."""

    generation: int
    root_id: str
    tools: tuple[str, ...]
    sandbox: str
    integrations: tuple[str, ...]
    rules: tuple[Rule, ...]
    grants: tuple[Grant, ...]
    permission_mode: PermissionMode

    def available(self, tool: str, admitted: Collection[str]) -> bool:
        """Whether ``tool`` may run: the host offers it now, and the turn was admitted with it
        (a tool the host adds mid-turn joins at the next admission)."""
        return tool in self.tools and tool in admitted

    def permission_rules(self, session_id: str) -> tuple[PermissionRule, ...]:
        """The host's rules and grants as permission rules for ``session_id``.

        A host rule counts like a global rule the person saved (a glob on the command or the
        path); a grant allows exactly its target, for this session only, so it is more specific
        than any saved rule but, like every allow, loses to a deny."""
        rules = [
            PermissionRule(r.tool, r.pattern, Verdict(r.action), Scope.GLOBAL, Match.GLOB)
            for r in self.rules
        ]
        rules += [
            PermissionRule(
                g.tool, g.target, Verdict.ALLOW, Scope.SESSION, Match.EXACT, scope_key=session_id
            )
            for g in self.grants
        ]
        return tuple(rules)


def tool_decision(
    live: LiveAuthority, tool: str, admitted: Collection[str], verdict: Verdict
) -> ToolDecision:
    """One action's decision: ``unavailable`` before anything else, else the permission
    check's verdict (made against ``live``'s rules and grants)."""
    if not live.available(tool, admitted):
        return ToolDecision.UNAVAILABLE
    return ToolDecision(verdict.value)
