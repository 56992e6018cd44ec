"""Background delegation, the inbox, signals and cancellation end to end (real App, SQLite)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fxdesk.domain.agent_inbox import EventKind, EventStatus
from fxdesk.domain.agent_runs import Limits, RunMode, RunStatus
from fxdesk.domain.model import PermissionMode, WorkKind
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest
from fxdesk.providers.scripted import Reply, Stall, Step
from tests.engine.agents.harness import (
    WAIT_S,
    Dynamic,
    Script,
    call,
    delegate,
    desk,
    eventually,
    last_tool_result,
    started_runs,
    user_texts,
)

WATCHER = """---
id: watcher
description: Watches and raises alerts.
signals: queue
---
You watch things and raise signals when they go wrong.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".fxdesk" / "agents").mkdir(parents=True)
    (folder / ".fxdesk" / "agents" / "watcher.md").write_text(WATCHER)
    return folder


def cancel_the_slow_one(request: ModelRequest) -> Step:
    run_id = started_runs(last_tool_result(request))["slow task"]
    return call("cancel_run", run_id=run_id, reason="not needed")


async def test_root_delegates_three_background_runs_signal_cancel_complete_then_wakes(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            delegate(
                ("watcher", "watch task"),
                ("general", "slow task"),
                ("general", "quick task"),
                mode="background",
            ),
            Dynamic(cancel_the_slow_one),
            Reply("Waiting for my sub-agents."),
            Reply("Noted."),
        ],
        when_done="repeat_last",
    )
    watcher = Script(
        [
            call(
                "emit_signal",
                key="err-rate",
                severity="warning",
                summary="error rate 7%",
                details={"current": 0.071},
                dedupe_key="svc-a:err",
            ),
            Reply("watched: all quiet after the spike"),
        ]
    )
    slow = Script([Stall()])
    quick = Script([Reply("quick result")])
    routes = {"watch task": watcher, "slow task": slow, "quick task": quick}
    async with desk(data_paths, root, routes) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Fan out"
        )

        async def settled() -> bool:
            runs = await engine.runs(session.id)
            view = await engine.inbox(session.id)
            return (
                len(runs) == 3
                and all(r.status.terminal for r in runs)
                and view.counters.pending == 0
                and not engine.is_running(session.id)
            )

        await eventually(settled)
        runs = {r.task: r for r in await engine.runs(session.id)}
        assert {t: r.status for t, r in runs.items()} == {
            "watch task": RunStatus.COMPLETED,
            "slow task": RunStatus.CANCELLED,
            "quick task": RunStatus.COMPLETED,
        }
        assert all(r.mode is RunMode.BACKGROUND for r in runs.values())
        assert all(r.completion_slot_reserved for r in runs.values())
        # The signal is listed on its run (captured after execution, not before).
        view = await engine.inbox(session.id)
        (signal,) = [e for e in view.events if e.kind is EventKind.SIGNAL]
        assert runs["watch task"].signal_ids == (signal.id,)
        completions = [e for e in view.events if e.kind is EventKind.COMPLETION]
        assert len(completions) == 3
        assert all(e.status is EventStatus.CONSUMED for e in view.events)
        assert (view.counters.pending, view.counters.reserved) == (0, 0)

        # The root woke with continuation(s) from the inbox and saw everything.
        items = await engine.items(session.id)
        continuations = [i for i in items if i.kind is WorkKind.CONTINUATION]
        assert continuations and all(i.source_id == "inbox" for i in continuations)
        seen = "\n".join(t for r in root.requests for t in user_texts(r))
        assert "error rate 7%" in seen and '"current": 0.071' in seen
        assert f"Run {runs['quick task'].id} (general) completed: quick result" in seen
        assert f"Run {runs['slow task'].id} (general) cancelled" in seen
        assert f"Run {runs['watch task'].id} (watcher) completed" in seen
        # The cancelled run's child session stopped too.
        slow_child = runs["slow task"].child_session_id
        assert slow_child is not None
        (slow_item,) = await engine.items(slow_child)
        assert slow_item.status.terminal


async def test_scenario_5_a_full_inbox_refuses_admission_with_a_message_the_model_sees(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            delegate(("general", "slow task"), mode="background"),
            delegate(("general", "another task"), mode="background"),
            Reply("Inbox full, fine."),
        ]
    )
    slow = Script([Stall()])
    async with desk(data_paths, root, {"slow task": slow}, limits=Limits(max_inbox=1)) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Two please"
        )
        await eventually(lambda: _turn_done(root, 3))
        refused = last_tool_result(root.requests[2])
        assert refused.startswith("Not delegated: inbox full: 1 of 1 slots")
        (run,) = await engine.runs(session.id)
        view = await engine.inbox(session.id)
        assert (view.counters.pending, view.counters.reserved) == (0, 1)
        # The person cancels it: no continuation, the reservation is released.
        assert await engine.cancel_run(run.id[:8])
        await eventually(lambda: _reserved(engine, session.id, 0))
        view = await engine.inbox(session.id)
        (completion,) = view.events
        assert completion.status is EventStatus.CONSUMED
        assert not await engine.cancel_run(run.id)  # a second cancel changes nothing
        await asyncio.wait_for(engine.join(session.id), WAIT_S)
        items = await engine.items(session.id)
        assert [i.kind for i in items] == [WorkKind.PROMPT]  # never woken by the person's cancel


async def test_scenario_7_a_background_batch_larger_than_the_run_limit_is_refused(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script(
        [
            delegate(*[("general", f"task {i}") for i in range(3)], mode="background"),
            Reply("Too many."),
        ]
    )
    limits = Limits(max_concurrent_runs=2)
    async with desk(data_paths, root, limits=limits) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Three please"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        assert last_tool_result(root.requests[1]) == (
            "Not delegated: batch of 3 is larger than the concurrent-run limit of 2"
        )
        assert await engine.runs(session.id) == []


async def _turn_done(script: Script, calls: int) -> bool:
    return len(script.requests) >= calls


async def _reserved(engine: object, session_id: str, wanted: int) -> bool:
    view = await engine.inbox(session_id)  # type: ignore[attr-defined]
    return bool(view.counters.reserved == wanted)
