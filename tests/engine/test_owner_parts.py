"""The owner's collaborators and the engine's typed results: errors with codes, the busy
tracker, ``publish_change``, drain outcomes, and one injected clock for every timestamp."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.engine.bus import EventBus
from fxdesk.engine.busy import BusyTracker
from fxdesk.engine.clock import FakeClock
from fxdesk.engine.errors import (
    EngineError,
    ErrorCode,
    InvalidWorkspace,
    OperationConflict,
    OwnerClosed,
    SessionError,
    SessionNotActive,
    SessionNotFound,
    WorkActive,
)
from fxdesk.engine.events import BusyElsewhere, SessionChanged, WorkChanged, publish_change
from fxdesk.engine.owner import Result
from fxdesk.engine.slots import Drain, ItemOutcome
from fxdesk.store import history
from tests.engine.harness import Engine, say


def test_errors_carry_a_code_and_keep_their_builtin_bases() -> None:
    cases: list[tuple[EngineError, ErrorCode, type[Exception]]] = [
        (SessionError("session s is closed"), ErrorCode.INVALID_STATE, ValueError),
        (InvalidWorkspace("/x does not exist"), ErrorCode.INVALID_ARGUMENT, ValueError),
        (OperationConflict("op was used otherwise"), ErrorCode.OPERATION_CONFLICT, SessionError),
        (WorkActive(), ErrorCode.INVALID_STATE, RuntimeError),
        (SessionNotFound("s1"), ErrorCode.NOT_FOUND, LookupError),
        (SessionNotActive("s1"), ErrorCode.NOT_ACTIVE, LookupError),
        (OwnerClosed("the session owner is shut down"), ErrorCode.CLOSED, RuntimeError),
    ]
    for error, code, base in cases:
        assert error.code == code and isinstance(error, base)
        assert not str(error).startswith(f"{code.value}:")  # the code is not in the text
    assert str(WorkActive()) == "the session has active work"
    assert str(SessionNotFound("s1")) == "s1"
    assert SessionError("no session s", code=ErrorCode.NOT_FOUND).code == ErrorCode.NOT_FOUND
    assert SessionError("plain").code == ErrorCode.INVALID_STATE  # an override is per raise


def test_the_busy_tracker_publishes_changes_only() -> None:
    bus = EventBus()
    seen: list[BusyElsewhere] = []
    bus.subscribe(BusyElsewhere, seen.append)
    busy = BusyTracker(bus)
    busy.mark_free("a")  # never busy: nothing to say
    busy.mark_busy("a", 42)
    assert busy.sessions == {"a": 42}
    busy.mark_free("a")
    busy.mark_free("a")
    assert busy.sessions == {}
    assert seen == [BusyElsewhere("a", True, 42), BusyElsewhere("a", False, None)]


async def test_publish_change_sends_the_work_then_the_session(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    try:
        root = await engine.root_session()
        engine.events.clear()
        item = await engine.sessions.send(root.id, "hello")
        work, changed = engine.events
        assert isinstance(work, WorkChanged) and work.items[0].id == item.id
        assert isinstance(changed, SessionChanged) and changed.session.id == root.id
        bus = EventBus()
        seen: list[object] = []
        bus.subscribe_all(seen.append)
        publish_change(bus, None, None)
        publish_change(bus, None, changed.session)
        assert seen == [SessionChanged(changed.session)]
    finally:
        await engine.close()


def test_an_item_outcome_says_whether_the_drain_goes_on() -> None:
    assert ItemOutcome(Result.FAILED).drain == Drain.STOP
    more = ItemOutcome.more_work()
    assert more.drain == Drain.CONTINUE and more.result == Result.IDLE


async def test_one_clock_stamps_queue_history_and_deliveries(tmp_path: Path) -> None:
    clock = FakeClock(1_234)
    engine = await Engine.create(tmp_path, [say("done")], clock=clock)
    try:
        root = await engine.root_session()
        clock.now = 5_678
        await engine.sessions.send(root.id, "hello")
        assert await engine.run(root.id) == Result.IDLE
        assert (await engine.session(root.id)).created_at_ms == 1_234
        (item,) = await engine.items(root.id)
        assert item.created_at_ms == 5_678 and item.updated_at_ms == 5_678
        entries = await engine.store.read(lambda: history.page_history(root.id, 0, 100))
        assert entries and {e.created_at_ms for e in entries} == {5_678}
        await engine.sessions.rename(root.id, "renamed")
        assert (await engine.session(root.id)).updated_at_ms == 5_678
    finally:
        await engine.close()


async def test_refusals_name_their_code(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    try:
        with pytest.raises(SessionError) as missing:
            await engine.sessions.send("nope", "hello")
        assert missing.value.code == ErrorCode.NOT_FOUND and str(missing.value) == "no session nope"
        root = await engine.root_session()
        with pytest.raises(SessionError) as empty:
            await engine.sessions.send(root.id, "  ")
        assert empty.value.code == ErrorCode.INVALID_ARGUMENT
        await engine.sessions.close(root.id)
        with pytest.raises(SessionError) as closed:
            await engine.sessions.send(root.id, "hello")
        assert closed.value.code == ErrorCode.INVALID_STATE
    finally:
        await engine.close()
