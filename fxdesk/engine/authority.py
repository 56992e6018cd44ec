"""The host's authority: which tools, rules and grants a session's turns get (spec §2.6, §2.7).

Two views of it (``domain.authority``): ``capture`` freezes an ``AdmissionSnapshot`` when a work
item is admitted; ``resolve`` gives the ``LiveAuthority`` of this moment, asked again for every
tool action, so a revocation (a tool, an integration, a grant) takes effect at the next action.
Every change moves ``generation``; a turn re-decides an action whose decision was made under an
older generation before it starts (``turn_tools``).

``HostAuthority`` is the host the engine is built with: the registered tools, set by the app,
and changed by tests to revoke mid-run; plus the tools that come and go with MCP servers
(``workspace_tools``: by workspace id, ``ALL_WORKSPACES`` for the person's global servers),
which ``engine.mcp`` updates as servers start, stop and restart.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Protocol

from fxdesk.domain.authority import AdmissionSnapshot, Grant, LiveAuthority, Rule
from fxdesk.domain.model import PermissionMode, Session
from fxdesk.domain.work import WorkItem

ALL_WORKSPACES = 0  # the ``workspace_tools`` key of tools offered in every workspace
CAPTURES_KEPT = 256  # the admission snapshots a HostAuthority remembers (tests read them)


class AuthorityResolver(Protocol):
    """What the engine asks the host. ``generation`` is read from the store's writer thread
    (an action's start is committed only under the generation it was decided under): it must
    be a plain value, cheap and safe to read from any thread."""

    @property
    def generation(self) -> int: ...

    def capture(
        self, session: Session, item: WorkItem, model: str, effort: str | None
    ) -> AdmissionSnapshot: ...

    def resolve(self, session: Session, mode: PermissionMode) -> LiveAuthority: ...


AGENT_TOOLS_KEY = "agent_tools"  # a session's allowed tools (a named agent's ``tools``)
AGENT_DENIED_TOOLS_KEY = "agent_disallowed_tools"


def session_tools(session: Session, host_tools: tuple[str, ...]) -> tuple[str, ...]:
    """The host's tools a session's work is admitted with: all of them, narrowed by the tools
    its named agent's definition allows and disallows (stored in the session's config)."""
    config = session.config
    allowed = config.get(AGENT_TOOLS_KEY)
    denied = set(config.get(AGENT_DENIED_TOOLS_KEY) or ())
    names = tuple(host_tools)
    if isinstance(allowed, list):
        names = tuple(n for n in names if n in allowed)
    return tuple(n for n in names if n not in denied)


@dataclass
class HostAuthority:
    """Mutable host authority; every change bumps ``generation``."""

    tool_names: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    grants: tuple[Grant, ...] = ()
    sandbox: str = "none"
    integrations: tuple[str, ...] = ()
    # Tools offered only in one workspace (by id), or in all (``ALL_WORKSPACES``).
    workspace_tools: dict[int, tuple[str, ...]] = field(default_factory=dict)
    generation: int = 1
    captures: collections.deque[AdmissionSnapshot] = field(
        default_factory=lambda: collections.deque(maxlen=CAPTURES_KEPT)
    )

    def update(self, **changes: object) -> None:
        """Change the authority (``update(tool_names=())`` revokes every tool); the next
        action of every turn sees it, the next admission records it."""
        for name, value in changes.items():
            if not hasattr(self, name) or name in ("generation", "captures"):
                raise AttributeError(name)
            setattr(self, name, value)
        self.generation += 1  # last: a reader that sees the new generation sees the new rights

    def tools_for(self, workspace_id: int) -> tuple[str, ...]:
        """The tools a session of ``workspace_id`` is offered now."""
        scoped = self.workspace_tools
        return (
            *self.tool_names,
            *scoped.get(ALL_WORKSPACES, ()),
            *(scoped.get(workspace_id, ()) if workspace_id != ALL_WORKSPACES else ()),
        )

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
            tool_names=session_tools(session, self.tools_for(session.workspace_id)),
            rules=tuple(self.rules),
            grants=tuple(self.grants),
            integrations=tuple(self.integrations),
            authority_generation=self.generation,
        )
        self.captures.append(snapshot)
        return snapshot

    def resolve(self, session: Session, mode: PermissionMode) -> LiveAuthority:
        generation = self.generation  # first: rights changed after it are caught as stale
        return LiveAuthority(
            generation=generation,
            root_id=session.root_id,
            tools=self.tools_for(session.workspace_id),
            sandbox=self.sandbox,
            integrations=tuple(self.integrations),
            rules=tuple(self.rules),
            grants=tuple(self.grants),
            permission_mode=mode,
        )


class SnapshotAuthority:
    """A host that never changes: the admission snapshot stands in for the live authority
    (turns run without a host, as in tests about something else)."""

    def __init__(self, snapshot: AdmissionSnapshot) -> None:
        self._snapshot = snapshot

    @property
    def generation(self) -> int:
        return self._snapshot.authority_generation

    def capture(
        self, session: Session, item: WorkItem, model: str, effort: str | None
    ) -> AdmissionSnapshot:
        return self._snapshot

    def resolve(self, session: Session, mode: PermissionMode) -> LiveAuthority:
        s = self._snapshot
        return LiveAuthority(
            generation=s.authority_generation,
            root_id=session.root_id,
            tools=s.tool_names,
            sandbox=s.sandbox,
            integrations=s.integrations,
            rules=s.rules,
            grants=s.grants,
            permission_mode=mode,
        )
