"""The host's authority: which tools, rules and grants a session's turns get.

``capture`` freezes it into an ``AdmissionSnapshot`` when a work item is admitted. The permissions
issue adds rules and grants from the database and the live per-action check; here the authority
is what the engine was built with, and tests replace it to change it mid-run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fxdesk.domain.authority import AdmissionSnapshot, Grant, Rule
from fxdesk.domain.model import Session
from fxdesk.domain.work import WorkItem


@dataclass
class HostAuthority:
    """Mutable host authority; every change bumps ``generation``."""

    tool_names: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    grants: tuple[Grant, ...] = ()
    sandbox: str = "none"
    integrations: tuple[str, ...] = ()
    generation: int = 1
    captures: list[AdmissionSnapshot] = field(default_factory=list)

    def update(self, **changes: object) -> None:
        for name, value in changes.items():
            if not hasattr(self, name) or name in ("generation", "captures"):
                raise AttributeError(name)
            setattr(self, name, value)
        self.generation += 1

    def capture(
        self, session: Session, item: WorkItem, model: str, effort: str | None
    ) -> AdmissionSnapshot:
        snapshot = AdmissionSnapshot(
            parent_id=session.parent_id,
            source_id=item.source_id,
            profile=session.profile,
            model=model,
            effort=effort,
            permission_mode=session.permission_mode,
            sandbox=self.sandbox,
            tool_names=tuple(self.tool_names),
            rules=tuple(self.rules),
            grants=tuple(self.grants),
            integrations=tuple(self.integrations),
            authority_generation=self.generation,
        )
        self.captures.append(snapshot)
        return snapshot
