"""Store failures and shutdown on the approval path (issue 10, items 1 and 2).

A store failure while raising an approval or marking its answer used pauses the turn like any
other store failure mid-turn (spec child-sessions §5.2): the item ends ``interrupted``, never
``running`` with no worker, and an explicit resume carries on. A shutdown writes nothing (spec
§5.5), also when it lands between the permission check and the approval: that ask ends as
"registry closed", and so does any later one.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.approvals import Approval, ApprovalStatus, Choice
from fxdesk.domain.model import PermissionMode, WorkStatus
from fxdesk.engine.errors import ErrorCode, RegistryClosed
from fxdesk.engine.owner import Result
from fxdesk.engine.permissions import PermissionService
from fxdesk.store import StoreError
from fxdesk.store import approvals as approvals_store
from fxdesk.store.faults import Fault
from fxdesk.tools.base import (
    Tool,
    ToolAccess,
    ToolContext,
    ToolFacts,
    ToolRegistry,
    ToolResult,
    schema,
)
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine, call, say, wait_until


async def make(tmp_path: Path, steps: list[object], tools: list[Tool] | None = None) -> Engine:
    return await Engine.create(
        tmp_path,
        steps,  # type: ignore[arg-type]
        permissions=True,
        tools=ToolRegistry([*all_tools(), *(tools or [])]),
    )


def service(engine: Engine) -> PermissionService:
    assert engine.permissions is not None
    return engine.permissions


async def ask_session(engine: Engine) -> str:
    created = await engine.sessions.create_root(
        engine.workspace, name="ask", permission_mode=PermissionMode.ASK, first_message="go"
    )
    return created.id


async def approvals_of(engine: Engine, session_id: str) -> list[Approval]:
    return await engine.store.read(lambda: approvals_store.approvals_of(session_id))


async def one_pending(engine: Engine) -> Approval:
    found: list[Approval] = []

    async def look() -> bool:
        found[:] = await service(engine).pending()
        return len(found) == 1

    deadline = asyncio.get_running_loop().time() + 20
    while not await look():
        assert asyncio.get_running_loop().time() < deadline, f"no pending approval: {found}"
        await asyncio.sleep(0.01)
    return found[0]


def told(engine: Engine) -> list[str]:
    """What the model was told about its tool calls, as of its latest request."""
    return [m.content for m in engine.provider.requests[-1].messages if m.role == "tool"]


# --- item 1: a store failure on the approval path pauses the turn -------------------------------


@pytest.mark.parametrize("kind", [Fault.DEFINITE, Fault.INDETERMINATE])
async def test_a_failed_ask_pauses_the_turn_and_resume_asks_again(
    tmp_path: Path, kind: Fault
) -> None:
    """Raising the approval fails: paused, not stranded; resume asks (the same question) and
    the action runs once. Indeterminate: the approval may have landed; the item still ends
    interrupted, and resume finds the same approval again."""
    engine = await make(tmp_path, [call("write_file", path="notes.txt", content="hi"), say("ok")])
    try:
        sid = await ask_session(engine)
        engine.faults.fail(1, kind, label="approval")
        assert await engine.run(sid) == Result.PAUSED
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.INTERRUPTED
        assert not engine.owner.is_running(sid)
        assert not (engine.workspace / "notes.txt").exists()

        engine.owner.start(sid, retry=True)
        approval = await one_pending(engine)
        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert (engine.workspace / "notes.txt").read_text() == "hi"
        (only,) = await approvals_of(engine, sid)
        assert only.id == approval.id and only.status == ApprovalStatus.ALLOWED_ONCE
        assert len(engine.provider.requests) == 2  # no model call repeated
    finally:
        await engine.close()


async def test_a_failed_consume_pauses_and_resume_uses_the_answer_given(tmp_path: Path) -> None:
    """Marking the answer used fails: paused before the effect; resume acts on the answer the
    person already gave (no second question) and runs the action once."""
    engine = await make(tmp_path, [call("write_file", path="notes.txt", content="hi"), say("ok")])
    try:
        sid = await ask_session(engine)
        engine.faults.fail(2, Fault.DEFINITE, label="approval")  # 1: ask, 2: consume
        engine.owner.start(sid)
        approval = await one_pending(engine)
        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.PAUSED
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.INTERRUPTED
        assert not (engine.workspace / "notes.txt").exists()

        assert await engine.run(sid, retry=True) == Result.IDLE
        assert (engine.workspace / "notes.txt").read_text() == "hi"
        (only,) = await approvals_of(engine, sid)
        assert only.status == ApprovalStatus.ALLOWED_ONCE and "consumed_at" in only.resolution
        assert told(engine) == ["wrote 2 characters to notes.txt"]
    finally:
        await engine.close()


async def test_a_store_failure_while_waiting_for_the_answer_pauses_and_resume_asks_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait for an answer given by another process polls the store; a read failing there
    pauses the turn with its item interrupted and the question stale (not awaiting approval
    with nobody waiting, where answering would leave the item running with no worker). Resume
    asks again (the same approval) and the action runs once."""
    engine = await make(tmp_path, [call("write_file", path="notes.txt", content="hi"), say("ok")])
    failing = False
    read = engine.store.read

    async def flaky_read(fn: Any) -> Any:
        if failing:
            raise StoreError("the disk went away")
        return await read(fn)

    try:
        sid = await ask_session(engine)
        engine.owner.start(sid)
        approval = await one_pending(engine)
        monkeypatch.setattr(engine.store, "read", flaky_read)
        failing = True  # the turn's next poll for an answer fails
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.PAUSED
        failing = False
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.INTERRUPTED
        (stale,) = await approvals_of(engine, sid)
        assert stale.status == ApprovalStatus.STALE  # nothing left to answer in the inbox

        engine.owner.start(sid, retry=True)
        again = await one_pending(engine)
        assert again.id == approval.id
        await service(engine).resolve(again.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert (engine.workspace / "notes.txt").read_text() == "hi"
        assert len(engine.provider.requests) == 2
    finally:
        monkeypatch.undo()
        await engine.close()


# --- item 2: after shutdown begins, nothing is written ---------------------------------------


class SlowPreviewTool(Tool):
    """Writes a file; its preview (the dry run shown when asking) waits until released, so a
    test can land a shutdown between the permission check and the approval."""

    name = "slow_write"
    description = "Write a file, slowly previewed."
    parameters = schema({"path": {"type": "string", "description": "The file."}}, ["path"])
    facts = ToolFacts(ToolAccess.WRITE, path_argument="path")

    def __init__(self) -> None:
        self.previewing = asyncio.Event()
        self.release = asyncio.Event()
        self.runs = 0

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult | None:
        self.previewing.set()
        await self.release.wait()
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        self.runs += 1
        (ctx.workspace / str(args["path"])).write_text("written")
        return ToolResult(True, "written")


async def test_a_shutdown_between_the_check_and_the_ask_writes_nothing(tmp_path: Path) -> None:
    tool = SlowPreviewTool()
    engine = await make(tmp_path, [call("slow_write", path="x.txt"), say("never")], [tool])
    try:
        sid = await ask_session(engine)
        engine.owner.start(sid)
        await asyncio.wait_for(tool.previewing.wait(), 20)  # checked: it asks; not raised yet
        (before,) = await engine.items(sid)
        assert before.status == WorkStatus.RUNNING
        commits = engine.faults.commits_seen
        stopping = asyncio.create_task(engine.owner.shutdown())
        await wait_until(lambda: engine.owner.closed)
        tool.release.set()
        await asyncio.wait_for(stopping, 5)
        assert engine.faults.commits_seen == commits  # not one write after shutdown began
        assert await approvals_of(engine, sid) == []
        (after,) = await engine.items(sid)
        assert (after.status, after.reason) == (WorkStatus.RUNNING, None)  # recovery decides
        assert engine.owner.last_result(sid) == Result.OWNER_STOPPED
        assert service(engine).routes == 0
        assert tool.runs == 0
    finally:
        await engine.close()


async def test_an_ask_already_queued_for_the_writer_when_shutdown_begins_writes_nothing(
    tmp_path: Path,
) -> None:
    """The refusal is decided inside the write itself: an ask that reached the writer's queue
    before shutdown began, but runs after, is rolled back."""
    tool = SlowPreviewTool()
    engine = await make(tmp_path, [call("slow_write", path="x.txt"), say("never")], [tool])
    blocker, writing = threading.Event(), threading.Event()

    def hold_the_writer() -> None:
        writing.set()
        blocker.wait()

    try:
        sid = await ask_session(engine)
        engine.owner.start(sid)
        await asyncio.wait_for(tool.previewing.wait(), 20)
        busy = asyncio.ensure_future(engine.store.write(hold_the_writer, label="test_blocker"))
        await wait_until(writing.is_set)
        queue = engine.store._writer._queue  # the one way to see a write waiting for the writer
        tool.release.set()
        await wait_until(lambda: queue.qsize() >= 1)  # the ask's write waits for the writer
        stopping = asyncio.create_task(engine.owner.shutdown())
        await wait_until(lambda: engine.owner.closed)
        blocker.set()
        await busy
        await asyncio.wait_for(stopping, 5)
        assert await approvals_of(engine, sid) == []
        (after,) = await engine.items(sid)
        assert after.status == WorkStatus.RUNNING
        labels = [r.label for r in engine.faults.records]
        assert "approval" not in labels and labels[-1] == "test_blocker"
    finally:
        blocker.set()
        await engine.close()


async def test_asks_and_answers_after_shutdown_are_refused_as_registry_closed(
    tmp_path: Path,
) -> None:
    """Scenario 31's registry part: the blocked wait is released, no route is left, and both a
    later registration and a resolve are refused with "registry closed", writing nothing."""
    engine = await make(tmp_path, [call("write_file", path="n.txt", content="n"), say("x")])
    try:
        sid = await ask_session(engine)
        engine.owner.start(sid)
        approval = await one_pending(engine)
        assert service(engine).routes == 1  # the turn waits on it
        await asyncio.wait_for(engine.owner.shutdown(), 5)
        assert engine.owner.last_result(sid) == Result.OWNER_STOPPED
        assert service(engine).routes == 0
        commits = engine.faults.commits_seen
        with pytest.raises(RegistryClosed) as refused:
            await service(engine).resolve(approval.id, Choice.ONCE)
        assert refused.value.code == ErrorCode.CLOSED
        session = await engine.session(sid)
        check = await service(engine).check(
            session,
            PermissionMode.ASK,
            engine.workspace,
            "write_file",
            '{"path": "m.txt", "content": "m"}',
            tools=ToolRegistry(all_tools()),
        )
        with pytest.raises(RegistryClosed):
            await service(engine).ask(
                session, approval.work_id, "call_later", "write_file", "{}", check
            )
        with pytest.raises(RegistryClosed):
            await service(engine).wait(approval.id)
        assert engine.faults.commits_seen == commits
        (still,) = await approvals_of(engine, sid)
        assert still.status == ApprovalStatus.PENDING  # restart recovery makes it stale
    finally:
        await engine.close()
