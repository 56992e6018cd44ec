"""MCP tool servers end to end (issue 18 item 3): real servers built with the SDK, run as child
processes over stdio (in the sandbox) and over streamable HTTP, reached by a scripted model
through the real App, its permission check, approvals and live authority."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.mcp import ServerState
from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.owner import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply
from fxdesk.tools.sandbox_probe import sandbox_status
from tests.engine.agents.harness import call
from tests.mcp.harness import (
    Gated,
    desk,
    eventually,
    http_server,
    python_servers,
    status,
    stdio_config,
    tiny_processes,
    until_state,
    write_config,
)


def data(tmp_path: Path) -> DataPaths:
    return DataPaths(tmp_path / "data", "--data-dir")


async def test_an_untrusted_workspace_config_starts_nothing_until_trusted_and_again_once_changed(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "cloned"
    write_config(
        workspace / ".mcp.json", {"tiny": stdio_config(TINY_PID_FILE=str(workspace / "pids"))}
    )
    async with desk(data(tmp_path), Gated([Reply("hi")])) as app:
        session = await app.sessions.create_root(workspace, name="look")
        await until_state(app, "tiny", ServerState.UNTRUSTED)
        # Nothing ran: no process, no pid written, no tool offered to the workspace's sessions.
        assert tiny_processes() == []
        assert not (workspace / "pids").exists()
        assert app.authority.tools_for(session.workspace_id) == app.authority.tool_names

        await app.mcp.trust(workspace)
        running = await until_state(app, "tiny", ServerState.RUNNING)
        assert {t.qualified for t in running.tools} == {
            "mcp__tiny__echo",
            "mcp__tiny__add",
            "mcp__tiny__hang",
        }
        assert "mcp__tiny__echo" in app.authority.tools_for(session.workspace_id)
        assert "mcp__tiny__echo" not in app.authority.tools_for(session.workspace_id + 1)
        assert (workspace / "pids").exists()
        assert running.sandboxed == sandbox_status().available

        # A changed configuration is a new question: the server stops, nothing is offered.
        write_config(workspace / ".mcp.json", {"tiny": stdio_config(CHANGED="1")})
        await app.mcp.reload(workspace)
        await until_state(app, "tiny", ServerState.UNTRUSTED)
        await eventually(lambda: tiny_processes() == [], "the server to end")
        assert app.authority.tools_for(session.workspace_id) == app.authority.tool_names


async def test_a_stdio_server_killed_mid_turn_makes_its_tools_unavailable_and_is_restarted(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    hang_file = workspace / "hanging"
    write_config(
        workspace / ".fxdesk" / "mcp.json", {"tiny": stdio_config(TINY_HANG_FILE=str(hang_file))}
    )
    app_box: list[object] = []

    async def restarted() -> None:
        app = app_box[0]
        app.mcp.release_restarts()  # type: ignore[attr-defined]
        await until_state(app, "tiny", ServerState.RUNNING)  # type: ignore[arg-type]

    model = Gated(
        [
            call("mcp__tiny__hang"),
            call("mcp__tiny__echo", text="while down"),
            (restarted, call("mcp__tiny__echo", text="back")),
            Reply("done"),
        ]
    )
    async with desk(data(tmp_path), model, backoff_s=(0.2,)) as app:
        app_box.append(app)
        await app.sessions.create_root(workspace, name="setup")
        await app.mcp.trust(workspace)
        await until_state(app, "tiny", ServerState.RUNNING)
        session = await app.sessions.create_root(
            workspace, name="kill", permission_mode=PermissionMode.YOLO, first_message="go"
        )
        app.owner.start(session.id)
        await eventually(hang_file.exists, "the hang call to run")
        app.mcp.hold_restarts()  # so the next call surely finds it down
        (server,) = python_servers()
        server.kill()

        assert await asyncio.wait_for(app.owner.join(session.id), 60) == Result.IDLE
        hang, down, back = model.tool_results()
        assert "stopped while this call ran" in hang and "outcome is unknown" in hang
        assert down.startswith("Not run: the tool 'mcp__tiny__echo' is not available")
        assert "MCP server “tiny” is restarting" in down
        assert back == "echo: back"
        final = status(app, "tiny")
        assert final is not None and final.restarts == 1
        log_text = await app.mcp.log_text(final)
        assert log_text.count("tiny MCP server starting") == 2  # its stderr, both runs
        assert "stopped: the connection closed" in log_text


async def test_an_http_server_tool_asks_in_ask_mode_and_a_deny_rule_denies(tmp_path: Path) -> None:
    paths = data(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with http_server(tmp_path) as url:
        write_config(paths.config / "mcp.json", {"web": {"type": "http", "url": url}})
        model = Gated(
            [call("mcp__web__add", a=2, b=3), call("mcp__web__echo", text="no"), Reply("done")]
        )
        async with desk(paths, model) as app:
            web = await until_state(app, "web", ServerState.RUNNING)
            assert web.origin.value == "global"  # the person's own file: no trust asked
            await app.permissions.add_rule(
                PermissionRule("mcp__web__echo", "*", Verdict.DENY, Scope.GLOBAL, Match.GLOB)
            )
            session = await app.sessions.create_root(
                workspace, name="ask", permission_mode=PermissionMode.ASK, first_message="go"
            )
            app.owner.start(session.id)
            pending: list[Approval] = []

            async def asked() -> bool:
                pending[:] = await app.permissions.pending(session.id)
                return bool(pending)

            deadline = asyncio.get_running_loop().time() + 60
            while not await asked():
                assert asyncio.get_running_loop().time() < deadline, "no approval was raised"
                await asyncio.sleep(0.02)
            (approval,) = pending
            assert approval.tool == "mcp__web__add"
            assert approval.detail["arguments"] == {"a": 2, "b": 3}
            await app.permissions.resolve(approval.id, Choice.ONCE)

            assert await asyncio.wait_for(app.owner.join(session.id), 60) == Result.IDLE
            added, echoed = model.tool_results()
            assert added == "5"
            assert echoed.startswith("Not allowed: ")
            assert "denied by the global rule mcp__web__echo" in echoed
