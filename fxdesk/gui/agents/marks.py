"""Which agent runs a session, read from its config: what the session tree asks on every paint.

Apart from ``text`` (which imports the runs' and the inbox's domain) so that the tree's model
stays cheap to import before the window's first frame (docs/performance.md).
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING

from fxdesk.domain.child_agents import ACP_SESSION_KEY, MANAGED_BY_KEY

if TYPE_CHECKING:
    from fxdesk.domain.model import Session

PLAIN_SPAWNED = "sub-agent"  # spawned with a role of its own, no named agent


def spawned_agent(session: Session) -> str | None:
    """The agent a persistent child was spawned as by its parent's agent (``spawn_agent``):
    the named agent's id, or "sub-agent" for a plain role; None for a session the person
    opened, a run's one-off child, or a child since moved away from the agent that made it."""
    if session.parent_id is None:
        return None
    return _spawned_agent(session.config_json, session.parent_id)


@functools.lru_cache(maxsize=1024)
def _spawned_agent(config_json: str, parent_id: str) -> str | None:
    # Cached: the tree asks on every paint, and the snapshot only keeps the config as JSON.
    config = json.loads(config_json or "{}")
    if not isinstance(config, dict) or config.get(MANAGED_BY_KEY) != parent_id:
        return None
    agent = config.get("agent_id")
    return agent if isinstance(agent, str) and agent else PLAIN_SPAWNED


def external_agent(session: Session) -> str | None:
    """The external agent (ACP) a session runs, by the name it gave, once it has run there;
    None for a native session."""
    return _external_agent(session.config_json)


@functools.lru_cache(maxsize=1024)
def _external_agent(config_json: str) -> str | None:
    config = json.loads(config_json or "{}")
    stored = config.get(ACP_SESSION_KEY) if isinstance(config, dict) else None
    if not isinstance(stored, dict):
        return None
    name = stored.get("name") or stored.get("agent")
    return str(name) if name else "external agent"
