"""A background runtime on a real SQLite store with a recording fake provider.

The store, the log files, the events and the timing are real; the processes are the fake's
(``tests/fakes/background_provider.py``), so a test can reuse a PID, make an identity
unreadable or a signal fail. Waits are shortened (``FAST``), never the logic.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain.background import BackgroundTask
from fxdesk.domain.model import PermissionMode, SessionMode
from fxdesk.domain.process_identity import ProcessToken
from fxdesk.engine.background.context import SessionPlace, Timings
from fxdesk.engine.background.runtime import BackgroundRuntime
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import SystemClock
from fxdesk.engine.events import BackgroundChanged
from fxdesk.store import Store, repo
from fxdesk.store.faults import FaultInjector
from fxdesk.tools.background import launch
from fxdesk.tools.background.launch import WrapperProvider
from fxdesk.tools.background.provider import (
    LaunchSpec,
    PreparedProcess,
    ProcessIdentityUnavailable,
    ProcessProvider,
)
from fxdesk.tools.sandbox import policy_for
from tests.fakes.background_provider import FakeProvider

FAST = Timings(
    cleanup_timeout_s=0.05,
    stop_grace_s=0.3,
    kill_grace_s=0.3,
    escape_settle_s=0.05,
    refresh_s=0.05,
    refresh_throttle_s=0.0,
)


REAL = Timings(refresh_s=0.05, refresh_throttle_s=0.0)  # real processes: the spec's waits


@dataclass
class SpecRecorder:
    """A ``SpecBuilder`` that records each request; unsandboxed, unless ``sandboxed`` (then
    the policy ``run_command`` uses, network on, as ``specs.sandboxed_specs`` builds it)."""

    calls: list[tuple[SessionPlace, Path, Path, bool]] = field(default_factory=list)
    sandboxed: bool = False

    def __call__(self, place: SessionPlace, cwd: Path, log_path: Path, durable: bool) -> LaunchSpec:
        self.calls.append((place, cwd, log_path, durable))
        sandbox = None
        if self.sandboxed:
            sandbox = policy_for(
                place.workspace, network=True, environ={"PATH": "/usr/bin:/bin", "HOME": "/root"}
            )
        return LaunchSpec(
            cwd, log_path, sandbox, {"PATH": "/usr/bin:/bin"}, survives_fxdesk=durable
        )


async def make_session(store: Store, workspace: Path, session_id: str) -> None:
    def make() -> None:
        found, _ = repo.ensure_workspace(str(workspace), workspace.name, 1)
        repo.create_session(
            session_id=session_id,
            workspace=found,
            name=session_id,
            mode=SessionMode.PERSISTENT,
            permission_mode=PermissionMode.YOLO,
            at_ms=1,
        )

    await store.write(make)


@dataclass
class Harness:
    root: Path
    store: Store
    bus: EventBus
    provider: ProcessProvider
    runtime: BackgroundRuntime
    workspace: Path
    session_id: str
    specs: SpecRecorder
    events: list[BackgroundChanged] = field(default_factory=list)
    faults: FaultInjector = field(default_factory=FaultInjector)
    timings: Timings = FAST

    @property
    def fake(self) -> FakeProvider:
        assert isinstance(self.provider, FakeProvider)
        return self.provider

    def new_runtime(
        self,
        *,
        instance_id: str = "instance-1",
        owner_alive: Callable[[str], bool] | None = None,
        provider: ProcessProvider | None = None,
        timings: Timings | None = None,
    ) -> BackgroundRuntime:
        return BackgroundRuntime(
            provider or self.provider,
            self.store,
            self.bus,
            SystemClock(),
            durable_logs=self.root / "data" / "background",
            local_logs=self.root / "tmp",
            build_spec=self.specs,
            instance_id=instance_id,
            owner_alive=owner_alive,
            timings=timings or self.timings,
            url_give_up_s=2.0,
        )

    async def restart(self, **kwargs: object) -> BackgroundRuntime:
        """A new runtime on the same store, as after fxdesk restarted (the old one dropped
        without its shutdown: as if it was killed; the fake's processes lose their parent)."""
        if isinstance(self.provider, FakeProvider):
            self.provider.orphan_all()
        self.runtime = self.new_runtime(**kwargs)  # type: ignore[arg-type]
        await self.runtime.start(monitor_tasks=False)
        return self.runtime

    async def launch(self, command: str = "npm run dev", **kwargs: object) -> BackgroundTask:
        return await self.runtime.launch(self.session_id, command, **kwargs)  # type: ignore[arg-type]

    async def records(self) -> list[tuple[object, ...]]:
        return await self.store.read(
            lambda: self.store_rows(
                "SELECT number, stable_id, state, pid, command, "
                "owner_instance, server_url FROM background_task ORDER BY number"
            )
        )

    def store_rows(self, sql: str) -> list[tuple[object, ...]]:
        from fxdesk.store.schema import database_proxy

        return list(database_proxy.execute_sql(sql).fetchall())

    def task(self, number: int, session_id: str | None = None) -> BackgroundTask:
        return self.runtime.task(f"#{number}", session_id or self.session_id)


class RealProvider(WrapperProvider):
    """The real provider, with what the launch scenarios need to make happen on demand:
    identity captures that fail (``capture_failures`` times, or ``capture_always_fails``),
    and (``deaf_wrapper``) a held-back child that says it is ready and then ignores its
    closed pipe and SIGTERM for 0.2 s instead of the wrapper (scenario 6)."""

    def __init__(self) -> None:
        super().__init__()
        self.captures = 0
        self.capture_failures = 0
        self.capture_always_fails = False
        self.deaf_wrapper = False
        self.spawned: list[int] = []

    def spawn_prepared(self, spec: LaunchSpec) -> PreparedProcess:
        if not self.deaf_wrapper:
            prepared = super().spawn_prepared(spec)
        else:
            child = subprocess.Popen(
                ["bash", "-c", "trap '' TERM HUP; printf R >&2; sleep 0.2"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            assert child.stderr is not None and child.stderr.read(1) == b"R"
            prepared = launch._Prepared(child, child.pid)
        self.spawned.append(prepared.pid)
        return prepared

    def capture_token(self, pid: int) -> ProcessToken:
        self.captures += 1
        if self.capture_always_fails or self.captures <= self.capture_failures:
            raise ProcessIdentityUnavailable("cannot read /proc (made to fail)")
        return super().capture_token(pid)


async def wait_until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)
