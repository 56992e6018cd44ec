"""A cancelled turn is kept as far as it went and read back to the model (issue 14 item 3): an
answer cancelled while it streams stays in the history marked partial, the next answer starts
afresh, and the model is told it was cut off; a command stopped while it ran is told to the model
as "started, then stopped", never "not run"; a call cancelled while it waited for approval as not
run. A real App, SQLite and shell; the model is scripted."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.conversation import (
    CANCELLED_BEFORE_RUN_RESULT,
    CUT_OFF_NOTE,
    STOPPED_RESULT,
    ChatMessage,
)
from fxdesk.domain.model import EntryKind, PermissionMode, WorkStatus
from fxdesk.engine.events import TextStreamed
from fxdesk.engine.facade import Engine
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

ANSWER = "First I will read the parser, then the tokenizer, then write the tests. " * 6


async def test_a_cancelled_answer_is_kept_marked_and_the_next_answer_starts_afresh(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    provider = ScriptedProvider([Reply(ANSWER, chunk=8, delay_s=0.03), Reply("Fresh answer.")])
    app = App(data_paths, providers=FixedResolver(provider))
    await app.start()
    try:
        engine = app.engine
        streamed: list[str] = []
        engine.subscribe(TextStreamed, lambda e: streamed.append(e.text))
        (tmp_path / "p").mkdir()
        session = await engine.create_session(tmp_path / "p", first_message="Plan it")
        deadline = asyncio.get_running_loop().time() + 30
        while len("".join(streamed)) < 80:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        await engine.cancel(session.id)
        await asyncio.wait_for(engine.join(session.id), 30)

        entries = (await engine.transcript(session.id)).entries
        (partial,) = [e for e in entries if e.kind == EntryKind.ASSISTANT]
        assert partial.data == {"partial": True, "stopped": "cancelled"}
        assert len(partial.content) >= 80 and ANSWER.startswith(partial.content)
        assert partial.content != ANSWER  # cut off where the cancel came

        await engine.send(session.id, "Go on")
        await asyncio.wait_for(engine.join(session.id), 30)
        request = provider.requests[-1]
        # The model reads the cancelled turn back as far as it went: its message, and its
        # partial answer with a note that the person cut it off.
        assert [m.content for m in request.messages if m.role == "user"] == ["Plan it", "Go on"]
        assert [m.content for m in request.messages if m.role == "assistant"] == [
            f"{partial.content}\n\n{CUT_OFF_NOTE}"
        ]
        answers = [
            e.content
            for e in (await engine.transcript(session.id)).entries
            if e.kind == EntryKind.ASSISTANT
        ]
        assert answers == [partial.content, "Fresh answer."]  # nothing glued together
    finally:
        await app.stop()


async def told_after_a_cancel(
    data_paths: DataPaths,
    project: Path,
    call: ScriptedCall,
    mode: PermissionMode,
    started: Callable[[Engine, str], Awaitable[bool]],
) -> list[ChatMessage]:
    """Run ``call`` in a turn, cancel it once ``started`` says so, then send another message;
    the messages the model got for that next turn."""
    provider = ScriptedProvider([Reply("On it.", tool_calls=(call,)), Reply("Noted.")])
    app = App(data_paths, providers=FixedResolver(provider))
    await app.start()
    try:
        engine = app.engine
        session = await engine.create_session(project, first_message="Do it", permission_mode=mode)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not await started(engine, session.id):
            assert loop.time() < deadline, "the call never got that far"
            await asyncio.sleep(0.02)
        await engine.cancel(session.id)
        await asyncio.wait_for(engine.join(session.id), 30)
        await engine.send(session.id, "What happened?")
        await asyncio.wait_for(engine.join(session.id), 30)
        items = await engine.items(session.id)
        assert [i.status for i in items] == [WorkStatus.CANCELLED, WorkStatus.COMPLETED]
        messages = provider.requests[-1].messages
        assert [m.role for m in messages] == ["user", "assistant", "tool", "user"]
        assert [messages[0].content, messages[3].content] == ["Do it", "What happened?"]
        assert messages[1].tool_calls[0].name == call.name
        return list(messages)
    finally:
        await app.stop()


async def test_a_command_stopped_while_it_ran_is_told_to_the_model_as_started_then_stopped(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    run = ScriptedCall("run_command", {"command": "echo begun > begun.txt; sleep 60"})

    async def begun(_engine: Engine, _session_id: str) -> bool:
        return (project / "begun.txt").exists()  # the command has started

    messages = await told_after_a_cancel(data_paths, project, run, PermissionMode.YOLO, begun)
    assert messages[2].content == STOPPED_RESULT  # started, then stopped: never "not run"


async def test_a_call_cancelled_while_it_waited_for_approval_is_told_as_not_run(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    write = ScriptedCall("write_file", {"path": "n.md", "content": "n"})

    async def asked(engine: Engine, session_id: str) -> bool:
        return bool(await engine.pending_approvals(session_id))

    messages = await told_after_a_cancel(data_paths, project, write, PermissionMode.ASK, asked)
    assert messages[2].content == CANCELLED_BEFORE_RUN_RESULT
    assert not (project / "n.md").exists()
