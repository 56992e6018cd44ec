"""Child-sessions scenarios 52–56 and 60 (spec §9) for the persistent sub-agents an agent
manages itself: the same guarantees when the parent is an agent using its tools (through the
engine's port, as the tools reach it) instead of the person.

A real App, real SQLite, one scripted model per session chosen by the session's name.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.agent_runs import AgentRunError
from fxdesk.domain.deliveries import DeliveryKind
from fxdesk.domain.model import SessionState, WorkStatus
from fxdesk.engine.agents.port import CoordinatorPort
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest
from fxdesk.providers.scripted import Reply, ScriptedCall, Stall
from fxdesk.store import control
from fxdesk.tools.agents.port import SpawnRequest
from tests.engine.agents.harness import WAIT_S, ByName, Script, call, desk, eventually, user_texts


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    return folder


def injected(request: ModelRequest) -> list[str]:
    return [t for t in user_texts(request) if t.startswith("[sub-agents]")]


async def parent_of(app: App, project: Path) -> tuple[str, CoordinatorPort]:
    session = await app.engine.create_session(project, name="parent")
    return session.id, CoordinatorPort(app.agents)


async def test_scenario_52_execution_advances_the_revision_and_stales_inspect_cursors(
    data_paths: DataPaths, project: Path
) -> None:
    worker = Script([Reply("one"), Reply("two")])
    async with desk(data_paths, Script([]), {"worker": worker}) as app:
        parent, port = await parent_of(app, project)
        child = await port.spawn_agent(parent, "c1", SpawnRequest(name="worker"))
        first = await app.sessions.inspect(child.id, limit=1)
        assert first.next_cursor is None or first.next_cursor.startswith(f"{first.generation}:")
        revision = first.generation
        await port.send_to_agent(parent, child.id, "first")
        await port.send_to_agent(parent, child.id, "second")
        waited = await port.wait_for_agent(parent, child.id, WAIT_S)
        assert waited.finished and waited.child.state == "idle"
        assert [r.answer for r in waited.results] == ["one", "two"]

        page = await app.sessions.inspect(child.id, limit=1000)
        assert page.generation > revision
        sequences = [e.sequence for e in page.events]
        assert sequences == list(range(1, len(sequences) + 1))
        revisions = [e.revision for e in page.events]
        assert revisions == sorted(revisions)
        record = await app.store.read(lambda: control.load_record(child.id))
        assert record is not None and record.next_event_sequence == len(sequences) + 1
        one = await app.sessions.inspect(child.id, limit=2)
        two = await app.sessions.inspect(child.id, one.next_cursor, limit=2)
        assert [e.sequence for e in one.events] == [1, 2] and two.events[0].sequence == 3
        # The cursor taken before the work ran is stale now.
        stale = f"{revision}:1"
        assert (await app.sessions.inspect(child.id, stale, limit=1)).restart_required


async def test_scenario_53_a_replayed_spawn_returns_the_same_child_after_it_ran(
    data_paths: DataPaths, project: Path
) -> None:
    replay = Script([Reply("ran once")])
    async with desk(data_paths, Script([]), {"replay": replay}) as app:
        parent, port = await parent_of(app, project)
        spec = SpawnRequest(name="replay", task="run once")
        child = await port.spawn_agent(parent, "stable-operation", spec)
        waited = await port.wait_for_agent(parent, child.id, WAIT_S)
        assert waited.finished and waited.child.state == "idle"
        ran = await app.engine.session(child.id)
        assert ran is not None

        again = await port.spawn_agent(parent, "stable-operation", spec)
        assert again.id == child.id  # the identical answer, nothing made or run again
        await asyncio.sleep(0.2)
        assert len(replay.requests) == 1
        after = await app.engine.session(child.id)
        assert after is not None and after.generation == ran.generation
        listed = await port.list_agents(parent)
        assert [c.id for c in listed] == [child.id]
        # Another caller's call with the same id is its own operation: its own child.
        other, _ = await parent_of(app, project)
        theirs = await port.spawn_agent(other, "stable-operation", SpawnRequest(name="replay"))
        assert theirs.id != child.id


async def test_scenario_54_close_archives_first_then_stops_the_live_turn(
    data_paths: DataPaths, project: Path
) -> None:
    blocked = Script([Stall()])
    async with desk(data_paths, Script([]), {"blocked": blocked}) as app:
        parent, port = await parent_of(app, project)
        child = await port.spawn_agent(parent, "c1", SpawnRequest(name="blocked", task="active"))
        await port.send_to_agent(parent, child.id, "queued")
        await eventually(lambda: _requested(blocked))
        assert app.engine.is_running(child.id)

        closed = await port.close_agent(parent, child.id)
        assert closed.child.state == "archived"
        after = await app.engine.session(child.id)
        assert after is not None and after.state is SessionState.ARCHIVED
        assert after.archived_from is SessionState.IDLE  # as the spec observes
        items = await app.engine.items(child.id)
        assert {i.status for i in items} == {WorkStatus.CANCELLED}
        assert not app.engine.is_running(child.id)
        # The close's own result carries the cancellations (its tool result marks them read).
        assert [r.state for r in closed.results] == ["cancelled", "cancelled"]
        assert {r.reason for r in closed.results} == {"closed by its parent"}
        with pytest.raises(AgentRunError, match="closed"):
            await port.send_to_agent(parent, child.id, "more")


async def test_scenario_55_a_close_by_the_former_parent_of_a_detached_child_changes_nothing(
    data_paths: DataPaths, project: Path
) -> None:
    worker = Script([Reply("done")])
    async with desk(data_paths, Script([]), {"worker": worker}) as app:
        parent, port = await parent_of(app, project)
        child = await port.spawn_agent(parent, "c1", SpawnRequest(name="worker", task="job"))
        await port.wait_for_agent(parent, child.id, WAIT_S)
        receipt = await app.sessions.detach(child.id)
        assert receipt.code == "relationship_changed"
        before = await app.engine.session(child.id)
        assert before is not None

        with pytest.raises(AgentRunError) as refused:
            await port.close_agent(parent, child.id)
        assert refused.value.code == "UNKNOWN_CHILD"  # as for any id not the caller's
        after = await app.engine.session(child.id)
        assert after is not None and after.generation == before.generation
        assert after.state is SessionState.IDLE and after.parent_id is None
        assert await port.list_agents(parent) == []


async def test_scenario_56_teardown_leaves_the_childs_unfinished_work_for_recovery(
    data_paths: DataPaths, project: Path
) -> None:
    blocked = Script([Stall()])
    async with desk(data_paths, Script([]), {"blocked": blocked}) as app:
        parent, port = await parent_of(app, project)
        child = await port.spawn_agent(parent, "c1", SpawnRequest(name="blocked", task="active"))
        await port.send_to_agent(parent, child.id, "queued")
        await eventually(lambda: _requested(blocked))
    # Stopped with the turn blocked: nothing written; a process that does not recover sees it.
    looker = App(data_paths, providers=ByName({}, Script([])))
    await looker.start(recover=False, run_handed_off=False)
    try:
        items = await looker.engine.items(child.id)
        assert sorted((i.status, i.reason) for i in items) == [
            (WorkStatus.PENDING, None),
            (WorkStatus.RUNNING, None),
        ]
    finally:
        await looker.stop()
    async with desk(data_paths, Script([]), {"blocked": blocked}) as app:
        items = await app.engine.items(child.id)
        assert WorkStatus.INTERRUPTED in {i.status for i in items}
        assert len(blocked.requests) == 1  # nothing re-ran by itself


async def test_scenario_60_the_parent_boundary_injection_carries_the_terminal_only(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [
        Reply(tool_calls=(ScriptedCall("read_file", {"path": "notes.txt"}),)),
        call("grep", pattern="beta", path="."),
        call("list_dir", path="."),
        call("echo", text="gateway"),
        Reply("gateway child reply"),
    ]
    gateway = Script(steps)
    root = Script(
        [
            Reply(
                tool_calls=(
                    ScriptedCall("spawn_agent", {"name": "gateway", "task": "run the pipeline"}),
                )
            ),
            Reply("Spawned."),
            Reply("Read its result."),
        ]
    )
    async with desk(data_paths, root, {"gateway": gateway}) as app:
        engine = app.engine
        session = await engine.create_session(project, first_message="Run the pipeline child")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        catalog = await engine.catalog()
        (child,) = [s for s in catalog.sessions if s.parent_id == session.id]
        await eventually(lambda: _idle(app, child.id))
        offered = {t.name for t in gateway.requests[0].tools}
        assert {"read_file", "grep", "list_dir", "echo"} <= offered
        assert "emit_signal" not in offered  # never a run: its signals would be refused
        assert [m.name for r in gateway.requests[-1:] for m in r.messages if m.role == "tool"] == [
            "read_file",
            "grep",
            "list_dir",
            "echo",
        ]
        # The person's feed of the child (viewer: the root, a page of 16).
        feed = await app.store.read(lambda: control.deliveries(target_id=session.id, limit=16))
        kinds = [d.kind for d in feed if d.session_id == child.id]
        assert kinds.count(DeliveryKind.TOOL_ACTIVITY) == 8
        assert kinds.count(DeliveryKind.TERMINAL) == 1

        await engine.send(session.id, "And?")
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (text,) = injected(root.requests[-1])
        assert "terminal" in text and "gateway child reply" in text
        assert "tool_activity" not in text and "approval" not in text
        assert "read_file" not in text


async def _requested(script: Script) -> bool:
    return bool(script.requests)


async def _idle(app: App, session_id: str) -> bool:
    session = await app.engine.session(session_id)
    return session is not None and session.state is SessionState.IDLE and session.last_work_id
