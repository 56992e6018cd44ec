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
        # The handlers of each event type published so far, in call order; emptied whenever a
        # handler comes or goes. Every durable transition publishes two events (issue 17).
        self._targets: dict[type, tuple[Handler, ...]] = {}
        self.published = 0

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> Callable[[], None]:
        """Call ``handler`` for every event of ``event_type`` or a subclass; returns unsubscribe."""
        self._handlers.setdefault(event_type, []).append(handler)
        self._targets.clear()
        return lambda: self._remove(self._handlers.get(event_type, []), handler)

    def subscribe_all(self, handler: Handler) -> Callable[[], None]:
        self._any.append(handler)
        self._targets.clear()
        return lambda: self._remove(self._any, handler)

    def _remove(self, handlers: list[Handler], handler: Handler) -> None:
        if handler in handlers:
            handlers.remove(handler)
            self._targets.clear()

    def _targets_of(self, event_type: type) -> tuple[Handler, ...]:
        targets: list[Handler] = []
        for base in event_type.__mro__:
            targets.extend(self._handlers.get(base, ()))
        targets.extend(self._any)
        self._targets[event_type] = found = tuple(targets)
        return found

    def publish(self, event: object) -> None:
        self.published += 1
        targets = self._targets.get(type(event))
        if targets is None:
            targets = self._targets_of(type(event))
        for handler in targets:
            try:
                handler(event)
            except Exception:
                log.exception("event handler %r failed on %r", handler, type(event).__name__)
