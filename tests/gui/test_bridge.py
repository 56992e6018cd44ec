"""The engine bridge's streamed text: pushed to the transcript at once after a pause, then at
most once per live-text interval, all deltas that came meanwhile in one push."""

from __future__ import annotations

from typing import Any

from fxdesk.domain.conversation import HistoryEntry
from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import TextStreamed
from fxdesk.gui.bridge import LIVE_TEXT_MS, EngineBridge
from fxdesk.gui.sessions.model import SessionTreeModel
from fxdesk.gui.transcript.model import RowKind, TranscriptModel
from tests.gui.waiting import until


class FakeEngine:
    """What the bridge subscribes to: the engine's bus, nothing else."""

    def __init__(self) -> None:
        self.bus = EventBus()

    def subscribe(self, event_type: type[Any], handler: Any) -> Any:
        return self.bus.subscribe(event_type, handler)


async def no_history(session_id: str, before: int | None, limit: int) -> list[HistoryEntry]:
    return []


def live_text(model: TranscriptModel) -> str | None:
    rows = [model.row_at(n) for n in range(model.rowCount())]
    return next((row.text for row in rows if row.kind == RowKind.LIVE), None)


async def test_streamed_text_is_pushed_at_once_then_a_push_an_interval(qtbot: Any) -> None:
    engine = FakeEngine()
    transcript = TranscriptModel(no_history)
    transcript.clear("s1")
    bridge = EngineBridge(engine, SessionTreeModel(), transcript)  # type: ignore[arg-type]
    now = [100.0]
    bridge.clock = lambda: now[0]
    try:
        engine.bus.publish(TextStreamed("s1", "w1", "Hello"))
        # After a pause the first delta waits for nothing but the loop's next turn.
        assert bridge._flush.isActive() and bridge._flush.interval() == 0
        await until(lambda: live_text(transcript) == "Hello")
        assert bridge.repaints == 1

        now[0] += 0.010  # 10 ms later: the rest of the interval after that push
        for word in (", wor", "ld", "!"):
            engine.bus.publish(TextStreamed("s1", "w1", word))
        assert bridge._flush.interval() == LIVE_TEXT_MS - 10
        engine.bus.publish(TextStreamed("s2", "w2", "elsewhere"))  # not the shown session
        assert live_text(transcript) == "Hello"  # not yet: the interval is not over
        await until(lambda: live_text(transcript) == "Hello, world!")
        assert bridge.repaints == 2  # the three deltas in one push
        assert bridge.live_text("s2") == "elsewhere"
        now[0] += 1.0  # a pause: the next delta is pushed at once again
        engine.bus.publish(TextStreamed("s1", "w1", " Bye."))
        assert bridge._flush.interval() == 0
    finally:
        await bridge.close()
