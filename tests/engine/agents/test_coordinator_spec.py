"""Agent-coordinator spec §6.1 scenarios 1, 3 and 4 through the real App (the store-level
versions are in tests/store/test_agent_runs.py under the same numbers).

The spec's fixture: one agent, ``researcher``, whose provider is an unreachable OpenAI-style
endpoint, so every real execution fails quickly; a standard request is target ``researcher``,
prompt ``work``, foreground, at most 1 iteration, a 5 s timeout.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxdesk.domain.agent_runs import RunMode, RunStatus
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest
from fxdesk.providers.openai_compat import OpenAICompatProvider
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
    tool_results,
)
from tests.llmock_server import free_port

RESEARCHER = """---
id: researcher
description: Researches a question.
max_iterations: 1
timeout: 5s
---
You research.
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".fxdesk" / "agents").mkdir(parents=True)
    (folder / ".fxdesk" / "agents" / "researcher.md").write_text(RESEARCHER)
    return folder


@pytest.fixture
async def unreachable() -> AsyncIterator[OpenAICompatProvider]:
    """A real OpenAI-style provider whose endpoint is a local port nobody listens on."""
    provider = OpenAICompatProvider(
        base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="test-key", connect_timeout_s=5
    )
    try:
        yield provider
    finally:
        await provider.close()


async def test_scenario_1_a_foreground_run_is_persisted_with_its_terminal_state(
    data_paths: DataPaths, project: Path, unreachable: OpenAICompatProvider
) -> None:
    root = Script([delegate(("researcher", "work")), Reply("It failed; I will do it myself.")])
    async with desk(data_paths, root, {"researcher: work": unreachable}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Research it"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        (listed,) = await engine.runs(session.id)
        run = await engine.agent_run(listed.id)  # get_run on its id
        assert (run.agent_id, run.mode, run.status) == (
            "researcher",
            RunMode.FOREGROUND,
            RunStatus.FAILED,
        )
        assert run.status.terminal and run.finished_at_ms is not None
        assert run.started_at_ms is not None and run.finished_at_ms >= run.started_at_ms
        assert run.error and run.error.startswith("provider_failed: connection: cannot reach")
        # One result, for the caller's model: failed, and why.
        (result,) = tool_results(root.requests[1])
        assert result.startswith(f"[1] researcher (run {run.id}): failed in ")
        assert run.error in result
        # A foreground run reports to its caller, not to the inbox.
        view = await engine.inbox(session.id)
        assert view.events == [] and (view.counters.pending, view.counters.reserved) == (0, 0)


async def test_scenario_3_a_session_of_another_root_cannot_read_or_cancel_a_run(
    data_paths: DataPaths, project: Path
) -> None:
    """Adapted: the agent's read is ``list_runs`` (there is no get_run tool); a foreign run id
    is refused by ``cancel_run`` exactly like an id that does not exist."""
    stranger = str(uuid.uuid4())
    target: dict[str, str] = {}

    def cancel_foreign(_request: ModelRequest) -> Step:
        return call("cancel_run", run_id=target["id"], reason="not yours")

    dialog = Script([delegate(("general", "slow work"), mode="background"), Reply("Started.")])
    other = Script(
        [
            Dynamic(cancel_foreign),
            call("cancel_run", run_id=stranger, reason="no such run"),
            call("list_runs"),
            Reply("Nothing of mine."),
        ]
    )
    routes = {"slow work": Script([Stall()]), "other dialog": other}
    async with desk(data_paths, dialog, routes) as app:
        engine = app.engine
        mine = await engine.create_session(
            project, name="dialog", permission_mode=PermissionMode.YOLO, first_message="Go"
        )
        assert await asyncio.wait_for(engine.join(mine.id), WAIT_S) == Result.IDLE
        (run,) = await engine.runs(mine.id)
        await eventually(lambda: _status(engine, run.id, RunStatus.RUNNING))
        target["id"] = run.id

        theirs = await engine.create_session(
            project, name="other dialog", permission_mode=PermissionMode.YOLO, first_message="Go"
        )
        assert await asyncio.wait_for(engine.join(theirs.id), WAIT_S) == Result.IDLE
        foreign = last_tool_result(other.requests[1])
        unknown = last_tool_result(other.requests[2])
        assert foreign == f"no agent run '{run.id}' in this session"
        assert foreign.replace(run.id, "ID") == unknown.replace(stranger, "ID")
        assert last_tool_result(other.requests[3]) == "No sub-agent runs."
        # Nothing changed for the run or its root.
        assert (await engine.agent_run(run.id)).status is RunStatus.RUNNING
        assert await engine.runs(theirs.id) == []
        view = await engine.inbox(mine.id)
        assert view.events == [] and (view.counters.pending, view.counters.reserved) == (0, 1)
        assert started_runs(last_tool_result(dialog.requests[1])) == {"slow work": run.id}


async def test_scenario_4_an_unknown_target_is_refused_before_anything_is_persisted(
    data_paths: DataPaths, project: Path
) -> None:
    root = Script([delegate(("missing", "work")), Reply("No such agent; doing it myself.")])
    async with desk(data_paths, root) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Research it"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        # The model sees the refusal (the agent error, not an admission refusal)...
        assert last_tool_result(root.requests[1]) == (
            "Not delegated: no agent 'missing' (known: explorer, general, researcher)"
        )
        # ...and nothing was written: no run, no child session, no inbox event.
        assert await engine.runs(session.id) == []
        catalog = await engine.catalog()
        assert [s.id for s in catalog.sessions] == [session.id]
        view = await engine.inbox(session.id)
        assert view.events == [] and (view.counters.pending, view.counters.reserved) == (0, 0)


async def _status(engine: object, run_id: str, status: RunStatus) -> bool:
    run = await engine.agent_run(run_id)  # type: ignore[attr-defined]
    return bool(run.status is status)


async def test_scenario_12_an_empty_batch_or_an_empty_target_is_refused_and_writes_nothing(
    data_paths: DataPaths, project: Path
) -> None:
    """Adapted: one ``delegate`` tool takes the mode as an argument, so "background on the
    foreground path" (FG_NOT_FOREGROUND) has no counterpart; the empty batch and the empty
    target are refused by the tool, before the coordinator, with what the model must fix."""
    root = Script(
        [
            call("delegate", requests=[], mode="foreground"),
            delegate(("researcher", "work"), ("  ", "work")),
            Reply("Nothing delegated."),
        ]
    )
    async with desk(data_paths, root) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Delegate badly"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        assert last_tool_result(root.requests[1]) == (
            "requests must be a non-empty list of {agent, task}"
        )
        assert last_tool_result(root.requests[2]) == "request 2: agent is required (an agent id)"
        assert await engine.runs(session.id) == []  # the first, valid request was not run either
        catalog = await engine.catalog()
        assert [s.id for s in catalog.sessions] == [session.id]
