"""Persistent sub-agents the agent manages (issue 13 item 3): spawn, send, wait, close, list,
their approvals in the one inbox, the mode clamp, and their terminal results reaching the
parent's model once at its next step boundary (spec child-sessions §2.15, scenario 60).

A real App, real SQLite, one scripted model per session chosen by the session's name.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxdesk.domain.approvals import Choice
from fxdesk.domain.child_agents import CHILD_RESULTS_KEY
from fxdesk.domain.model import PermissionMode, SessionMode, SessionState
from fxdesk.engine.errors import WorkActive
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, Step
from tests.engine.agents.harness import (
    WAIT_S,
    Dynamic,
    Script,
    call,
    desk,
    eventually,
    tool_results,
    user_texts,
)

CHILD_ID = re.compile(r"Spawned sub-agent ([0-9a-f]{16})")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\n")
    return folder


def child_id_in(request: ModelRequest) -> str:
    for text in reversed(tool_results(request)):
        found = CHILD_ID.search(text)
        if found:
            return found[1]
    raise AssertionError("no spawned sub-agent in the tool results")


def spawn(**arguments: object) -> Reply:
    return Reply(tool_calls=(ScriptedCall("spawn_agent", dict(arguments)),))


def on_child(name: str, **arguments: object) -> Dynamic:
    """A call naming the sub-agent the root spawned earlier in this conversation."""

    def make(request: ModelRequest) -> Step:
        return call(name, agent_id=child_id_in(request), **arguments)

    return Dynamic(make)


def injected(request: ModelRequest) -> list[str]:
    return [t for t in user_texts(request) if t.startswith("[sub-agents]")]


async def test_spawn_send_wait_list_close_through_the_agents_tools(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            spawn(name="reviewer", role="You review code.", task="first job"),
            on_child("wait_for_agent", timeout_seconds=30),
            on_child("send_to_agent", message="second job"),
            on_child("wait_for_agent", timeout_seconds=30),
            call("list_agents"),
            on_child("close_agent"),
            Reply("All done."),
        ]
    )
    # Slow enough that the root's next model call (wait_for_agent) comes first.
    reviewer = Script(
        [Reply("first answer", chunk=3, delay_s=0.1), Reply("second answer", chunk=3, delay_s=0.1)]
    )
    async with desk(data_paths, root, {"reviewer": reviewer}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.AUTO, first_message="Review it"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        results = tool_results(root.requests[-1])
        spawned, first, sent, second, listed, closed = results
        child_id = CHILD_ID.search(spawned)[1]  # type: ignore[index]
        assert "permission mode auto" in spawned
        assert "terminal state completed" in first and "first answer" in first
        assert "second answer" not in first
        assert "Sent." in sent
        assert "second answer" in second and "first answer" not in second
        assert f"{child_id} reviewer: idle" in listed
        assert "archived" in closed and "No new result" in closed

        child = await engine.session(child_id)
        assert child is not None and child.parent_id == session.id
        assert child.mode is SessionMode.PERSISTENT and child.state is SessionState.ARCHIVED
        assert "You review code." in (reviewer.requests[0].system or "")
        # The role's messages came from the parent; the child never saw the conversation.
        assert user_texts(reviewer.requests[1])[-1] == "second job"
        # Everything came back through wait_for_agent: nothing injected besides.
        assert all(injected(r) == [] for r in root.requests)


async def test_a_foreign_or_unknown_child_is_refused_alike(
    data_paths: DataPaths, project: Path
) -> None:
    owner_script = Script([spawn(name="mine", task="job"), Reply("ok")])
    mine = Script([Reply("mine done")])
    found: dict[str, str] = {}

    def at_foreign(name: str, **arguments: object) -> Dynamic:
        return Dynamic(lambda _request: call(name, agent_id=found["id"], **arguments))

    thief = Script(
        [
            at_foreign("send_to_agent", message="hi"),
            call("wait_for_agent", agent_id="0123456789abcdef"),
            at_foreign("close_agent"),
            call("list_agents"),
            Reply("refused"),
        ]
    )
    routes = {"mine": mine, "steal": thief}
    async with desk(data_paths, owner_script, routes) as app:
        engine = app.engine
        owner = await engine.create_session(project, first_message="spawn one")
        await asyncio.wait_for(engine.join(owner.id), WAIT_S)
        found["id"] = foreign = child_id_in(owner_script.requests[-1])

        intruder = await engine.create_session(project, first_message="steal")
        await asyncio.wait_for(engine.join(intruder.id), WAIT_S)
        sent, waited, closed, listed = tool_results(thief.requests[-1])
        assert f"no sub-agent '{foreign}' of yours" in sent
        assert "no sub-agent '0123456789abcdef' of yours" in waited
        assert f"no sub-agent '{foreign}' of yours" in closed
        assert "You have no sub-agents" in listed
        child = await engine.session(foreign)
        assert child is not None and child.state is not SessionState.ARCHIVED
        assert [r for r in mine.requests if "hi" in user_texts(r)] == []


async def test_a_childs_approval_is_in_the_one_inbox_named_and_ask_never_gives_yolo(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            spawn(
                name="writer",
                task="write out.txt",
                permission_mode="yolo",
            ),
            Reply("Spawned it."),
            Reply("Seen the writer's result."),
        ]
    )
    writer = Script(
        [call("write_file", path="out.txt", content="written\n"), Reply("wrote out.txt")]
    )
    async with desk(data_paths, root, {"writer": writer}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Get it written"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (spawned,) = tool_results(root.requests[-1])
        assert "permission mode ask (asked for yolo" in spawned
        child_id = child_id_in(root.requests[-1])
        child = await engine.session(child_id)
        assert child is not None and child.permission_mode is PermissionMode.ASK

        await eventually(lambda: _pending(engine))
        (approval,) = await engine.pending_approvals()
        assert approval.session_id == child_id and approval.root_id == session.id
        assert approval.tool == "write_file"
        named = await engine.session(approval.session_id)
        assert named is not None and named.name == "writer"
        assert not (project / "out.txt").exists()

        # Detach and reparent are refused while the child has active work.
        with pytest.raises(WorkActive):
            await app.sessions.detach(child_id)
        with pytest.raises(WorkActive):
            await app.sessions.reparent(child_id, session.id)

        await engine.answer_approval(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.join(child_id), WAIT_S) == Result.IDLE
        assert (project / "out.txt").read_text() == "written\n"

        # The parent's next model call sees the terminal result, not the tool activity nor the
        # approval (scenario 60's parent-boundary injection).
        await engine.send(session.id, "What happened?")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (text,) = injected(root.requests[-1])
        assert "terminal" in text and "wrote out.txt" in text
        assert "tool_activity" not in text and "approval" not in text
        assert "write_file" not in text

        # Now idle: detach is allowed; the child is no longer the parent's to steer.
        await app.sessions.detach(child_id)
        detached = await engine.session(child_id)
        assert detached is not None and detached.parent_id is None


class AfterParentStep(Provider):
    """``inner``, answering only once the parent made ``calls`` model calls: "the child
    finishes while the parent works" must not depend on which task runs first (on a busy
    machine the child sometimes answered before the parent's second call, and its result was
    rightly injected there: these tests failed about one run in eight)."""

    def __init__(self, inner: Provider, parent: Script, calls: int) -> None:
        self.inner = inner
        self.parent = parent
        self.calls = calls

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        while len(self.parent.requests) < self.calls:  # noqa: ASYNC110 - Script has no event
            await asyncio.sleep(0.01)
        async for event in self.inner.stream(request):
            yield event


async def test_the_parent_sees_a_childs_terminal_result_once_also_after_a_restart(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            spawn(name="worker", task="count the notes"),
            Reply("Started a worker."),
        ]
    )
    worker = AfterParentStep(Script([Reply("there is one note: alpha")]), root, 2)
    async with desk(data_paths, root, {"worker": worker}) as app:
        engine = app.engine
        session = await engine.create_session(project, first_message="Count")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        child_id = child_id_in(root.requests[-1])
        await eventually(lambda: _idle_with_answer(engine, child_id))
        assert all(injected(r) == [] for r in root.requests)  # not before its next step

    # Restarted: the next turn's first model call carries it, once.
    root.steps += [Reply("Noted."), Reply("Still noted.")]
    async with desk(data_paths, root, {"worker": worker}) as app:
        engine = app.engine
        await engine.send(session.id, "Any news?")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        first = root.requests[-1]
        (text,) = injected(first)
        assert "worker" in text and "there is one note: alpha" in text
        assert "terminal state completed" in text

    async with desk(data_paths, root, {"worker": worker}) as app:
        engine = app.engine
        await engine.send(session.id, "And now?")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        later = root.requests[-1]
        # Only the earlier turn's row, in the context: never injected a second time.
        assert injected(later) == injected(first)
        history = await engine.history_page(session.id)
        carried = [e for e in history if CHILD_RESULTS_KEY in e.data]
        assert len(carried) == 1


async def _pending(engine: object) -> bool:
    return bool(await engine.pending_approvals())  # type: ignore[attr-defined]


async def _idle_with_answer(engine: object, child_id: str) -> bool:
    child = await engine.session(child_id)  # type: ignore[attr-defined]
    return child is not None and child.state is SessionState.IDLE and child.last_work_id is not None


async def test_a_result_arriving_while_the_parent_works_is_seen_at_its_next_step(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            spawn(name="quick", task="answer fast"),
            # The parent is still busy (a slow response, then a tool) when the child finishes.
            Reply(
                "thinking it over",
                chunk=2,
                delay_s=0.05,
                tool_calls=call("echo", text="x").tool_calls,
            ),
            Reply("Used its answer."),
        ]
    )
    quick = AfterParentStep(Script([Reply("quick answer")]), root, 2)
    async with desk(data_paths, root, {"quick": quick}) as app:
        engine = app.engine
        session = await engine.create_session(project, first_message="Go")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        assert injected(root.requests[1]) == []
        (text,) = injected(root.requests[2])
        assert "quick answer" in text
        assert len(await engine.items(session.id)) == 1  # within the same turn
