"""The window's pick-up of work handed to whichever fxdesk runs next (``engine/handoff.py``):
only a session whose next work is such an item is started, never one held behind interrupted
work or owned by a live process, and a plain start resumes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.handoff import HandoffRunner
from fxdesk.engine.owner import Result
from fxdesk.store import owners
from fxdesk.store.locks import HandoffLock, InstanceLock
from tests.engine.harness import Engine, say, wait_until


@pytest.fixture(autouse=True)
def no_queue_owner() -> Iterator[None]:
    yield
    owners.set_queue_owner(None)


async def test_the_window_runs_handed_off_work_at_the_head_of_a_queue_only(
    tmp_path: Path,
) -> None:
    engine = await Engine.create(tmp_path, [say("ran")])
    live = InstanceLock(tmp_path / "locks")
    live.hold_shared()
    runner = HandoffRunner(engine.store, engine.owner, tmp_path / "locks", interval_s=0.01)
    try:
        root = await engine.root_session()
        held = await engine.child(root, "interrupted by a restart")
        await engine.owner.recover()
        await engine.sessions.send(held.id, "handed off behind it")
        handed = await engine.child(root)
        await engine.sessions.send(handed.id, "handed off")  # no queue owner: handed off
        owned = await engine.child(root)
        owners.set_queue_owner(live.instance_id)
        await engine.sessions.send(owned.id, "a live process runs this")
        owners.set_queue_owner(None)
        assert await engine.store.read(owners.handed_off_heads) == [handed.id]

        assert not HandoffLock.held_elsewhere(tmp_path / "locks")
        await runner.start()
        assert HandoffLock.held_elsewhere(tmp_path / "locks")  # send --no-wait can tell
        await wait_until(lambda: engine.owner.last_result(handed.id) is not None)
        assert engine.owner.last_result(handed.id) == Result.IDLE
        assert [i.status for i in await engine.items(handed.id)] == [WorkStatus.COMPLETED]
        assert [i.status for i in await engine.items(held.id)] == [
            WorkStatus.INTERRUPTED,
            WorkStatus.PENDING,
        ]
        assert [i.status for i in await engine.items(owned.id)] == [WorkStatus.PENDING]
        assert engine.provider.calls == 1
        assert await runner.sweep() == []  # nothing left to pick up
    finally:
        await runner.stop()
        live.release()
        await engine.close()
    assert not HandoffLock.held_elsewhere(tmp_path / "locks")
