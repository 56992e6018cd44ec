"""The MCP loop is a plain asyncio loop of its own, whatever the process's policy makes (under
the window, qasync's policy makes Qt loops, which must never run off the GUI thread)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from fxdesk.tools.mcp.client import McpLoop


class QtLikePolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        raise AssertionError("the MCP thread asked the policy for a loop")


@pytest.fixture
def qt_like_policy() -> Iterator[None]:
    old = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(QtLikePolicy())
    yield
    asyncio.set_event_loop_policy(old)


def test_the_mcp_loop_runs_in_its_own_thread_on_a_plain_loop(qt_like_policy: None) -> None:
    mcp = McpLoop()
    seen: list[str] = []

    async def where() -> str:
        return threading.current_thread().name

    async def caller() -> None:
        seen.append(await mcp.submit(where()))

    loop = asyncio.SelectorEventLoop()
    try:
        loop.run_until_complete(caller())
    finally:
        loop.close()
        mcp.close()
    assert seen == ["fxdesk-mcp"]
