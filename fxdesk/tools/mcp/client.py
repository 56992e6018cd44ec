"""One MCP server's connection, held with the official ``mcp`` SDK on a thread of its own.

The SDK is built on anyio task groups that must be entered and left in one task, and it spawns
stdio servers with anyio's subprocess support. Holding every connection on a private asyncio
loop in one thread (``McpLoop``) keeps both away from the window's qasync loop, where neither
is promised to work; the engine reaches it through ``McpLoop.submit`` (a future on its own loop).

A ``Connection`` starts the server (stdio: the program, sandboxed when a ``Launch`` says so;
HTTP: the endpoint), initialises the session, lists the tools and then holds the connection
until it ends: the program exits (its stdout closes), a ping to an HTTP server fails, or
``stop``. ``serve`` returns why in a sentence. A call that was running when the connection ended
raises ``ServerGone``: its outcome is unknown.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import anyio

if TYPE_CHECKING:
    import mcp.types as mcp_types
    from mcp import ClientSession

# The mcp SDK (pydantic models for the whole protocol) takes ~470 ms and ~50 MiB to import: it is
# imported when a server is connected or a result read, never at start-up (docs/performance.md).

from fxdesk.domain.mcp import ServerConfig, ToolInfo, Transport, tool_name

log = logging.getLogger(__name__)

Done = TypeVar("Done")
PING_S = 10.0  # how often an idle HTTP connection is checked (a stdio one ends with its program)
START_TIMEOUT_S = 60.0  # initialise and list the tools (npx may download the server first)


class ServerGone(Exception):
    """The server's connection ended while a call waited on it."""


@dataclass(frozen=True)
class Launch:
    """How a stdio server's program is started: the argv (bubblewrap's when ``sandboxed``),
    its environment and folder."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: Path
    sandboxed: bool
    outside: str = ""  # why it runs outside the sandbox ('' when it does not)


class McpLoop:
    """A thread running one asyncio loop, where every MCP connection lives."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                # Not ``new_event_loop()``: under the window that is qasync's policy, and a Qt
                # loop in this thread would start Qt timers off the GUI thread.
                loop: asyncio.AbstractEventLoop = asyncio.SelectorEventLoop()
                ready = threading.Event()

                def main() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=main, name="fxdesk-mcp", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    def submit(self, work: Coroutine[Any, Any, Done]) -> asyncio.Future[Done]:
        """Run ``work`` on the MCP loop; a future of the calling loop for its result."""
        future: concurrent.futures.Future[Done] = asyncio.run_coroutine_threadsafe(
            work, self._ensure()
        )
        return asyncio.wrap_future(future)

    def close(self, timeout_s: float = 10.0) -> None:
        """Cancel what still runs there and end the thread (blocking: off the loop)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def finish() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            loop.stop()

        asyncio.run_coroutine_threadsafe(finish(), loop)
        thread.join(timeout_s)
        if not thread.is_alive():
            loop.close()


class Connection:
    """One connection to one server; every method runs on the MCP loop.

    Args:
        config: The server.
        launch: How its program starts (stdio).
        log_path: Its stderr and fxdesk's notes about it, appended.
    """

    def __init__(self, config: ServerConfig, launch: Launch | None, log_path: Path) -> None:
        self.config = config
        self.launch = launch
        self.log_path = log_path
        self._session: ClientSession | None = None
        self._ended: anyio.Event | None = None
        self._closed: anyio.Event | None = None  # the transport's stream ended
        self._stop: anyio.Event | None = None
        self.tools: tuple[ToolInfo, ...] = ()

    async def serve(self, ready: Callable[[tuple[ToolInfo, ...]], None]) -> str:
        """Connect, list the tools, call ``ready`` with them, and hold the connection until it
        ends. Returns why it ended ('' when ``stop`` ended it)."""
        self._ended, self._stop = anyio.Event(), anyio.Event()
        self.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.log_path.open("a", encoding="utf-8", errors="replace") as errlog:
            note(errlog, f"starting {self._describe()}")
            try:
                why = await self._hold(errlog, ready)
            except Exception as exc:  # the SDK raises many kinds; each ends this connection
                why = describe(exc)
            finally:
                self._session = None
                self._ended.set()
            note(errlog, f"stopped: {why or 'by fxdesk'}")
        return why

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call ``tool`` (its name on the server). ``ServerGone`` if the connection ends first."""
        import mcp.types as mcp_types

        session, ended = self._session, self._ended
        if session is None or ended is None or ended.is_set():
            raise ServerGone("it is not connected")
        result: list[mcp_types.CallToolResult] = []
        failure: list[BaseException] = []

        async def request() -> None:
            try:
                got = await session.call_tool(tool, arguments)
                if isinstance(got, mcp_types.CallToolResult):
                    result.append(got)
                else:
                    failure.append(RuntimeError(f"unexpected result {type(got).__name__}"))
            except Exception as exc:
                failure.append(exc)
            tg.cancel_scope.cancel()

        async def watch() -> None:
            await ended.wait()
            tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(request)
            tg.start_soon(watch)
        if result:
            return result[0]
        if not ended.is_set() and self._closed is not None:
            # A call fails as the program dies, just before its stream is seen closing.
            with anyio.move_on_after(1.0):
                await self._closed.wait()
        if ended.is_set() or (self._closed is not None and self._closed.is_set()):
            raise ServerGone("it stopped while the call ran")
        assert failure
        raise failure[0]

    async def _hold(self, errlog: TextIO, ready: Callable[[tuple[ToolInfo, ...]], None]) -> str:
        from mcp import ClientSession, StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        assert self._stop is not None
        async with AsyncExitStack() as stack:
            if self.config.transport is Transport.STDIO:
                launch = self.launch
                assert launch is not None
                params = StdioServerParameters(
                    command=launch.argv[0],
                    args=list(launch.argv[1:]),
                    env=launch.env,
                    cwd=launch.cwd,
                )
                read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            else:
                client = create_mcp_http_client(headers=dict(self.config.headers))
                await stack.enter_async_context(client)
                read, write = await stack.enter_async_context(
                    streamable_http_client(self.config.url, http_client=client)
                )
            # The transport's stream, relayed so its end (the program exited) is seen at once.
            relay_in, relay_out = anyio.create_memory_object_stream[Any](0)
            closed = self._closed = anyio.Event()
            tg = await stack.enter_async_context(anyio.create_task_group())

            async def relay() -> None:
                try:
                    async with relay_in:
                        async for message in read:
                            await relay_in.send(message)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass
                finally:
                    closed.set()

            tg.start_soon(relay)
            session = await stack.enter_async_context(ClientSession(relay_out, write))
            with anyio.fail_after(START_TIMEOUT_S):
                await session.initialize()
                listed = await _all_tools(session)
            self.tools = tuple(
                ToolInfo(
                    t.name,
                    tool_name(self.config.name, t.name),
                    t.description or "",
                    dict(t.input_schema or {"type": "object"}),
                )
                for t in listed
            )
            self._session = session
            note(errlog, f"ready: {len(self.tools)} tools")
            ready(self.tools)
            why = await self._watch(session, closed)
            tg.cancel_scope.cancel()
            return why

    async def _watch(self, session: ClientSession, closed: anyio.Event) -> str:
        """Wait until the connection ends or ``stop``; why it ended ('' for ``stop``)."""
        assert self._stop is not None
        stop = self._stop
        while True:
            with anyio.move_on_after(PING_S):
                async with anyio.create_task_group() as tg:

                    async def on(event: anyio.Event) -> None:
                        await event.wait()
                        tg.cancel_scope.cancel()

                    tg.start_soon(on, stop)
                    tg.start_soon(on, closed)
            if stop.is_set():
                return ""
            if closed.is_set():
                return "the connection closed (the server exited)"
            if self.config.transport is Transport.HTTP:
                try:
                    with anyio.fail_after(PING_S):
                        await session.send_ping()
                except Exception as exc:
                    return f"it stopped answering ({describe(exc)})"

    def _describe(self) -> str:
        if self.config.transport is Transport.HTTP:
            return f"streamable HTTP {self.config.url}"
        launch = self.launch
        assert launch is not None
        where = "in the sandbox" if launch.sandboxed else f"outside the sandbox ({launch.outside})"
        return f"stdio {' '.join((self.config.command, *self.config.args))} {where}"


async def _all_tools(session: ClientSession) -> list[mcp_types.Tool]:
    import mcp.types as mcp_types

    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever is cut off
        page = await session.list_tools(
            params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def note(errlog: TextIO, text: str) -> None:
    """A line of fxdesk's own in a server's log."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    errlog.write(f"--- fxdesk {stamp}: {text}\n")
    errlog.flush()


def describe(exc: BaseException) -> str:
    """An exception as a short sentence (the SDK nests them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if isinstance(exc, FileNotFoundError):
        return f"program not found: {exc.filename or text}"
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def result_text(result: mcp_types.CallToolResult) -> str:
    """What a call returned, as text for the model: text blocks as they are, anything else
    named, structured content as JSON when there is no text."""
    import mcp.types as mcp_types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)
