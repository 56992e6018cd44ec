"""One message API for every layer: ``messages.error/warning/info(text, key=...)``.

Messages are sentences for the person (status bar, stderr). They are not desktop notifications
(``gui/desktop``) nor the reports a child session sends its parent (``engine/report_*``).

A message is logged at once. Until a sink (the GUI's status bar, the CLI's stderr) attaches,
messages wait in a small buffer, so nothing said during start-up is lost. Messages with the same
``key`` are de-duplicated: a repeat of the same key and text within ``DEDUPE_SECONDS`` is logged
but not shown again, and the GUI replaces an earlier message with the same key.

Thread-safe: worker threads may call it; sinks must marshal to their own thread (the GUI sink emits
a Qt signal, which Qt queues onto the GUI thread).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

DEDUPE_SECONDS = 10.0
BUFFER_SIZE = 100


class Level(enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@dataclass(frozen=True)
class Message:
    """What the person is told.

    Attributes:
        level: how serious it is.
        text: one plain sentence saying what happened and what to do.
        key: de-duplication key; the same key replaces an earlier message.
        details: debug information for an unexpected failure (a traceback); when present the
            GUI offers a details dialog with "Copy debug info".
        withdrawn: no longer true: the GUI takes the message with this key away
            (``withdraw``), so the status bar never says "1 approval waiting" about none.
    """

    level: Level
    text: str
    key: str | None = None
    details: str | None = None
    timestamp: float = field(default_factory=time.time)
    withdrawn: bool = False


Sink = Callable[[Message], None]


class MessageHub:
    """Fans messages out to sinks, buffering until one attaches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sinks: list[Sink] = []
        self._buffer: deque[Message] = deque(maxlen=BUFFER_SIZE)
        self._last_shown: dict[tuple[str, str], float] = {}

    def attach(self, sink: Sink) -> Callable[[], None]:
        """Add a sink; buffered messages are replayed to it. Returns a function that detaches it."""
        with self._lock:
            self._sinks.append(sink)
            pending = list(self._buffer)
            self._buffer.clear()
        for message in pending:
            sink(message)

        def detach() -> None:
            with self._lock:
                if sink in self._sinks:
                    self._sinks.remove(sink)

        return detach

    def post(self, message: Message) -> None:
        if message.withdrawn:
            self._withdraw(message)
            return
        log.log(
            _LOG_LEVELS[message.level],
            "%s%s",
            message.text,
            f"\n{message.details}" if message.details else "",
        )
        with self._lock:
            if message.key is not None:
                dedupe = (message.key, message.text)
                last = self._last_shown.get(dedupe)
                if last is not None and message.timestamp - last < DEDUPE_SECONDS:
                    return
                self._last_shown[dedupe] = message.timestamp
            sinks = list(self._sinks)
            if not sinks:
                self._buffer.append(message)
                return
        for sink in sinks:
            try:
                sink(message)
            except Exception:  # a broken sink must not take the caller down
                log.exception("message sink %r failed", sink)

    def _withdraw(self, message: Message) -> None:
        """Tell the sinks a keyed message is no longer true, and let it be said again at once."""
        with self._lock:
            for dedupe in [d for d in self._last_shown if d[0] == message.key]:
                del self._last_shown[dedupe]
            self._buffer = deque(
                (m for m in self._buffer if m.key != message.key), maxlen=BUFFER_SIZE
            )
            sinks = list(self._sinks)
        for sink in sinks:
            try:
                sink(message)
            except Exception:
                log.exception("message sink %r failed", sink)

    def reset(self) -> None:
        """Forget sinks, buffer and de-duplication state (tests, and app restarts in-process)."""
        with self._lock:
            self._sinks.clear()
            self._buffer.clear()
            self._last_shown.clear()


_LOG_LEVELS = {Level.INFO: logging.INFO, Level.WARNING: logging.WARNING, Level.ERROR: logging.ERROR}

hub = MessageHub()


def info(text: str, *, key: str | None = None) -> None:
    hub.post(Message(Level.INFO, text, key))


def warning(text: str, *, key: str | None = None) -> None:
    hub.post(Message(Level.WARNING, text, key))


def withdraw(key: str) -> None:
    """The message posted with ``key`` is no longer true: take it away where it is shown."""
    hub.post(Message(Level.INFO, "", key, withdrawn=True))


def error(text: str, *, key: str | None = None, details: str | None = None) -> None:
    hub.post(Message(Level.ERROR, text, key, details))
