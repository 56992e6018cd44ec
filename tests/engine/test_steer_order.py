"""Steer messages reach the model in the order they were sent (issue 10 item 12).

A steer goes into the running turn at its next step boundary, but never past a message queued
before it: the model sees every message in the order the person sent it.
"""

from __future__ import annotations

from pathlib import Path

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.providers.base import ModelRequest
from fxdesk.store import history
from tests.engine.harness import Engine, call, say


def _user_texts(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


async def _steered_into(engine: Engine, session_id: str) -> dict[str, str]:
    """Steer item id -> the work item whose turn it was delivered into."""
    entries = await engine.store.read(lambda: history.page_history(session_id, 0, 10_000))
    return {str(e.data["steer_id"]): str(e.work_id) for e in entries if e.data.get("steer")}


async def test_a_steer_sent_after_a_queued_message_does_not_overtake_it(tmp_path: Path) -> None:
    engine = await Engine.create(
        tmp_path, [call("echo", text="x"), say("a done"), say("b and s done")]
    )
    try:
        session = await engine.root_session("a")
        await engine.start_blocked(session.id)  # inside a's first model call
        (a,) = await engine.items(session.id)
        b = await engine.sessions.send(session.id, "b")
        s = await engine.sessions.steer(session.id, "s")
        engine.provider.release()
        assert await engine.owner.join(session.id) == Result.IDLE
        assert [_user_texts(r) for r in engine.provider.requests] == [
            ["a"],
            ["a"],  # a's boundary: the steer waits behind b
            ["a", "b", "s"],  # b's first boundary: now it is next in line
        ]
        assert await _steered_into(engine, session.id) == {s.id: b.id}
        statuses = {i.id: i.status for i in await engine.items(session.id)}
        assert statuses == dict.fromkeys((a.id, b.id, s.id), WorkStatus.COMPLETED)
    finally:
        engine.provider.release()
        await engine.close()


async def test_steers_right_behind_the_turn_go_in_in_order_the_rest_wait(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [call("echo", text="x"), say("a done"), say("b done")])
    try:
        session = await engine.root_session("a")
        await engine.start_blocked(session.id)
        (a,) = await engine.items(session.id)
        s1 = await engine.sessions.steer(session.id, "s1")
        s2 = await engine.sessions.steer(session.id, "s2")
        b = await engine.sessions.send(session.id, "b")
        s3 = await engine.sessions.steer(session.id, "s3")
        engine.provider.release()
        assert await engine.owner.join(session.id) == Result.IDLE
        assert [_user_texts(r) for r in engine.provider.requests] == [
            ["a"],
            ["a", "s1", "s2"],
            ["a", "s1", "s2", "b", "s3"],
        ]
        assert await _steered_into(engine, session.id) == {s1.id: a.id, s2.id: a.id, s3.id: b.id}
    finally:
        engine.provider.release()
        await engine.close()
