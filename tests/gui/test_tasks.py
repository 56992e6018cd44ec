"""The window's task group: failures reported, and nothing new started once it is shutting
down (a timer firing during the shutdown started agent-run reads that found the store closed
and logged a warning for every root)."""

from __future__ import annotations

import asyncio

from fxdesk.gui.tasks import TaskGroup


async def test_a_task_spawned_after_cancel_all_never_runs_a_step() -> None:
    group = TaskGroup()
    ran: list[str] = []

    async def work(name: str) -> None:
        ran.append(name)
        await asyncio.sleep(60)

    first = group.spawn(work("before"), "before")
    await asyncio.sleep(0)
    assert ran == ["before"] and len(group) == 1
    await group.cancel_all()
    assert first.cancelled() and len(group) == 0

    late = group.spawn(work("late"), "late")  # a timer firing during the shutdown
    await asyncio.gather(late, return_exceptions=True)
    assert late.cancelled()
    assert ran == ["before"]  # its body never ran
    assert len(group) == 0
