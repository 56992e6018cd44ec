"""Child waiters: "wait until this session changes", filtered, sticky and bounded (spec §7.3)."""

from __future__ import annotations

import asyncio
import enum

from fxdesk.engine.errors import OwnerClosed

__all__ = ["OwnerClosed", "SessionWaiter", "WaitResult", "WaiterRegistry"]


class WaitResult(enum.StrEnum):
    SIGNALED = "signaled"
    TIMED_OUT = "timed_out"


class SessionWaiter:
    """Waits for signals about one session. A signal sent before ``wait`` is not lost."""

    def __init__(self, registry: WaiterRegistry, session_id: str) -> None:
        self._registry = registry
        self.session_id = session_id
        self._event = asyncio.Event()

    def signal(self) -> None:
        self._event.set()

    async def wait(self, timeout_s: float) -> WaitResult:
        """``signaled`` (and re-arm) or ``timed_out``; cancelling the caller raises."""
        try:
            await asyncio.wait_for(self._event.wait(), timeout_s)
        except TimeoutError:
            return WaitResult.TIMED_OUT
        self._event.clear()
        return WaitResult.SIGNALED

    def close(self) -> None:
        self._registry.unregister(self)

    def __enter__(self) -> SessionWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WaiterRegistry:
    def __init__(self) -> None:
        self._waiters: dict[str, list[SessionWaiter]] = {}
        self.closed = False

    def register(self, session_id: str) -> SessionWaiter:
        if self.closed:
            raise OwnerClosed("the session owner is shut down")
        waiter = SessionWaiter(self, session_id)
        self._waiters.setdefault(session_id, []).append(waiter)
        return waiter

    def unregister(self, waiter: SessionWaiter) -> None:
        waiters = self._waiters.get(waiter.session_id, [])
        if waiter in waiters:
            waiters.remove(waiter)
        if not waiters:
            self._waiters.pop(waiter.session_id, None)

    def signal(self, session_id: str) -> None:
        for waiter in self._waiters.get(session_id, []):
            waiter.signal()

    def signal_all(self) -> None:
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.signal()

    @property
    def count(self) -> int:
        return sum(len(w) for w in self._waiters.values())
