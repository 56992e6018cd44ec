"""The one streaming interface every model provider implements.

``Provider.stream(request)`` is an async iterator of ``StreamEvent``s: text deltas, tool-call
start / argument deltas / end, usage, and exactly one ``Finished`` at the end. Anything that goes
wrong is a ``ProviderError`` with a code the engine turns into a plain failure reason. Cancelling
the consuming task closes the stream (the generator's ``finally`` runs).
"""

from __future__ import annotations

import abc
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fxdesk.domain.conversation import ChatMessage, ToolCall


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[ToolSpec, ...] = ()
    system: str | None = None
    max_tokens: int | None = None
    effort: str | None = None


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    index: int
    call_id: str
    name: str


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    arguments: str


@dataclass(frozen=True)
class ToolCallEnded:
    index: int


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Finished:
    reason: str  # "stop", "tool_calls", "length", ...


@dataclass(frozen=True)
class StreamRestart:
    """The attempt so far is void (it failed and will be retried): drop what it streamed."""

    reason: str
    delay_s: float


StreamEvent = (
    TextDelta | ToolCallStarted | ToolCallDelta | ToolCallEnded | Usage | Finished | StreamRestart
)


class ProviderError(Exception):
    """A model call that failed, with a code for the failure reason.

    Codes: ``rate_limited``, ``server_error``, ``connection``, ``timeout``, ``auth``,
    ``context_length``, ``malformed_stream``, ``malformed_tool_arguments``,
    ``stream_ended_early``, ``bad_request``, ``script_exhausted``, ``unavailable``.
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


class Provider(abc.ABC):
    """A model behind the streaming interface."""

    name: str = "provider"

    @abc.abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one model response."""


@dataclass
class ModelResponse:
    """One finished model response, assembled from its stream."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = ""
    usage_reported: bool = False  # the server said what the call used (many local ones do not)


# The most text and tool-call arguments one model response may stream. A server that never
# stops (no ``max_tokens``, a model stuck in a loop) would otherwise hold the turn and grow
# memory until someone cancels; real answers are far below it (issue 16 item 4).
MAX_RESPONSE_CHARS = 8_000_000


async def collect(
    stream: AsyncIterator[StreamEvent],
    on_event: Callable[[StreamEvent], Awaitable[None] | None] | None = None,
    *,
    max_chars: int | None = None,
) -> ModelResponse:
    """Consume a stream into a ``ModelResponse``; ``on_event`` sees every event first.

    Raises:
        ProviderError: the stream failed, ended without ``Finished`` ("stream ended early"),
            produced a tool call whose arguments are not a JSON object, or streamed more than
            ``max_chars`` (default ``MAX_RESPONSE_CHARS``) characters.
    """
    limit = MAX_RESPONSE_CHARS if max_chars is None else max_chars
    response = ModelResponse()
    parts: list[str] = []
    calls: dict[int, tuple[str, str, list[str]]] = {}
    finished = False
    size = 0
    try:
        async for event in stream:
            if isinstance(event, TextDelta | ToolCallDelta):
                size += len(event.text if isinstance(event, TextDelta) else event.arguments)
                if size > limit:
                    raise ProviderError(
                        "response_too_large",
                        f"the response grew past {limit:,} characters without ending; it was "
                        "stopped (a model stuck repeating itself, or a server that never ends "
                        "its stream)",
                    )
            if on_event is not None:
                maybe = on_event(event)
                if maybe is not None:
                    await maybe
            if isinstance(event, StreamRestart):
                response, parts, calls, finished, size = ModelResponse(), [], {}, False, 0
            elif isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, ToolCallStarted):
                calls[event.index] = (event.call_id, event.name, [])
            elif isinstance(event, ToolCallDelta):
                if event.index not in calls:
                    raise ProviderError("malformed_stream", "tool-call arguments before its start")
                calls[event.index][2].append(event.arguments)
            elif isinstance(event, Usage):
                response.usage_reported = True
                response.usage = Usage(
                    response.usage.input_tokens + event.input_tokens,
                    response.usage.output_tokens + event.output_tokens,
                )
            elif isinstance(event, Finished):
                response.finish_reason = event.reason
                finished = True
    finally:
        # Stopped early (a limit, a bad event): close the HTTP stream now, not when collected.
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if not finished:
        raise ProviderError("stream_ended_early", "the response stream ended early", retryable=True)
    response.text = "".join(parts)
    for index in sorted(calls):
        call_id, name, chunks = calls[index]
        arguments = "".join(chunks) or "{}"
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ProviderError(
                "malformed_tool_arguments",
                f"the arguments of tool call {name!r} are not valid JSON ({exc.msg})",
            ) from None
        if not isinstance(parsed, dict):
            raise ProviderError(
                "malformed_tool_arguments", f"the arguments of tool call {name!r} are not an object"
            )
        response.tool_calls.append(ToolCall(call_id, name, arguments))
    return response
