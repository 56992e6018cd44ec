"""A turn cancelled while its answer streams keeps what had arrived, marked partial (issue 14
item 3), in the history the window shows; the next turn's answer starts afresh. A real App and
SQLite; the model is scripted and streams slowly."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import EntryKind
from fxdesk.engine.events import TextStreamed
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider

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
        # A cancelled turn is not part of the conversation the model reads back (neither its
        # message nor its partial answer): the history keeps it for the person.
        assert [m.content for m in request.messages if m.role == "assistant"] == []
        assert [m.content for m in request.messages if m.role == "user"] == ["Go on"]
        answers = [
            e.content
            for e in (await engine.transcript(session.id)).entries
            if e.kind == EntryKind.ASSISTANT
        ]
        assert answers == [partial.content, "Fresh answer."]  # nothing glued together
    finally:
        await app.stop()
