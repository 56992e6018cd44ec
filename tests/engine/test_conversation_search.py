"""Which sessions mention a text (the filter box's second half): messages and answers, not
tool output; case-insensitive; every word as the start of a word (the full-text index: punctuation
separates words, so '%' and '_' are never wildcards). A real App and SQLite."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.app import App
from fxdesk.engine.facade import Result
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider


async def test_sessions_are_found_by_what_was_said_in_them(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    steps = [Reply("Coverage is at 50% in parse_number."), Reply("Nothing to see.")]
    app = App(data_paths, providers=FixedResolver(ScriptedProvider(steps)))
    await app.start()
    try:
        engine = app.engine
        (tmp_path / "p").mkdir()
        first = await engine.create_session(tmp_path / "p", first_message="How is COVERAGE?")
        assert await asyncio.wait_for(engine.join(first.id), 30) == Result.IDLE
        second = await engine.create_session(tmp_path / "p", first_message="hello")
        assert await asyncio.wait_for(engine.join(second.id), 30) == Result.IDLE

        assert await engine.sessions_mentioning("coverage") == [first.id]  # either case
        assert await engine.sessions_mentioning("50%") == [first.id]
        assert await engine.sessions_mentioning("verage") == []  # words start where they start
        assert await engine.sessions_mentioning("parse_number") == [first.id]
        assert await engine.sessions_mentioning("nothing to") == [second.id]
        assert await engine.sessions_mentioning("   ") == []
        found = set(await engine.sessions_mentioning("n"))
        assert found == {first.id, second.id}  # "number", "Nothing"
    finally:
        await app.stop()
