"""When the agents controller reads a tree's runs and usage again after a session changed."""

from __future__ import annotations

from types import SimpleNamespace

from fxdesk.domain.model import PermissionMode, Session, SessionMode, SessionState
from fxdesk.gui.agents.controller import AgentsController


def _session(session_id: str, root_id: str, state: SessionState) -> Session:
    child = session_id != root_id
    return Session(
        id=session_id,
        workspace_id=1,
        parent_id=root_id if child else None,
        root_id=root_id,
        is_child=child,
        name=session_id,
        mode=SessionMode.PERSISTENT,
        profile=None,
        model=None,
        effort=None,
        permission_mode=PermissionMode.ASK,
        state=state,
        archived_from=None,
        generation=1,
        next_event_sequence=1,
        last_work_id=None,
        created_at_ms=0,
        updated_at_ms=0,
    )


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
