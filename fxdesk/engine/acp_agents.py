"""The external agents this process runs: one agent process and ACP session per fxdesk session.

The agent is started by the session's first ACP turn and kept for its next turns, so it
remembers the conversation itself. It is stopped when the session is closed, when the owner
shuts down (``SessionOwner``), or when a turn leaves it in an unknown state (died, or did not end
a prompt after ``session/cancel``); the next turn then starts it again.

The ACP session id is kept durably in the session's config (``acp_session``: the id and which
agent command made it). A later start of the agent (after a restart of fxdesk, or after it was
stopped) takes that session up again with ``session/load`` when the agent advertises
``loadSession``; otherwise, or when the load is refused, it gets a new ACP session and
``Opened.loaded`` says so (an interrupted turn then cannot be resumed: ``turn_acp``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxdesk.domain.child_agents import ACP_SESSION_KEY
from fxdesk.providers.acp import AcpAgentProvider, AcpConnection, AcpLaunch
from fxdesk.store import Store, repo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Opened:
    """The agent a turn runs with.

    ``fresh``: started for this turn (False: the one that ran the session's earlier turns here).
    ``loaded``: a fresh agent took the session's earlier ACP session up again (``session/load``).
    ``previous``: the ACP session id stored before this start, if any.
    """

    connection: AcpConnection
    fresh: bool
    loaded: bool = False
    previous: str | None = None


def agent_signature(launch: AcpLaunch) -> str:
    """Which agent made a stored ACP session: its command line (a session of another agent is
    never loaded into this one)."""
    return " ".join((launch.command, *launch.args))


def stored_acp_session(config: dict[str, Any], launch: AcpLaunch) -> str | None:
    stored = config.get(ACP_SESSION_KEY)
    if not isinstance(stored, dict) or stored.get("agent") != agent_signature(launch):
        return None
    found = stored.get("id")
    return found if isinstance(found, str) and found else None


class AcpAgents:
    """The running agents by fxdesk session id. Turns of one session never overlap (the
    session lock), so a session's agent is used by one turn at a time."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._held: dict[str, AcpConnection] = {}

    def running(self, session_id: str) -> AcpConnection | None:
        held = self._held.get(session_id)
        return held if held is not None and held.alive else None

    async def open(self, session_id: str, workspace: Path, provider: AcpAgentProvider) -> Opened:
        """The session's agent: the running one, else a new process whose ACP session is the
        stored one (``session/load``) or a new one (stored durably).

        Raises:
            ProviderError: the agent cannot start, initialize or make a session.
            StoreError: the new session id could not be saved (the agent is stopped).
        """
        held = self._held.get(session_id)
        if held is not None:
            if held.alive and held.launch == provider.launch and held.session_id:
                return Opened(held, fresh=False)
            await self.stop(session_id)  # died, or the profile now names another agent
        connection = await provider.start(workspace)
        self._held[session_id] = connection  # from here on, stop/stop_all end it
        try:
            session = await self.store.read(lambda: repo.get_session(session_id))
            previous = stored_acp_session(session.config, provider.launch) if session else None
            loaded = False
            if previous is not None and connection.can_load:
                loaded = await connection.load_session(workspace, previous)
            if not loaded:
                new_id = await connection.new_session(workspace)
                value = {
                    "id": new_id,
                    "agent": agent_signature(provider.launch),
                    "name": connection.label,  # shown in the tree
                }
                await self.store.write(
                    lambda: repo.set_session_config(session_id, ACP_SESSION_KEY, value),
                    label="acp_session",
                )
        except BaseException:
            await self.stop(session_id)
            raise
        log.info(
            "session %s: agent %s started (pid %s), ACP session %s (%s)",
            session_id,
            connection.label,
            connection.process.pid,
            connection.session_id,
            "loaded" if loaded else "new",
        )
        return Opened(connection, fresh=True, loaded=loaded, previous=previous)

    async def stop(self, session_id: str) -> None:
        """Stop the session's agent, if one runs."""
        connection = self._held.pop(session_id, None)
        if connection is not None:
            connection.detach()
            await connection.stop()

    async def stop_all(self) -> None:
        ids = list(self._held)
        await asyncio.gather(*(self.stop(i) for i in ids), return_exceptions=True)
