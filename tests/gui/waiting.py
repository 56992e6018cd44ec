"""Waiting in GUI tests: on the running loop, never with nested event processing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], within: float = 20.0) -> object:
    """Wait until ``condition`` returns something true, and return it; fail after ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not (value := condition()):
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)
    return value
