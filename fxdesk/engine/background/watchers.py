"""URL watchers: find the address a background server prints in its log (spec §5.1-5.2, §5.5).

One asyncio task per watched log. It reads the file from ``start_offset`` on, in blocks, in a
worker thread (``asyncio.to_thread``), feeding ``domain.log_scan.UrlScanner``: the whole log as
it grows, not its first 64 KiB (Appendix A 5), in bounded memory. Between reads it waits on a
stop event for the poll interval, so ``stop()`` returns within 250 ms (spec scenario 27).

When it publishes (spec §7 numbers where the spec has them):

- a *confident* URL (a loopback host on a line that says ready, listening, local, ...) is
  published at the first poll that sees it (200 ms, the reference's retry interval); while the
  scan is far behind a flooding task, each poll also looks at the log's newest lines for one;
- a weaker one (``0.0.0.0``, a bare ``http://localhost:4000`` in some line) only once nothing
  better has followed for ``settle_s`` (0.5 s), so a proxy target printed just before the real
  banner does not win;
- with ``confirm=True`` only once the URL answers one ``HEAD`` request (any HTTP status counts:
  something serves there). Only loopback URLs are ever requested, by address (``127.0.0.1``,
  ``::1``), never by a name that could resolve elsewhere; a URL on a LAN address is published
  unconfirmed.

It gives up after ``give_up_s`` (15 s: the reference's 75 attempts of 200 ms) and says why
through ``on_give_up`` (Appendix A 3: the UI stops saying "waiting for URL"). A stop is not a
give-up: neither callback runs. Callbacks run on the loop, at most one of them, once.

Nothing here logs a log path or a URL (a Jupyter URL carries its token): metadata only.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import ssl
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import urlsplit

from fxdesk.domain.log_scan import UrlScanner
from fxdesk.domain.server_urls import ServerUrl, better
from fxdesk.tools.background.logs import GrowingFile

log = logging.getLogger(__name__)

POLL_S = 0.2  # spec §7: URL watcher retry interval
GIVE_UP_S = 75 * POLL_S  # spec §7: 75 attempts
SETTLE_S = 0.5
CONFIRM_TIMEOUT_S = 1.0
STOP_GRACE_S = 0.1  # then the task is cancelled: stop() stays well under 250 ms
READ_BLOCK = 1024 * 1024
READ_BUDGET = 8 * READ_BLOCK  # per trip to the worker thread, so stop and give-up stay prompt
# This far behind the log's end (a task flooding its output), each trip also looks at the
# log's newest lines: a banner printed after 200 MB of build output is published at once, not
# when the in-order scan reaches it seconds later (issue 17 item 6).
PEEK_BEHIND = 2 * READ_BUDGET
PEEK_BYTES = 64 * 1024


def own_host_names() -> frozenset[str]:
    """This machine's names, lower case (no DNS lookup: it could block)."""
    name = socket.gethostname().lower()
    return frozenset({name, name.split(".", 1)[0]}) if name else frozenset()


class _LogReader:
    """The log from an offset on, fed to a scanner; used from one worker thread at a time.

    While far behind the log's end it also scans the newest ``PEEK_BYTES`` on their own and
    keeps a *confident* URL found there (``peeked``); a weaker one waits for the in-order scan,
    which alone can tell whether something better came after it.
    """

    def __init__(self, path: Path, offset: int, own_names: frozenset[str]) -> None:
        self._path = path
        self._log = GrowingFile(path, offset)
        self._own_names = own_names
        self.scanner = UrlScanner(own_names)
        self.peeked: ServerUrl | None = None

    @property
    def best(self) -> ServerUrl | None:
        """The best URL found: in order, or confident among the newest lines (in order wins
        a tie: it was printed first)."""
        if self.peeked is None:
            return self.scanner.best
        return better(self.scanner.best, self.peeked)

    @property
    def offset(self) -> int:
        """How far the in-order scan has read."""
        return self._log.offset

    def read_new(self) -> bool:
        """Feed what was appended since the last call (up to a budget); True when caught up."""
        for _ in range(READ_BUDGET // READ_BLOCK):
            got = self._log.read(READ_BLOCK)
            if got is None:
                return True
            if got.reset:  # truncated or replaced: scan the new content afresh
                self.scanner, self.peeked = UrlScanner(self._own_names), None
            self.scanner.feed(got.data)
        self._peek_if_behind()
        return False

    def _peek_if_behind(self) -> None:
        with contextlib.suppress(OSError):  # only a shortcut: the in-order scan goes on
            self._peek()

    def _peek(self) -> None:
        with open(self._path, "rb") as file:
            size = file.seek(0, os.SEEK_END)
            if size - self._log.offset <= PEEK_BEHIND:
                return
            file.seek(size - PEEK_BYTES)
            newest = file.read(PEEK_BYTES)
        newest = newest[newest.find(b"\n") + 1 :]  # from the first whole line
        found = UrlScanner(self._own_names).feed(newest)  # the unfinished last line waits
        if found is not None and found.confident:
            self.peeked = better(self.peeked, found)

    def close(self) -> None:
        self._log.close()


class UrlWatcher:
    """Watches one background task's log for the server URL.

    Args:
        log_path: The task's log file (it may not exist yet).
        on_url: Called once with the URL found (as shown: ``0.0.0.0`` reads ``localhost``).
        on_give_up: Called once, with the reason, when no URL was found in time.
        start_offset: Where in the log to start reading.
        confirm: Publish only once the URL answers a ``HEAD`` request (loopback URLs only).
        own_names: This machine's host names; looked up when None.
        give_up_s, poll_s, settle_s: See the module docstring.
    """

    def __init__(
        self,
        log_path: Path,
        *,
        on_url: Callable[[str], None],
        on_give_up: Callable[[str], None],
        start_offset: int = 0,
        confirm: bool = False,
        own_names: Iterable[str] | None = None,
        give_up_s: float = GIVE_UP_S,
        poll_s: float = POLL_S,
        settle_s: float = SETTLE_S,
    ) -> None:
        names = own_host_names() if own_names is None else frozenset(own_names)
        self._reader = _LogReader(log_path, start_offset, names)
        self._on_url = on_url
        self._on_give_up = on_give_up
        self._confirm = confirm
        self._give_up_s = give_up_s
        self._poll_s = poll_s
        self._settle_s = settle_s
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._done = False
        self.url: str | None = None

    @property
    def scanned_bytes(self) -> int:
        """How far into the log the in-order scan has read."""
        return self._reader.offset

    @property
    def done(self) -> bool:
        """True once the watcher ended: URL published, given up, stopped or failed."""
        return self._done

    def start(self) -> None:
        """Start watching, as a task on the running loop."""
        if self._task is not None:
            raise RuntimeError("this URL watcher was already started")
        self._task = asyncio.get_running_loop().create_task(self._run(), name="url-watcher")
        self._task.add_done_callback(_log_failure)

    async def stop(self) -> None:
        """Stop watching; returns within 250 ms, without calling either callback."""
        self._stop.set()
        task = self._task
        if task is None:
            self._done = True
            return
        if not task.done():
            await asyncio.wait({task}, timeout=STOP_GRACE_S)
        if not task.done():
            task.cancel()
            await asyncio.wait({task})

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._give_up_s
        seen: ServerUrl | None = None
        seen_at = 0.0
        unanswered = False
        try:
            while not self._stop.is_set():
                caught_up = await self._read()
                best, now = self._reader.best, loop.time()
                if best != seen:
                    seen, seen_at = best, now
                if best is not None and (best.confident or now - seen_at >= self._settle_s):
                    if await self._answers(best):
                        self._publish(best.url)
                        return
                    unanswered = True
                if now >= deadline:
                    self._give_up(unanswered)
                    return
                if caught_up:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stop.wait(), self._poll_s)
        finally:
            self._reader.close()
            self._done = True

    async def _read(self) -> bool:
        try:
            return await asyncio.to_thread(self._reader.read_new)
        except OSError as exc:
            log.warning("url watcher cannot read its log: %s", type(exc).__name__)
            return True

    async def _answers(self, found: ServerUrl) -> bool:
        if not self._confirm or not found.is_loopback:
            return True
        return await answers_head(found)

    def _publish(self, url: str) -> None:
        self.url = url
        log.info("url watcher found the server URL")
        self._on_url(url)

    def _give_up(self, unanswered: bool) -> None:
        seconds = f"{self._give_up_s:g} s"
        reason = (
            f"no answering URL in {seconds}: the URL printed did not answer"
            if unanswered
            else f"no URL detected in {seconds}"
        )
        log.info("url watcher gave up: %s", reason)
        self._on_give_up(reason)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("url watcher failed", exc_info=task.exception())


async def answers_head(found: ServerUrl, timeout_s: float = CONFIRM_TIMEOUT_S) -> bool:
    """Whether the loopback URL answers one ``HEAD`` request with any HTTP status.

    Raises ``ValueError`` for a URL that is not on loopback: fxdesk requests nothing else. The
    connection goes to the loopback address itself, never to a name a resolver could send
    elsewhere; TLS certificates are not checked (a local dev server's are self-signed).
    """
    if not found.is_loopback:
        raise ValueError("only loopback URLs are ever requested")
    parts = urlsplit(found.url)
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    try:
        addresses = [str(ipaddress.ip_address(found.host))]
    except ValueError:  # a name: localhost, or an any-address shown as localhost
        addresses = ["127.0.0.1", "::1"]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = (
        f"HEAD {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUser-Agent: fxdesk\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    for address in addresses:
        with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
            async with asyncio.timeout(timeout_s):
                if await _status_line(address, port, request, secure):
                    return True
    return False


async def _status_line(address: str, port: int, request: bytes, secure: bool) -> bool:
    context = None
    if secure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    reader, writer = await asyncio.open_connection(address, port, ssl=context)
    try:
        writer.write(request)
        await writer.drain()
        return (await reader.readline()).startswith(b"HTTP/")
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
