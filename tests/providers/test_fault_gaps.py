"""The provider faults test_faults.py does not cover (issue 16 item 4), for both SDK providers
through the whole engine: 429 without Retry-After, an endless stream, a huge single chunk and
invalid UTF-8. llmock makes the first; ``rawsse`` (a real HTTP server streaming given bytes)
the others. Each ends in a bounded retry or a clear failure, never a crash or a hung turn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fxdesk.domain.model import EntryKind
from fxdesk.engine.owner import Result
from fxdesk.providers import base
from fxdesk.store import history
from tests.providers.rawsse import (
    RawSSE,
    anthropic_start,
    anthropic_text,
    events_for,
    once,
    openai_chunk,
    sse,
)
from tests.providers.test_faults import (
    ATTEMPTS,
    KINDS,
    RecordingSleep,
    make_provider,
    run_one,
)


@pytest.mark.parametrize("kind", KINDS)
async def test_429_without_retry_after_backs_off_then_succeeds(tmp_path: Path, kind: str) -> None:
    # llmock always sends Retry-After with a 429; this server sends none.
    server = await RawSSE(once(events_for(kind, ["after backing off"])), fail_first=2).start()
    try:
        sleep = RecordingSleep()
        provider = make_provider(kind, server, sleep)  # type: ignore[arg-type]
        engine, result, reason = await run_one(tmp_path, provider)
        try:
            assert result == Result.IDLE, reason
            assert server.requests == ATTEMPTS
            first, second = sleep.waits  # exponential backoff with jitter, base 0.01 s
            assert 0.008 <= first <= 0.012 and 0.016 <= second <= 0.024
        finally:
            await engine.close()
    finally:
        await server.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_429_without_retry_after_gives_up_after_bounded_attempts(
    tmp_path: Path, kind: str
) -> None:
    server = await RawSSE(once(events_for(kind, ["never"])), fail_first=99).start()
    try:
        provider = make_provider(kind, server, RecordingSleep())  # type: ignore[arg-type]
        engine, result, reason = await run_one(tmp_path, provider)
        try:
            assert result == Result.FAILED and reason is not None
            assert "rate limited" in reason and f"gave up after {ATTEMPTS} attempts" in reason
            assert server.requests == ATTEMPTS
        finally:
            await engine.close()
    finally:
        await server.close()


def endless(kind: str) -> AsyncIterator[bytes]:
    async def body() -> AsyncIterator[bytes]:
        if kind == "anthropic":
            for piece in anthropic_start():
                yield piece
        while True:  # a server that never ends its answer
            text = "all work and no play " * 50
            yield sse(openai_chunk(text)) if kind == "openai" else anthropic_text(text)
            await asyncio.sleep(0)

    return body()


@pytest.mark.parametrize("kind", KINDS)
async def test_an_endless_stream_is_stopped_at_the_size_limit(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base, "MAX_RESPONSE_CHARS", 200_000)
    server = await RawSSE(lambda: endless(kind)).start()
    try:
        provider = make_provider(kind, server, RecordingSleep())  # type: ignore[arg-type]
        engine, result, reason = await asyncio.wait_for(run_one(tmp_path, provider), 60)
        try:
            assert result == Result.FAILED and reason is not None
            assert "response_too_large" in reason and "200,000 characters" in reason
            assert server.requests == 1  # not retried
            for _ in range(500):  # the HTTP stream is closed, not left streaming
                if not server._writers:
                    break
                await asyncio.sleep(0.01)
            assert not server._writers
        finally:
            await engine.close()
    finally:
        await server.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_huge_single_chunk_is_one_whole_answer(tmp_path: Path, kind: str) -> None:
    text = "x" * 3_000_000 + " the end"
    server = await RawSSE(once(events_for(kind, [text]))).start()
    try:
        provider = make_provider(kind, server, RecordingSleep())  # type: ignore[arg-type]
        engine, result, reason = await run_one(tmp_path, provider)
        try:
            assert result == Result.IDLE, reason
            (session,) = (await engine.sessions.catalog()).sessions
            entries = await engine.store.read(lambda: history.page_history(session.id))
            (answer,) = [e for e in entries if e.kind == EntryKind.ASSISTANT]
            assert (answer.full_text or answer.content) == text
        finally:
            await engine.close()
    finally:
        await server.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_invalid_utf8_is_a_clear_failure(tmp_path: Path, kind: str) -> None:
    pieces = events_for(kind, ["fine so far ", "BAD"])
    pieces = [piece.replace(b"BAD", b"\xff\xfe") for piece in pieces]
    server = await RawSSE(once(pieces)).start()
    try:
        provider = make_provider(kind, server, RecordingSleep())  # type: ignore[arg-type]
        engine, result, reason = await run_one(tmp_path, provider)
        try:
            assert result == Result.FAILED and reason is not None
            assert "malformed_stream" in reason and "not UTF-8" in reason
            assert server.requests == 1  # a broken answer is not retried blindly
        finally:
            await engine.close()
    finally:
        await server.close()
