"""The composition root: builds the services and starts and stops them in one logged order.

``App`` knows nothing of Qt. The GUI (``fxdesk.gui.application``) runs it on a qasync loop; the
CLI runs it on plain asyncio. Each subsystem has a start and a stop; ``stop`` runs them in reverse
order, logs each with its duration, and carries on past a failing one so the rest still shut down.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import SystemClock
from fxdesk.engine.events import RecoveryReport
from fxdesk.engine.facade import Engine
from fxdesk.engine.owner import SessionOwner
from fxdesk.engine.permissions import PermissionService
from fxdesk.engine.profiles import ProfileService
from fxdesk.engine.providers import ProfileResolver, ProviderResolver
from fxdesk.engine.report_poller import ReportPoller
from fxdesk.engine.report_scheduler import ReportScheduler
from fxdesk.engine.sessions import SessionService
from fxdesk.engine.turn import TurnRunner
from fxdesk.logs import CrashLog
from fxdesk.paths import DataPaths
from fxdesk.store import Store
from fxdesk.store.faults import FaultInjector
from fxdesk.store.locks import InstanceLock
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools

log = logging.getLogger(__name__)


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
    ) -> None:
        self.paths = paths
        self.faults = faults
        self.providers = providers
        self.recovery: RecoveryReport | None = None
        self._recover_at_start = True
        self._owner: SessionOwner | None = None
        self.bus = EventBus()
        self.crash_log = CrashLog(paths.crash_dir)
        self._store: Store | None = None
        self._sessions: SessionService | None = None
        self._engine: Engine | None = None
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

    async def start(self, *, recover: bool = True) -> None:
        """Start every subsystem in order. On failure, stops what had started and re-raises.

        ``recover`` runs start-up recovery before anything can run; processes that only look
        or queue (``fxdesk show``, ``cancel``) skip it, so they never interrupt work that
        another fxdesk queued.
        """
        self._recover_at_start = recover
        try:
            await self._start("store", self._start_store)
            await self._start("engine", self._start_engine)
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
        self.paths.ensure()
        self._store = await Store.aopen(self.paths.database, faults=self.faults)
        self.profiles = ProfileService(self._store)
        # The one clock of the engine: every service below stamps and schedules by it.
        self.clock = SystemClock()
        self.permissions = PermissionService(self._store, self.bus, self.clock)
        # Until the engine starts (or for commands that run nothing): a facade without runs.
        self._engine = self._facade(SessionService(self._store, self.bus, clock=self.clock))

        async def stop() -> None:
            self._engine = None
            store, self._store = self._store, None
            if store is not None:  # waits for queued writes: off the loop thread
                await asyncio.get_running_loop().run_in_executor(None, store.close)

        return _Subsystem("store", stop)

    async def _start_engine(self) -> _Subsystem:
        store = self.store
        self.tools = ToolRegistry(all_tools())
        await self.profiles.hide_env_keys()
        runner = TurnRunner(
            store, self.tools, self.bus, permissions=self.permissions, clock=self.clock
        )
        scheduler = ReportScheduler(self.clock, ReportPoller(store, self.bus))
        self.instance_lock = InstanceLock(self.paths.locks)
        alone = self.instance_lock.hold_shared()
        owner = SessionOwner(
            store,
            self.bus,
            lock_dir=self.paths.locks,
            providers=self.providers or ProfileResolver(store),
            runner=runner,
            scheduler=scheduler,
            clock=self.clock,
        )
        self._owner = owner
        self._sessions = SessionService(store, self.bus, owner, clock=self.clock)
        # Nothing runs before recovery; pending work is only ours to judge when we are alone.
        if self._recover_at_start:
            # No view listens yet (they load the catalog after start-up): skip the snapshots.
            self.recovery = await owner.recover(
                include_pending=alone, exclusive=alone, publish_sessions=False
            )
        scheduler.start()
        self._engine = self._facade(self._sessions, owner)

        async def stop() -> None:
            await owner.shutdown()
            self.instance_lock.release()
            self._sessions = None
            self._owner = None

        return _Subsystem("engine", stop)

    def _facade(self, sessions: SessionService, owner: SessionOwner | None = None) -> Engine:
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
