"""GUI test fixtures: every ``async def`` test here runs on a qasync loop bound to pytest-qt's
QApplication, and no test may leave a visible top-level window behind."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication


def _qt_app() -> QApplication:
    app = QApplication.instance()
    return app if isinstance(app, QApplication) else QApplication([])


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict[str, Any]:
    return {"qasync": lambda: qasync.QEventLoop(_qt_app())}


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
