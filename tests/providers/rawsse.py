"""A tiny real HTTP server that streams exactly the bytes a test gives it, for the faults llmock
cannot make: an endless stream, a huge single chunk, invalid UTF-8, arbitrary SSE bytes.

It answers the OpenAI path (``/v1/chat/completions``) and the Anthropic one
(``/anthropic/v1/messages``) alike: the test chooses the body to match the provider.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Body = Callable[[], AsyncIterator[bytes]]


@dataclass
class RawSSE:
    """Serves ``body()`` to every request but the first ``fail_first``, which get
    ``fail_status`` with no ``Retry-After``; counts the requests."""

    body: Body
    fail_first: int = 0
    fail_status: int = 429
    requests: int = 0
    port: int = 0
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> RawSSE:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            self.requests += 1
            if self.requests <= self.fail_first:
                error = json.dumps({"error": {"message": "slow down", "type": "rate_limit"}})
                writer.write(
                    f"HTTP/1.1 {self.fail_status} Error\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(error)}\r\nconnection: close\r\n\r\n{error}".encode()
                )
                await writer.drain()
                return
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"cache-control: no-cache\r\nconnection: close\r\n\r\n"
            )
            async for piece in self.body():
                writer.write(piece)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away (a cancel, a size limit): what a server sees
        finally:
            self._writers.discard(writer)
            writer.close()


def sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "").encode() + f"data: {text}\n\n".encode()


def openai_chunk(content: str | None = None, finish: str | None = None) -> dict[str, Any]:
    delta = {"content": content} if content is not None else {}
    return {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "raw",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_events(texts: Iterable[str]) -> list[bytes]:
    events = [sse(openai_chunk(text)) for text in texts]
    return [*events, sse(openai_chunk(finish="stop")), sse("[DONE]")]


def anthropic_start() -> list[bytes]:
    message = {
        "id": "msg_raw",
        "type": "message",
        "role": "assistant",
        "model": "raw",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    return [
        sse({"type": "message_start", "message": message}, "message_start"),
        sse(block, "content_block_start"),
    ]


def anthropic_text(text: str) -> bytes:
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }
    return sse(delta, "content_block_delta")


def anthropic_end() -> list[bytes]:
    return [
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 1},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def anthropic_events(texts: Iterable[str]) -> list[bytes]:
    return [*anthropic_start(), *(anthropic_text(t) for t in texts), *anthropic_end()]


def events_for(kind: str, texts: Iterable[str]) -> list[bytes]:
    return openai_events(texts) if kind == "openai" else anthropic_events(texts)


def once(pieces: list[bytes]) -> Body:
    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            yield piece

    return body
