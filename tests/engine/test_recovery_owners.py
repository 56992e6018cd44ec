"""Restart recovery judges pending work by the fxdesk process that queued it (issue 10 items 8
and 14): a dead process's pending work is interrupted, a live one's kept, and work handed to
whichever fxdesk runs next (no owner) is never interrupted, since it never started.

The process identities are real instance locks (``store/locks.py``) in a child process or in
this one; the CLI tests (``tests/cli/test_pending_work_of_processes.py``) do the same with
whole fxdesk processes.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain import reasons
from fxdesk.domain.model import WorkStatus
from fxdesk.store import owners
from fxdesk.store.locks import InstanceLock, instance_alive, prune_dead_instances
from tests.engine.harness import Engine
from tests.helpers import python_child


@pytest.fixture(autouse=True)
def no_queue_owner() -> Iterator[None]:
    yield
    owners.set_queue_owner(None)


async def queue_as(engine: Engine, instance_id: str | None, session_id: str, text: str) -> str:
    owners.set_queue_owner(instance_id)
    try:
        item = await engine.sessions.send(session_id, text)
    finally:
        owners.set_queue_owner(None)
    return item.id


async def test_pending_work_is_interrupted_only_when_its_process_is_gone(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    locks = tmp_path / "locks"
    live = InstanceLock(locks)
    live.hold_shared()
    gone = InstanceLock(locks)
    gone.hold_shared()
    try:
        root = await engine.root_session()
        session = await engine.child(root)
        await queue_as(engine, gone.instance_id, session.id, "queued by a process that died")
        kept = await engine.child(root)
        await queue_as(engine, live.instance_id, kept.id, "queued by a live process")
        handed = await engine.child(root)
        await queue_as(engine, None, handed.id, "queued for whoever runs next")
        gone.release()  # as a SIGKILL would: the kernel drops its locks
        assert not instance_alive(locks, gone.instance_id)
        assert instance_alive(locks, live.instance_id)

        report = await engine.owner.recover(
            include_pending=False, owner_alive=functools.partial(instance_alive, locks)
        )
        assert (report.work_interrupted, report.sessions_changed) == (1, 1)
        assert report.interrupted_sessions == (session.id,)
        (item,) = await engine.items(session.id)
        assert (item.status, item.reason) == (WorkStatus.INTERRUPTED, reasons.RESTART_INTERRUPTED)
        assert [i.status for i in await engine.items(kept.id)] == [WorkStatus.PENDING]
        assert [i.status for i in await engine.items(handed.id)] == [WorkStatus.PENDING]
        assert engine.provider.calls == 0

        live.release()  # the live process quits: its queue is now abandoned work
        report = await engine.owner.recover(
            include_pending=False, owner_alive=functools.partial(instance_alive, locks)
        )
        assert report.interrupted_sessions == (kept.id,)
        assert [i.status for i in await engine.items(handed.id)] == [WorkStatus.PENDING]
    finally:
        live.release()
        gone.release()
        await engine.close()


async def test_a_dead_process_pending_work_behind_running_work_of_a_live_one_waits(
    tmp_path: Path,
) -> None:
    """Recovery proves the session lock before it interrupts anything (spec §5.1): while a
    live process runs the head, the pending work a dead one queued behind it stays."""
    from tests.engine.harness import say

    engine = await Engine.create(tmp_path, [say("done")])
    locks = tmp_path / "locks"
    gone = InstanceLock(locks)
    gone.hold_shared()
    try:
        root = await engine.root_session()
        session = await engine.child(root, "running here")
        await queue_as(engine, gone.instance_id, session.id, "queued by a process that died")
        gone.release()
        await engine.start_blocked(session.id)
        report = await engine.owner.recover(
            include_pending=False, owner_alive=functools.partial(instance_alive, locks)
        )
        assert report.sessions_external_busy == 1 and report.work_interrupted == 0
        statuses = [i.status for i in await engine.items(session.id)]
        assert statuses == [WorkStatus.RUNNING, WorkStatus.PENDING]
        engine.provider.release()
    finally:
        gone.release()
        await engine.close()


def test_instance_locks_name_the_living(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    first = InstanceLock(locks)
    assert first.acquire() is True  # alone: exclusive
    second = InstanceLock(locks)
    assert instance_alive(locks, first.instance_id)
    first.share()
    assert second.acquire() is False  # not alone once the first shares
    second.release()
    first.release()
    assert not instance_alive(locks, first.instance_id)
    assert not (locks / "instances" / f"{first.instance_id}.lock").exists()
    assert not instance_alive(locks, "never-seen")

    # A process killed with SIGKILL: the kernel drops its lock, its file stays behind.
    killed = python_child(
        "import sys; from pathlib import Path; from fxdesk.store.locks import InstanceLock\n"
        f"lock = InstanceLock(Path({str(locks)!r})); lock.hold_shared()\n"
        "print(lock.instance_id, flush=True); sys.stdin.read()"
    )
    killed_id = killed.stdout.readline().strip()
    assert instance_alive(locks, killed_id)
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    assert (locks / "instances" / f"{killed_id}.lock").exists()
    assert prune_dead_instances(locks) == 1
    assert list((locks / "instances").iterdir()) == []
