"""Fixtures of the background runtime tests."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from fxdesk.engine.background.context import Timings
from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import BackgroundChanged
from fxdesk.store import Store
from fxdesk.store.faults import FaultInjector
from fxdesk.tools.background import identity
from fxdesk.tools.background.provider import ProcessProvider
from tests.engine.background.harness import (
    FAST,
    REAL,
    Harness,
    RealProvider,
    SpecRecorder,
    make_session,
)
from tests.fakes.background_provider import FakeProvider


@pytest.fixture
async def bg(tmp_path: Path) -> AsyncIterator[Harness]:
    async with harness(tmp_path, FakeProvider(), FAST) as made:
        yield made


@pytest.fixture
async def real(var_tmp: Path) -> AsyncIterator[Harness]:
    """The runtime with the real ``WrapperProvider``: real ``bash`` wrappers (unsandboxed
    unless ``real.specs.sandboxed``), the spec's waits. Anything of a test still running at
    the end is killed by its token."""
    provider = RealProvider()
    made: list[Harness] = []
    try:
        async with harness(var_tmp, provider, REAL) as running:
            made.append(running)
            yield running
    finally:
        for left in made:
            for task in left.runtime.all_tasks():
                token = left.runtime.find(task.stable_id).token
                if token is not None and identity.match_token(task.pid, token).value == "matched":
                    identity.signal_group(task.pid, token, signal.SIGKILL)
        provider.close()


@asynccontextmanager
async def harness(
    tmp_path: Path, provider: ProcessProvider, timings: Timings
) -> AsyncIterator[Harness]:
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
        provider,
        None,
        workspace,
        "s1",
        SpecRecorder(),  # type: ignore[arg-type]
    )
    harness.faults = faults
    harness.timings = timings
    bus.subscribe(BackgroundChanged, harness.events.append)
    harness.runtime = harness.new_runtime(timings=timings)
    await harness.runtime.start(monitor_tasks=False)
    try:
        yield harness
    finally:
        try:
            await harness.runtime.shutdown()
        finally:
            store.close()
