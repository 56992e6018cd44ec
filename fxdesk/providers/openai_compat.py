"""OpenAI-compatible chat completions (OpenAI, OpenRouter, Ollama, vLLM, LM Studio, llama.cpp)
through the official ``openai`` SDK, streamed.

The SDK's own retries are off (``RetryingProvider`` decides, and never after output was
committed). Errors become ``ProviderError`` codes the engine turns into plain reasons; the raw
``JSONDecodeError`` and ``httpx`` transport errors the SDK lets escape mid-stream are caught here.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx2 as httpx  # the transport the SDKs use (the successor of httpx)
import openai

from fxdesk.domain.conversation import ChatMessage
from fxdesk.domain.images import ImageAttachment
from fxdesk.providers.base import (
    Finished,
    ModelRequest,
    Provider,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnded,
    ToolCallStarted,
    Usage,
)
from fxdesk.providers.errors import (
    UNREADABLE_EVENT,
    from_http_status,
    from_transport,
    from_unreadable,
    without_key,
)

log = logging.getLogger(__name__)


class OpenAICompatProvider(Provider):
    name = "openai"

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 120.0,
        max_tokens: int | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self._key = api_key or ""
        self.client = openai.AsyncOpenAI(
            base_url=base_url or None,
            # Local servers (Ollama, llama.cpp) need no key, but the SDK insists on one.
            api_key=api_key or "no-key",
            timeout=httpx.Timeout(read_timeout_s, connect=connect_timeout_s),
            max_retries=0,
            http_client=http_client,
        )

    async def close(self) -> None:
        await self.client.close()

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.extend(to_openai(message) for message in request.messages)
        body: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        if request.max_tokens or self.max_tokens:
            body["max_tokens"] = request.max_tokens or self.max_tokens
        if request.effort:
            body["reasoning_effort"] = request.effort
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return without_key(self._stream(request), self._key)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            stream = await self.client.chat.completions.create(**self._body(request))
        except openai.APIStatusError as exc:
            raise from_http_status(exc.status_code, _message(exc), exc.response.headers) from None
        except (openai.APIConnectionError, httpx.HTTPError) as exc:
            raise from_transport(exc) from None
        started: dict[int, str] = {}
        finish: str | None = None
        try:
            async for chunk in stream:
                if chunk.usage is not None:
                    yield Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                for choice in chunk.choices or ():
                    delta = choice.delta
                    if delta is not None and delta.content:
                        yield TextDelta(delta.content)
                    for call in (delta.tool_calls if delta is not None else None) or ():
                        index = call.index
                        if index not in started:
                            function = call.function
                            name = (function.name if function else None) or ""
                            call_id = call.id or f"call_{index}"
                            started[index] = call_id
                            yield ToolCallStarted(index, call_id, name)
                        if call.function is not None and call.function.arguments:
                            yield ToolCallDelta(index, call.function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.APIStatusError as exc:
            raise from_http_status(exc.status_code, _message(exc), exc.response.headers) from None
        except (openai.APIConnectionError, openai.APIError, httpx.HTTPError) as exc:
            raise from_transport(exc) from None
        except UNREADABLE_EVENT as exc:
            log.warning("unreadable event from the server", exc_info=True)
            raise from_unreadable(exc) from None
        finally:
            await stream.close()  # a cancelled call must not leave the connection streaming
        for index in started:
            yield ToolCallEnded(index)
        if finish is None:
            raise ProviderError(
                "stream_ended_early",
                "the response stream ended early, without a finish reason",
                retryable=True,
            )
        yield Finished(finish)


def to_openai(message: ChatMessage) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    if message.role == "user" and message.images:
        # Chat Completions content parts: the text, then each image as a data URL.
        parts: list[dict[str, Any]] = []
        if message.content:
            parts.append({"type": "text", "text": message.content})
        parts.extend(
            {"type": "image_url", "image_url": {"url": data_url(image)}} for image in message.images
        )
        return {"role": "user", "content": parts}
    return {"role": message.role, "content": message.content}


def data_url(image: ImageAttachment) -> str:
    return f"data:{image.media_type};base64,{base64.b64encode(image.data).decode('ascii')}"


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)
