"""The live view never changes execution (spec child-sessions §8, scenario 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.domain.conversation import EntryKind
from fxdesk.domain.live import LiveEvent
from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.providers.scripted import Reply, ScriptedCall
from fxdesk.store import history
from tests.engine.harness import Engine, say, wait_until


async def test_scenario_2_the_turn_carries_on_when_the_live_view_has_no_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_memory(self: LiveEvent) -> int:
        raise MemoryError("no room for the live view")

    monkeypatch.setattr(LiveEvent, "cost", property(no_memory))  # every event append fails
    looking = Reply(text="looking", tool_calls=(ScriptedCall("echo", {"text": "hi"}),))
    engine = await Engine.create(tmp_path, [looking, say("done")])
    try:
        session = await engine.root_session("go")
        await engine.start_blocked(session.id)
        engine.provider.release()  # the first call runs; the second waits
        engine.provider.hold()
        await wait_until(lambda: len(engine.provider.requests) == 2 and engine.provider.entered)
        live = engine.owner.live_snapshot(session.id)
        assert live is not None
        assert live.text == "looking" and not live.text_truncated
        assert live.events == () and live.events_truncated
        assert [(t.name, t.phase) for t in live.tools] == [
            ("echo", "started"),
            ("echo", "succeeded"),
        ]
        engine.provider.release()
        assert await engine.owner.join(session.id) == Result.IDLE
        (item,) = await engine.items(session.id)
        assert item.status == WorkStatus.COMPLETED
        entries = await engine.store.read(lambda: history.page_history(session.id))
        assert [(e.kind, e.content) for e in entries if e.kind == EntryKind.ASSISTANT][-1] == (
            EntryKind.ASSISTANT,
            "done",
        )
        assert engine.provider.calls == 2
    finally:
        engine.provider.release()
        await engine.close()
