"""A cancel token: how cancel and shutdown reach a running turn without ``Task.cancel``.

The worker that runs a turn must still write its completion after a cancel, so the token is a
flag the turn checks at step boundaries, and ``race`` ends a pending model or tool call when the
flag is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class Cancelled(Exception):
    """The token was raised while waiting."""


class CancelToken:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``; if the token is raised first, cancel it and raise ``Cancelled``."""
        if self.cancelled:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise Cancelled(self.reason)
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            work.cancel()
            stop.cancel()
            raise
        if work.done():
            stop.cancel()
            return work.result()
        work.cancel()
        try:
            await work
        except asyncio.CancelledError:
            pass
        except Exception:  # the call failed while being cancelled: the cancel is what counts
            pass
        raise Cancelled(self.reason)
