"""Fault injection at every commit point of a turn (spec §5.2, scenarios 38–45).

For each commit a turn makes, and for both kinds of failure, a turn with a real file side effect
is run until the fault, the engine is closed and reopened on the same data folder (a restart),
recovered, and resumed. Afterwards: the item is completed, every delivery exists exactly once, no
model call is repeated except one whose response was never saved, and the tool's side effect
happened at most once (exactly once, unless its start was saved but it never ran).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import ScriptedProvider
from fxdesk.store.faults import Fault
from tests.engine.harness import Engine, append_line, say

COMMIT_POINTS = [
    "admit",  # also opens the turn's history with the message
    "model_response",
    "tool_started",
    "tool_result",
    "history_commit",
    "complete",
]


class Reactive(Provider):
    """Calls the file tool until it has a tool result, then answers. Records every request."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        has_result = any(m.role == "tool" for m in request.messages)
        step = say("done") if has_result else append_line("log.txt", "once")
        async for event in ScriptedProvider([step]).stream(request):
            yield event


async def _engine(root: Path, provider: Reactive) -> Engine:
    return await Engine.create(root, provider=provider)


@pytest.mark.parametrize("kind", [Fault.DEFINITE, Fault.INDETERMINATE])
@pytest.mark.parametrize("label", COMMIT_POINTS)
async def test_every_commit_point_recovers_exactly_once(
    tmp_path: Path, label: str, kind: Fault
) -> None:
    provider = Reactive()
    engine = await _engine(tmp_path, provider)
    root = await engine.root_session()
    child = await engine.child(root, "append a line")
    engine.faults.fail(1, kind, label=label)
    try:
        first = await engine.run(child.id)
        assert [r.fault for r in engine.faults.records if r.fault] == [kind]
    finally:
        await engine.close()

    again = await _engine(tmp_path, provider)
    try:
        await again.owner.recover()
        final = await again.run(child.id, retry=True)
        assert final in (Result.IDLE, Result.NO_WORK), (first, final)
        (item,) = await again.items(child.id)
        assert item.status == WorkStatus.COMPLETED

        lost_response = kind == Fault.DEFINITE and label in ("model_response", "history_commit")
        assert len(provider.requests) == 2 + (1 if lost_response else 0)
        log_file = again.workspace / "log.txt"
        lines = log_file.read_text().count("once") if log_file.exists() else 0
        never_ran = label == "tool_started" and kind == Fault.INDETERMINATE
        assert lines == (0 if never_ran else 1)

        deliveries = await again.deliveries(child.id)
        assert deliveries.count(("terminal", "completed")) == 1
        finals = [d for d in deliveries if d[0] == "tool_activity" and d[1] != "started"]
        # The effect is recorded as what it was (spec §5.3): succeeded, unless the tool never
        # ran (its start landed, the turn stopped before running it): then the model was told
        # "outcome unknown", recorded as failed.
        assert finals == [("tool_activity", "failed" if never_ran else "succeeded")]
        assert deliveries.count(("tool_activity", "started")) <= 1

        report = await again.owner.recover()  # a second recovery changes nothing
        assert report.sessions_changed == 0
        assert await again.deliveries(child.id) == deliveries
    finally:
        await again.close()


async def test_scenario_41_history_committed_then_completion_lost(tmp_path: Path) -> None:
    provider = Reactive()
    engine = await _engine(tmp_path, provider)
    root = await engine.root_session()
    child = await engine.child(root, "work")
    engine.faults.fail(1, Fault.DEFINITE, label="complete")
    assert await engine.run(child.id) == Result.CONTROL_FAILED
    (item,) = await engine.items(child.id)
    assert item.status == WorkStatus.RUNNING
    assert (await engine.session(child.id)).last_work_id == item.id
    await engine.close()
    again = await _engine(tmp_path, provider)
    try:
        report = await again.owner.recover()
        assert (report.work_completed, report.work_interrupted) == (1, 0)
        assert len(provider.requests) == 2  # no replay
        assert (await again.items(child.id))[0].status == WorkStatus.COMPLETED
        assert ("terminal", "completed") in await again.deliveries(child.id)
    finally:
        await again.close()


async def test_scenario_42_indeterminate_completion_reconciles_to_nothing(tmp_path: Path) -> None:
    provider = Reactive()
    engine = await _engine(tmp_path, provider)
    root = await engine.root_session()
    child = await engine.child(root, "work")
    engine.faults.fail(1, Fault.INDETERMINATE, label="complete")
    assert await engine.run(child.id) == Result.CONTROL_FAILED
    await engine.close()
    again = await _engine(tmp_path, provider)
    try:
        report = await again.owner.recover()
        assert (report.work_completed, report.work_interrupted) == (0, 0)
        assert (await again.items(child.id))[0].status == WorkStatus.COMPLETED
        assert len(provider.requests) == 2
    finally:
        await again.close()


async def test_scenario_44_an_indeterminate_terminal_write_is_not_duplicated(
    tmp_path: Path,
) -> None:
    """The terminal delivery is written in the completion's transaction (adapted: the reference
    writes it to a ledger file of its own), so its indeterminate write is the completion's:
    join says control_failed, yet the terminal has landed, exactly once; two recoveries after
    a restart leave exactly that one, and the model is not called again."""
    provider = Reactive()
    engine = await _engine(tmp_path, provider)
    root = await engine.root_session()
    child = await engine.child(root, "work")
    engine.faults.fail(1, Fault.INDETERMINATE, label="complete")
    assert await engine.run(child.id) == Result.CONTROL_FAILED
    terminals = [d for d in await engine.deliveries(child.id) if d[0] == "terminal"]
    assert terminals == [("terminal", "completed")]  # landed although the commit "failed"
    await engine.close()
    again = await _engine(tmp_path, provider)
    try:
        for _ in range(2):
            await again.owner.recover()
            terminals = [d for d in await again.deliveries(child.id) if d[0] == "terminal"]
            assert terminals == [("terminal", "completed")]
        assert len(provider.requests) == 2  # the one turn's two calls: no replay
        assert [i.status for i in await again.items(child.id)] == [WorkStatus.COMPLETED]
    finally:
        await again.close()


async def test_a_failed_cancel_commit_changes_nothing_and_a_later_cancel_does_it_all(
    tmp_path: Path,
) -> None:
    """The cancel's own commit fails: nothing is cancelled yet and the turn is told nothing;
    the next cancel does it all, its terminal exactly once. (When only the terminal's commit
    fails, the cancel holds: scenario 45 in test_spec_terminals.py.)"""
    engine = await Engine.create(tmp_path, [say("x")])
    try:
        root = await engine.root_session()
        child = await engine.child(root, "blocked")
        await engine.start_blocked(child.id)
        engine.faults.fail(1, Fault.DEFINITE, label="cancel")
        with pytest.raises(Exception, match="injected definite failure"):
            await engine.owner.cancel(child.id, "stop")
        assert (await engine.items(child.id))[0].status == WorkStatus.RUNNING
        assert await engine.owner.cancel(child.id, "stop") == 1
        engine.provider.release()
        assert await engine.owner.join(child.id) == Result.CANCELLED
        assert await engine.owner.cancel(child.id, "stop") == 0
        assert await engine.owner.cancel(child.id, "stop") == 0
        assert (await engine.deliveries(child.id)).count(("terminal", "cancelled")) == 1
    finally:
        await engine.close()
