"""The composition root: builds the services and starts and stops them in one logged order.

``App`` knows nothing of Qt. The GUI (``fxdesk.gui.application``) runs it on a qasync loop; the
CLI runs it on plain asyncio. Each subsystem has a start and a stop; ``stop`` runs them in reverse
order, logs each with its duration, and carries on past a failing one so the rest still shut down.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fxdesk.engine.bus import EventBus
from fxdesk.logs import CrashLog
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.domain.agent_runs import Limits
    from fxdesk.engine.agents.coordinator import AgentCoordinator
    from fxdesk.engine.background.runtime import BackgroundRuntime
    from fxdesk.engine.clock import Clock
    from fxdesk.engine.events import RecoveryReport
    from fxdesk.engine.facade import Engine
    from fxdesk.engine.mcp import McpService
    from fxdesk.engine.owner import SessionOwner
    from fxdesk.engine.providers import ProviderResolver
    from fxdesk.engine.sessions import SessionService
    from fxdesk.store import Store
    from fxdesk.store.faults import FaultInjector

# The engine, the store and the tools are imported where each subsystem starts, not here: the
# window imports this module before its first paint, and they cost ~250 ms of imports the first
# frame does not need (docs/performance.md).

log = logging.getLogger(__name__)


TEST_HOLD_ENV = "FXDESK_TEST_HOLD"


def _test_hold(point: str) -> None:
    """Test-only: stop at ``point`` of start-up until a test lets the process go on.

    With ``FXDESK_TEST_HOLD=<point>:<folder>`` the process writes ``<folder>/held-<pid>`` and
    waits (at most two minutes) until ``<folder>/go`` exists. Tests of two fxdesk processes
    starting together use it to stop one at the exact step that matters, instead of hoping a
    sleep lands there."""
    wanted = os.environ.get(TEST_HOLD_ENV, "")
    name, _, folder = wanted.partition(":")
    if name != point or not folder:
        return
    (Path(folder) / f"held-{os.getpid()}").touch()
    give_up = time.monotonic() + 120
    while not (Path(folder) / "go").exists() and time.monotonic() < give_up:
        time.sleep(0.02)


@dataclass
class _Subsystem:
    name: str
    stop: Callable[[], Awaitable[None]]


class App:
    """All of fxdesk's services for one data folder.

    Attributes:
        paths: where everything lives.
        bus: the engine's event bus.
        store: the database, once started.
        sessions: session creation and the catalog, once started.
        crash_log: crash logs of earlier runs, and this run's.
    """

    def __init__(
        self,
        paths: DataPaths,
        *,
        faults: FaultInjector | None = None,
        providers: ProviderResolver | None = None,
        agent_limits: Limits | None = None,
        clock: Clock | None = None,
        crash_log: CrashLog | None = None,
    ) -> None:
        """``crash_log``: the one the launcher armed for this run (else one is made here)."""
        self.paths = paths
        self._clock = clock
        self.agent_limits = agent_limits
        self._agents: AgentCoordinator | None = None
        self.faults = faults
        self.providers = providers
        self.recovery: RecoveryReport | None = None
        self._recover_at_start = True
        self._owner: SessionOwner | None = None
        self.bus = EventBus()
        self.crash_log = crash_log if crash_log is not None else CrashLog(paths.crash_dir)
        self._store: Store | None = None
        self._sessions: SessionService | None = None
        self._engine: Engine | None = None
        self._background: BackgroundRuntime | None = None
        self._mcp: McpService | None = None
        self._running: list[_Subsystem] = []
        self.started = False

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the store is not started")
        return self._store

    @property
    def owner(self) -> SessionOwner:
        if self._owner is None:
            raise RuntimeError("the engine is not started")
        return self._owner

    @property
    def engine(self) -> Engine:
        """The one way in for the window and the command line."""
        if self._engine is None:
            raise RuntimeError("the store is not started")
        return self._engine

    @property
    def sessions(self) -> SessionService:
        if self._sessions is None:
            raise RuntimeError("the engine is not started")
        return self._sessions

    @property
    def agents(self) -> AgentCoordinator:
        if self._agents is None:
            raise RuntimeError("the engine is not started")
        return self._agents

    @property
    def background(self) -> BackgroundRuntime:
        if self._background is None:
            raise RuntimeError("background tasks are not started")
        return self._background

    async def start(
        self,
        *,
        recover: bool = True,
        run_handed_off: bool = True,
        background: bool | None = None,
        mcp: bool | None = None,
    ) -> None:
        """Start every subsystem in order. On failure, stops what had started and re-raises.

        ``recover`` runs start-up recovery before anything can run; processes that only look
        or queue (``fxdesk show``, ``cancel``) skip it, so they never interrupt work that
        another fxdesk queued. ``run_handed_off`` (the window) runs work queued for whichever
        fxdesk runs next (``fxdesk send --no-wait``), now and whenever more arrives; a command
        runs only the session it was asked about. ``background`` (default: as ``recover``)
        runs background tasks: it finds durable ones again, so processes that only look skip
        it too. ``mcp`` (default: as ``background``) starts the MCP tool servers.
        """
        self._recover_at_start = recover
        runs_tasks = recover if background is None else background
        try:
            await self._start("store", self._start_store)
            await self._start("engine", self._start_engine)
            if runs_tasks:
                await self._start("background tasks", self._start_background)
            if runs_tasks if mcp is None else mcp:
                await self._start("MCP servers", self._start_mcp)
            if run_handed_off:
                await self._start("handed-off work", self._start_handoff)
        except BaseException:
            await self.stop()
            raise
        self.started = True

    async def start_store_only(self) -> None:
        """Open the database without the engine (commands that only read or edit settings)."""
        try:
            await self._start("store", self._start_store)
        except BaseException:
            await self.stop()
            raise
        self.started = True

    async def _start(self, name: str, starter: Callable[[], Awaitable[_Subsystem]]) -> None:
        began = time.perf_counter()
        log.info("startup: %s ...", name)
        subsystem = await starter()
        self._running.append(subsystem)
        log.info("startup: %s ready (%.0f ms)", name, (time.perf_counter() - began) * 1000)

    async def _start_store(self) -> _Subsystem:
        from fxdesk.engine.clock import SystemClock
        from fxdesk.engine.permissions import PermissionService
        from fxdesk.engine.profiles import ProfileService
        from fxdesk.engine.sessions import SessionService
        from fxdesk.store import Store

        self.paths.ensure()
        self._store = await Store.aopen(self.paths.database, faults=self.faults)
        self.profiles = ProfileService(self._store)
        # The one clock of the engine: every service below stamps and schedules by it.
        self.clock = self._clock or SystemClock()
        self.permissions = PermissionService(
            self._store, self.bus, self.clock, data_dir=self.paths.root
        )
        # Until the engine starts (or for commands that run nothing): a facade without runs.
        self._engine = self._facade(SessionService(self._store, self.bus, clock=self.clock))

        async def stop() -> None:
            self._engine = None
            store, self._store = self._store, None
            if store is not None:  # waits for queued writes: off the loop thread
                await asyncio.get_running_loop().run_in_executor(None, store.close)

        return _Subsystem("store", stop)

    async def _start_engine(self) -> _Subsystem:
        from fxdesk.engine.agents.coordinator import AgentCoordinator
        from fxdesk.engine.agents.port import CoordinatorPort
        from fxdesk.engine.authority import HostAuthority
        from fxdesk.engine.owner import SessionOwner
        from fxdesk.engine.providers import ProfileResolver
        from fxdesk.engine.report_poller import ReportPoller
        from fxdesk.engine.report_scheduler import ReportScheduler
        from fxdesk.engine.sandbox_temp import sweep_sandbox_temp
        from fxdesk.engine.sessions import SessionService
        from fxdesk.engine.turn import TurnRunner
        from fxdesk.store import owners
        from fxdesk.store.locks import InstanceLock, instance_alive, prune_dead_instances
        from fxdesk.tools.base import ToolRegistry
        from fxdesk.tools.registry import all_tools

        store = self.store
        self.tools = ToolRegistry(all_tools())
        # fxdesk's own tools; MCP servers' come and go in ``workspace_tools`` (engine.mcp).
        self.authority = HostAuthority(tool_names=tuple(self.tools.names))
        await self.profiles.hide_env_keys()
        self._runner = runner = TurnRunner(
            store,
            self.tools,
            self.bus,
            permissions=self.permissions,
            clock=self.clock,
            data_dir=self.paths.root,
        )
        scheduler = ReportScheduler(self.clock, ReportPoller(store, self.bus))
        owner = SessionOwner(
            store,
            self.bus,
            lock_dir=self.paths.locks,
            providers=self.providers
            or ProfileResolver(store, log_dir=self.paths.logs, data_dir=self.paths.root),
            runner=runner,
            authority=self.authority,
            scheduler=scheduler,
            clock=self.clock,
        )
        # Exclusive when alone, and kept so until recovery has committed: another fxdesk that
        # starts meanwhile waits here (off the loop) rather than run work this recovery, which
        # proves no session lock when alone, would interrupt (issue 10 item 11).
        instance = InstanceLock(self.paths.locks)
        alone = await asyncio.to_thread(instance.acquire)
        try:
            _test_hold("before-recovery")
            # Nothing runs before recovery. Pending work is judged by who queued it: a dead
            # process's is interrupted, a live one's kept, and handed-off work always kept.
            if self._recover_at_start:
                # No view listens yet (they load the catalog after start-up): no snapshots.
                self.recovery = await owner.recover(
                    include_pending=False,
                    exclusive=alone,
                    owner_alive=functools.partial(instance_alive, self.paths.locks),
                    publish_sessions=False,
                )
            await asyncio.to_thread(instance.share)
            if alone:  # tidy up after processes that were killed (their files stay behind)
                await asyncio.to_thread(prune_dead_instances, self.paths.locks)
                await sweep_sandbox_temp(store, self.paths.sandbox_temp)  # none can be in use
        except BaseException:
            instance.release()
            raise
        self.instance_lock = instance
        owners.set_queue_owner(instance.instance_id)  # the work queued here is ours to run
        self._owner = owner
        self._sessions = SessionService(store, self.bus, owner, clock=self.clock)
        # Agent runs: this activation's generation, and what earlier ones left unfinished
        # interrupted (nothing re-runs), before any delegation can happen.
        agents = AgentCoordinator(
            store,
            self.bus,
            owner,
            self._sessions,
            self.clock,
            instance_id=instance.instance_id,
            limits=self.agent_limits,
            user_agents=self.paths.user_agents,
            owner_alive=functools.partial(instance_alive, self.paths.locks),
        )
        try:
            await agents.start(recover=self._recover_at_start)
        except BaseException:
            await owner.shutdown()
            owners.set_queue_owner(None)
            instance.release()
            raise
        self._agents = agents
        runner.agents = CoordinatorPort(agents)
        scheduler.start()
        self._engine = self._facade(self._sessions, owner)

        async def stop() -> None:
            runner.agents = None
            await agents.stop()  # first: its runs stop without writing (recovery's to settle)
            self._agents = None
            await owner.shutdown()
            owners.set_queue_owner(None)
            instance.release()  # only now may another process judge our pending work dead
            self._sessions = None
            self._owner = None

        return _Subsystem("engine", stop)

    async def _start_background(self) -> _Subsystem:
        """The background runtime: durable tasks of earlier runs found again, then watched."""
        from fxdesk.engine.background.port import RuntimePort
        from fxdesk.engine.background.runtime import BackgroundRuntime
        from fxdesk.engine.background.specs import sandboxed_specs
        from fxdesk.store.locks import instance_alive
        from fxdesk.tools.background.launch import WrapperProvider

        provider = WrapperProvider()
        locks = self.paths.locks
        runtime = BackgroundRuntime(
            provider,
            self.store,
            self.bus,
            self.clock,
            durable_logs=self.paths.background_logs,
            build_spec=sandboxed_specs(self.paths.root),
            instance_id=self.instance_lock.instance_id,
            owner_alive=functools.partial(instance_alive, locks),
        )
        try:
            await runtime.start()
        except BaseException:
            await asyncio.to_thread(provider.close)
            raise
        self._background = runtime
        self._runner.background = RuntimePort(runtime)  # the agent's background tools
        self._engine = self._facade(self.sessions, self.owner)

        async def stop() -> None:
            # Before the engine: process-local tasks are stopped, durable ones keep running.
            self._background = None
            self._runner.background = None
            try:
                await runtime.shutdown()
            finally:
                await asyncio.to_thread(provider.close)
            if self._engine is not None and self._owner is not None:
                self._engine = self._facade(self.sessions, self._owner)

        return _Subsystem("background tasks", stop)

    async def _start_mcp(self) -> _Subsystem:
        """MCP tool servers: global ones and those of trusted workspaces (docs/mcp.md)."""
        from fxdesk.engine.mcp import McpService

        service = McpService(
            self.store,
            self.bus,
            self.authority,
            self.tools,
            config_dir=self.paths.config,
            data_dir=self.paths.root,
        )
        self._mcp = service
        try:
            await service.start()
        except BaseException:
            self._mcp = None
            await service.stop()
            raise
        self._engine = self._facade(self.sessions, self.owner)

        async def stop() -> None:
            self._mcp = None
            if self._engine is not None and self._owner is not None:
                self._engine = self._facade(self.sessions, self._owner)
            await service.stop()

        return _Subsystem("MCP servers", stop)

    @property
    def mcp(self) -> McpService:
        if self._mcp is None:
            raise RuntimeError("MCP servers are not started")
        return self._mcp

    async def _start_handoff(self) -> _Subsystem:
        from fxdesk.engine.handoff import HandoffRunner

        handoff = HandoffRunner(self.store, self.owner, self.paths.locks)
        await handoff.start()
        return _Subsystem("handed-off work", handoff.stop)

    def _facade(self, sessions: SessionService, owner: SessionOwner | None = None) -> Engine:
        from fxdesk.engine.facade import Engine

        return Engine(
            self.store,
            self.bus,
            sessions,
            self.permissions,
            self.profiles,
            lock_dir=self.paths.locks,
            clock=self.clock,
            owner=owner,
            recovery=self.recovery,
            background=self._background,
            user_agents=self.paths.user_agents,
            agents=self._agents,
            mcp=self._mcp,
            data_dir=self.paths.root,
        )

    async def stop(self) -> None:
        """Stop what is running, newest first. Never raises; failures are logged."""
        while self._running:
            subsystem = self._running.pop()
            began = time.perf_counter()
            log.info("shutdown: %s ...", subsystem.name)
            try:
                await subsystem.stop()
            except Exception:
                log.exception("shutdown: %s failed; continuing", subsystem.name)
            else:
                log.info(
                    "shutdown: %s stopped (%.0f ms)",
                    subsystem.name,
                    (time.perf_counter() - began) * 1000,
                )
        self.started = False
