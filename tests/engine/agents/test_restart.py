"""SIGKILL during a background run; the next start interrupts it, writes its completion once,
and re-runs nothing (spec agent-coordinator §3.8, §4.12; scenario 17)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.agent_inbox import EventKind, EventStatus
from fxdesk.domain.agent_runs import RunStatus
from fxdesk.domain.model import PermissionMode, WorkKind, WorkStatus
from fxdesk.engine.facade import Engine
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply
from fxdesk.store.faults import Fault, FaultInjector
from tests.engine.agents.harness import ByName, Script, delegate, eventually
from tests.helpers import REPO, killed_when_running


def run_until_running(data_paths: DataPaths, project: Path) -> tuple[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    root_id, run_id = killed_when_running(
        "tests.engine.agents.kill_host", str(data_paths.root), str(project), env=env
    )
    return root_id, run_id


async def test_scenario_17_sigkill_during_a_background_run_then_restart_interrupts_it_once(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    root_id, run_id = await asyncio.to_thread(run_until_running, data_paths, project)

    model = Script([Reply("should never be called")])
    for _ in range(2):  # a second start finds nothing more to do
        app = App(data_paths, providers=ByName({}, model))
        await app.start(background=False)
        try:
            engine = app.engine
            (run,) = await engine.runs(root_id)
            assert run.id == run_id and run.status is RunStatus.INTERRUPTED
            assert "fxdesk stopped while this run was active" in (run.error or "")
            view = await engine.inbox(root_id)
            (completion,) = [e for e in view.events if e.kind is EventKind.COMPLETION]
            assert completion.status is EventStatus.PENDING
            assert not completion.requires_continuation  # nothing re-runs by itself
            assert completion.payload["status"] == "interrupted"
            assert (view.counters.pending, view.counters.reserved) == (1, 0)
            await asyncio.sleep(0.3)
            assert not engine.is_running(root_id)
            assert model.requests == []
            items = await engine.items(root_id)
            assert [i.kind for i in items] == [WorkKind.PROMPT]
            assert run.child_session_id is not None
            (child_item,) = await engine.items(run.child_session_id)
            assert child_item.status is WorkStatus.INTERRUPTED
        finally:
            await app.stop()

    # The root's next turn (the person writes) sees the interruption, delivered once.
    model.steps = [Reply("I see it was interrupted.")]
    app = App(data_paths, providers=ByName({}, model))
    await app.start(background=False)
    try:
        engine = app.engine
        await engine.send(root_id, "What happened to the sub-agent?")
        await asyncio.wait_for(engine.join(root_id), 60)
        (request,) = model.requests
        seen = "\n".join(m.content for m in request.messages if m.role == "user")
        assert f"Run {run_id} (general) interrupted" in seen
        view = await engine.inbox(root_id)
        assert all(e.status is EventStatus.CONSUMED for e in view.events)
        assert (view.counters.pending, view.counters.reserved) == (0, 0)
    finally:
        await app.stop()


async def test_a_run_whose_sub_agent_finished_before_the_stop_keeps_its_result(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Killed between the sub-agent's last commit and the run's (here: the run's commit
    fails), the next start closes the run with the answer the child's history proves, not
    as interrupted: the result is not lost, and the root is not continued by recovery alone.
    Found by the crash harness (tests/reliability)."""
    project = tmp_path / "project"
    project.mkdir()
    faults = FaultInjector()
    faults.fail(1, Fault.DEFINITE, label="run_terminal")
    root = Script([delegate(("general", "bg task"), mode="background"), Reply("Started.")])
    child = Script([Reply("The answer is 42.")])
    app = App(data_paths, faults=faults, providers=ByName({"bg task": child}, root))
    await app.start(background=False)
    try:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Go"
        )
        await eventually(lambda: _child_done(engine, session.id))
        (run,) = await engine.runs(session.id)
        assert run.status is RunStatus.RUNNING  # its terminal commit failed
    finally:
        await app.stop()

    model = Script([Reply("should never be called")])
    app = App(data_paths, providers=ByName({}, model))
    await app.start(background=False)
    try:
        engine = app.engine
        (run,) = await engine.runs(session.id)
        assert run.status is RunStatus.COMPLETED and run.result == "The answer is 42."
        view = await engine.inbox(session.id)
        (completion,) = [e for e in view.events if e.kind is EventKind.COMPLETION]
        assert completion.payload["status"] == "completed"
        assert not completion.requires_continuation  # recovery starts nothing
        await asyncio.sleep(0.3)
        assert model.requests == []
    finally:
        await app.stop()


async def _child_done(engine: Engine, root_id: str) -> bool:
    runs = await engine.runs(root_id)
    if not runs or runs[0].child_session_id is None or engine.is_running(root_id):
        return False
    items = await engine.items(runs[0].child_session_id)
    return bool(items) and items[0].status is WorkStatus.COMPLETED


async def test_resume_delivers_a_completion_the_stop_kept_from_its_root(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """A background run finishes and its completion asks to continue the root, but fxdesk
    stops (here: the delivery's commit fails) before the root got it. The next start runs
    nothing by itself; the person's resume delivers it and the root continues. It used to wait
    for ever (found by the crash harness, tests/reliability)."""
    project = tmp_path / "project"
    project.mkdir()
    faults = FaultInjector()
    faults.fail(1, Fault.DEFINITE, onward=True, label="inbox_delivery")
    root = Script([delegate(("general", "bg task"), mode="background"), Reply("Started.")])
    child = Script([Reply("The answer is 42.")])
    app = App(data_paths, faults=faults, providers=ByName({"bg task": child}, root))
    await app.start(background=False)
    try:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Go"
        )

        async def finished() -> bool:
            runs = await engine.runs(session.id)
            return bool(runs) and runs[0].status is RunStatus.COMPLETED

        await eventually(finished)
        await eventually(lambda: _idle(engine, session.id))
    finally:
        await app.stop()

    model = Script([Reply("I read the result.")])
    app = App(data_paths, providers=ByName({}, model))
    await app.start(background=False)
    try:
        engine = app.engine
        await asyncio.sleep(0.3)
        assert model.requests == []  # nothing runs by itself at start
        (event,) = (await engine.inbox(session.id)).events
        assert event.requires_continuation and event.status is EventStatus.PENDING
        engine.resume(session.id)
        await eventually(lambda: _consumed(engine, session.id))
        await asyncio.wait_for(engine.join(session.id), 60)
        (request,) = model.requests
        assert "The answer is 42." in "\n".join(m.content for m in request.messages)
    finally:
        await app.stop()


async def _idle(engine: Engine, session_id: str) -> bool:
    return not engine.is_running(session_id)


async def _consumed(engine: Engine, root_id: str) -> bool:
    return all(e.status is EventStatus.CONSUMED for e in (await engine.inbox(root_id)).events)
