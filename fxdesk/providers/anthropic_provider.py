"""Anthropic Messages API through the official ``anthropic`` SDK, streamed.

Text and ``tool_use`` blocks map onto the common stream events; tool results go back as
``tool_result`` blocks in a user message. The SDK's own retries are off (``RetryingProvider``
decides), and transport errors that escape mid-stream are caught here.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2 as httpx  # the transport the SDKs use (the successor of httpx)

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

DEFAULT_MAX_TOKENS = 8192


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 120.0,
        max_tokens: int | None = None,
    ) -> None:
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self._key = api_key or ""
        self.client = anthropic.AsyncAnthropic(
            base_url=base_url or None,
            api_key=api_key or "no-key",
            timeout=httpx.Timeout(read_timeout_s, connect=connect_timeout_s),
            max_retries=0,
        )

    async def close(self) -> None:
        await self.client.close()

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": to_anthropic(request.messages),
            "stream": True,
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in request.tools
            ]
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        return without_key(self._stream(request), self._key)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        try:
            stream = await self.client.messages.create(**self._body(request))
        except anthropic.APIStatusError as exc:
            raise from_http_status(exc.status_code, _message(exc), exc.response.headers) from None
        except (anthropic.APIConnectionError, httpx.HTTPError) as exc:
            raise from_transport(exc) from None
        stop: str | None = None
        open_tools: dict[int, str] = {}
        try:
            async for event in stream:
                kind = event.type
                if kind == "message_start":
                    usage = event.message.usage
                    yield Usage(usage.input_tokens or 0, usage.output_tokens or 0)
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        open_tools[event.index] = block.id
                        yield ToolCallStarted(event.index, block.id, block.name)
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and event.index in open_tools:
                        yield ToolCallDelta(event.index, delta.partial_json)
                elif kind == "content_block_stop":
                    if event.index in open_tools:
                        yield ToolCallEnded(event.index)
                elif kind == "message_delta":
                    if event.delta.stop_reason:
                        stop = event.delta.stop_reason
                    if event.usage is not None:
                        yield Usage(0, event.usage.output_tokens or 0)
                elif kind == "error":  # an error event inside the stream
                    raise ProviderError(
                        "server_error", "the provider reported an error mid-stream", retryable=True
                    )
        except anthropic.APIStatusError as exc:
            raise from_http_status(exc.status_code, _message(exc), exc.response.headers) from None
        except (anthropic.APIConnectionError, anthropic.APIError, httpx.HTTPError) as exc:
            raise from_transport(exc) from None
        except UNREADABLE_EVENT as exc:
            log.warning("unreadable event from the server", exc_info=True)
            raise from_unreadable(exc) from None
        finally:
            await stream.close()
        if stop is None:
            raise ProviderError(
                "stream_ended_early",
                "the response stream ended early, without a stop reason",
                retryable=True,
            )
        yield Finished("tool_calls" if stop == "tool_use" else stop)


def to_anthropic(messages: tuple[ChatMessage, ...]) -> list[dict[str, Any]]:
    """Anthropic wants alternating user/assistant turns; tool results are user content."""
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if message.role == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": message.content,
                    }
                ],
            )
        elif message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                try:
                    arguments = json.loads(call.arguments or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}
                )
            add("assistant", blocks or [{"type": "text", "text": ""}])
        elif message.role == "user":
            # Images first, then the text about them (Anthropic's advice for image prompts).
            user: list[dict[str, Any]] = [image_block(image) for image in message.images]
            if message.content or not user:
                user.append({"type": "text", "text": message.content})
            add("user", user)
    return out


def image_block(image: ImageAttachment) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": image.media_type,
            "data": base64.b64encode(image.data).decode("ascii"),
        },
    }


def _message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(exc.message)
