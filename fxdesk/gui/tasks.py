"""Async helpers for widgets: tracked tasks (never fire-and-forget) and awaitable dialogs.

``TaskGroup`` keeps references to the tasks it starts and reports the ones that fail;
``WidgetTasks`` also cancels a widget's unfinished tasks when the widget is destroyed, and
``alive`` tells whether a widget survived an ``await``. ``run_dialog`` shows a dialog
window-modally and awaits its result without a nested event loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from typing import Any

import shiboken6
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDialog

from fxdesk.logs import report_unexpected

log = logging.getLogger(__name__)


class TaskGroup:
    """Keeps references to the tasks it starts and reports the ones that fail.

    Once ``cancel_all`` ran (the window is shutting down), a task spawned later is cancelled
    before its first step: a timer firing during the shutdown must not start work that would
    find the store closed under it."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        if self._closed:
            task.cancel()  # never runs a step: the coroutine is closed unstarted
            return task
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
        """Cancel every task and refuse new ones (see the class docstring)."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)


def alive(widget: QObject) -> bool:
    """Whether the C++ side of ``widget`` still exists (it may be gone after an ``await``)."""
    return shiboken6.isValid(widget)


class WidgetTasks(TaskGroup):
    """A ``TaskGroup`` whose unfinished tasks are cancelled when ``owner`` is destroyed."""

    def __init__(self, owner: QObject) -> None:
        super().__init__()
        self._owned: set[asyncio.Task[Any]] = set()
        owner.destroyed.connect(functools.partial(_cancel_all, self._owned))

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = super().spawn(coro, name)
        self._owned.add(task)
        task.add_done_callback(self._owned.discard)
        return task


def _cancel_all(tasks: set[asyncio.Task[Any]], *_args: object) -> None:
    for task in list(tasks):
        task.cancel()


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
        if alive(dialog):  # not when its parent window went first (cancelled at quit)
            dialog.finished.disconnect(finished)
