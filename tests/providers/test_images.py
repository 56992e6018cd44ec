"""Images the person attaches reach the model (issue 18 item 6): both SDK providers against a
real local server (llmock), whose journal shows the request bodies carried the image parts, on
the message's own turn and when the history is read back on the next one."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.images import ImageAttachment
from fxdesk.providers.anthropic_provider import AnthropicProvider
from fxdesk.providers.base import Provider
from fxdesk.providers.openai_compat import OpenAICompatProvider
from fxdesk.providers.retry import RetryingProvider
from tests.engine.harness import Engine
from tests.llmock_server import LLMock
from tests.pngs import png_bytes

PNG = png_bytes(5, 4)


def make_provider(kind: str, llmock: LLMock) -> Provider:
    if kind == "openai":
        inner: Provider = OpenAICompatProvider(base_url=f"{llmock.base}/v1", api_key="k")
    else:
        inner = AnthropicProvider(base_url=f"{llmock.base}/anthropic", api_key="k")
    return RetryingProvider(inner, attempts=1)


def model_bodies(llmock: LLMock) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in llmock.requests()
        if ("chat" in r["path"] or "messages" in r["path"]) and isinstance(r["body"], dict)
    ]


def openai_images(body: dict[str, Any]) -> list[str]:
    return [
        part["image_url"]["url"]
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]


def anthropic_images(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block["source"]
        for message in body["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if block["type"] == "image"
    ]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_an_attached_image_is_in_the_request_body_on_this_turn_and_the_next(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario(
        {"type": "reply", "text": "a red square", "match": {"provider": kind}},
        {"type": "reply", "text": "still red", "match": {"provider": kind}},
    )
    engine = await Engine.create(tmp_path, provider=make_provider(kind, llmock))
    try:
        session = await engine.root_session()
        image = ImageAttachment("shot.png", "image/png", PNG, 5, 4)
        await engine.sessions.send(session.id, "What is in this picture?", images=[image])
        await engine.run(session.id)
        await engine.sessions.send(session.id, "And the colour again?")
        await engine.run(session.id)

        first, second = model_bodies(llmock)
        encoded = base64.b64encode(PNG).decode()
        for body in (first, second):  # the second turn reads the image back from history
            if kind == "openai":
                assert openai_images(body) == [f"data:image/png;base64,{encoded}"]
                user = next(m for m in body["messages"] if m["role"] == "user")
                assert user["content"][0] == {"type": "text", "text": "What is in this picture?"}
            else:
                assert anthropic_images(body) == [
                    {"type": "base64", "media_type": "image/png", "data": encoded}
                ]
        assert await engine.history_kinds(session.id) == [
            "user",
            "assistant",
            "turn_end",
            "user",
            "assistant",
            "turn_end",
        ]
    finally:
        await engine.close()
