"""Async helpers for widgets: tracked tasks (never fire-and-forget) and awaitable dialogs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

from PySide6.QtWidgets import QDialog

from fxdesk.logs import report_unexpected

log = logging.getLogger(__name__)


class TaskGroup:
    """Keeps references to the tasks it starts and reports the ones that fail."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._on_done)
        return task

    def _on_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            report_unexpected((type(exc), exc, exc.__traceback__), f"task {task.get_name()}")

    async def cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)


async def run_dialog(dialog: QDialog) -> int:
    """Show ``dialog`` window-modally without a nested event loop; its result when it closes."""
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def finished(code: int) -> None:
        if not future.done():
            future.set_result(code)

    dialog.finished.connect(finished)
    dialog.open()
    try:
        return await future
    finally:
        dialog.finished.disconnect(finished)
