"""A real engine on a temporary data folder: real SQLite file, real session locks, a scripted
provider at the edge. Tests build one with ``Engine.create`` and ``close`` it at the end."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain.model import PermissionMode, Session, SessionMode
from fxdesk.domain.work import WorkItem
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import Clock, SystemClock
from fxdesk.engine.owner import SessionOwner
from fxdesk.engine.permissions import PermissionService
from fxdesk.engine.providers import FixedResolver
from fxdesk.engine.report_poller import ReportPoller
from fxdesk.engine.report_scheduler import ReportScheduler
from fxdesk.engine.sessions import SessionService
from fxdesk.engine.turn import TurnRunner
from fxdesk.providers.base import Provider
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider, Step
from fxdesk.store import Store, control, history, repo
from fxdesk.store.faults import FaultInjector
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.basic import basic_tools


def say(text: str) -> Reply:
    return Reply(text=text)


def call(name: str, **arguments: object) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name, dict(arguments)),))


def append_line(path: str, line: str) -> Reply:
    """A tool call with a real file side effect: appends one line to ``path``."""
    return call("write_file", path=path, content=line + "\n", append=True)


@dataclass
class Engine:
    root: Path
    store: Store
    bus: EventBus
    provider: ScriptedProvider
    owner: SessionOwner
    sessions: SessionService
    workspace: Path
    faults: FaultInjector
    events: list[object] = field(default_factory=list)
    permissions: PermissionService | None = None

    @classmethod
    async def create(
        cls,
        root: Path,
        steps: Sequence[Step] = (),
        *,
        authority: HostAuthority | None = None,
        max_iterations: int = 25,
        clock: Clock | None = None,
        provider: Provider | None = None,
        tools: ToolRegistry | None = None,
        permissions: bool = False,
    ) -> Engine:
        root.mkdir(parents=True, exist_ok=True)
        faults = FaultInjector()
        store = await Store.aopen(root / "fxdesk.sqlite3", faults=faults)
        bus = EventBus()
        scripted = ScriptedProvider(list(steps))
        tools = tools or ToolRegistry(basic_tools())
        service = PermissionService(store, bus, clock or SystemClock()) if permissions else None
        runner = TurnRunner(
            store, tools, bus, max_iterations=max_iterations, permissions=service, clock=clock
        )
        scheduler = ReportScheduler(clock, ReportPoller(store, bus)) if clock else None
        owner = SessionOwner(
            store,
            bus,
            lock_dir=root / "locks",
            providers=FixedResolver(provider or scripted),
            runner=runner,
            authority=authority,
            scheduler=scheduler,
            clock=clock,
        )
        workspace = root / "workspace"
        workspace.mkdir(exist_ok=True)
        engine = cls(
            root, store, bus, scripted, owner, SessionService(store, bus, owner), workspace, faults
        )
        engine.permissions = service
        bus.subscribe_all(engine.events.append)
        return engine

    async def reopen(self, steps: Sequence[Step] | None = None, **kwargs: object) -> Engine:
        """A new process's engine on the same data folder (after ``close``)."""
        return await Engine.create(
            self.root,
            self.provider.steps if steps is None else steps,
            permissions=self.permissions is not None,
            **kwargs,  # type: ignore[arg-type]
        )

    async def close(self) -> None:
        await self.owner.shutdown()
        await asyncio.get_running_loop().run_in_executor(None, self.store.close)

    async def root_session(self, first_message: str | None = None, **kwargs: object) -> Session:
        return await self.sessions.create_root(
            self.workspace,
            name=str(kwargs.pop("name", "test")),
            permission_mode=PermissionMode.YOLO,
            first_message=first_message,
        )

    async def child(
        self, parent: Session, *messages: str, mode: SessionMode = SessionMode.PERSISTENT
    ) -> Session:
        child = await self.sessions.create_child(
            parent.id, name="child", mode=mode, first_message=messages[0] if messages else None
        )
        for message in messages[1:]:
            await self.sessions.send(child.id, message, source_id=parent.id)
        return child

    async def start_blocked(self, session_id: str) -> None:
        """Start the session and wait until its turn is inside a model call that waits for
        ``provider.release()``."""
        entered = self.provider.entered
        self.provider.hold()
        self.owner.start(session_id)
        await wait_until(lambda: self.provider.entered > entered)

    async def run(self, session_id: str, retry: bool = False) -> object:
        self.owner.start(session_id, retry)
        return await asyncio.wait_for(self.owner.join(session_id), 30)

    async def items(self, session_id: str) -> list[WorkItem]:
        return await self.store.read(lambda: control.list_items(session_id))

    async def session(self, session_id: str) -> Session:
        found = await self.store.read(lambda: repo.get_session(session_id))
        assert found is not None
        return found

    async def history_kinds(self, session_id: str) -> list[str]:
        entries = await self.store.read(lambda: history.page_history(session_id, 0, 10_000))
        return [e.kind.value for e in entries]

    async def deliveries(self, session_id: str) -> list[tuple[str, str]]:
        found = await self.store.read(lambda: control.deliveries(session_id=session_id))
        return [
            (d.kind.value, str(d.payload.get("phase") or d.payload.get("state"))) for d in found
        ]


async def wait_until(condition: object, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():  # type: ignore[operator]
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)
