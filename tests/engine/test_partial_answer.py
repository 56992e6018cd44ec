"""A cancelled turn is kept as far as it went and read back to the model (issue 14 item 3): an
answer cancelled while it streams stays in the history marked partial, the next answer starts
afresh, and the model is told it was cut off; a command stopped while it ran is told to the model
as "started, then stopped", never "not run"; a call cancelled while it waited for approval as not
run. A real App, SQLite and shell; the model is scripted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.conversation import CANCELLED_BEFORE_RUN_RESULT, CUT_OFF_NOTE, STOPPED_RESULT
from fxdesk.domain.model import EntryKind, PermissionMode, WorkStatus
from fxdesk.engine.events import TextStreamed
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


async def _until(condition: object, within: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():  # type: ignore[operator]
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_a_command_stopped_while_it_ran_is_told_to_the_model_as_started_then_stopped(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    run = ScriptedCall("run_command", {"command": "echo begun > begun.txt; sleep 60"})
    provider = ScriptedProvider([Reply("Running it.", tool_calls=(run,)), Reply("It had begun.")])
    app = App(data_paths, providers=FixedResolver(provider))
    await app.start()
    try:
        engine = app.engine
        project = tmp_path / "p"
        project.mkdir()
        session = await engine.create_session(
            project, first_message="Run the slow job", permission_mode=PermissionMode.YOLO
        )
        await _until((project / "begun.txt").exists)  # the command has started
        await engine.cancel(session.id)
        await asyncio.wait_for(engine.join(session.id), 30)

        await engine.send(session.id, "What happened?")
        await asyncio.wait_for(engine.join(session.id), 30)
        messages = provider.requests[-1].messages
        assert [m.role for m in messages] == ["user", "assistant", "tool", "user"]
        assert messages[0].content == "Run the slow job"
        assert messages[1].tool_calls[0].name == "run_command"
        assert messages[2].content == STOPPED_RESULT  # started, then stopped: never "not run"
        assert messages[3].content == "What happened?"
        items = await engine.items(session.id)
        assert [i.status for i in items] == [WorkStatus.CANCELLED, WorkStatus.COMPLETED]
    finally:
        await app.stop()


async def test_a_call_cancelled_while_it_waited_for_approval_is_told_as_not_run(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    write = ScriptedCall("write_file", {"path": "n.md", "content": "n"})
    provider = ScriptedProvider([Reply("Writing.", tool_calls=(write,)), Reply("Fine.")])
    app = App(data_paths, providers=FixedResolver(provider))
    await app.start()
    try:
        engine = app.engine
        project = tmp_path / "p"
        project.mkdir()
        session = await engine.create_session(
            project, first_message="Write a note", permission_mode=PermissionMode.ASK
        )

        async def asked() -> bool:
            return bool(await engine.pending_approvals(session.id))

        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while not await asked():
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        await engine.cancel(session.id)
        await asyncio.wait_for(engine.join(session.id), 30)

        await engine.send(session.id, "Never mind")
        await asyncio.wait_for(engine.join(session.id), 30)
        messages = provider.requests[-1].messages
        assert [m.role for m in messages] == ["user", "assistant", "tool", "user"]
        assert messages[2].content == CANCELLED_BEFORE_RUN_RESULT
        assert not (project / "n.md").exists()
    finally:
        await app.stop()
