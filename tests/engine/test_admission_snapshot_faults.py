"""Spec child-sessions scenario 61: the admission snapshot never leaks under allocation failure.

Python has no allocator to fail; the port is "out of memory at each step of building and saving
the admission snapshot". Each step fails once: the item is either failed whole at admission
(with its typed reason and its terminal) or left exactly as it was (pending), never running
without a snapshot, and nothing is left behind (no snapshot, report policy or history row, no
slot, the session lock free). A start afterwards runs the item once with its snapshot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk import messages
from fxdesk.domain import reasons
from fxdesk.domain.authority import AdmissionSnapshot
from fxdesk.domain.model import WorkStatus
from fxdesk.engine import execution
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.owner import Result
from fxdesk.store import control
from fxdesk.store.locks import SessionLock
from fxdesk.store.schema import database_proxy as db
from tests.engine.harness import Engine, say


def _fail_step(monkeypatch: pytest.MonkeyPatch, step: str) -> list[str]:
    """Make ``step`` raise ``MemoryError`` once, then work; the list records the failure."""
    failed: list[str] = []
    owner, name = {
        "capture": (HostAuthority, "capture"),  # the host builds the snapshot
        "check": (execution, "snapshot_mismatch"),  # it is compared with session and item
        "serialize": (AdmissionSnapshot, "to_json"),  # saved, inside the admission transaction
    }[step]
    real = getattr(owner, name)

    def once_out_of_memory(*args: object, **kwargs: object) -> object:
        if not failed:
            failed.append(step)
            raise MemoryError
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, once_out_of_memory)
    return failed


def _leftovers(session_id: str) -> tuple[list[object], list[object], list[object]]:
    """Rows admission writes: the item's frozen snapshot, its report policy, its history."""
    snapshots = db.execute_sql(
        "SELECT id FROM work_item WHERE session_id = ? AND admission_json IS NOT NULL",
        (session_id,),
    ).fetchall()
    policies = db.execute_sql(
        "SELECT work_id FROM work_policy WHERE session_id = ?", (session_id,)
    ).fetchall()
    entries = db.execute_sql(
        "SELECT id FROM history_entry WHERE session_id = ?", (session_id,)
    ).fetchall()
    return snapshots, policies, entries


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        # Spec §3.9 steps 11-12: a failed capture or check fails the item at admission.
        ("capture", Result.ADMISSION_FAILED),
        ("check", Result.ADMISSION_FAILED),
        # Step 13: saving it fails: control_failed, the item still pending.
        ("serialize", Result.CONTROL_FAILED),
    ],
)
async def test_scenario_61_out_of_memory_building_the_snapshot_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str, expected: Result
) -> None:
    engine = await Engine.create(tmp_path, [say("ran once")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "admit me")
        failed = _fail_step(monkeypatch, step)
        told: list[messages.Message] = []
        detach = messages.hub.attach(told.append)
        try:
            result = await engine.run(child.id)
        finally:
            detach()
        assert (failed, result) == ([step], expected)
        # Out of memory is an expected failure (spec §3.9 step 13), never reported as a bug.
        assert [m.text for m in told if m.level is messages.Level.ERROR] == []
        (item,) = await engine.items(child.id)
        if result == Result.ADMISSION_FAILED:  # failed whole, with its reason and terminal
            assert item.status == WorkStatus.FAILED
            reason = await engine.store.read(lambda: control.failure_reason(item.id))
            assert reason == reasons.ADMISSION_FAILED
            assert await engine.deliveries(child.id) == [("terminal", "failed")]
        else:  # the admission transaction rolled back: the item is as it was
            assert (item.status, item.reason) == (WorkStatus.PENDING, None)
            assert await engine.deliveries(child.id) == []
        assert await engine.store.read(lambda: _leftovers(child.id)) == ([], [], [])
        assert not engine.owner.is_running(child.id) and engine.owner.active_slots == 0
        assert engine.provider.calls == 0
        lock = SessionLock(engine.root / "locks", child.id)
        assert lock.try_acquire()  # released
        lock.release()

        # With memory back, the work runs once (a failed item is resumed by a new message).
        if item.status == WorkStatus.FAILED:
            await engine.sessions.send(child.id, "admit me again", source_id=root.id)
        assert await engine.run(child.id) == Result.IDLE
        assert engine.provider.calls == 1
        snapshots, policies, _entries = await engine.store.read(lambda: _leftovers(child.id))
        assert len(snapshots) == len(policies) == 1
    finally:
        await engine.close()
