"""An external agent's file and terminal requests served by fxdesk's own tools, checks and
background runtime (``fxdesk/engine/acp_host.py``), with the test agent as a real process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.approvals import Choice
from fxdesk.domain.background import Origin
from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.engine import changes
from fxdesk.engine.owner import Result
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.store import history
from tests.engine.acp_support import (
    TIMEOUT,
    agent_provider,
    finished,
    make,
    opened,
    pending_approval,
    rows,
    start,
)


async def test_an_allowed_edit_writes_and_reads_through_fxdesks_file_tools(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "fswrite notes.txt", PermissionMode.ASK)
        approval = await pending_approval(engine)
        assert approval.tool == "acp:edit"  # type: ignore[attr-defined]
        assert engine.permissions is not None
        await engine.permissions.resolve(approval.id, Choice.ONCE)  # type: ignore[attr-defined]
        assert await finished(engine, sid) == Result.IDLE
        content = "notes.txt written through the client\n"
        assert (engine.workspace / "notes.txt").read_text() == content
        found = await rows(engine, sid)
        native = [(kind, name) for kind, _, name in found if name in ("write_file", "read_file")]
        assert native == [
            ("tool_call", "write_file"),
            ("tool_result", "write_file"),
            ("tool_call", "read_file"),
            ("tool_result", "read_file"),
        ]
        assert ("assistant", f"read back: {content!r}", None) in found
        assert await engine.permissions.pending() == []  # the agent's allow was not asked again
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        touched = changes.touched_by(entries, engine.workspace)
        assert list(touched) == ["notes.txt"]  # in the session's Changes


async def test_a_write_outside_the_workspace_is_refused_to_the_agent(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "fsput ../outside.txt", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.IDLE
        assert not (tmp_path / "outside.txt").exists()
        found = await rows(engine, sid)
        said = [content for kind, content, _ in found if kind == "assistant" and content]
        assert said[-1].startswith("fxdesk refused:"), said
        results = [c for kind, c, name in found if kind == "tool_result" and name == "write_file"]
        assert len(results) == 1 and "outside" in results[0].lower(), results


async def test_a_write_the_agent_did_not_ask_about_is_an_approval_of_fxdesks_own(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "fsput later.txt", PermissionMode.ASK)
        approval = await pending_approval(engine)
        assert approval.tool == "write_file"  # type: ignore[attr-defined]
        assert not (engine.workspace / "later.txt").exists()
        assert engine.permissions is not None
        await engine.permissions.resolve(approval.id, Choice.ONCE)  # type: ignore[attr-defined]
        assert await finished(engine, sid) == Result.IDLE
        assert (engine.workspace / "later.txt").exists()


@asynccontextmanager
async def acp_app(data_paths: DataPaths, tmp_path: Path) -> AsyncIterator[App]:
    """A real App (real background runtime, in the sandbox where the machine has one) whose
    sessions run the test agent."""
    app = App(data_paths, providers=FixedResolver(agent_provider(tmp_path)))
    await app.start()
    try:
        yield app
    finally:
        await app.stop()


async def said(app: App, sid: str) -> list[str]:
    entries = await app.engine.history_page(sid, None, 1000)
    return [e.content for e in entries if e.kind == EntryKind.ASSISTANT and e.content]


async def test_terminals_run_as_background_tasks_in_the_processes_dock(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with acp_app(data_paths, tmp_path) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="term echo hi; exit 3"
        )
        assert await asyncio.wait_for(engine.join(session.id), TIMEOUT) == Result.IDLE
        assert (await said(app, session.id))[-1] == "exit 3: hi"
        (short,) = engine.background_tasks(session.id)
        assert short.origin is Origin.AGENT and not short.state.running

        # A long-running terminal stays in the Processes dock until the agent stops it.
        await engine.send(session.id, "serve")
        assert await asyncio.wait_for(engine.join(session.id), TIMEOUT) == Result.IDLE
        terminal = (await said(app, session.id))[-1].removeprefix("terminal ")
        server = engine.background_task(terminal, session.id)
        assert server.command == "sleep 300" and server.state.running

        await engine.send(session.id, f"stopterm {terminal}")
        assert await asyncio.wait_for(engine.join(session.id), TIMEOUT) == Result.IDLE
        assert (await said(app, session.id))[-1].startswith("stopped:")
        assert not engine.background_task(terminal, session.id).state.running
