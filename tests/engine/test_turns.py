"""Turns end to end through the session owner: tool loops, step-by-step history, resumption."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.domain.conversation import UNKNOWN_OUTCOME_RESULT
from fxdesk.domain.model import SessionState, WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.providers.scripted import Fault, Reply
from fxdesk.store import control, history
from fxdesk.store.faults import Fault as StoreFault
from tests.engine.harness import Engine, append_line, call, say, wait_until


async def test_a_tool_loop_commits_every_step(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [call("echo", text="hi"), say("done: hi")])
    try:
        session = await engine.root_session("say hi")
        assert await engine.run(session.id) == Result.IDLE
        assert await engine.history_kinds(session.id) == [
            "user",
            "assistant",
            "tool_call",
            "tool_result",
            "assistant",
            "turn_end",
        ]
        assert await engine.deliveries(session.id) == [
            ("tool_activity", "started"),
            ("tool_activity", "succeeded"),
            ("terminal", "completed"),
        ]
        second = engine.provider.requests[1]
        assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
        assert second.messages[2].content == "hi"
        assert {t.name for t in second.tools} == {"echo", "write_file"}
        (item,) = await engine.items(session.id)
        assert item.status == WorkStatus.COMPLETED
        after = await engine.session(session.id)
        assert after.last_work_id == item.id and after.state == SessionState.IDLE
    finally:
        await engine.close()


async def test_later_turns_see_earlier_ones(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("one"), say("two")])
    try:
        session = await engine.root_session("first")
        await engine.run(session.id)
        await engine.sessions.send(session.id, "second")
        await engine.run(session.id)
        roles = [(m.role, m.content) for m in engine.provider.requests[1].messages]
        assert roles == [("user", "first"), ("assistant", "one"), ("user", "second")]
    finally:
        await engine.close()


async def test_invalid_tool_arguments_are_a_tool_error_the_model_sees(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [call("echo", wrong=1), call("nope"), say("ok")])
    try:
        session = await engine.root_session("go")
        assert await engine.run(session.id) == Result.IDLE
        results = [m for m in engine.provider.requests[2].messages if m.role == "tool"]
        assert "missing required argument 'text'" in results[0].content
        assert "the tool 'nope' is not available to this session" in results[1].content
    finally:
        await engine.close()


async def test_a_provider_failure_fails_the_item_with_its_reason(tmp_path: Path) -> None:
    """Scenario 46 (first part): typed work state, terminal delivery, lock released."""
    engine = await Engine.create(tmp_path, [Fault("server_error", "HTTP 500 from upstream")])
    try:
        session = await engine.root_session("go")
        assert await engine.run(session.id) == Result.FAILED
        (item,) = await engine.items(session.id)
        assert item.status == WorkStatus.FAILED
        reason = await engine.store.read(lambda: control.failure_reason(item.id))
        assert reason == "provider_failed: server_error: HTTP 500 from upstream"
        assert (await engine.session(session.id)).state == SessionState.IDLE
        assert ("terminal", "failed") in await engine.deliveries(session.id)
        assert engine.owner.start(session.id) == "started"  # the lock was released
        assert await engine.owner.join(session.id) == Result.NO_WORK
    finally:
        await engine.close()


async def test_max_iterations_fails_the_turn(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [call("echo", text="x")] * 5, max_iterations=3)
    try:
        session = await engine.root_session("loop")
        assert await engine.run(session.id) == Result.FAILED
        assert engine.provider.calls == 3
    finally:
        await engine.close()


async def test_a_lost_tool_result_is_reported_as_unknown_and_never_rerun(tmp_path: Path) -> None:
    """A result that never reached the disk before its process ended (every save of it failed,
    then a restart) is lost with that process: the model is told "outcome unknown" and the
    tool is not run again. (Within the process the result is kept and written on resume:
    tests/engine/test_tool_activity_repair.py.)"""
    engine = await Engine.create(tmp_path, [append_line("log.txt", "once"), say("checked")])
    session = await engine.root_session("append a line")
    engine.faults.fail(1, StoreFault.DEFINITE, onward=True, label="tool_result")
    assert await engine.run(session.id) == Result.PAUSED
    (item,) = await engine.items(session.id)
    assert item.status == WorkStatus.INTERRUPTED
    assert (engine.workspace / "log.txt").read_text() == "once\n"
    await engine.close()
    again = await Engine.create(tmp_path, [say("checked")])
    try:
        assert await again.run(session.id, retry=True) == Result.IDLE
        assert (again.workspace / "log.txt").read_text() == "once\n"  # not run again
        last = again.provider.requests[-1].messages[-1]
        assert last.role == "tool" and last.content == UNKNOWN_OUTCOME_RESULT
        assert engine.provider.calls + again.provider.calls == 2
        assert await again.deliveries(session.id) == [
            ("tool_activity", "started"),
            ("tool_activity", "failed"),
            ("terminal", "completed"),
        ]
    finally:
        await again.close()


async def test_a_resumed_turn_after_shutdown_does_not_repeat_the_tool(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [append_line("log.txt", "once"), say("done")])
    session = await engine.root_session("append a line")
    engine.provider.hold()
    engine.owner.start(session.id)
    await wait_until(lambda: engine.provider.entered == 1)
    engine.provider.release()
    engine.provider.hold()
    await wait_until(lambda: engine.provider.entered == 1 and len(engine.provider.requests) == 2)
    await engine.close()  # like quitting: nothing more is written
    assert (engine.workspace / "log.txt").read_text() == "once\n"

    again = await Engine.create(tmp_path, [say("done")])
    try:
        report = await again.owner.recover()
        assert report.work_interrupted == 1
        assert again.provider.calls == 0
        assert await again.run(session.id, retry=True) == Result.IDLE
        assert again.provider.calls == 1
        assert (again.workspace / "log.txt").read_text() == "once\n"
        kinds = await again.history_kinds(session.id)
        assert kinds == ["user", "assistant", "tool_call", "tool_result", "assistant", "turn_end"]
    finally:
        await again.close()


async def test_streamed_text_reaches_the_live_view(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [Reply(text="hello world", chunk=3)])
    seen: list[str] = []
    try:
        session = await engine.root_session("hi")
        await engine.start_blocked(session.id)
        snapshot = engine.owner.live_snapshot(session.id)
        assert snapshot is not None and snapshot.text == ""
        engine.provider.release()
        while engine.owner.is_running(session.id):
            live = engine.owner.live_snapshot(session.id)
            if live is not None and live.text:
                seen.append(live.text)
            await asyncio.sleep(0)
        assert await engine.owner.join(session.id) == Result.IDLE
        assert engine.owner.live_snapshot(session.id) is None  # cleared at the end
    finally:
        await engine.close()


async def test_servers_that_reuse_tool_call_ids_still_work(tmp_path: Path) -> None:
    """Some OpenAI-compatible servers name every call ``call_0``; history ids stay unique."""
    from fxdesk.providers.scripted import ScriptedCall

    reused = Reply(tool_calls=(ScriptedCall("echo", {"text": "a"}, id="call_0"),))
    again = Reply(tool_calls=(ScriptedCall("echo", {"text": "b"}, id="call_0"),))
    engine = await Engine.create(tmp_path, [reused, again, say("done")])
    try:
        session = await engine.root_session("go")
        assert await engine.run(session.id) == Result.IDLE
        await engine.sessions.send(session.id, "again")
        engine.provider.steps.extend([reused, say("done again")])
        assert await engine.run(session.id) == Result.IDLE
        entries = await engine.store.read(lambda: history.page_history(session.id))
        ids = [e.call_id for e in entries if e.kind.value == "tool_call"]
        assert len(ids) == 3 and len(set(ids)) == 3
        last = engine.provider.requests[-1].messages
        tool_ids = {m.tool_call_id for m in last if m.role == "tool"}
        call_ids = {c.id for m in last for c in m.tool_calls}
        assert tool_ids == call_ids  # every result answers a call the model saw
    finally:
        await engine.close()


async def test_steer_reaches_the_running_turn_at_its_next_step(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [call("echo", text="working"), say("done, with tabs")])
    try:
        session = await engine.root_session("reformat the file")
        await engine.start_blocked(session.id)
        steer = await engine.sessions.steer(session.id, "use tabs, not spaces")
        engine.provider.release()
        assert await engine.owner.join(session.id) == Result.IDLE
        second = engine.provider.requests[1].messages
        assert [(m.role, m.content) for m in second][-1] == ("user", "use tabs, not spaces")
        items = {i.id: i for i in await engine.items(session.id)}
        assert items[steer.id].status == WorkStatus.COMPLETED
        entries = await engine.store.read(lambda: history.page_history(session.id))
        steered = [e for e in entries if e.data.get("steer")]
        assert len(steered) == 1 and steered[0].work_id != steer.id  # inside the running turn
        assert engine.provider.calls == 2  # no separate turn for it
    finally:
        await engine.close()


async def test_a_steer_that_misses_the_turn_runs_next(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("first answer"), say("second answer")])
    try:
        session = await engine.root_session("one")
        await engine.start_blocked(session.id)  # no tool calls: no boundary left to steer into
        steer = await engine.sessions.steer(session.id, "and another thing")
        engine.provider.release()
        assert await engine.owner.join(session.id) == Result.IDLE
        items = {i.id: i for i in await engine.items(session.id)}
        assert items[steer.id].status == WorkStatus.COMPLETED
        assert engine.provider.requests[1].messages[-1].content == "and another thing"
    finally:
        await engine.close()


async def test_a_queued_message_can_be_removed_before_it_runs(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("only the first")])
    try:
        session = await engine.root_session("first")
        second = await engine.sessions.send(session.id, "second")
        await engine.start_blocked(session.id)
        assert await engine.sessions.remove_pending(session.id, second.id)
        engine.provider.release()
        assert await engine.owner.join(session.id) == Result.IDLE
        items = {i.content: i for i in await engine.items(session.id)}
        assert items["second"].status == WorkStatus.CANCELLED
        assert items["second"].reason == "removed from the queue"
        assert not await engine.sessions.remove_pending(session.id, second.id)
    finally:
        await engine.close()


async def test_configure_applies_to_the_next_admission(tmp_path: Path) -> None:
    from fxdesk.domain.model import PermissionMode

    engine = await Engine.create(tmp_path, [say("a"), say("b")])
    try:
        session = await engine.root_session("first")
        await engine.run(session.id)
        changed = await engine.sessions.configure(
            session.id, permission_mode=PermissionMode.ASK, model="other-model"
        )
        assert changed.permission_mode == PermissionMode.ASK
        await engine.sessions.send(session.id, "second")
        await engine.run(session.id)
        assert engine.provider.requests[-1].model == "other-model"
        assert engine.owner.authority.captures[-1].permission_mode == PermissionMode.ASK
    finally:
        await engine.close()
