"""Hypothesis-generated event sequences from a provider through a whole turn (issue 16 item 4):
whatever order, size or shape the events come in (tool-call pieces before their start, twice
ended, finished twice, usage anywhere, a restart, a failure half-way, nothing at all), the turn
ends, as completed or failed with a reason, and never crashes or hangs."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.providers.base import (
    Finished,
    ModelRequest,
    Provider,
    ProviderError,
    StreamEvent,
    StreamRestart,
    TextDelta,
    ToolCallDelta,
    ToolCallEnded,
    ToolCallStarted,
    Usage,
)
from fxdesk.store import control
from tests.engine.harness import Engine

# scripts/torture runs many more.
EXAMPLES = int(os.environ.get("FXDESK_FUZZ_EXAMPLES", "100"))
TURN_TIMEOUT_S = 60.0  # far above any example: reaching it is the hang

indexes = st.integers(min_value=0, max_value=2)
events = st.one_of(
    st.text(max_size=30).map(TextDelta),
    st.builds(
        ToolCallStarted,
        indexes,
        st.sampled_from(["c1", "c2", "", "c1"]),
        st.sampled_from(["echo", "no_such_tool", "", "read_file"]),
    ),
    st.builds(
        ToolCallDelta,
        indexes,
        st.sampled_from(['{"text": "hi"}', "{", "}", '"x"', "[]", "null", '{"path": 3}', ""]),
    ),
    st.builds(ToolCallEnded, indexes),
    st.builds(Usage, st.integers(0, 10**6), st.integers(0, 10**6)),
    st.sampled_from(["stop", "tool_calls", "length", ""]).map(Finished),
    st.just(StreamRestart("retrying", 0.0)),
)
failures = st.none() | st.builds(
    ProviderError, st.sampled_from(["server_error", "connection", "odd"]), st.text(max_size=20)
)


class Played(Provider):
    """Plays the generated events on the first call; later calls answer plainly."""

    def __init__(self, sequence: Sequence[StreamEvent], failure: ProviderError | None) -> None:
        self.sequence = sequence
        self.failure = failure
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls > 1:
            yield TextDelta("done")
            yield Finished("stop")
            return
        for event in self.sequence:
            yield event
            await asyncio.sleep(0)
        if self.failure is not None:
            raise self.failure


async def one_turn(sequence: Sequence[StreamEvent], failure: ProviderError | None) -> None:
    with tempfile.TemporaryDirectory() as folder:
        engine = await Engine.create(Path(folder), provider=Played(sequence, failure))
        try:
            session = await engine.root_session("go")
            result = await asyncio.wait_for(engine.run(session.id), TURN_TIMEOUT_S)
            assert result in (Result.IDLE, Result.FAILED), result
            (item,) = await engine.items(session.id)
            assert item.status in (WorkStatus.COMPLETED, WorkStatus.FAILED)
            if item.status is WorkStatus.FAILED:
                reason = await engine.store.read(lambda: control.failure_reason(item.id))
                assert reason, "a failed turn says why"
        finally:
            await engine.close()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(events, max_size=15), failures)
def test_any_event_sequence_ends_the_turn_completed_or_failed(
    sequence: list[StreamEvent], failure: ProviderError | None
) -> None:
    asyncio.run(one_turn(sequence, failure))
