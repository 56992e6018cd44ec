"""Which sessions another fxdesk process is running right now (it holds their lock), and
starting them here once it lets go.

A run that finds its session busy elsewhere ends ``external_busy`` and leaves its work queued.
The holder drains that work only while its own run goes on normally; a run of the holder that
ends cancelled, failed or paused stops there, and without a watch the work queued here would
wait, unseen, until the person started the session again (found by ``test_concurrency.py``:
a message sent while another process ran the session, which was then cancelled, stayed pending
with both processes open). ``watch`` looks at the lock every ``WATCH_POLL_S`` and calls back
once it is free; a holder that is frozen or runs for hours costs one ``flock`` probe a second.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import BusyElsewhere
from fxdesk.store.locks import is_locked_elsewhere

log = logging.getLogger(__name__)

WATCH_POLL_S = 1.0  # how soon work queued here runs after another process lets its session go


class BusyTracker:
    """Session id → the holder's pid (None when unknown); publishes ``BusyElsewhere`` on change.

    Attributes:
        sessions: The sessions busy elsewhere; the owner exposes this dict as ``busy_elsewhere``.
    """

    def __init__(
        self, bus: EventBus, lock_dir: Path | None = None, poll_s: float = WATCH_POLL_S
    ) -> None:
        self.bus = bus
        self.lock_dir = lock_dir
        self.poll_s = poll_s
        self.sessions: dict[str, int | None] = {}
        self._watches: dict[str, asyncio.Task[None]] = {}

    def mark_busy(self, session_id: str, holder_pid: int | None) -> None:
        """Another process holds the session's lock (published every time: the pid may change)."""
        self.sessions[session_id] = holder_pid
        self.bus.publish(BusyElsewhere(session_id, True, holder_pid))

    def mark_free(self, session_id: str) -> None:
        """This process could take the lock; published only if the session was marked busy."""
        if session_id not in self.sessions:
            return
        del self.sessions[session_id]
        self.bus.publish(BusyElsewhere(session_id, False))

    def watch(self, session_id: str, on_free: Callable[[], None]) -> None:
        """Call ``on_free`` once no other process holds the session's lock (one watch a
        session; a second call keeps the first)."""
        if self.lock_dir is None or session_id in self._watches:
            return
        task = asyncio.get_running_loop().create_task(
            self._watch(session_id, on_free), name=f"busy-watch-{session_id}"
        )
        self._watches[session_id] = task
        task.add_done_callback(_forget(self._watches, session_id, task))

    async def _watch(self, session_id: str, on_free: Callable[[], None]) -> None:
        assert self.lock_dir is not None
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                holder = await asyncio.to_thread(is_locked_elsewhere, self.lock_dir, session_id)
            except OSError as exc:  # the lock folder is gone or unreadable: try again later
                log.warning("session %s: cannot look at its lock: %s", session_id, exc)
                continue
            if holder is None:
                break
            if self.sessions.get(session_id, -1) != (holder or None):
                self.mark_busy(session_id, holder or None)
        log.info("session %s is no longer busy elsewhere: running its queue here", session_id)
        try:
            on_free()
        except Exception:
            log.exception("session %s: cannot start after another process let it go", session_id)

    async def close(self) -> None:
        """Stop every watch (at shutdown)."""
        tasks = list(self._watches.values())
        self._watches.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _forget(
    watches: dict[str, asyncio.Task[None]], session_id: str, task: asyncio.Task[None]
) -> Callable[[asyncio.Task[None]], None]:
    """A done-callback that forgets ``task`` (if it is still the session's watch) and logs
    how it failed, if it did."""

    def forget(done: asyncio.Task[None]) -> None:
        if watches.get(session_id) is task:
            del watches[session_id]
        if not done.cancelled() and done.exception() is not None:
            log.error("session %s: busy watch failed", session_id, exc_info=done.exception())

    return forget
