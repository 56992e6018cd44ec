"""The agent's background tools, end to end: a real ``App``, real bash servers, the permission
layer exactly as for ``run_command``; only the model is scripted (it records each request, so
the tests read what the agent was told).
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.approvals import ApprovalStatus, Choice
from fxdesk.domain.background import Origin, TaskState
from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.facade import Engine, Result, suggested_rules
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider, Step
from tests.helpers import SANDBOX_PYTHON

WAIT_S = 60.0
SERVER = f"{SANDBOX_PYTHON} -m http.server 0 --bind 127.0.0.1"


@asynccontextmanager
async def desk(
    paths: DataPaths, steps: Sequence[Step]
) -> AsyncIterator[tuple[App, ScriptedProvider]]:
    provider = ScriptedProvider(list(steps))
    app = App(paths, providers=FixedResolver(provider))
    await app.start()
    try:
        yield app, provider
    finally:
        provider.release()
        await app.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "index.html").write_text("served by the agent's server\n")
    return folder


def call(name: str, **arguments: object) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name, dict(arguments)),))


def tool_results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool"]


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def pending(engine: Engine, session_id: str) -> bool:
    return bool(await engine.pending_approvals(session_id))


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


async def test_in_ask_mode_starting_a_server_is_asked_then_the_agent_lists_reads_and_stops_it(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [
        call("start_background", command=SERVER, expect_url=True),
        call("list_background"),
        call("read_background_log", task=1),
        call("stop_background", task="#1"),
        Reply("Served and stopped."),
    ]
    async with desk(data_paths, steps) as (app, model):
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Serve the project"
        )
        await eventually(lambda: pending(engine, session.id))
        (approval,) = await engine.pending_approvals(session.id)
        assert (approval.tool, approval.label) == ("start_background", SERVER)
        assert approval.runs_command and approval.detail["command"] is True
        assert engine.background_tasks(session.id) == []  # nothing runs before the answer

        await engine.answer_approval(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        started, listed, log_text, stopped = tool_results(model.requests[-1])
        (task,) = engine.background_tasks(session.id)
        assert task.origin is Origin.AGENT and task.state is TaskState.STOPPED
        assert task.url is not None and task.url.startswith("http://127.0.0.1:")
        assert started.startswith(f"Started #1 running: `{SERVER}` at {task.url}")
        assert listed.startswith(f"#1 running: `{SERVER}` at {task.url}, up ")
        assert (
            f"Serving HTTP on 127.0.0.1 port {task.url.rsplit(':', 1)[1].rstrip('/')}" in log_text
        )
        assert stopped == "Command #1 stopped."
        with pytest.raises(OSError):
            await asyncio.to_thread(fetch, task.url)


async def test_a_deny_rule_for_commands_denies_start_background_even_in_yolo_mode(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [call("start_background", command="sleep 600"), Reply("Could not.")]
    async with desk(data_paths, steps) as (app, model):
        engine = app.engine
        await engine.add_rule(
            PermissionRule("run_command", "sleep *", Verdict.DENY, Scope.GLOBAL, Match.GLOB),
            "no sleeping",
        )
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Sleep in the background"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (result,) = tool_results(model.requests[-1])
        assert "denied" in result and "sleep *" in result
        assert engine.background_tasks(session.id) == []  # nothing was started
        assert await engine.pending_approvals() == []


async def test_in_auto_mode_a_background_server_is_asked_about_for_its_network(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [call("start_background", command="sleep 600"), Reply("Denied, fine.")]
    async with desk(data_paths, steps) as (app, _model):
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.AUTO, first_message="Sleep in the background"
        )
        await eventually(lambda: pending(engine, session.id))
        (approval,) = await engine.pending_approvals(session.id)
        assert approval.tool == "start_background"
        assert "network" in approval.detail["reason"]
        # A background task outlives the call: "run outside the sandbox, once" is no choice.
        assert not approval.offers_outside
        with pytest.raises(ValueError, match="outside"):
            await engine.answer_approval(approval.id, Choice.ONCE_UNSANDBOXED)
        answered = await engine.answer_approval(approval.id, Choice.DENY)
        assert answered.status is ApprovalStatus.DENIED
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        assert engine.background_tasks(session.id) == []


async def test_the_same_server_is_not_started_twice_and_always_allow_makes_a_command_rule(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [
        call("start_background", command="sleep 600"),
        call("start_background", command="sleep 600"),
        call("read_background_log", task=9),
        Reply("One is enough."),
    ]
    async with desk(data_paths, steps) as (app, model):
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Sleep"
        )
        await eventually(lambda: pending(engine, session.id))
        (approval,) = await engine.pending_approvals(session.id)
        (rule,) = suggested_rules(approval, Choice.SESSION)
        assert (rule.tool, rule.pattern, rule.match) == ("run_command", "sleep 600", Match.EXACT)
        await engine.answer_approval(approval.id, Choice.SESSION)
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE

        first, second, missing = tool_results(model.requests[-1])
        assert first.startswith("Started #1 running: `sleep 600`")
        assert second.startswith("Not started again: the same command already runs")
        assert "#1 running" in second
        assert missing == "no background task #9 in this session"
        assert [t.ref for t in engine.background_tasks(session.id)] == ["#1"]
        await engine.stop_background("#1", session.id)


async def test_a_command_that_fails_at_once_is_reported_with_its_exit_code(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [call("start_background", command="echo broken >&2; exit 3"), Reply("It failed.")]
    async with desk(data_paths, steps) as (app, model):
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Start it"
        )
        assert await asyncio.wait_for(engine.join(session.id), WAIT_S) == Result.IDLE
        (result,) = tool_results(model.requests[-1])
        (task,) = engine.background_tasks(session.id)
        if task.state.running:  # the monitor had not looked yet when the tool returned
            pytest.fail(f"the tool returned before the command's end was seen: {result}")
        assert result.startswith("#1 failed (exit code 3): `echo broken >&2; exit 3`")
        assert "read_background_log with task 1" in result


def test_the_four_tools_are_offered_with_their_schemas() -> None:
    """The schema the model is given names each argument it may pass."""
    from fxdesk.tools.background.agent_tools import background_tools

    schemas = {tool.name: tool.parameters for tool in background_tools()}
    assert sorted(schemas) == [
        "list_background",
        "read_background_log",
        "start_background",
        "stop_background",
    ]
    assert json.dumps(schemas["start_background"]["required"]) == '["command"]'
