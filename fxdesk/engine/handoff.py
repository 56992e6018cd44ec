"""Running work handed to "whichever fxdesk runs next" (``fxdesk send --no-wait``).

``send --no-wait`` queues a message with no owner process and returns. Such an item never
started, so no restart interrupts it (spec §3.7 is about work a process was running or was
going to run; see ``docs/architecture.md``). It runs when a process runs the session: the next
``fxdesk send`` or ``fxdesk resume`` of it, or the window, which runs what it finds within a
second of its start and looks again every second while it is open. The window holds
``locks/handoff.lock`` shared meanwhile, so ``send --no-wait`` can tell the person whether it
will be picked up.

Only a session whose next work is the handed-off item is started: behind running, interrupted
or approval-held work it waits (FIFO), and the plain start never resumes anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from fxdesk.engine.owner import SessionOwner
from fxdesk.store import Store, StoreError, owners
from fxdesk.store.locks import HandoffLock

log = logging.getLogger(__name__)

POLL_S = 1.0  # how soon an open window picks up a message handed off by another process


class HandoffRunner:
    """Starts sessions whose next work was handed off, now and every ``interval_s``.

    Args:
        store: Where the queues are read.
        owner: Runs the sessions.
        lock_dir: Where ``handoff.lock`` lives.
        interval_s: How often to look again.
    """

    def __init__(
        self, store: Store, owner: SessionOwner, lock_dir: Path, interval_s: float = POLL_S
    ) -> None:
        self.store = store
        self.owner = owner
        self.interval_s = interval_s
        self._lock = HandoffLock(lock_dir)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Hold the hand-off lock and start looking. The first look comes one interval later,
        once the window listens to the engine's events (it subscribes after start-up)."""
        self._lock.hold()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="handoff")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._lock.release()

    async def sweep(self) -> list[str]:
        """Start every session whose next work was handed off; the ones started."""
        if self.owner.closed:
            return []
        try:
            waiting = await self.store.read(owners.handed_off_heads)
        except StoreError as exc:  # the next sweep tries again
            log.warning("handed-off work not looked up: %s", exc)
            return []
        started = [s for s in waiting if not self.owner.is_running(s)]
        for session_id in started:
            log.info("running work handed off to this fxdesk: session %s", session_id)
            self.owner.start(session_id)
        return started

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.sweep()
