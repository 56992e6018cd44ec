"""Foreground delegation end to end: a real App, real SQLite, one scripted model per session."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxdesk.domain.agent_runs import RunMode, RunStatus
from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply
from tests.engine.agents.harness import (
    WAIT_S,
    Script,
    call,
    delegate,
    desk,
    eventually,
    tool_results,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\n")
    return folder


async def test_scenario_2_a_foreground_batch_of_two_returns_results_in_request_order(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [delegate(("general", "first task"), ("explorer", "second task")), Reply("Both done.")]
    )
    first = Script([Reply("answer one")])
    second = Script([call("read_file", path="notes.txt"), Reply("answer two: alpha")])
    async with desk(data_paths, root, {"first task": first, "second task": second}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Split the work"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        (result,) = tool_results(root.requests[-1])
        assert result.index("answer one") < result.index("answer two: alpha")
        assert "[1] general" in result and "[2] explorer" in result
        # One batch; listed by acceptance time, so put back in request order.
        runs = sorted(await engine.runs(session.id), key=lambda r: r.group_index)
        assert [r.agent_id for r in runs] == ["general", "explorer"]
        assert all(r.mode is RunMode.FOREGROUND for r in runs)
        assert all(r.status is RunStatus.COMPLETED for r in runs)
        assert [r.result for r in runs] == ["answer one", "answer two: alpha"]
        assert runs[1].tool_calls == 1 and runs[1].iterations == 2
        assert runs[0].id != runs[1].id and runs[0].group_id == runs[1].group_id
        # Each run is a one-off child session of the caller, in the tree.
        catalog = await engine.catalog()
        children = {s.id: s for s in catalog.sessions if s.parent_id == session.id}
        assert {r.child_session_id for r in runs} == set(children)
        assert all(c.mode is SessionMode.ONE_OFF for c in children.values())
        # The explorer's definition narrows its tools and its role prompt is its system text.
        assert "read-only explorer" in (second.requests[0].system or "")
        assert {t.name for t in second.requests[0].tools} == {
            "read_file",
            "list_dir",
            "glob",
            "grep",
        }
        assert "general-purpose helper" in (first.requests[0].system or "")
        view = await engine.inbox(session.id)
        assert view.events == [] and (view.counters.pending, view.counters.reserved) == (0, 0)


async def test_a_foreground_child_needing_approval_asks_in_the_one_inbox_while_the_parent_waits(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [delegate(("general", "quiet task"), ("general", "writing task")), Reply("All done.")]
    )
    quiet = Script([Reply("quiet answer")])
    writer = Script(
        [call("write_file", path="out.txt", content="written\n"), Reply("wrote out.txt")]
    )
    async with desk(data_paths, root, {"quiet task": quiet, "writing task": writer}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Write it"
        )
        await eventually(lambda: _pending(engine))
        (approval,) = await engine.pending_approvals()
        child = await engine.session(approval.session_id)
        assert child is not None and child.parent_id == session.id
        assert child.name.startswith("general: writing task")
        assert child.permission_mode is PermissionMode.ASK  # never more than its caller
        assert (approval.tool, approval.root_id) == ("write_file", session.id)
        assert engine.is_running(session.id)  # the parent waits
        runs = await engine.runs(session.id)
        assert {r.status for r in runs} == {RunStatus.COMPLETED, RunStatus.RUNNING}
        assert not (project / "out.txt").exists()

        await engine.answer_approval(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (result,) = tool_results(root.requests[-1])
        assert result.index("quiet answer") < result.index("wrote out.txt")
        assert (project / "out.txt").read_text() == "written\n"


async def _pending(engine: object) -> bool:
    return bool(await engine.pending_approvals())  # type: ignore[attr-defined]


LOOPER = """---
id: looper
description: Never stops calling tools.
max_iterations: 3
---
You look at notes.txt, again and again.
"""


async def test_a_definitions_max_iterations_bounds_the_childs_model_calls(
    data_paths: DataPaths, project: Path
) -> None:
    (project / ".fxdesk" / "agents").mkdir(parents=True)
    (project / ".fxdesk" / "agents" / "looper.md").write_text(LOOPER)
    root = Script([delegate(("looper", "loop task")), Reply("It gave up.")])
    # A child that would loop forever: every answer is another tool call.
    looper = Script([call("read_file", path="notes.txt")], when_done="repeat_last")
    async with desk(data_paths, root, {"loop task": looper}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Loop"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        assert len(looper.requests) == 3  # the definition's 3, not the engine's 25
        (run,) = await engine.runs(session.id)
        assert (run.agent_id, run.status) == ("looper", RunStatus.FAILED)
        assert run.finished_at_ms is not None
        assert (run.iterations, run.tool_calls) == (3, 3)
        assert run.error == "max_iterations: 3 model calls (the limit) without a final answer"
        # The child session's config carries the limit; its one task failed.
        assert run.child_session_id is not None
        child = await engine.session(run.child_session_id)
        assert child is not None and child.config["max_iterations"] == 3
        # The caller's model got the run's result: failed, and why.
        assert len(root.requests) == 2
        (result,) = tool_results(root.requests[1])
        assert result.startswith(f"[1] looper (run {run.id}): failed in ")
        assert ", 3 tool calls\n" in result
        assert result.endswith("max_iterations: 3 model calls (the limit) without a final answer")
