"""A start that arrives while a session's slot is busy is always served (spec child-sessions
§3.10), and serving it keeps the queue's FIFO order and the outcome a caller should see."""

from __future__ import annotations

from pathlib import Path

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result, StartResult
from fxdesk.store.faults import Fault
from tests.engine.harness import Engine, say, wait_until


async def test_a_message_sent_during_a_turn_that_pauses_waits_behind_it(tmp_path: Path) -> None:
    """The person sends a message while the turn runs; the turn then pauses. The start that
    came with the message is served, but without retry the paused item still holds the queue:
    nothing runs, the message stays queued, and the outcome stays "paused" rather than the
    "no work" of the served start. A retry then runs both, in order."""
    engine = await Engine.create(tmp_path, [say("never saved"), say("first"), say("second")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "first")
        await engine.start_blocked(child.id)
        engine.faults.fail(1, Fault.DEFINITE, label="history_commit")
        await engine.sessions.send(child.id, "second", source_id=root.id)
        assert engine.owner.start(child.id) == StartResult.ALREADY_RUNNING
        engine.provider.release()
        assert await engine.owner.join(child.id) == Result.PAUSED
        await wait_until(lambda: not engine.owner.is_running(child.id))
        assert engine.owner.last_result(child.id) == Result.PAUSED
        assert [i.status for i in await engine.items(child.id)] == [
            WorkStatus.INTERRUPTED,
            WorkStatus.PENDING,
        ]
        assert engine.provider.calls == 1
        assert await engine.run(child.id, retry=True) == Result.IDLE
        first, second = await engine.items(child.id)
        assert (first.status, second.status) == (WorkStatus.COMPLETED, WorkStatus.COMPLETED)
        asked = [str(r.messages[-1].content) for r in engine.provider.requests]
        assert asked == ["first", "first", "second"]
    finally:
        await engine.close()


async def test_a_wake_during_shutdown_is_not_served(tmp_path: Path) -> None:
    """Shutdown stops the slot and writes nothing; a start that arrived just before does not
    start anything afterwards."""
    engine = await Engine.create(tmp_path, [say("x")])
    root = await engine.root_session()
    child = await engine.child(root, "work")
    await engine.start_blocked(child.id)
    assert engine.owner.start(child.id, retry=True) == StartResult.ALREADY_RUNNING
    await engine.owner.shutdown()
    assert engine.owner.active_slots == 0 and not engine.owner.is_running(child.id)
    assert [i.status for i in await engine.items(child.id)] == [WorkStatus.RUNNING]
    await engine.close()
