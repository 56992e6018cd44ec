"""What the ACP engine tests share: the test agent (tests/acp_agent.py, a real child process)
behind an engine or a provider, a session started on it, its history as rows, and waits."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from fxdesk.domain.model import PermissionMode
from fxdesk.engine.owner import Result
from fxdesk.providers.acp import AcpAgentProvider, AcpLaunch
from fxdesk.store import control, history
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine
from tests.helpers import REPO, child_env

AGENT = str(REPO / "tests" / "acp_agent.py")
TIMEOUT = 60.0  # a generous bound on a child process starting Python and the SDK


def agent_provider(tmp_path: Path, **extra: str) -> AcpAgentProvider:
    """The test agent as a provider, its sessions kept under ``tmp_path/agent`` (so a reopened
    engine on the same folder can load them) and its log in ``tmp_path``."""
    env = {"PYTHONPATH": child_env()["PYTHONPATH"], "ACP_TEST_STATE": str(tmp_path / "agent")}
    env.update(extra)
    return AcpAgentProvider(AcpLaunch(sys.executable, (AGENT,), env), log_dir=tmp_path)


async def make(
    tmp_path: Path, *, no_load: bool = False, extra: dict[str, str] | None = None
) -> Engine:
    """An engine on ``tmp_path`` whose sessions run the test agent."""
    env = {"ACP_TEST_NO_LOAD": "1"} if no_load else {}
    env.update(extra or {})
    return await Engine.create(
        tmp_path,
        provider=agent_provider(tmp_path, **env),
        permissions=True,
        tools=ToolRegistry(all_tools()),
    )


@asynccontextmanager
async def opened(made: Awaitable[Engine]) -> AsyncIterator[Engine]:
    """The engine ``made`` gives, closed after the block."""
    engine = await made
    try:
        yield engine
    finally:
        await engine.close()


async def start(engine: Engine, message: str, mode: PermissionMode) -> str:
    created = await engine.sessions.create_root(
        engine.workspace, name="acp", permission_mode=mode, first_message=message
    )
    engine.owner.start(created.id)
    return created.id


async def finished(engine: Engine, sid: str) -> Result:
    """How the session's running turn ended."""
    return await asyncio.wait_for(engine.owner.join(sid), TIMEOUT)


async def rows(engine: Engine, sid: str) -> list[tuple[str, str, str | None]]:
    entries = await engine.store.read(lambda: history.page_history(sid, 0, 10_000))
    return [(e.kind.value, e.content, e.tool_name) for e in entries]


async def failure_reason(engine: Engine, sid: str) -> str | None:
    (item,) = await engine.items(sid)
    return await engine.store.read(lambda: control.failure_reason(item.id))


async def until(check: Callable[[], Awaitable[bool]], failure: str) -> None:
    """Wait until the async ``check`` holds; fail with ``failure`` after ``TIMEOUT``."""
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, failure
        await asyncio.sleep(0.05)


async def until_row(engine: Engine, sid: str, row: tuple[str, str, str | None]) -> None:
    """Wait until the session's history holds ``row`` (the agent is mid-turn on it)."""

    async def there() -> bool:
        return row in await rows(engine, sid)

    await until(there, "the agent's tool call never came")


async def pending_approval(engine: Engine) -> object:
    assert engine.permissions is not None
    found: list[object] = []

    async def look() -> bool:
        found[:] = await engine.permissions.pending()  # type: ignore[union-attr]
        return bool(found)

    await until(look, "no approval was raised")
    (approval,) = found
    return approval
