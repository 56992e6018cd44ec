"""Spec child-sessions §9 scenarios for the session owner, by number."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from fxdesk.domain import reasons
from fxdesk.domain.authority import AdmissionSnapshot, Grant, Rule
from fxdesk.domain.conversation import EntryKind
from fxdesk.domain.live import (
    EVENTS_CAP,
    TEXT_CAP_BYTES,
    TOOLS_CAP,
    LiveEvent,
    LivePresentation,
)
from fxdesk.domain.model import PermissionMode, SessionMode, SessionState, WorkStatus
from fxdesk.engine import owner as owner_module
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.errors import ErrorCode
from fxdesk.engine.events import HistoryAppended
from fxdesk.engine.owner import Result, SessionNotActive, StartResult
from fxdesk.engine.turn import TurnRunner, TurnRuntime
from fxdesk.engine.waiters import OwnerClosed, WaitResult
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Fault, Reply, ScriptedProvider, Stall
from fxdesk.store import control, history
from fxdesk.store.faults import Fault as StoreFault
from fxdesk.store.locks import SessionLock
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine, call, say, wait_until
from tests.helpers import child_env


def test_scenario_1_live_presentation_is_bounded_copied_and_cleared() -> None:
    live = LivePresentation()
    live.begin("work-live")
    live.append_text("hello")
    live.append_tool("read_file", "started")
    live.append_event(LiveEvent("tool_started", "read_file", "c1", '{"path": "x"}'))
    first = live.snapshot()
    assert first is not None
    assert (first.work_id, first.text, [t.name for t in first.tools]) == (
        "work-live",
        "hello",
        ["read_file"],
    )
    assert len(first.events) == 2  # the text chunk became an event too
    live.append_text(" world")
    live.append_tool("grep", "started")
    assert first.text == "hello" and len(first.tools) == 1  # the old copy is unchanged
    live.append_text("x" * (TEXT_CAP_BYTES + 8))
    for n in range(34):
        live.append_tool(f"tool{n}", "started")
    for _ in range(258):
        live.append_event(LiveEvent("usage"))
    full = live.snapshot()
    assert full is not None
    assert len(full.text.encode()) == TEXT_CAP_BYTES
    assert len(full.tools) == TOOLS_CAP and len(full.events) == EVENTS_CAP
    assert full.text_truncated and full.tools_truncated and full.events_truncated
    revision = full.revision
    live.clear()
    assert live.snapshot() is None and live.revision > revision


def test_scenario_2_an_exception_building_a_snapshot_leaves_nothing_half_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scenario 2: an append that cannot get memory drops what it carried, sets that part's
    truncation flag and returns (so the turn carries on: tests/engine/test_live_view.py); a
    snapshot whose building fails leaves nothing half-built, and the next one is whole."""
    live = LivePresentation()
    live.begin("w")
    live.append_text("kept")
    live.append_tool("read_file", "started")
    before = live.snapshot()
    assert before is not None

    class NoMemoryEvent(LiveEvent):
        @property
        def cost(self) -> int:
            raise MemoryError("no room")

    class NoMemoryText(str):
        def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
            raise MemoryError("no room")

    live.append_event(NoMemoryEvent("status", "x"))
    live.append_text(NoMemoryText(" more"))
    live.append_tool(NoMemoryText("grep"), "started")
    after = live.snapshot()
    assert after is not None
    assert (after.text, after.tools, after.events) == (before.text, before.tools, before.events)
    assert after.text_truncated and after.tools_truncated and after.events_truncated
    assert after.revision != before.revision  # a viewer redraws to show the flags

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("no room")

    with monkeypatch.context() as patch:
        patch.setattr("fxdesk.domain.live.LiveSnapshot", no_memory)
        with pytest.raises(MemoryError):
            live.snapshot()
    assert live.snapshot() == after


async def test_scenario_4_a_history_ending_in_an_interrupted_turn_proves_nothing(
    tmp_path: Path,
) -> None:
    """Scenario 4 on a real history: the session's last work id is the first item's; while
    its history ends with that normal turn, it proves the first item. A second turn then
    commits a step (its message, a tool call and its result) and never ends: the history now
    ends in an interrupted turn and proves no id (the last work id is still the first's), and
    a restart's recovery interrupts the second item instead of completing it."""
    steps = [say("done"), call("echo", text="looking"), Stall()]
    engine = await Engine.create(tmp_path, steps)
    try:
        session = await engine.root_session("first")
        assert await engine.run(session.id) == Result.IDLE
        (first,) = await engine.items(session.id)
        assert await engine.store.read(lambda: history.history_proof(session.id)) == first.id
        second = await engine.sessions.send(session.id, "second")
        engine.owner.start(session.id)
        await wait_until(lambda: engine.provider.calls == 3)  # the step is saved; it stalls
        kinds = await engine.history_kinds(session.id)
        assert kinds[-4:] == ["user", "assistant", "tool_call", "tool_result"]
        assert (await engine.session(session.id)).last_work_id == first.id
        assert await engine.store.read(lambda: history.history_proof(session.id)) is None
    finally:
        await engine.close()  # the stalled turn is left to recovery
    again = await engine.reopen([])
    try:
        report = await again.owner.recover()
        assert (report.work_completed, report.work_interrupted) == (0, 1)
        statuses = {i.id: i.status for i in await again.items(session.id)}
        assert statuses == {first.id: WorkStatus.COMPLETED, second.id: WorkStatus.INTERRUPTED}
    finally:
        await again.close()


async def test_scenario_5_admission_snapshot_is_a_copy_with_the_configured_mode(
    tmp_path: Path,
) -> None:
    authority = HostAuthority(
        tool_names=("read_file", "write_file"),
        rules=(Rule("read_file", "a.txt", "allow"),),
        grants=(Grant("write_file", "/tmp/a"),),
        sandbox="macos",
    )
    engine = await Engine.create(tmp_path, [say("ok")], authority=authority)
    try:
        session = await engine.sessions.create_root(
            engine.workspace,
            permission_mode=PermissionMode.ASK,
            model="test/model",
            first_message="go",
        )
        assert await engine.run(session.id) == Result.IDLE
        (snapshot,) = authority.captures
        assert snapshot.permission_mode == PermissionMode.ASK
        assert snapshot.model == "test/model" and snapshot.sandbox == "macos"
        assert snapshot.tool_names[1] == "write_file" and snapshot.grants[0].target == "/tmp/a"
        authority.update(tool_names=())  # later changes do not reach the frozen copy
        assert snapshot.tool_names == ("read_file", "write_file")
        (item,) = await engine.items(session.id)
        stored = await engine.store.read(
            lambda: control.db.execute_sql(
                "SELECT admission_json FROM work_item WHERE id = ?", (item.id,)
            ).fetchone()[0]
        )
        assert '"permission_mode": "ask"' in stored
    finally:
        await engine.close()


async def test_scenario_19_waiters_are_filtered_sticky_and_bounded(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    try:
        a, b = engine.owner.waiter("child-a"), engine.owner.waiter("child-b")
        engine.owner.waiters.signal("child-a")
        assert await a.wait(0.005) == WaitResult.SIGNALED  # signalled before the wait
        assert await b.wait(0.001) == WaitResult.TIMED_OUT
        a.close()
        a.close()  # idempotent
        b.close()
        assert engine.owner.waiters.count == 0
    finally:
        await engine.close()
    with pytest.raises(OwnerClosed):
        engine.owner.waiter("late")


async def test_scenario_20_many_finished_sessions_keep_64_results(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    engine.provider.when_done = "repeat_last"
    engine.provider.steps = [say("done")]
    try:
        root = await engine.root_session()
        children = []
        for n in range(65):
            mode = SessionMode.ONE_OFF if n % 2 == 0 else SessionMode.PERSISTENT
            children.append(await engine.child(root, f"task {n}", mode=mode))
        for child in children:
            engine.owner.start(child.id)
        await wait_until(lambda: engine.owner.active_slots == 0, 60)
        assert engine.provider.calls == 65  # every child ran its item
        assert engine.owner.completion_count == 64
        assert engine.owner.last_result(children[0].id) is None  # the oldest was overwritten
        assert engine.owner.last_result(children[-1].id) == Result.COMPLETED  # one-off
        assert engine.owner.last_result(children[-2].id) == Result.IDLE  # persistent
    finally:
        await engine.close()


async def test_scenario_21_wakes_racing_the_end_of_a_slot_run_every_turn(tmp_path: Path) -> None:
    """Scenario 21: start with turn-0; fifteen times queue turn-i, start, and wait until that
    turn has run (its answer is saved), so each next start lands while the slot is finishing
    its item, looking for more, or just gone. Every start is started or already_running, and
    all 16 turns run once each, in order."""
    engine = await Engine.create(tmp_path)
    engine.provider.when_done = "repeat_last"
    engine.provider.steps = [say("ok")]
    ran: dict[str, asyncio.Event] = {}

    def on_history(event: HistoryAppended) -> None:  # on the loop, as the turn saves
        for entry in event.entries:
            if entry.kind == EntryKind.TURN_END and entry.work_id in ran:
                ran[entry.work_id].set()

    engine.bus.subscribe(HistoryAppended, on_history)
    try:
        root = await engine.root_session()
        child = await engine.child(root, "turn-0")
        (first,) = await engine.items(child.id)
        ran[first.id] = asyncio.Event()
        starts = [engine.owner.start(child.id)]
        for n in range(1, 16):
            receipt = await engine.sessions.send(child.id, f"turn-{n}", source_id=root.id)
            ran[receipt.id] = asyncio.Event()
            starts.append(engine.owner.start(child.id))
            await asyncio.wait_for(ran[receipt.id].wait(), 20)
        await wait_until(lambda: engine.owner.active_slots == 0)
        assert starts[0] == StartResult.STARTED
        assert set(starts) <= {StartResult.STARTED, StartResult.ALREADY_RUNNING}
        items = await engine.items(child.id)
        assert [i.content for i in items] == [f"turn-{n}" for n in range(16)]
        assert {i.status for i in items} == {WorkStatus.COMPLETED}
        entries = await engine.store.read(lambda: history.page_history(child.id, 0, 10_000))
        users = [(e.work_id, e.content) for e in entries if e.kind == EntryKind.USER]
        assert users == [(i.id, i.content) for i in items]  # run in queue order, once each
        assert [e.work_id for e in entries if e.kind == EntryKind.TURN_END] == [i.id for i in items]
        assert engine.provider.calls == 16
        assert engine.provider.requests[-1].messages[-1].content == "turn-15"
    finally:
        await engine.close()


async def test_scenario_22_a_retry_answered_already_running_is_served_after_a_pause(
    tmp_path: Path,
) -> None:
    """Scenario 22 (port): a ``start(retry=True)`` that arrives while the turn runs answers
    already_running; the turn then ends paused (its history commit fails). The request is not
    lost: the slot runs again, resumes the paused item once, and goes away."""
    engine = await Engine.create(tmp_path, [say("never saved"), say("resumed")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "work")
        await engine.start_blocked(child.id)
        engine.faults.fail(1, StoreFault.DEFINITE, label="history_commit")
        assert engine.owner.start(child.id, retry=True) == StartResult.ALREADY_RUNNING
        engine.provider.release()
        assert await engine.owner.join(child.id) == Result.PAUSED  # the run this caller joined
        await wait_until(lambda: not engine.owner.is_running(child.id))
        assert engine.owner.last_result(child.id) == Result.IDLE
        (item,) = await engine.items(child.id)
        assert item.status == WorkStatus.COMPLETED
        assert engine.provider.calls == 2  # the lost answer once, the resumed turn once
        assert (await engine.history_kinds(child.id)).count("turn_end") == 1
        assert engine.owner.active_slots == 0
    finally:
        await engine.close()


async def test_scenario_22_start_rearms_a_session_whose_restart_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario 22: the restart that serves a pending wake cannot be spawned. Nothing stays
    registered, the item stays paused, and the next start runs the work once; then no slot
    remains. (Here that start answers ``started``: a slot whose restart failed is not kept as
    a marker, so there is nothing for it to be already running.)"""
    engine = await Engine.create(tmp_path, [say("never saved"), say("resumed")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "work")
        await engine.start_blocked(child.id)
        engine.faults.fail(1, StoreFault.DEFINITE, label="history_commit")
        assert engine.owner.start(child.id, retry=True) == StartResult.ALREADY_RUNNING
        spawns = _failing_spawns(monkeypatch, f"session-{child.id}")
        engine.provider.release()
        assert await engine.owner.join(child.id) == Result.PAUSED
        assert spawns == [f"session-{child.id}"]  # the restart was tried, and failed
        monkeypatch.undo()
        assert not engine.owner.is_running(child.id) and engine.owner.active_slots == 0
        assert engine.provider.calls == 1
        assert (await engine.items(child.id))[0].status == WorkStatus.INTERRUPTED
        assert engine.owner.start(child.id, retry=True) == StartResult.STARTED
        assert await engine.owner.join(child.id) == Result.IDLE
        assert engine.provider.calls == 2
        assert (await engine.items(child.id))[0].status == WorkStatus.COMPLETED
        assert engine.owner.active_slots == 0
    finally:
        await engine.close()


def _failing_spawns(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """Make creating the task called ``name`` fail with MemoryError; returns the attempts."""
    loop = asyncio.get_running_loop()
    real = loop.create_task
    attempts: list[str] = []

    def create_task(coro, *, name=None, context=None):  # type: ignore[no-untyped-def]
        if name is not None and name.startswith("session-") and name == wanted:
            attempts.append(name)
            raise MemoryError("no memory for the task")
        return real(coro, name=name, context=context)

    wanted = name
    monkeypatch.setattr(loop, "create_task", create_task)
    return attempts


class _FailingSlots(dict):  # type: ignore[type-arg]
    def __setitem__(self, key: object, value: object) -> None:
        raise MemoryError("no memory to register the slot")


@pytest.mark.parametrize("failing", ["slot", "task", "registration"])
async def test_scenario_24_a_failure_in_start_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """Scenario 24: out of memory making the slot, its task, or registering it: ``start``
    fails, nothing stays registered (the session is not "running", detach is not refused, the
    next start starts), the work has not run, and it runs once when started again."""
    engine = await Engine.create(tmp_path, [say("ran once")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "work")
        if failing == "slot":

            def no_slot(*args: object, **kwargs: object) -> None:
                raise MemoryError("no memory for the slot")

            monkeypatch.setattr(owner_module, "Slot", no_slot)
        elif failing == "task":
            _failing_spawns(monkeypatch, f"session-{child.id}")
        else:
            monkeypatch.setattr(engine.owner, "_slots", _FailingSlots())
        with pytest.raises(MemoryError):
            engine.owner.start(child.id)
        monkeypatch.undo()
        assert not engine.owner.is_running(child.id) and engine.owner.active_slots == 0
        await wait_until(
            lambda: not [t for t in asyncio.all_tasks() if t.get_name() == f"session-{child.id}"]
        )
        await engine.sessions.detach(child.id)  # not refused as "work active"
        await engine.sessions.reparent(child.id, root.id)
        assert engine.provider.calls == 0
        assert (await engine.items(child.id))[0].status == WorkStatus.PENDING
        assert engine.owner.start(child.id) == StartResult.STARTED
        assert await engine.owner.join(child.id) == Result.IDLE
        assert engine.provider.calls == 1
    finally:
        await engine.close()


async def test_scenario_23_shutdown_while_someone_joins(tmp_path: Path) -> None:
    """Scenario 23: a session is blocked in its turn; another task joins it and is waiting on
    the slot; shutdown then completes, and the join returns the slot's result without error
    (owner_stopped: nothing was written, the item is left running for recovery)."""
    engine = await Engine.create(tmp_path, [say("never")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "blocked")
        await engine.start_blocked(child.id)
        joiner = asyncio.ensure_future(engine.owner.join(child.id))
        await wait_until(  # the join is inside, waiting for the slot to end
            lambda: inspect.getcoroutinestate(joiner.get_coro()) == inspect.CORO_SUSPENDED
        )
        await asyncio.wait_for(engine.owner.shutdown(), 10)
        assert await asyncio.wait_for(joiner, 10) == Result.OWNER_STOPPED
        assert engine.owner.active_slots == 0 and engine.provider.calls == 0
        assert [i.status for i in await engine.items(child.id)] == [WorkStatus.RUNNING]
    finally:
        await engine.close()


async def test_scenario_25_isolation_fifo_and_released_locks(tmp_path: Path) -> None:
    """Scenario 25: three sessions run side by side, each with its own model and effort; a's two
    items run in order as two turns, each stamped with its own work id, while the slot is
    active and the live view shows that item; each turn's tool ran in its own turn (a1's
    output is "a1"); locks are released; the one-off completes."""
    seen: list[tuple[str, str, bool, str | None]] = []  # model, message, running, live item
    sessions: dict[str, str] = {}  # model -> session id

    class Observing(Provider):
        """Answers with the model and effort it was asked with; notes what the owner showed."""

        async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
            session_id = sessions[request.model]
            live = engine.owner.live_snapshot(session_id)
            if request.messages[-1].role == "tool":  # the echo ran: answer
                message = [m.content for m in request.messages if m.role == "user"][-1]
                reply = say(f"model={request.model} effort={request.effort} asked={message}")
            else:  # a new turn: echo its message through a tool first
                message = str(request.messages[-1].content)
                seen.append(
                    (
                        request.model,
                        message,
                        engine.owner.is_running(session_id),
                        live.work_id if live else None,
                    )
                )
                reply = call("echo", text=message)
            async for event in ScriptedProvider([reply]).stream(request):
                yield event

    engine = await Engine.create(tmp_path, provider=Observing())
    try:
        root = await engine.root_session()
        made = {}
        for name, mode, model, effort, message in [
            ("a", SessionMode.PERSISTENT, "model/a", "high", "a1"),
            ("b", SessionMode.PERSISTENT, "model/b", "low", "b1"),
            ("once", SessionMode.ONE_OFF, "model/once", "medium", "once"),
        ]:
            made[name] = await engine.sessions.create_child(
                root.id, name=name, mode=mode, model=model, effort=effort, first_message=message
            )
            sessions[model] = made[name].id
        a, b, once = made["a"], made["b"], made["once"]
        await engine.sessions.send(a.id, "a2", source_id=root.id)
        assert engine.owner.start(a.id) == StartResult.STARTED
        assert engine.owner.start(a.id) == StartResult.ALREADY_RUNNING
        assert engine.owner.start(b.id) == StartResult.STARTED
        assert engine.owner.start(once.id) == StartResult.STARTED
        assert await engine.owner.join(a.id) == Result.IDLE
        assert await engine.owner.join(b.id) == Result.IDLE
        assert await engine.owner.join(once.id) == Result.COMPLETED
        lock = SessionLock(engine.root / "locks", a.id)
        assert lock.try_acquire()  # released after each item
        lock.release()

        a1, a2 = await engine.items(a.id)
        assert [(m, text, running, live) for m, text, running, live in seen if m == "model/a"] == [
            ("model/a", "a1", True, a1.id),
            ("model/a", "a2", True, a2.id),
        ]
        entries = await engine.store.read(lambda: history.page_history(a.id, 0, 10_000))
        turns = [e.work_id for e in entries if e.kind == EntryKind.TURN_END]
        assert turns == [a1.id, a2.id]  # run order: a1's turn, then a2's
        for item in (a1, a2):
            own = [e for e in entries if e.work_id == item.id]
            assert [e.content for e in own if e.kind == EntryKind.USER] == [item.content]
            assert [e.content for e in own if e.kind == EntryKind.TOOL_RESULT] == [item.content]
            answer = [e.content for e in own if e.kind == EntryKind.ASSISTANT][-1]
            assert answer == f"model=model/a effort=high asked={item.content}"
        assert {e.work_id for e in entries} == {a1.id, a2.id}  # every row carries its item
        assert (await engine.session(a.id)).last_work_id == a2.id

        b_entries = await engine.store.read(lambda: history.page_history(b.id, 0, 10_000))
        assert [e.content for e in b_entries if e.kind == EntryKind.ASSISTANT][-1] == (
            "model=model/b effort=low asked=b1"
        )
        assert [e.kind for e in b_entries].count(EntryKind.TURN_END) == 1  # 1 turn
        assert (await engine.session(once.id)).state == SessionState.COMPLETED
        assert [i.status for i in await engine.items(once.id)] == [WorkStatus.COMPLETED]
        assert all(running for _m, _t, running, _l in seen) and len(seen) == 4
    finally:
        await engine.close()


async def test_scenario_26_turns_of_different_sessions_overlap(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("one"), say("two")])
    try:
        root = await engine.root_session()
        first, second = await engine.child(root, "x"), await engine.child(root, "y")
        engine.provider.hold()
        engine.owner.start(first.id)
        engine.owner.start(second.id)
        await wait_until(lambda: engine.provider.entered == 2)  # both inside a turn at once
        engine.provider.release()
        assert await engine.owner.join(first.id) == Result.IDLE
        assert await engine.owner.join(second.id) == Result.IDLE
    finally:
        await engine.close()


def _authority_seen(snapshot: AdmissionSnapshot) -> tuple[object, ...]:
    """Sandbox, tools, rule patterns, grant targets and integrations of a snapshot."""
    return (
        snapshot.sandbox,
        snapshot.tool_names,
        tuple(r.pattern for r in snapshot.rules),
        tuple(g.target for g in snapshot.grants),
        snapshot.integrations,
    )


OLD_AUTHORITY = ("macos", ("read_file",), ("old.txt",), ("/tmp/old.txt",), ("mcp:old",))
NEW_AUTHORITY = ("vercel", ("write_file",), ("new.txt",), ("/tmp/new.txt",), ("mcp:new",))


async def test_scenario_27_snapshots_isolate_siblings_and_refresh_only_at_admission(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario 27: a [a-old, a-new] runs a-old under the old authority; during that run the
    host changes every part of it (sandbox, tools, rules, grants, integrations), then sibling b
    [b-new] starts. Three turns ran; each observed the snapshot of its own admission, the same
    from its start to its end: a-old the old values throughout, a-new and b-new the new ones.
    What is stored for each item and the tools each turn's model call was offered agree."""
    observed: list[tuple[str, tuple[object, ...], tuple[object, ...]]] = []
    real_run = TurnRunner.run

    async def run(self: TurnRunner, rt: TurnRuntime) -> object:
        at_start = _authority_seen(rt.snapshot)
        try:
            return await real_run(self, rt)
        finally:
            observed.append((rt.item.content, at_start, _authority_seen(rt.snapshot)))

    monkeypatch.setattr(TurnRunner, "run", run)
    authority = HostAuthority(
        tool_names=("read_file",),
        sandbox="macos",
        rules=(Rule("read_file", "old.txt", "allow"),),
        grants=(Grant("read_file", "/tmp/old.txt"),),
        integrations=("mcp:old",),
    )
    engine = await Engine.create(
        tmp_path,
        [say("a-old"), say("b-new"), say("a-new")],
        authority=authority,
        tools=ToolRegistry(all_tools()),
    )
    try:
        root = await engine.root_session()
        a = await engine.child(root, "a-old", "a-new")
        b = await engine.child(root, "b-new")
        engine.provider.hold()
        engine.owner.start(a.id)
        await wait_until(lambda: engine.provider.entered == 1)  # a-old is in its turn
        authority.update(
            tool_names=("write_file",),
            sandbox="vercel",
            rules=(Rule("write_file", "new.txt", "allow"),),
            grants=(Grant("write_file", "/tmp/new.txt"),),
            integrations=("mcp:new",),
        )
        engine.owner.start(b.id)
        await wait_until(lambda: engine.provider.entered == 2)  # b-new runs beside a-old
        assert observed == []  # neither turn has ended
        engine.provider.release()
        assert await engine.owner.join(a.id) == Result.IDLE
        assert await engine.owner.join(b.id) == Result.IDLE

        assert sorted(observed) == sorted(
            [
                ("a-old", OLD_AUTHORITY, OLD_AUTHORITY),
                ("a-new", NEW_AUTHORITY, NEW_AUTHORITY),
                ("b-new", NEW_AUTHORITY, NEW_AUTHORITY),
            ]
        )
        assert [s.source_id for s in authority.captures] == [root.id] * 3  # one per admission
        for session in (a, b):
            for item in await engine.items(session.id):
                stored = await engine.store.read(
                    lambda item_id=item.id: control.db.execute_sql(
                        "SELECT admission_json FROM work_item WHERE id = ?", (item_id,)
                    ).fetchone()[0]
                )
                expected = OLD_AUTHORITY if item.content == "a-old" else NEW_AUTHORITY
                assert _authority_seen(AdmissionSnapshot.from_json(stored)) == expected
        offered = {
            str(r.messages[-1].content): [t.name for t in r.tools] for r in engine.provider.requests
        }
        assert offered == {"a-old": ["read_file"], "b-new": ["write_file"], "a-new": ["write_file"]}
    finally:
        engine.provider.release()
        await engine.close()


async def test_scenario_28_a_durable_cancel_beats_a_late_successful_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario 28: [active, queued]; the active turn is past its last cancel check, its
    answer being saved (held at that commit). Cancel "user cancelled" -> 2. The turn then
    succeeds (its answer is saved), yet the join says cancelled: both items stay cancelled
    with the reason, the state is idle, and the queued item never ran."""
    engine = await Engine.create(tmp_path, [say("too late")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "active", "queued")
        saving, release = _hold_commit(monkeypatch, engine, "history_commit")
        submitted = _record_writes(monkeypatch, engine)
        engine.owner.start(child.id)
        await wait_until(saving.is_set)
        cancelling = asyncio.ensure_future(engine.owner.cancel(child.id, "user cancelled"))
        await wait_until(lambda: "cancel" in submitted)  # queued behind the held answer
        release.set()
        assert await asyncio.wait_for(cancelling, 10) == 2
        assert await asyncio.wait_for(engine.owner.join(child.id), 10) == Result.CANCELLED
        active, queued = await engine.items(child.id)
        assert [(i.status, i.reason) for i in (active, queued)] == [
            (WorkStatus.CANCELLED, "user cancelled")
        ] * 2
        after = await engine.session(child.id)
        assert after.state == SessionState.IDLE
        assert after.last_work_id == active.id  # the turn's answer was saved: it succeeded
        assert (await engine.history_kinds(child.id)).count("turn_end") == 1
        assert engine.provider.calls == 1  # the queued item never ran
    finally:
        release.set()
        await engine.close()


def _hold_commit(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, label: str
) -> tuple[threading.Event, threading.Event]:
    """Hold the first commit called ``label`` on the writer thread, inside its transaction,
    until the second event is set; the first is set when it is held."""
    held, release = threading.Event(), threading.Event()
    real = engine.faults.on_commit

    def on_commit(seen: str) -> StoreFault | None:
        if seen == label and not held.is_set():
            held.set()
            release.wait(30)
        return real(seen)

    monkeypatch.setattr(engine.faults, "on_commit", on_commit)
    return held, release


def _record_writes(monkeypatch: pytest.MonkeyPatch, engine: Engine) -> list[str]:
    """The label of every write, noted as it is handed to the writer thread."""
    labels: list[str] = []
    real = engine.store.write

    async def write(fn: Callable[[], object], *, label: str = "write") -> object:
        labels.append(label)
        return await real(fn, label=label)

    monkeypatch.setattr(engine.store, "write", write)
    return labels


async def test_scenario_29_completing_a_committed_cancellation_needs_no_store(
    tmp_path: Path,
) -> None:
    """Scenario 29: the cancel was committed elsewhere (the manager). While another process
    holds the database's write lock, the live part alone stops the turn: its model call ends
    at once, no store needed. Once the lock is let go the turn's end is saved: cancelled."""
    engine = await Engine.create(tmp_path, [say("x")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "running")
        await engine.start_blocked(child.id)
        await engine.store.write(lambda: _cancel_durably(child.id), label="external-cancel")
        async with _write_lock_held_elsewhere(engine.root / "fxdesk.sqlite3"):
            commits = engine.faults.commits_seen
            engine.owner.complete_committed_cancellation(child.id, "stop")
            await wait_until(lambda: engine.provider.entered == 0)  # the call was stopped
            assert engine.faults.commits_seen == commits
        assert await asyncio.wait_for(engine.owner.join(child.id), 10) == Result.CANCELLED
        assert engine.provider.calls == 0  # it never answered
    finally:
        await engine.close()


@contextlib.asynccontextmanager
async def _write_lock_held_elsewhere(database: Path) -> AsyncIterator[None]:
    """Another process holds the SQLite write lock (BEGIN IMMEDIATE) until the block ends."""
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "db.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        "sys.stdin.readline()\n"
        "db.execute('ROLLBACK')\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        str(database),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        assert await asyncio.wait_for(process.stdout.readline(), 20) == b"locked\n"
        yield
    finally:
        process.stdin.write(b"\n")
        await process.stdin.drain()
        assert await asyncio.wait_for(process.wait(), 20) == 0


def _cancel_durably(session_id: str) -> None:
    from fxdesk.domain import work

    record = control.load_record(session_id)
    assert record is not None
    _count, change = work.cancel(record, "stop", 1)
    assert change is not None
    control.save_change(change)


async def test_scenario_32_recovery_interrupts_and_a_resume_runs_once(tmp_path: Path) -> None:
    """Recovery interrupts a pending item without a model call; a plain start finds no work;
    an explicit resume (start with retry) is ``started``, joins idle and calls the model once."""
    engine = await Engine.create(tmp_path, [say("ran")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "pending work")
        report = await engine.owner.recover()
        assert report.work_interrupted == 1 and engine.provider.calls == 0
        (item,) = await engine.items(child.id)
        assert item.status == WorkStatus.INTERRUPTED
        assert item.reason == reasons.RESTART_INTERRUPTED
        assert await engine.run(child.id) == Result.NO_WORK  # nothing runs by itself
        assert engine.owner.start(child.id, retry=True) == StartResult.STARTED
        assert await asyncio.wait_for(engine.owner.join(child.id), 30) == Result.IDLE
        assert engine.provider.calls == 1
        assert [i.status for i in await engine.items(child.id)] == [WorkStatus.COMPLETED]
    finally:
        await engine.close()


async def test_scenario_33_tree_recovery_only_touches_the_tree(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    try:
        root, other = await engine.root_session(), await engine.root_session()
        child = await engine.child(root, "mine")
        unrelated = await engine.child(other, "theirs")
        chat = await engine.root_session("an ordinary chat message")
        report = await engine.owner.recover(root_id=root.id)
        assert (report.sessions_changed, report.work_interrupted, report.sessions_failed) == (
            1,
            1,
            0,
        )
        assert (await engine.items(child.id))[0].status == WorkStatus.INTERRUPTED
        assert (await engine.items(unrelated.id))[0].status == WorkStatus.PENDING
        assert (await engine.items(chat.id))[0].status == WorkStatus.PENDING
        assert (await engine.session(chat.id)).workspace_id == chat.workspace_id
    finally:
        await engine.close()


async def test_scenario_34_recovery_never_rebinds_workspaces(tmp_path: Path) -> None:
    """An ordinary chat in workspace A; the owner runs in workspace B (the harness's folder):
    recovery changes nothing (0 changed, 0 failed) and the chat stays in A. Here every chat has
    a work queue (the reference's chats have none), so the same is then shown for a chat whose
    queued message recovery does interrupt: still in A, no workspace added."""
    engine = await Engine.create(tmp_path, [say("hi")])
    try:
        folder_a = tmp_path / "workspace-a"
        folder_a.mkdir()
        assert engine.workspace != folder_a
        chat = await engine.sessions.create_root(folder_a, first_message="hello")
        assert await engine.run(chat.id) == Result.IDLE  # an ordinary chat that has talked
        before = await engine.session(chat.id)
        report = await engine.owner.recover()
        assert (report.sessions_changed, report.sessions_failed) == (0, 0)
        assert report.fully_reconciled
        after = await engine.session(chat.id)
        assert after.workspace_id == chat.workspace_id
        assert (after.state, after.generation) == (before.state, before.generation)
        catalog = await engine.sessions.catalog()
        assert {w.path for w in catalog.workspaces} == {str(folder_a.resolve())}
        assert [i.status for i in await engine.items(chat.id)] == [WorkStatus.COMPLETED]

        await engine.sessions.send(chat.id, "queued, never run")
        report = await engine.owner.recover()
        assert (report.sessions_changed, report.work_interrupted, report.sessions_failed) == (
            1,
            1,
            0,
        )
        assert (await engine.session(chat.id)).workspace_id == chat.workspace_id
        catalog = await engine.sessions.catalog()
        assert {w.path for w in catalog.workspaces} == {str(folder_a.resolve())}
        assert engine.provider.calls == 1  # recovery ran nothing
    finally:
        await engine.close()


async def test_scenario_40_a_restart_before_the_history_commit_interrupts(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("never committed")])
    root = await engine.root_session()
    child = await engine.child(root, "work")
    await engine.start_blocked(child.id)
    await engine.close()
    again = await Engine.create(tmp_path, [say("second owner")])
    try:
        report = await again.owner.recover()
        assert (report.work_interrupted, report.work_completed) == (1, 0)
        assert len(engine.provider.requests) + len(again.provider.requests) == 1
        assert (await again.items(child.id))[0].status == WorkStatus.INTERRUPTED
    finally:
        await again.close()


async def test_scenario_46_provider_and_admission_failures_record_typed_state(
    tmp_path: Path,
) -> None:
    """A persistent child whose run fails (the provider errs): join → failed, the item failed
    with its typed reason, state idle, exactly 1 ``terminal: failed``, and the session can be
    locked for writing again. Another child whose admission capture fails: join →
    admission_failed, its item failed (admission reason), no model call, nothing admitted."""

    class BrokenForOne(HostAuthority):
        def capture(self, session, item, model, effort):  # type: ignore[no-untyped-def]
            if session.name == "broken":
                raise RuntimeError("capture service down")
            return super().capture(session, item, model, effort)

    engine = await Engine.create(
        tmp_path,
        [Fault("server_error", "HTTP 500 from upstream")],
        authority=BrokenForOne(tool_names=("echo",)),
    )
    try:
        root = await engine.root_session()
        child = await engine.child(root, "the run fails")
        assert await engine.run(child.id) == Result.FAILED
        (item,) = await engine.items(child.id)
        assert item.status == WorkStatus.FAILED
        assert await engine.store.read(lambda: control.failure_reason(item.id)) == (
            "provider_failed: server_error: HTTP 500 from upstream"
        )
        assert (await engine.session(child.id)).state == SessionState.IDLE
        terminals = [d for d in await engine.deliveries(child.id) if d[0] == "terminal"]
        assert terminals == [("terminal", "failed")]
        lock = SessionLock(engine.root / "locks", child.id)
        assert lock.try_acquire()  # released: the session can be opened for writing
        lock.release()

        calls = engine.provider.calls
        broken = await engine.sessions.create_child(
            root.id, name="broken", mode=SessionMode.PERSISTENT, first_message="cannot start"
        )
        assert await engine.run(broken.id) == Result.ADMISSION_FAILED
        (item,) = await engine.items(broken.id)
        assert item.status == WorkStatus.FAILED
        assert await engine.store.read(lambda: control.failure_reason(item.id)) == (
            reasons.ADMISSION_FAILED
        )
        assert engine.provider.calls == calls
        assert await engine.history_kinds(broken.id) == []  # no turn was opened
    finally:
        await engine.close()


# Another process holds one session's lock (``SessionLock``: flock, its pid in the file) until
# its standard input closes.
HOLD_SESSION_LOCK = """
import sys
from pathlib import Path
from fxdesk.store.locks import SessionLock
lock = SessionLock(Path(sys.argv[1]), sys.argv[2])
lock.acquire()
print("locked", flush=True)
sys.stdin.read()
lock.release()
"""


async def test_scenario_47_a_lock_held_elsewhere_keeps_the_queue(tmp_path: Path) -> None:
    """Another process holds the session's lock; with a lock deadline of 0, start → join =
    external_busy (naming that process), the item stays pending, no model call. Once it lets
    go, the queue runs here by itself, without another start (issue 16 item 2: a message
    queued while another process ran the session used to wait, unseen, until the person
    started the session again): exactly 1 model call and the item completed."""
    engine = await Engine.create(tmp_path, [say("ran once")])
    try:
        assert engine.owner.lock_deadline_s == 0
        root = await engine.root_session()
        child = await engine.child(root, "queued")
        holder = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            HOLD_SESSION_LOCK,
            str(engine.root / "locks"),
            child.id,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=child_env(),
        )
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"locked\n"
            assert await engine.run(child.id) == Result.EXTERNAL_BUSY
            assert [i.status for i in await engine.items(child.id)] == [WorkStatus.PENDING]
            assert engine.provider.calls == 0 and engine.owner.external_busy(child.id)
            assert engine.owner.busy_elsewhere[child.id] == holder.pid
        finally:
            holder.stdin.close()  # lets the lock go
            assert await asyncio.wait_for(holder.wait(), 30) == 0

        async def completed() -> bool:
            return [i.status for i in await engine.items(child.id)] == [WorkStatus.COMPLETED]

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not await completed():
            assert loop.time() < deadline, "the queue did not run once the lock was free"
            await asyncio.sleep(0.05)
        assert await engine.owner.join(child.id) == Result.IDLE
        assert engine.provider.calls == 1
        assert [i.status for i in await engine.items(child.id)] == [WorkStatus.COMPLETED]
        assert not engine.owner.external_busy(child.id)
    finally:
        await engine.close()


async def test_scenario_49_local_execution_is_never_busy_elsewhere(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("x")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "running here")
        await engine.start_blocked(child.id)
        report = await engine.owner.recover()
        assert report.sessions_external_busy == 1
        assert not engine.owner.external_busy(child.id)
        engine.provider.release()
        assert await engine.owner.join(child.id) == Result.IDLE
        report = await engine.owner.recover()
        assert report.fully_reconciled and not engine.owner.external_busy(child.id)
    finally:
        await engine.close()


@pytest.mark.parametrize("failing_writes", [False, True])
async def test_scenarios_51_56_shutdown_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing_writes: bool
) -> None:
    """[active, queued] with the turn blocked; shutdown joins it and writes nothing, not even
    an attempt (no job reaches the writer), whether writes would fail (51) or not (56): the
    items stay running and pending without a reason, for recovery, and the lock is free."""
    engine = await Engine.create(tmp_path, [say("x")])
    root = await engine.root_session()
    child = await engine.child(root, "active", "queued")
    await engine.start_blocked(child.id)
    commits_before = engine.faults.commits_seen
    jobs_before = engine.store.writer_stats.jobs
    if failing_writes:
        engine.faults.fail(commits_before + 1, StoreFault.DEFINITE, onward=True)
    writes = _record_writes(monkeypatch, engine)
    await asyncio.wait_for(engine.owner.shutdown(), 30)
    assert not engine.owner.is_running(child.id)  # joined
    assert writes == []  # the store was never asked
    assert engine.faults.commits_seen == commits_before
    assert engine.store.writer_stats.jobs == jobs_before  # not even an attempt
    engine.faults.clear()
    items = await engine.items(child.id)
    assert [(i.status, i.reason) for i in items] == [
        (WorkStatus.RUNNING, None),
        (WorkStatus.PENDING, None),
    ]
    await engine.close()
    lock = SessionLock(tmp_path / "locks", child.id)
    assert lock.try_acquire()  # the session can be reopened
    lock.release()


# Another process holds the database's write lock (SQLite's RESERVED lock: what the spec's
# control lock is here) until its standard input closes.
HOLD_WRITE_LOCK = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
db.close()
"""


async def test_scenario_50_shutdown_completes_while_another_process_holds_the_write_lock(
    tmp_path: Path,
) -> None:
    """While a turn is blocked, another process holds the database's write lock and writes fail:
    shutdown completes with 0 write attempts; once the lock is let go, the session reopens and
    the item is still running (recovery, not shutdown, decides)."""
    engine = await Engine.create(tmp_path, [say("x")])
    root = await engine.root_session()
    child = await engine.child(root, "active", "queued")
    await engine.start_blocked(child.id)
    holder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HOLD_WRITE_LOCK,
        str(engine.store.path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=child_env(),
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"locked\n"
        commits_before = engine.faults.commits_seen
        jobs_before = engine.store.writer_stats.jobs  # counted before the write lock is asked
        from fxdesk.store.faults import Fault as StoreFault

        engine.faults.fail(commits_before + 1, StoreFault.DEFINITE, onward=True)
        await asyncio.wait_for(engine.owner.shutdown(), 30)
        assert engine.faults.commits_seen == commits_before
        assert engine.store.writer_stats.jobs == jobs_before  # not even an attempt
        assert holder.returncode is None  # the lock was held throughout
    finally:
        holder.stdin.close()  # lets the lock go
        await asyncio.wait_for(holder.wait(), 30)
    assert holder.returncode == 0
    engine.faults.clear()
    await engine.close()
    lock = SessionLock(tmp_path / "locks", child.id)
    assert lock.try_acquire()  # the session can be reopened
    lock.release()
    again = await engine.reopen()
    try:
        items = await again.items(child.id)
        assert [(i.status, i.reason) for i in items] == [
            (WorkStatus.RUNNING, None),
            (WorkStatus.PENDING, None),
        ]
    finally:
        await again.close()


async def test_scenario_52_revisions_advance_and_cursors_go_stale(tmp_path: Path) -> None:
    """A cursor from a one-event page, then both items run: the generation passes the page's,
    event sequences are contiguous from 1 with non-decreasing revisions, the next sequence is
    their count + 1. On a freshly opened store, pages of 2 start at 1 and 3, and the old
    cursor says restart_required."""
    engine = await Engine.create(tmp_path, [say("1"), say("2")])
    root = await engine.root_session()
    child = await engine.child(root, "one", "two")
    first = await engine.sessions.inspect(child.id, limit=1)
    assert first.next_cursor is not None
    revision = first.generation
    assert await engine.run(child.id) == Result.IDLE
    assert [i.status for i in await engine.items(child.id)] == [WorkStatus.COMPLETED] * 2
    page = await engine.sessions.inspect(child.id, limit=100)
    assert page.generation > revision
    sequences = [e.sequence for e in page.events]
    assert sequences == list(range(1, len(sequences) + 1))
    revisions = [e.revision for e in page.events]
    assert revisions == sorted(revisions)
    record = await engine.store.read(lambda: control.load_record(child.id))
    assert record is not None and record.next_event_sequence == len(sequences) + 1
    await engine.close()
    fresh = await engine.reopen()
    try:
        page1 = await fresh.sessions.inspect(child.id, limit=2)
        page2 = await fresh.sessions.inspect(child.id, page1.next_cursor, limit=2)
        assert [e.sequence for e in page1.events] == [1, 2]
        assert page2.events[0].sequence == 3
        stale = await fresh.sessions.inspect(child.id, first.next_cursor)
        assert stale.restart_required
    finally:
        await fresh.close()


async def test_scenario_53_operation_replay_is_stable(tmp_path: Path) -> None:
    from fxdesk.engine.sessions import OperationConflict

    engine = await Engine.create(tmp_path, [say("ran")])
    try:
        root = await engine.root_session()
        receipt = await engine.sessions.create_child_once(
            "stable-operation",
            root.id,
            actor_id=root.id,
            name="replay",
            mode=SessionMode.PERSISTENT,
            first_message="run once",
        )
        assert await engine.run(receipt.session_id) == Result.IDLE
        assert (await engine.session(receipt.session_id)).generation > receipt.generation
        again = await engine.sessions.create_child_once(
            "stable-operation",
            root.id,
            actor_id=root.id,
            expected_generation=receipt.generation,
            name="replay",
            mode=SessionMode.PERSISTENT,
            first_message="run once",
        )
        assert again == receipt
        with pytest.raises(OperationConflict):
            await engine.sessions.create_child_once(
                "stable-operation",
                root.id,
                actor_id="someone-else",
                name="replay",
                mode=SessionMode.PERSISTENT,
                first_message="run once",
            )
        catalog = await engine.sessions.catalog()
        assert sum(1 for s in catalog.sessions if s.name == "replay") == 1
    finally:
        await engine.close()


async def test_scenario_54_close_archives_before_stopping_live_work(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("x")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "active", "queued")
        await engine.start_blocked(child.id)
        receipt = await engine.sessions.close(child.id)
        assert receipt.code == "lifecycle_changed"
        after = await engine.session(child.id)
        assert after.state == SessionState.ARCHIVED and after.archived_from == SessionState.IDLE
        assert {i.status for i in await engine.items(child.id)} == {WorkStatus.CANCELLED}
        assert not engine.owner.is_running(child.id)
    finally:
        await engine.close()


async def test_scenario_55_an_unauthorized_close_changes_nothing(tmp_path: Path) -> None:
    from fxdesk.engine.sessions import SessionError

    engine = await Engine.create(tmp_path)
    try:
        root = await engine.root_session()
        child = await engine.child(root)
        detached = await engine.sessions.detach(child.id)
        assert detached.code == "relationship_changed"
        before = await engine.session(child.id)
        with pytest.raises(SessionError) as refused:
            await engine.sessions.close(child.id, actor_id=root.id)
        assert refused.value.code == ErrorCode.CHILD_UNAVAILABLE
        after = await engine.session(child.id)
        assert after.generation == before.generation and after.parent_id is None
        assert after.state == SessionState.IDLE
    finally:
        await engine.close()


async def test_detach_and_reparent_are_refused_while_work_is_active(tmp_path: Path) -> None:
    """Scenario 37's relationship part: detach/reparent racing active work → invalid_state."""
    from fxdesk.engine.owner import WorkActive

    engine = await Engine.create(tmp_path, [say("x")])
    try:
        root = await engine.root_session()
        other = await engine.child(root)
        child = await engine.child(root, "busy")
        await engine.start_blocked(child.id)
        with pytest.raises(WorkActive) as refused:
            await engine.sessions.detach(child.id)
        assert refused.value.code == ErrorCode.INVALID_STATE
        with pytest.raises(WorkActive) as refused:
            await engine.sessions.reparent(child.id, other.id)
        assert refused.value.code == ErrorCode.INVALID_STATE
        engine.provider.release()
        await engine.owner.join(child.id)
        await engine.sessions.reparent(child.id, other.id)
        assert (await engine.session(child.id)).parent_id == other.id
    finally:
        await engine.close()


async def test_join_without_a_slot_or_result_is_refused(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    try:
        with pytest.raises(SessionNotActive):
            await engine.owner.join("nobody")
    finally:
        await engine.close()


async def test_a_detached_child_cannot_take_work(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("x")])
    try:
        root = await engine.root_session()
        child = await engine.child(root)
        await engine.sessions.detach(child.id)
        await engine.sessions.send(child.id, "orphaned work", source_id=root.id)
        assert await engine.run(child.id) == Result.ADMISSION_FAILED
        assert (await engine.items(child.id))[0].status == WorkStatus.PENDING  # unchanged
    finally:
        await engine.close()


async def test_provider_errors_do_not_leak_the_stream(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [Fault("rate_limited", "slow down", after_text="pa")])
    try:
        session = await engine.root_session("x")
        assert await engine.run(session.id) == Result.FAILED
        assert engine.owner.live_snapshot(session.id) is None
    finally:
        await engine.close()


async def test_scenario_60_a_child_pipeline_reports_activity_and_its_result(
    tmp_path: Path,
) -> None:
    """Scenario 60: a child runs four tools in order through the normal pipeline with its own
    model and replies; the history holds that one turn and the reply; the parent's feed (a
    page of 16) has 8 tool activities (started, succeeded per tool, in call order) and 1
    terminal; the admission carries the inherited rule and grant and the integration; the
    live authority has a generation, sandbox none, 4 tools, 1 integration, 1 rule, 1 grant.

    Adapted: the MCP tools (mcp_select_tool and a dynamic MCP echo) arrive with MCP (issue
    18): list_dir and echo stand in, and the integration is a name the host declares. Not
    built: the parent-boundary injection (what the parent's model is told at its next step
    boundary); nothing reads the feed into a parent's turn yet. It belongs to the root inbox
    of issue 13 (sub-agents, agent runs, inbox; ARCHITECTURE §2), which will test it. The feed
    it will read is asserted here instead: its terminal is the only delivery of a kind the
    injection carries (no approval was raised)."""
    from fxdesk.domain.conversation import EntryKind
    from fxdesk.providers.scripted import ScriptedCall
    from fxdesk.store import history
    from fxdesk.tools.base import ToolRegistry
    from fxdesk.tools.registry import all_tools

    tools = ("read_file", "grep", "list_dir", "echo")
    calls = (
        ScriptedCall("read_file", {"path": "file.txt"}, id="c1"),
        ScriptedCall("grep", {"pattern": "gateway"}, id="c2"),
        ScriptedCall("list_dir", {"path": "."}, id="c3"),
        ScriptedCall("echo", {"text": "dynamic"}, id="c4"),
    )
    authority = HostAuthority(
        tool_names=tools,
        rules=(Rule("read_file", "file.txt", "allow"),),
        grants=(Grant("read_file", "/tmp/workspace/file.txt"),),
        integrations=("mcp:echo",),
    )
    engine = await Engine.create(
        tmp_path,
        [Reply(tool_calls=calls), say("gateway child reply")],
        authority=authority,
        tools=ToolRegistry(all_tools()),
    )
    try:
        (engine.workspace / "file.txt").write_text("the gateway file\n")
        root = await engine.root_session()
        child = await engine.sessions.create_child(
            root.id,
            name="gateway",
            model="anthropic/claude-opus-4.6",
            effort="high",
            first_message="use the tools",
        )
        assert await engine.run(child.id) == Result.COMPLETED
        assert {r.model for r in engine.provider.requests} == {"anthropic/claude-opus-4.6"}
        (snapshot,) = authority.captures
        assert snapshot.permission_mode == PermissionMode.YOLO  # the child default
        assert snapshot.parent_id == root.id and snapshot.source_id == root.id
        assert snapshot.tool_names == tools and snapshot.sandbox == "none"
        assert len(snapshot.rules) == 1 and len(snapshot.grants) == 1
        assert snapshot.integrations == ("mcp:echo",)
        live = authority.resolve(await engine.session(child.id), PermissionMode.YOLO)
        assert live.generation > 0 and live.sandbox == "none" and len(live.tools) == 4
        assert (len(live.integrations), len(live.rules), len(live.grants)) == (1, 1, 1)

        (item,) = await engine.items(child.id)
        entries = await engine.store.read(lambda: history.page_history(child.id, 0, 1000))
        assert {e.work_id for e in entries} == {item.id}  # one turn, this work's
        assert [e.kind for e in entries].count(EntryKind.TURN_END) == 1
        assert [(e.call_id, e.tool_name) for e in entries if e.kind == EntryKind.TOOL_RESULT] == [
            ("c1", "read_file"),
            ("c2", "grep"),
            ("c3", "list_dir"),
            ("c4", "echo"),
        ]
        results = {e.call_id: e.content for e in entries if e.kind == EntryKind.TOOL_RESULT}
        assert "the gateway file" in results["c1"] and "file.txt" in results["c2"]
        assert "file.txt" in results["c3"] and results["c4"] == "dynamic"
        replies = [e.content for e in entries if e.kind == EntryKind.ASSISTANT and e.content]
        assert replies == ["gateway child reply"]
        after = await engine.session(child.id)
        assert after.last_work_id == item.id

        deliveries = await engine.store.read(
            lambda: control.deliveries(target_id=root.id, limit=16)
        )
        activity = [
            (d.payload["call_id"], d.payload["phase"])
            for d in deliveries
            if d.kind.value == "tool_activity"
        ]
        assert activity == [
            (call, phase) for call in ("c1", "c2", "c3", "c4") for phase in ("started", "succeeded")
        ]
        kinds = [d.kind.value for d in deliveries]
        assert kinds.count("terminal") == 1 and "approval" not in kinds
        (terminal,) = [d for d in deliveries if d.kind.value == "terminal"]
        assert terminal.work_id == item.id and terminal.payload.get("state") == "completed"

        page = await engine.sessions.inspect(child.id, limit=100)
        currents = [e.current for e in page.events if e.current is not None]
        assert currents == [WorkStatus.PENDING, WorkStatus.RUNNING, WorkStatus.COMPLETED]
    finally:
        await engine.close()


async def test_recovery_hooks_run_inside_the_recovery_transaction(tmp_path: Path) -> None:
    """The hook the permissions issue plugs into (approvals of interrupted work → stale)."""
    from fxdesk.engine import recovery

    seen: list[tuple[str, int]] = []

    def hook(session_id: str, change: object, now: int) -> None:
        seen.append((session_id, len(change.items)))  # type: ignore[attr-defined]

    engine = await Engine.create(tmp_path)
    recovery.RECOVERY_HOOKS.append(hook)
    try:
        root = await engine.root_session()
        child = await engine.child(root, "a", "b")
        await engine.owner.recover()
        assert seen == [(child.id, 2)]
    finally:
        recovery.RECOVERY_HOOKS.remove(hook)
        await engine.close()
