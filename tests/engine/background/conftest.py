"""Fixtures of the background runtime tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import BackgroundChanged
from fxdesk.store import Store
from fxdesk.store.faults import FaultInjector
from tests.engine.background.harness import Harness, SpecRecorder, make_session
from tests.fakes.background_provider import FakeProvider


@pytest.fixture
async def bg(tmp_path: Path) -> AsyncIterator[Harness]:
    faults = FaultInjector()
    store = await Store.aopen(tmp_path / "fxdesk.sqlite3", faults=faults)
    workspace = tmp_path / "workspace"
    (workspace / "web").mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    await make_session(store, workspace, "s1")
    bus = EventBus()
    harness = Harness(
        tmp_path,
        store,
        bus,
        FakeProvider(),
        None,
        workspace,
        "s1",
        SpecRecorder(),  # type: ignore[arg-type]
    )
    harness.faults = faults
    bus.subscribe(BackgroundChanged, harness.events.append)
    harness.runtime = harness.new_runtime()
    await harness.runtime.start(monitor_tasks=False)
    try:
        yield harness
    finally:
        try:
            await harness.runtime.shutdown()
        finally:
            store.close()
