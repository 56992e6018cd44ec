"""The engine's event bus: typed events, delivered in publication order on the loop thread.

The engine publishes after a change is durable; views subscribe (the GUI through
``gui/bridge.py``, which turns events into Qt signals). Handlers run synchronously inside
``publish``, so they must be quick; a handler that raises is logged and does not stop the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

E = TypeVar("E")
Handler = Callable[[Any], None]


class EventBus:
    def __init__(self) -> None:
        self._handlers: dict[type, list[Handler]] = {}
        self._any: list[Handler] = []
        self.published = 0

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> Callable[[], None]:
        """Call ``handler`` for every event of ``event_type`` or a subclass; returns unsubscribe."""
        self._handlers.setdefault(event_type, []).append(handler)
        return lambda: self._remove(self._handlers.get(event_type, []), handler)

    def subscribe_all(self, handler: Handler) -> Callable[[], None]:
        self._any.append(handler)
        return lambda: self._remove(self._any, handler)

    @staticmethod
    def _remove(handlers: list[Handler], handler: Handler) -> None:
        if handler in handlers:
            handlers.remove(handler)

    def publish(self, event: object) -> None:
        self.published += 1
        targets: list[Handler] = []
        for event_type in type(event).__mro__:
            targets.extend(self._handlers.get(event_type, ()))
        targets.extend(self._any)
        for handler in targets:
            try:
                handler(event)
            except Exception:
                log.exception("event handler %r failed on %r", handler, type(event).__name__)
