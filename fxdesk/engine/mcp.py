"""MCP tool servers: configured, trusted, started, supervised, offered through the live authority.

Servers come from the person's global ``mcp.json`` (config folder: trusted, it is theirs) and
from each known workspace's ``.fxdesk/mcp.json`` / ``.mcp.json`` (``domain.mcp``). A workspace's
servers start only once the person trusted that configuration (``trust``: its hash is stored;
a changed file is untrusted again at the next read), so a cloned repository cannot start a
program by itself.

Each server has a supervisor task here: it starts the connection on the MCP loop
(``tools.mcp.client``), and when the server is ready registers its tools (``McpTool``) and
offers them through the host authority (``HostAuthority.workspace_tools``: a workspace's tools
to that workspace's sessions only). When the connection ends, its tools leave the authority at
once, so the next action of any turn finds them ``unavailable`` with a note saying the server is
being restarted; the supervisor says so to the person (``messages``), waits out the backoff
(``domain.mcp.BACKOFF_S``) and starts it again. A call that was running when it ended is told
its outcome is unknown. Tools join a turn at its next admission (spec §2.7); a tool that comes
back mid-turn is offered again to the turn that was admitted with it.

Limits: configuration files are read at start, when a workspace appears, on ``trust`` and on
``reload``, not watched. One registry holds the tools of every workspace by their qualified
name: two workspaces whose servers share a name and a tool are each called on their own server,
but both are described to the model as the first one listed them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fxdesk import messages
from fxdesk.domain.mcp import (
    BACKOFF_S,
    GLOBAL_FILE,
    HEALTHY_S,
    WORKSPACE_FILES,
    McpConfig,
    Origin,
    ServerConfig,
    ServerState,
    ServerStatus,
    ToolInfo,
    Transport,
    backoff,
    merge,
    safe_name,
    target,
)
from fxdesk.domain.model import Workspace
from fxdesk.engine.authority import ALL_WORKSPACES, HostAuthority
from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import McpServersChanged, WorkspaceAdded
from fxdesk.store import Store, repo
from fxdesk.tools.base import ToolRegistry, ToolResult, bounded
from fxdesk.tools.mcp.client import Connection, McpLoop, ServerGone, describe, result_text
from fxdesk.tools.mcp.launch import stdio_launch
from fxdesk.tools.mcp.tool import McpTool

log = logging.getLogger(__name__)

TRUST_PREFIX = "mcp_trust:"  # + the workspace folder: the sha256 of the configuration trusted
LOG_TAIL = 64 * 1024  # how much of a server's log ``log_text`` returns
CALL_TIMEOUT_S = 600.0


class ConfigChanged(Exception):
    """A workspace's MCP configuration is not the one the person was shown (``trust``)."""


def folder(path: Path | str) -> Path:
    """A workspace folder as the store keeps it: absolute, links resolved (blocking)."""
    return Path(path).expanduser().resolve()


def trust_key(workspace: Path) -> str:
    return TRUST_PREFIX + str(workspace)


def read_workspace_config(workspace: Path) -> McpConfig:
    """A workspace's configuration (blocking: reads files)."""
    return _read(Origin.WORKSPACE, [(workspace / name, name) for name in WORKSPACE_FILES])


def read_global_config(config_dir: Path) -> McpConfig:
    """The person's own configuration (blocking)."""
    return _read(Origin.GLOBAL, [(config_dir / GLOBAL_FILE, str(config_dir / GLOBAL_FILE))])


def _read(origin: Origin, files: Sequence[tuple[Path, str]]) -> McpConfig:
    documents: list[tuple[str, Any]] = []
    for path, shown in files:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as exc:
            documents.append((shown, OSError(exc.strerror or str(exc))))
            continue
        try:
            documents.append((shown, json.loads(text)))
        except ValueError as exc:
            documents.append((shown, ValueError(f"not valid JSON ({exc})")))
    return merge(origin, documents)


@dataclass
class _Server:
    """One configured server and what its supervisor knows of it."""

    config: ServerConfig
    origin: Origin
    workspace: Path | None
    workspace_id: int
    log_path: Path
    state: ServerState = ServerState.STARTING
    detail: str = ""
    tools: tuple[ToolInfo, ...] = ()
    restarts: int = 0
    sandboxed: bool = False
    connection: Connection | None = None
    task: asyncio.Task[None] | None = None
    stopping: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.workspace or ""), self.config.name)

    def status(self) -> ServerStatus:
        return ServerStatus(
            self.config.name,
            self.origin,
            str(self.workspace or ""),
            self.config.transport,
            self.state,
            target(self.config),
            self.tools if self.state is ServerState.RUNNING else (),
            self.detail,
            self.restarts,
            str(self.log_path),
            self.sandboxed,
        )


class McpService:
    """Every MCP server of this process.

    Args:
        store: Trust settings and the known workspaces.
        bus: Where ``McpServersChanged`` is published.
        authority: The host authority the servers' tools are offered through.
        tools: The registry their tools are registered in.
        config_dir: The person's config folder (the global ``mcp.json``).
        data_dir: fxdesk's data folder: server logs, sandbox folders.
        backoff_s: Pauses before restarts (the last repeated).
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        authority: HostAuthority,
        tools: ToolRegistry,
        *,
        config_dir: Path,
        data_dir: Path,
        backoff_s: Sequence[float] = BACKOFF_S,
    ) -> None:
        self.store = store
        self.bus = bus
        self.authority = authority
        self.tools = tools
        self.config_dir = config_dir
        self.data_dir = data_dir
        self.backoff_s = tuple(backoff_s)
        self._loop = McpLoop()
        self._servers: dict[tuple[str, str], _Server] = {}
        self._untrusted: dict[str, McpConfig] = {}  # workspace folder -> its untrusted config
        self._workspace_ids: dict[str, int] = {}
        self._closing = False
        self._restarts_go = asyncio.Event()
        self._restarts_go.set()
        self._unsubscribe = bus.subscribe(WorkspaceAdded, self._on_workspace_added)
        self._pending: set[asyncio.Task[Any]] = set()

    @property
    def logs(self) -> Path:
        return self.data_dir / "logs" / "mcp"

    # --- life ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the global servers and those of every known workspace whose configuration is
        trusted (the others are listed, untrusted)."""
        config = await asyncio.to_thread(read_global_config, self.config_dir)
        self._report_problems(config)
        await self._replace_async(None, ALL_WORKSPACES, config)
        workspaces = await self.store.read(repo.list_workspaces)
        for workspace in workspaces:
            await self.reload(Path(workspace.path), workspace.id)
        self._publish()

    async def stop(self) -> None:
        """Stop every server (their programs end with their connections), then the MCP loop."""
        self._closing = True
        self._unsubscribe()
        self._restarts_go.set()
        for task in list(self._pending):
            task.cancel()
        servers = list(self._servers.values())
        for server in servers:
            await self._stop_server(server)
        self._servers.clear()
        self._offer()
        await asyncio.to_thread(self._loop.close)

    # --- configuration and trust ---------------------------------------------------------------

    async def reload(self, workspace: Path, workspace_id: int | None = None) -> McpConfig:
        """Read ``workspace``'s configuration again: start its servers if it is trusted (and
        changed servers again), stop them if it is no longer."""
        workspace = await asyncio.to_thread(folder, workspace)
        if workspace_id is None:
            workspace_id = await self._workspace_id(workspace)
        else:
            self._workspace_ids[str(workspace)] = workspace_id
        config = await asyncio.to_thread(read_workspace_config, workspace)
        trusted = await self.store.read(lambda: repo.get_setting(trust_key(workspace)))
        self._report_problems(config)
        if not config.servers or trusted == config.hash:
            self._untrusted.pop(str(workspace), None)
            await self._replace_async(workspace, workspace_id, config)
        else:
            self._untrusted[str(workspace)] = config
            await self._replace_async(workspace, workspace_id, McpConfig(Origin.WORKSPACE))
            if trusted is not None:
                messages.warning(
                    f"The MCP configuration of {workspace} changed since you trusted it; its "
                    "servers wait until you trust it again (Settings → Tools).",
                    key=f"mcp-untrusted:{workspace}",
                )
        self._publish()
        return config

    async def trust(self, workspace: Path, seen: str | None = None) -> McpConfig:
        """Trust ``workspace``'s configuration as it is now and start its servers.

        Args:
            workspace: The workspace folder.
            seen: The hash of the configuration the person was shown (``ServerStatus.
                config_hash``). When the files say something else now (the repository
                changed them after they were shown), nothing is trusted: ``ConfigChanged``,
                and the list is read again so the person sees what is there now.
        """
        workspace = await asyncio.to_thread(folder, workspace)
        config = await asyncio.to_thread(read_workspace_config, workspace)
        digest = config.hash
        if seen is not None and digest != seen:
            await self.reload(workspace)
            raise ConfigChanged(
                f"The MCP configuration of {workspace} changed after it was shown; nothing "
                "was trusted. Look at it again, then trust it."
            )
        await self.store.write(
            lambda: repo.set_setting(trust_key(workspace), digest), label="mcp_trust"
        )
        messages.withdraw(f"mcp-untrusted:{workspace}")
        return await self.reload(workspace)

    async def _workspace_id(self, workspace: Path) -> int:
        known = self._workspace_ids.get(str(workspace))
        if known is not None:
            return known
        workspaces: list[Workspace] = await self.store.read(repo.list_workspaces)
        for w in workspaces:
            self._workspace_ids[w.path] = w.id  # resolved when it was added
        # Not a workspace of any session yet: its tools reach no session until it is one.
        return self._workspace_ids.get(str(workspace), -1)

    def _on_workspace_added(self, event: WorkspaceAdded) -> None:
        if self._closing:
            return
        workspace = event.workspace
        task = asyncio.get_running_loop().create_task(
            self.reload(Path(workspace.path), workspace.id), name=f"mcp-reload-{workspace.id}"
        )
        self._pending.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("MCP task %s failed", task.get_name(), exc_info=task.exception())

    def _report_problems(self, config: McpConfig) -> None:
        for problem in config.problems:
            messages.warning(f"MCP configuration: {problem}", key=f"mcp-config:{problem[:80]}")

    async def _replace_async(
        self, workspace: Path | None, workspace_id: int, config: McpConfig
    ) -> None:
        place = str(workspace or "")
        wanted = {s.name: s for s in config.servers}
        for key, server in list(self._servers.items()):
            if key[0] != place:
                continue
            if wanted.get(server.config.name) != server.config or server.workspace_id != (
                workspace_id
            ):
                await self._stop_server(server)
                del self._servers[key]
            else:
                wanted.pop(server.config.name)
        for spec in wanted.values():
            self._begin(spec, config.origin, workspace, workspace_id)
        self._offer()
        self._publish()

    def _begin(
        self, config: ServerConfig, origin: Origin, workspace: Path | None, workspace_id: int
    ) -> None:
        folder = "global" if workspace is None else safe_name(workspace.name)
        log_path = self.logs / folder / f"{safe_name(config.name)}.log"
        server = _Server(config, origin, workspace, workspace_id, log_path)
        self._servers[server.key] = server
        if config.problem:
            server.state, server.detail = ServerState.FAILED, config.problem
            return
        server.task = asyncio.get_running_loop().create_task(
            self._supervise(server), name=f"mcp-{config.name}"
        )

    # --- supervision ---------------------------------------------------------------------------

    async def _supervise(self, server: _Server) -> None:
        attempt = 0
        while not (self._closing or server.stopping):
            began = time.monotonic()
            why = await self._run_once(server)
            if self._closing or server.stopping:
                break
            self._down(server, why)
            attempt = 1 if time.monotonic() - began >= HEALTHY_S else attempt + 1
            delay = backoff(attempt, self.backoff_s)
            server.restarts += 1
            server.state = ServerState.RESTARTING
            server.detail = f"stopped: {why}; restarting in {delay:g} s"
            self._publish()
            messages.warning(
                f"MCP server “{server.config.name}” stopped ({why}); fxdesk restarts it in "
                f"{delay:g} s. Its log: {server.log_path}",
                key=f"mcp-down:{server.key}",
            )
            server.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wake.wait(), delay)
            await self._restarts_go.wait()
        server.state, server.detail = ServerState.STOPPED, ""

    async def _run_once(self, server: _Server) -> str:
        """Start the server and hold its connection until it ends; why it ended."""
        server.state, server.detail = ServerState.STARTING, ""
        self._publish()
        launch = None
        if server.config.transport is Transport.STDIO:
            try:
                launch = await asyncio.to_thread(
                    stdio_launch, server.config, server.workspace, self.data_dir
                )
            except OSError as exc:
                return f"cannot prepare its sandbox: {exc}"
            server.sandboxed = launch.sandboxed
        connection = Connection(server.config, launch, server.log_path)
        server.connection = connection
        loop = asyncio.get_running_loop()

        def ready(tools: tuple[ToolInfo, ...]) -> None:  # on the MCP thread
            loop.call_soon_threadsafe(self._ready, server, connection, tools)

        try:
            return await self._loop.submit(connection.serve(ready))
        except asyncio.CancelledError:
            self._loop.submit(_stop(connection))
            raise
        except Exception as exc:
            return describe(exc)
        finally:
            server.connection = None

    def _ready(self, server: _Server, connection: Connection, tools: tuple[ToolInfo, ...]) -> None:
        if server.connection is not connection or self._closing or server.stopping:
            return
        server.state, server.detail, server.tools = ServerState.RUNNING, "", tools
        if server.restarts:
            messages.info(
                f"MCP server “{server.config.name}” is running again.",
                key=f"mcp-down:{server.key}",
            )
        for info in tools:
            if self.tools.get(info.qualified) is None:
                self.tools.register(McpTool(server.config.name, info, self))
        self._offer()
        self._publish()

    def _down(self, server: _Server, why: str) -> None:
        """The server's connection ended: its tools leave the authority now."""
        if server.state is ServerState.RUNNING:
            server.state = ServerState.RESTARTING
            server.detail = f"stopped: {why}"
            self._offer()
            self._publish()

    async def _stop_server(self, server: _Server) -> None:
        server.stopping = True
        server.wake.set()
        connection = server.connection
        if connection is not None:
            with contextlib.suppress(RuntimeError):  # the loop is gone already
                await self._loop.submit(_stop(connection))
        if server.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(server.task), 15)
            except TimeoutError:
                server.task.cancel()
            except Exception:
                log.exception("MCP server %s: its supervisor failed", server.config.name)
        server.state = ServerState.STOPPED

    def _offer(self) -> None:
        """Offer the running servers' tools (and drop from the registry those nobody lists)."""
        scoped: dict[int, list[str]] = {}
        listed: set[str] = set()
        for server in self._servers.values():
            listed.update(t.qualified for t in server.tools)
            if server.state is ServerState.RUNNING:
                names = scoped.setdefault(server.workspace_id, [])
                names += [t.qualified for t in server.tools if t.qualified not in names]
        offered = {key: tuple(names) for key, names in scoped.items()}
        if offered != self.authority.workspace_tools:
            self.authority.update(workspace_tools=offered)
        for tool in list(self.tools):
            if isinstance(tool, McpTool) and tool.name not in listed:
                self.tools.unregister(tool.name)

    # --- the tools' port -----------------------------------------------------------------------

    def _serving(self, workspace: Path, name: str) -> _Server | None:
        """The server that offers ``name`` to ``workspace``: the workspace's own first."""
        place = str(workspace)  # the session's folder, resolved when it was added
        candidates = [s for s in self._servers.values() if s.workspace is None or s.key[0] == place]
        candidates.sort(key=lambda s: s.workspace is None)
        for server in candidates:
            if any(t.qualified == name for t in server.tools):
                return server
        return None

    async def call(self, workspace: Path, name: str, arguments: dict[str, Any]) -> ToolResult:
        server = self._serving(workspace, name)
        connection = server.connection if server is not None else None
        if server is None or connection is None or server.state is not ServerState.RUNNING:
            note = self.unavailable_note(workspace, name)
            return ToolResult.error(f"Not run: {name} is not available now. {note}".strip())
        remote = next(t.name for t in server.tools if t.qualified == name)
        try:
            result = await asyncio.wait_for(
                self._loop.submit(connection.call(remote, arguments)), CALL_TIMEOUT_S
            )
        except ServerGone:
            self._down(server, "it stopped while a call ran")
            return ToolResult.error(
                f"The MCP server “{server.config.name}” stopped while this call ran, so its "
                "outcome is unknown. Its tools are unavailable until fxdesk has restarted it.",
                unavailable=True,
            )
        except TimeoutError:
            return ToolResult.error(f"{name} did not answer within {CALL_TIMEOUT_S:g} s.")
        except Exception as exc:
            return ToolResult.error(f"{name} failed: {describe(exc)}")
        output, full = bounded(result_text(result))
        data = {"server": server.config.name}
        return ToolResult(not result.is_error, output, full, data)

    def unavailable_note(self, workspace: Path, name: str) -> str:
        server = self._serving(workspace, name)
        if server is None:
            return "No MCP server offers it to this workspace now."
        if server.state is ServerState.RUNNING:
            return ""
        return (
            f"Its MCP server “{server.config.name}” is {server.state.value}"
            f"{': ' + server.detail if server.detail else ''}; fxdesk restarts it and its tools "
            "come back then."
        )

    # --- reading -------------------------------------------------------------------------------

    def statuses(self) -> list[ServerStatus]:
        """Every server: running, restarting, failed, and those of untrusted configurations."""
        found = [server.status() for server in self._servers.values()]
        for workspace, config in self._untrusted.items():
            found += [
                ServerStatus(
                    s.name,
                    Origin.WORKSPACE,
                    workspace,
                    s.transport,
                    ServerState.UNTRUSTED,
                    target(s),
                    detail="its workspace's MCP configuration is not trusted: nothing started",
                    config_hash=config.hash,
                )
                for s in config.servers
            ]
        return sorted(found, key=lambda s: (s.workspace, s.name))

    async def log_text(self, status: ServerStatus) -> str:
        """The end of a server's log (its stderr and fxdesk's notes)."""

        def read() -> str:
            try:
                with open(status.log_path, "rb") as log_file:
                    log_file.seek(0, 2)
                    size = log_file.tell()
                    log_file.seek(max(0, size - LOG_TAIL))
                    return log_file.read().decode("utf-8", "replace")
            except OSError:
                return ""

        return await asyncio.to_thread(read) if status.log_path else ""

    # --- for tests -----------------------------------------------------------------------------

    def hold_restarts(self) -> None:
        """Restarts wait until ``release_restarts`` (a test that looks at a stopped server)."""
        self._restarts_go.clear()

    def release_restarts(self) -> None:
        self._restarts_go.set()

    def _publish(self) -> None:
        if not self._closing:
            self.bus.publish(McpServersChanged(tuple(self.statuses())))


async def _stop(connection: Connection) -> None:
    connection.stop()
