"""HTTP and transport failures of model APIs as ``ProviderError``s with plain messages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping

import httpx2 as httpx  # the transport the SDKs use (the successor of httpx)

from fxdesk.providers.base import ProviderError, StreamEvent

_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "context window",
)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header, if any."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            return None  # an HTTP date: fall back to backoff
    return None


def from_http_status(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> ProviderError:
    text = " ".join(message.split())[:300] or f"HTTP {status}"
    if status == 429:
        return ProviderError(
            "rate_limited",
            f"rate limited by the provider (HTTP 429): {text}",
            retryable=True,
            retry_after=retry_after(headers),
        )
    if status in (401, 403):
        return ProviderError(
            "auth",
            f"the provider refused the API key (HTTP {status}): {text}. Check the "
            "profile's key (fxdesk profiles add NAME ... --api-key-stdin).",
        )
    lowered = text.lower()
    if status in (400, 413, 422) and any(word in lowered for word in _CONTEXT_WORDS):
        return ProviderError(
            "context_length", f"the conversation is too long for the model's context: {text}"
        )
    if status == 404:
        return ProviderError("bad_request", f"not found (HTTP 404; wrong model or URL?): {text}")
    if status >= 500 or status in (408, 409):
        return ProviderError(
            "server_error",
            f"the provider failed (HTTP {status}): {text}",
            retryable=True,
            retry_after=retry_after(headers),
        )
    return ProviderError(
        "bad_request", f"the provider rejected the request (HTTP {status}): {text}"
    )


def from_transport(exc: BaseException) -> ProviderError:
    """Connection trouble: refused, dropped mid-stream, timed out."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 6:
        chain.append(current)
        current = current.__cause__ or current.__context__
    names = " ".join(type(e).__name__ for e in chain)
    if any(isinstance(e, httpx.TimeoutException) for e in chain) or "Timeout" in names:
        kind = "read" if any(isinstance(e, httpx.ReadTimeout) for e in chain) else "connect"
        return ProviderError(
            "timeout", f"the provider did not answer in time ({kind} timeout)", retryable=True
        )
    if any(isinstance(e, httpx.ConnectError) for e in chain):
        return ProviderError(
            "connection",
            f"cannot reach the provider ({chain[-1]}); check the base URL and "
            "that the server is running",
            retryable=True,
        )
    if any(isinstance(e, httpx.RemoteProtocolError | httpx.ReadError) for e in chain):
        return ProviderError(
            "connection", "the connection dropped in the middle of the response", retryable=True
        )
    return ProviderError("connection", f"connection error: {exc}", retryable=True)


# What reading a server's event of an unexpected shape raises inside the SDKs or our field
# access: ``UnicodeDecodeError`` (bytes that are not UTF-8), ``AttributeError`` (a ``null``
# chunk), ``TypeError``/``KeyError``/``IndexError`` (JSON of another shape). Found by the
# stream fuzz test (tests/providers/test_stream_fuzz.py): each used to escape as a bug.
UNREADABLE_EVENT = (ValueError, AttributeError, TypeError, KeyError, IndexError)


def from_unreadable(exc: Exception) -> ProviderError:
    """A server event fxdesk cannot read: a broken answer, not retried blindly."""
    if isinstance(exc, UnicodeDecodeError):
        what = "bytes that are not UTF-8"
    elif isinstance(exc, json.JSONDecodeError):
        what = f"an event that is not JSON ({exc.msg})"
    else:
        what = f"an event of an unexpected shape ({type(exc).__name__}: {str(exc)[:200]})"
    return ProviderError("malformed_stream", f"the server sent {what}")


async def without_key(events: AsyncIterator[StreamEvent], key: str) -> AsyncIterator[StreamEvent]:
    """``events``, with ``key`` cut out of the message of any ``ProviderError`` they raise:
    servers echo (parts of) a bad key, and the message reaches the person and the database."""
    try:
        async for event in events:
            yield event
    except ProviderError as exc:
        if key and key in exc.message:
            exc.message = exc.message.replace(key, "[redacted]")
            exc.args = (f"{exc.code}: {exc.message}",)
        raise
