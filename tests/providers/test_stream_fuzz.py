"""Hypothesis-generated response streams through both SDK providers over real HTTP
(``rawsse``): whatever the server sends (valid events, events cut or split anywhere, JSON of the
wrong shape, not JSON, invalid UTF-8, a missing end), a model call ends in a response or a
``ProviderError``, never another exception and never a hang. Issue 16 item 4."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fxdesk.providers.anthropic_provider import AnthropicProvider
from fxdesk.providers.base import ChatMessage, ModelRequest, Provider, ProviderError, collect
from fxdesk.providers.openai_compat import OpenAICompatProvider
from tests.providers.rawsse import (
    RawSSE,
    anthropic_end,
    anthropic_start,
    anthropic_text,
    once,
    openai_chunk,
    sse,
)

# scripts/torture runs many more.
EXAMPLES = int(os.environ.get("FXDESK_FUZZ_EXAMPLES", "50"))
REQUEST = ModelRequest(model="m", messages=(ChatMessage("user", "hi"),))
CALL_TIMEOUT_S = 30.0  # far above what any example needs: reaching it is the hang

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def openai_piece() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.text(max_size=20).map(lambda t: sse(openai_chunk(t))),
        st.sampled_from(["stop", "length", "tool_calls"]).map(
            lambda f: sse(openai_chunk(finish=f))
        ),
        st.just(sse("[DONE]")),
        json_values.map(lambda v: sse(json.dumps(v))),  # JSON of any shape
        st.binary(max_size=30),  # anything at all, invalid UTF-8 included
        st.just(b'data: {"choices": [{"delta": {"content": "\xff"}}]}\n\n'),
        st.just(b"data: {not json\n\n"),
    )


def anthropic_piece() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.just(b"".join(anthropic_start())),
        st.text(max_size=20).map(anthropic_text),
        st.just(b"".join(anthropic_end())),
        st.builds(
            lambda kind, value: sse(
                {"type": kind, **({"index": 0, "delta": value} if value else {})}, kind
            ),
            st.sampled_from(
                ["content_block_delta", "message_delta", "content_block_stop", "error", "ping"]
            ),
            json_values,
        ),
        st.binary(max_size=30),
        st.just(anthropic_text("XX").replace(b"XX", b"\xfe")),  # invalid UTF-8
        st.just(b"event: message_start\ndata: {broken\n\n"),
    )


def make(kind: str, base: str) -> Provider:
    if kind == "openai":
        return OpenAICompatProvider(base_url=f"{base}/v1", api_key="k", read_timeout_s=5)
    return AnthropicProvider(base_url=f"{base}/anthropic", api_key="k", read_timeout_s=5)


async def one_call(kind: str, pieces: list[bytes], splits: list[int]) -> Any:
    body = b"".join(pieces)
    cuts = sorted({min(s, len(body)) for s in splits})
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    server = await RawSSE(once([c for c in chunks if c])).start()
    try:
        provider = make(kind, server.base)
        try:
            return await asyncio.wait_for(collect(provider.stream(REQUEST)), CALL_TIMEOUT_S)
        except ProviderError as exc:
            return exc
        finally:
            await provider.client.close()  # type: ignore[attr-defined]
    finally:
        await server.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_stream_ends_in_a_response_or_a_provider_error(kind: str, data: st.DataObject) -> None:
    pieces = data.draw(
        st.lists(openai_piece() if kind == "openai" else anthropic_piece(), max_size=12)
    )
    splits = data.draw(st.lists(st.integers(min_value=0, max_value=2000), max_size=6))
    outcome = asyncio.run(one_call(kind, pieces, splits))
    assert outcome is not None
