"""Depth and run budgets stop a runaway recursive delegation with a sentence the model reads."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.domain.agent_runs import Limits, RunStatus
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest
from fxdesk.providers.scripted import Reply, Step
from tests.engine.agents.harness import (
    WAIT_S,
    Dynamic,
    Script,
    delegate,
    desk,
    tool_results,
)


def recursive(fan_out: int) -> Script:
    """Every level delegates ``fan_out`` copies of its own task, until refused."""

    def step(request: ModelRequest) -> Step:
        results = tool_results(request)
        if not results:
            return delegate(*[("general", "recurse") for _ in range(fan_out)])
        return Reply(f"below me: {results[-1]}")

    return Script([Dynamic(step)], when_done="repeat_last")


async def test_depth_budget_refuses_the_delegation_past_the_limit(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    root = Script([delegate(("general", "recurse")), Reply("Done.")])
    agents = recursive(1)
    limits = Limits(max_tree_depth=2)
    async with desk(data_paths, root, {"recurse": agents}, limits=limits) as app:
        engine = app.engine
        session = await engine.create_session(
            tmp_path, permission_mode=PermissionMode.YOLO, first_message="Go deep"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        runs = await engine.runs(session.id)
        assert sorted(r.depth for r in runs) == [1, 2]
        assert all(r.status is RunStatus.COMPLETED for r in runs)
        refused = [
            t for r in agents.requests for t in tool_results(r) if t.startswith("Not delegated")
        ]
        assert refused == [
            "Not delegated: delegation too deep: a run at depth 3 exceeds the limit of 2; "
            "do this task yourself"
        ]
        (answer,) = tool_results(root.requests[-1])
        assert "delegation too deep" in answer  # it travelled back up to the root


async def test_run_budget_refuses_a_batch_the_tree_cannot_afford(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    root = Script([delegate(("general", "recurse")), Reply("Done.")])
    agents = recursive(3)
    limits = Limits(max_runs_per_tree=3)
    async with desk(data_paths, root, {"recurse": agents}, limits=limits) as app:
        engine = app.engine
        session = await engine.create_session(
            tmp_path, permission_mode=PermissionMode.YOLO, first_message="Fan out"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (run,) = await engine.runs(session.id)
        (first_child_request, *_rest) = agents.requests[1:]
        (refusal,) = tool_results(first_child_request)
        assert refusal == (
            "Not delegated: run budget exhausted: this delegation tree has 1 of 3 runs, "
            "2 left, and the batch asks for 3"
        )
        assert run.status is RunStatus.COMPLETED and run.result is not None
        assert "run budget exhausted" in run.result
