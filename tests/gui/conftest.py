"""GUI test fixtures: every ``async def`` test here runs on a qasync loop bound to pytest-qt's
QApplication, and no test may leave a visible top-level window behind."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest
import pytestqt.plugin as pytestqt_plugin
import qasync
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication


def _qt_app() -> QApplication:
    app = QApplication.instance()
    return app if isinstance(app, QApplication) else QApplication([])


_LOOPS: list[qasync.QEventLoop] = []  # the loops made for tests, newest last


def _new_loop() -> qasync.QEventLoop:
    loop = qasync.QEventLoop(_qt_app())
    _LOOPS[:] = [*(old for old in _LOOPS if not old.is_closed()), loop]
    return loop


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Any]:
    return {"qasync": _new_loop}


def _process_events_on_the_loop() -> None:
    """pytest-qt processes Qt's events between a test's phases (after an async fixture's
    setup, say), outside any asyncio loop run: a qasync callback that fires then (a task
    resuming after a thread's result) finds no running loop, and ``asyncio.to_thread`` in it
    raises. Process them with the test's qasync loop marked as running, as the app always
    runs them."""
    app = QApplication.instance()
    if app is None:
        return
    if asyncio.events._get_running_loop() is not None:
        app.processEvents()
        return
    loop = next((each for each in reversed(_LOOPS) if not each.is_closed()), None)
    if loop is None:
        app.processEvents()
        return
    asyncio.events._set_running_loop(loop)
    try:
        app.processEvents()
    finally:
        asyncio.events._set_running_loop(None)


pytestqt_plugin._process_events = _process_events_on_the_loop


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop for sync tests: ``qloop.run_until_complete(coro)``."""
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    asyncio.set_event_loop(None)


@pytest.fixture(autouse=True)
def no_leaked_windows(qapp: QApplication) -> Iterator[None]:
    before = {id(w) for w in qapp.topLevelWidgets() if w.isVisible()}
    yield
    leaked = [w for w in qapp.topLevelWidgets() if w.isVisible() and id(w) not in before]
    for widget in leaked:
        widget.close()
    # Destroy what the test dropped here, on the GUI thread, not later on some worker thread
    # that happens to run Python's garbage collector.
    gc.collect()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert not leaked, f"test left windows open: {[type(w).__name__ for w in leaked]}"
