"""Bounded retries with backoff, around any provider.

A failed attempt is retried when its error is retryable (rate limited, server error, dropped
connection, timeout, stream ended early) and attempts remain. The engine commits a model
response only once it has finished, so a retry never repeats anything durable; the wrapper emits
``StreamRestart`` first so consumers drop what the failed attempt streamed. A ``Retry-After``
from the server is honoured (up to ``max_wait_s``; asked to wait longer, it gives up and says so).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable

from fxdesk.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    StreamEvent,
    StreamRestart,
)

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


class RetryingProvider(Provider):
    """``inner`` with up to ``attempts`` tries per model call."""

    def __init__(
        self,
        inner: Provider,
        *,
        attempts: int = 4,
        base_delay_s: float = 0.5,
        max_delay_s: float = 20.0,
        max_wait_s: float = 60.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.attempts = max(1, attempts)
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.max_wait_s = max_wait_s
        self.sleep = sleep
        self.retries = 0

    def delay_for(self, error: ProviderError, attempt: int) -> float:
        if error.retry_after is not None:
            return error.retry_after
        backoff = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return backoff * (0.8 + 0.4 * random.random())  # jitter: clients must not stampede

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        attempt = 0
        while True:
            attempt += 1
            try:
                async for event in self.inner.stream(request):
                    yield event
                return
            except ProviderError as error:
                if not error.retryable or attempt >= self.attempts:
                    if error.retryable:
                        raise ProviderError(
                            error.code,
                            f"{error.message} (gave up after {attempt} attempts)",
                            retryable=False,
                        ) from None
                    raise
                delay = self.delay_for(error, attempt)
                if delay > self.max_wait_s:
                    raise ProviderError(
                        error.code,
                        f"{error.message}; the server asks to wait {delay:g} s, longer than "
                        f"{self.max_wait_s:g} s",
                    ) from None
                self.retries += 1
                log.info("model call failed (%s); retry %d in %.2f s", error, attempt, delay)
                yield StreamRestart(str(error), delay)
                await self.sleep(delay)
