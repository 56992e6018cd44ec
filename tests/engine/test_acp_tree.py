"""An external agent as the sub-agent of a native one: a native root delegates a task, and the
child session it runs is driven by the ACP test agent (a real child process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.engine.acp_agents import ACP_SESSION_KEY
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply
from tests.engine.acp_support import TIMEOUT, agent_provider
from tests.engine.agents.harness import Dynamic, Script, delegate, desk, last_tool_result


async def test_a_native_root_delegates_to_an_external_agent_child(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    root = Script(
        [
            delegate(("general", "echo hello from the child")),
            Dynamic(lambda request: Reply(f"The child answered: {last_tool_result(request)}")),
        ]
    )
    async with desk(data_paths, root, {"echo": agent_provider(tmp_path)}) as app:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Ask the child"
        )
        await asyncio.wait_for(engine.join(session.id), TIMEOUT)
        (run,) = await engine.runs(session.id)
        assert run.child_session_id is not None
        child = await engine.session(run.child_session_id)
        assert child.parent_id == session.id
        assert ACP_SESSION_KEY in child.config  # run by the external agent
        assert child.config[ACP_SESSION_KEY]["name"] == "fxdesk-test-agent"
        said = [
            e.content
            for e in await engine.history_page(child.id, None, 100)
            if e.kind == EntryKind.ASSISTANT and e.content
        ]
        assert said and said[-1].startswith("you said: ")
        answer = [
            e.content
            for e in await engine.history_page(session.id, None, 100)
            if e.kind == EntryKind.ASSISTANT and e.content
        ][-1]
        assert answer.startswith("The child answered:") and "you said: " in answer
