"""When the agents controller reads a tree's runs and usage again after a session changed."""

from __future__ import annotations

from types import SimpleNamespace

from fxdesk.domain.model import Session, SessionState
from fxdesk.gui.agents.controller import AgentsController
from tests.gui.sessions.test_session_model import session


def _session(session_id: str, root_id: str, state: SessionState) -> Session:
    return session(session_id, parent=None if session_id == root_id else root_id, state=state)


def test_a_tree_is_read_again_when_a_turn_ends_not_when_one_is_queued_or_starts() -> None:
    marked: list[str] = []
    controller = SimpleNamespace(runs={"root": []}, _mark_dirty=marked.append)
    changed = AgentsController._on_bridge_session_changed
    for session_id in ("root", "child"):
        for state in (SessionState.QUEUED, SessionState.RUNNING):
            changed(controller, _session(session_id, "root", state))  # type: ignore[arg-type]
        assert marked == [], session_id
        for state in (SessionState.IDLE, SessionState.AWAITING_APPROVAL, SessionState.FAILED):
            changed(controller, _session(session_id, "root", state))  # type: ignore[arg-type]
        assert marked == ["root"] * 3, session_id
        marked.clear()
    changed(controller, _session("other", "other", SessionState.IDLE))  # type: ignore[arg-type]
    assert marked == []  # a root never read, without sub-agents
