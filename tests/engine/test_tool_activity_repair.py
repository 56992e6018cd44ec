"""Tool-activity repair (spec child-sessions §5.3; scenarios 38 and 39; issue 10 item 6).

A tool's effect happened; the commit holding its result and its final activity fails. The
result must not be lost, and the effect must be recorded as ``succeeded``, exactly once, without
running the tool again and without telling the model "outcome unknown".
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.store import history
from fxdesk.store.faults import Fault
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolFacts, ToolRegistry, ToolResult
from fxdesk.tools.base import schema as args_schema
from fxdesk.tools.basic import basic_tools
from tests.engine.harness import Engine, call, say


class MakeFolder(Tool):
    """Creates a folder (the real side effect) and counts how often it did; ``then`` runs right
    after the effect, before the turn saves anything about it."""

    name = "make_folder"
    description = "Create a folder."
    parameters = args_schema(
        {"folder": {"type": "string", "description": "The folder."}}, ["folder"]
    )
    facts = ToolFacts(ToolAccess.WRITE, path_argument="folder")

    def __init__(self) -> None:
        self.effects = 0
        self.then: Callable[[], object] = lambda: None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        (ctx.workspace / str(args["folder"])).mkdir()
        self.effects += 1
        self.then()
        return ToolResult(True, "created")


async def make(tmp_path: Path, tool: MakeFolder) -> Engine:
    return await Engine.create(
        tmp_path,
        [call("make_folder", folder="made"), say("done")],
        tools=ToolRegistry([*basic_tools(), tool]),
    )


def told(engine: Engine) -> list[str]:
    """What the model was told about its tool calls, as of its latest request."""
    return [m.content for m in engine.provider.requests[-1].messages if m.role == "tool"]


async def results(engine: Engine, session_id: str) -> list[tuple[str, bool]]:
    entries = await engine.store.read(lambda: history.page_history(session_id, 0, 1000))
    return [(e.content, bool(e.data.get("ok"))) for e in entries if e.kind.value == "tool_result"]


async def test_scenario_38_every_save_failing_from_the_effect_on_is_repaired_once(
    tmp_path: Path,
) -> None:
    """Scenario 38: from the commit after the effect on, every save fails definitely (the
    *file* sync), so the completion fails too: join → control_failed. The effect happened once.
    Clear the fault, recover twice, start → no_work. Resuming then records the result as it
    was (output "created", phase ``succeeded``), exactly once, and the tool never runs again.

    Adapted: the reference commits its history in a file separate from the ledger, so its
    recovery reads the result from there. Here one SQLite transaction holds both and nothing
    reached the disk; this process kept the result, and resuming writes it."""
    tool = MakeFolder()
    engine = await make(tmp_path, tool)
    try:
        tool.then = lambda: engine.faults.fail(
            engine.faults.commits_seen + 1, Fault.DEFINITE, onward=True
        )
        root = await engine.root_session()
        child = await engine.child(root, "create a folder")
        assert await engine.run(child.id) == Result.CONTROL_FAILED
        assert tool.effects == 1 and (engine.workspace / "made").is_dir()
        assert await engine.deliveries(child.id) == [("tool_activity", "started")]

        engine.faults.clear()
        first = await engine.owner.recover()
        assert (first.work_interrupted, first.work_completed) == (1, 0)
        assert (await engine.owner.recover()).sessions_changed == 0
        assert await engine.run(child.id) == Result.NO_WORK
        assert ("tool_activity", "failed") not in await engine.deliveries(child.id)

        assert await engine.run(child.id, retry=True) == Result.IDLE
        assert tool.effects == 1
        assert told(engine) == ["created"]  # the real result, not "outcome unknown"
        assert len(engine.provider.requests) == 2  # no model call repeated
        assert await results(engine, child.id) == [("created", True)]
        assert await engine.deliveries(child.id) == [
            ("tool_activity", "started"),
            ("tool_activity", "succeeded"),
            ("terminal", "completed"),
        ]
        (item,) = await engine.items(child.id)
        assert item.status == WorkStatus.COMPLETED
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", [Fault.DEFINITE, Fault.INDETERMINATE])
async def test_one_failed_save_of_a_result_is_retried_and_the_turn_goes_on(
    tmp_path: Path, kind: Fault
) -> None:
    """Scenarios 38 (definite) and 39 (indeterminate: it did land) with a fault that passes:
    the result is saved by a retry, exactly once, as ``succeeded``; the turn never pauses."""
    tool = MakeFolder()
    engine = await make(tmp_path, tool)
    try:
        root = await engine.root_session()
        child = await engine.child(root, "create a folder")
        engine.faults.fail(1, kind, label="tool_result")
        assert await engine.run(child.id) == Result.IDLE
        # The failed save, then the retry that saved it (or found it landed).
        assert [r.fault for r in engine.faults.records if r.label == "tool_result"] == [kind, None]
        assert tool.effects == 1
        assert told(engine) == ["created"]
        assert await results(engine, child.id) == [("created", True)]
        assert await engine.deliveries(child.id) == [
            ("tool_activity", "started"),
            ("tool_activity", "succeeded"),
            ("terminal", "completed"),
        ]
    finally:
        await engine.close()


async def test_a_result_that_cannot_be_saved_is_kept_and_written_by_the_resume(
    tmp_path: Path,
) -> None:
    """Only the result's saves fail (every retry too): the turn pauses (interrupted), and the
    resume in this process writes the kept result instead of "outcome unknown"."""
    tool = MakeFolder()
    engine = await make(tmp_path, tool)
    try:
        session = await engine.root_session("create a folder")
        engine.faults.fail(1, Fault.DEFINITE, onward=True, label="tool_result")
        assert await engine.run(session.id) == Result.PAUSED
        attempts = [r for r in engine.faults.records if r.label == "tool_result"]
        assert len(attempts) == 4 and all(r.fault == Fault.DEFINITE for r in attempts)
        (item,) = await engine.items(session.id)
        assert item.status == WorkStatus.INTERRUPTED
        engine.faults.clear()
        assert await engine.run(session.id, retry=True) == Result.IDLE
        assert tool.effects == 1
        assert told(engine) == ["created"]
        assert await engine.deliveries(session.id) == [
            ("tool_activity", "started"),
            ("tool_activity", "succeeded"),
            ("terminal", "completed"),
        ]
    finally:
        await engine.close()
