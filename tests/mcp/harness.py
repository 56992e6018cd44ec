"""A real App with MCP servers and a model whose steps may wait for a condition first."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import psutil

from fxdesk.app import App
from fxdesk.domain.mcp import ServerState, ServerStatus
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import ScriptedProvider, Step
from tests.engine.agents.harness import ByName

TINY = Path(__file__).with_name("tiny_server.py")
WAIT_S = 60.0
Gate = Callable[[], Awaitable[None]]


class Gated(Provider):
    """Plays ``steps``; a step given as ``(gate, step)`` first awaits ``gate()``."""

    name = "gated"

    def __init__(self, steps: Sequence[Step | tuple[Gate, Step]]) -> None:
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        step = self.steps[min(len(self.requests), len(self.steps)) - 1]
        if isinstance(step, tuple):
            gate, step = step
            await gate()
        async for event in ScriptedProvider([step]).stream(request):
            yield event

    def tool_results(self) -> list[str]:
        last = self.requests[-1]
        return [m.content for m in last.messages if m.role == "tool"]


def stdio_config(**env: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TINY), "stdio"], "env": env}


def write_config(path: Path, servers: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


@asynccontextmanager
async def desk(paths: DataPaths, model: Provider, **mcp: Any) -> AsyncIterator[App]:
    """A started App (no background tasks, no handed-off work) with its MCP servers."""
    app = App(paths, providers=ByName({}, model))
    await app.start(background=False, run_handed_off=False, mcp=True)
    try:
        if mcp.get("backoff_s") is not None:
            app.mcp.backoff_s = tuple(mcp["backoff_s"])
        yield app
    finally:
        await app.stop()


async def eventually(condition: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not in time: {what}"
        await asyncio.sleep(0.02)


def status(app: App, name: str) -> ServerStatus | None:
    return next((s for s in app.mcp.statuses() if s.name == name), None)


async def until_state(app: App, name: str, state: ServerState) -> ServerStatus:
    await eventually(
        lambda: (found := status(app, name)) is not None and found.state is state,
        f"{name} {state.value} (now {status(app, name)})",
    )
    found = status(app, name)
    assert found is not None
    return found


def tiny_processes() -> list[psutil.Process]:
    """This test's own tiny servers (descendants of this process), sandboxed or not."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any("tiny_server.py" in part for part in child.cmdline()):
                found.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def python_servers() -> list[psutil.Process]:
    """The tiny servers' Python processes themselves (not bubblewrap around them)."""
    return [p for p in tiny_processes() if "python" in Path(p.cmdline()[0]).name]


def _spawn_http(port_file: Path, log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log_file:
        return subprocess.Popen(
            [sys.executable, str(TINY), "http", str(port_file)],
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )


@asynccontextmanager
async def http_server(folder: Path) -> AsyncIterator[str]:
    """The tiny server over streamable HTTP as a child process; yields its URL."""
    port_file = folder / "port"
    process = await asyncio.to_thread(_spawn_http, port_file, folder / "http.log")
    try:
        await eventually(port_file.exists, "the HTTP server's port")
        yield f"http://127.0.0.1:{port_file.read_text()}/mcp"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        await asyncio.to_thread(process.wait, 15)
