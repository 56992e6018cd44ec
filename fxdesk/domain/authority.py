"""What a turn may do: the admission snapshot frozen per work item (spec child-sessions §2.6).

The snapshot is captured from the host's authority when an item is admitted and never changes for
that turn; later changes to tools, rules or grants show up at the next admission.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from fxdesk.domain.model import PermissionMode


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
