"""The engine's one clock: every service stamps and schedules by the ``Clock`` it is given.

``App`` builds one ``SystemClock`` for all of them; tests hand in a ``FakeClock`` and move time
themselves.
"""

from __future__ import annotations

import abc
import time


class Clock(abc.ABC):
    @abc.abstractmethod
    def now_ms(self) -> int: ...


class SystemClock(Clock):
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FakeClock(Clock):
    """Time that moves only when a test says so; records every reading."""

    def __init__(self, now_ms: int = 0) -> None:
        self.now = now_ms
        self.readings = 0

    def now_ms(self) -> int:
        self.readings += 1
        return self.now
