"""A cancel another process commits while this one is between its last look and the start of
an action (found by the concurrency suite, issue 16 item 2: a runner frozen with SIGSTOP there
ran the command after it woke, though the cancel had been committed minutes before)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.domain import work as reducers
from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.engine.turn_tools import ToolCalls
from fxdesk.store import control
from tests.engine.harness import Engine, append_line, say


async def test_a_cancel_committed_elsewhere_before_the_start_keeps_the_action_from_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = await Engine.create(tmp_path, [append_line("log.txt", "once"), say("done")])
    permit = ToolCalls._permit

    async def decided_then_cancelled_elsewhere(self: ToolCalls, *args: object) -> object:
        decided = await permit(self, *args)  # type: ignore[arg-type]
        session_id = self.rt.session.id

        def cancel_as_another_process() -> None:  # durable only: no token of ours is told
            record = control.load_record(session_id)
            assert record is not None
            _count, change = reducers.cancel(record, "cancelled elsewhere", 1)
            assert change is not None
            control.save_change(change)

        await engine.store.write(cancel_as_another_process, label="cancel_elsewhere")
        return decided

    monkeypatch.setattr(ToolCalls, "_permit", decided_then_cancelled_elsewhere)
    try:
        root = await engine.root_session("append a line")
        assert await engine.run(root.id) == Result.CANCELLED
        assert not (engine.workspace / "log.txt").exists()
        assert engine.provider.calls == 1
        (item,) = await engine.items(root.id)
        assert item.status == WorkStatus.CANCELLED and item.reason == "cancelled elsewhere"
    finally:
        await engine.close()
