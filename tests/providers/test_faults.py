"""Both SDK providers against a real local fault server (llmock), through the whole engine.

Each fault ends in a retry that succeeds or a failed work item whose reason names the fault, and
llmock's journal shows the attempts were bounded.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.model import WorkStatus
from fxdesk.engine.owner import Result
from fxdesk.providers.anthropic_provider import AnthropicProvider
from fxdesk.providers.base import Provider
from fxdesk.providers.openai_compat import OpenAICompatProvider
from fxdesk.providers.retry import RetryingProvider
from fxdesk.store import control, history
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine, wait_until
from tests.llmock_server import LLMock, free_port

KINDS = ["openai", "anthropic"]
ATTEMPTS = 3


class RecordingSleep:
    """The retry clock: records each wait instead of sleeping it (Retry-After can be long)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_provider(
    kind: str, llmock: LLMock, sleep: RecordingSleep, read_timeout_s: float = 5.0
) -> RetryingProvider:
    inner: Provider
    if kind == "openai":
        inner = OpenAICompatProvider(
            base_url=f"{llmock.base}/v1", api_key="test-key", read_timeout_s=read_timeout_s
        )
    else:
        inner = AnthropicProvider(
            base_url=f"{llmock.base}/anthropic", api_key="test-key", read_timeout_s=read_timeout_s
        )
    return RetryingProvider(inner, attempts=ATTEMPTS, base_delay_s=0.01, sleep=sleep)


def match(kind: str) -> dict[str, Any]:
    return {"provider": kind}


async def run_one(
    tmp_path: Path, provider: Provider, prompt: str = "hello", tools: ToolRegistry | None = None
) -> tuple[Engine, object, str | None]:
    engine = await Engine.create(tmp_path, provider=provider, tools=tools)
    session = await engine.root_session(prompt)
    result = await engine.run(session.id)
    (item,) = await engine.items(session.id)
    reason = await engine.store.read(lambda: control.failure_reason(item.id))
    return engine, result, reason


def attempts(llmock: LLMock) -> int:
    return sum(1 for r in llmock.requests() if "messages" in r["path"] or "chat" in r["path"])


@pytest.mark.parametrize("kind", KINDS)
async def test_429_with_retry_after_then_success(tmp_path: Path, llmock: LLMock, kind: str) -> None:
    llmock.scenario(
        {"type": "fail", "status": 429, "retry_after": 7, "match": match(kind)},
        {"type": "reply", "text": "after the wait", "match": match(kind)},
    )
    sleep = RecordingSleep()
    engine, result, _ = await run_one(tmp_path, make_provider(kind, llmock, sleep))
    try:
        assert result == Result.IDLE
        assert sleep.waits == [7.0]  # Retry-After honoured
        assert attempts(llmock) == 2
        kinds = await engine.history_kinds((await engine.sessions.catalog()).sessions[0].id)
        assert kinds[-2:] == ["assistant", "turn_end"]
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_persistent_500_fails_after_bounded_attempts(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario({"type": "fail", "status": 500, "times": None, "match": match(kind)})
    sleep = RecordingSleep()
    engine, result, reason = await run_one(tmp_path, make_provider(kind, llmock, sleep))
    try:
        assert result == Result.FAILED
        assert reason is not None and reason.startswith("provider_failed: server_error")
        assert "HTTP 500" in reason and f"gave up after {ATTEMPTS} attempts" in reason
        assert attempts(llmock) == ATTEMPTS
        assert len(sleep.waits) == ATTEMPTS - 1
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_disconnect_mid_stream_is_retried(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario(
        {"type": "stream_fault", "kind": "disconnect", "after_chunks": 2, "match": match(kind)},
        {"type": "reply", "text": "second try", "times": 2, "match": match(kind)},
    )
    sleep = RecordingSleep()
    engine, result, _ = await run_one(tmp_path, make_provider(kind, llmock, sleep))
    try:
        assert result == Result.IDLE
        assert attempts(llmock) == 2
        session = (await engine.sessions.catalog()).sessions[0]
        entries = await engine.store.read(lambda: history.page_history(session.id))
        assistant = [e for e in entries if e.kind.value == "assistant"]
        assert [e.content for e in assistant] == ["second try"]  # the broken attempt is gone
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_truncated_stream_is_an_error_not_a_short_answer(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario(
        {
            "type": "stream_fault",
            "kind": "truncate",
            "after_chunks": 2,
            "times": None,
            "match": match(kind),
        }
    )
    engine, result, reason = await run_one(tmp_path, make_provider(kind, llmock, RecordingSleep()))
    try:
        assert result == Result.FAILED
        assert reason is not None and "stream_ended_early" in reason
        assert attempts(llmock) == ATTEMPTS
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_malformed_chunk_is_a_typed_error(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario(
        {
            "type": "stream_fault",
            "kind": "malformed",
            "after_chunks": 1,
            "times": None,
            "match": match(kind),
        }
    )
    engine, result, reason = await run_one(tmp_path, make_provider(kind, llmock, RecordingSleep()))
    try:
        assert result == Result.FAILED
        assert reason is not None and "malformed_stream" in reason
        assert attempts(llmock) == 1  # a broken server answer is not retried blindly
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stall_past_the_read_timeout(tmp_path: Path, llmock: LLMock, kind: str) -> None:
    llmock.scenario(
        {
            "type": "stream_fault",
            "kind": "stall",
            "after_chunks": 1,
            "stall_seconds": 1.5,
            "times": None,
            "match": match(kind),
        }
    )
    engine, result, reason = await run_one(
        tmp_path, make_provider(kind, llmock, RecordingSleep(), read_timeout_s=0.5)
    )
    try:
        assert result == Result.FAILED
        assert reason is not None and "timeout" in reason and "read timeout" in reason
        assert attempts(llmock) == ATTEMPTS
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_tool_arguments(tmp_path: Path, llmock: LLMock, kind: str) -> None:
    llmock.scenario(
        {
            "type": "tool_fault",
            "kind": "malformed_arguments",
            "times": None,
            "match": {"provider": kind, "tools": True},
        },
        {
            "type": "reply",
            "tool_calls": [{"name": "echo", "arguments": {"text": "x"}}],
            "times": None,
            "match": match(kind),
        },
    )
    engine, result, reason = await run_one(tmp_path, make_provider(kind, llmock, RecordingSleep()))
    try:
        assert result == Result.FAILED
        assert reason is not None and "malformed_tool_arguments" in reason
        assert attempts(llmock) == 1
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_auth_and_context_length_errors_say_so_plainly(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario({"type": "fail", "status": 401, "match": match(kind)})
    engine, result, reason = await run_one(
        tmp_path / "auth", make_provider(kind, llmock, RecordingSleep())
    )
    await engine.close()
    assert result == Result.FAILED
    assert reason is not None and "provider_failed: auth: the provider refused the API key" in (
        reason
    )
    llmock.scenario(
        {
            "type": "fail",
            "status": 400,
            "match": match(kind),
            "message": "This model's maximum context length is 8192 tokens",
        }
    )
    engine, result, reason = await run_one(
        tmp_path / "ctx", make_provider(kind, llmock, RecordingSleep())
    )
    await engine.close()
    assert reason is not None and "context_length" in reason and "too long" in reason


async def test_an_unreachable_endpoint_says_so(tmp_path: Path) -> None:
    provider = RetryingProvider(
        OpenAICompatProvider(
            base_url=f"http://127.0.0.1:{free_port()}/v1", api_key="k", connect_timeout_s=1
        ),
        attempts=2,
        base_delay_s=0.01,
        sleep=RecordingSleep(),
    )
    engine, result, reason = await run_one(tmp_path, provider)
    await engine.close()
    assert result == Result.FAILED
    assert reason is not None and "cannot reach the provider" in reason


@pytest.mark.parametrize("kind", KINDS)
async def test_cancel_closes_the_http_stream_promptly(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    llmock.scenario(
        {
            "type": "stream_fault",
            "kind": "stall",
            "after_chunks": 1,
            "stall_seconds": 30,
            "match": match(kind),
        }
    )
    engine = await Engine.create(
        tmp_path, provider=make_provider(kind, llmock, RecordingSleep(), read_timeout_s=60)
    )
    try:
        session = await engine.root_session("stall")
        engine.owner.start(session.id)

        await wait_until(lambda: engine.owner.live_snapshot(session.id) is not None)
        await asyncio.sleep(0.5)  # the first chunk is in; the stream now stalls for 30 s
        began = time.monotonic()
        await engine.owner.cancel(session.id, "stop")
        assert await engine.owner.join(session.id) == Result.CANCELLED
        elapsed_ms = (time.monotonic() - began) * 1000
        print(f"\n{kind}: cancel to turn ended: {elapsed_ms:.0f} ms")
        assert elapsed_ms < 2000  # the bound is 200 ms; measured in bench, generous here
        record = llmock.requests()[-1]
        assert record["completed"] is False  # the server saw the client go away
    finally:
        await engine.close()


async def test_a_full_tool_loop_runs_a_command(tmp_path: Path, llmock: LLMock) -> None:
    """The model calls run_command, gets the result, answers: three steps in the transcript."""
    llmock.scenario(
        {
            "type": "reply",
            "tool_calls": [
                {"name": "run_command", "arguments": {"command": "echo tool-output-42"}}
            ],
            "match": match("openai"),
        },
        {"type": "reply", "text": "The command printed tool-output-42.", "match": match("openai")},
    )
    engine = await Engine.create(
        tmp_path,
        provider=make_provider("openai", llmock, RecordingSleep()),
        tools=ToolRegistry(all_tools()),
    )
    try:
        engine.owner.authority.update(tool_names=tuple(t.name for t in all_tools()))
        session = await engine.root_session("run it")
        assert await engine.run(session.id) == Result.IDLE
        entries = await engine.store.read(lambda: history.page_history(session.id))
        kinds = [e.kind.value for e in entries]
        assert kinds == ["user", "assistant", "tool_call", "tool_result", "assistant", "turn_end"]
        result = next(e for e in entries if e.kind.value == "tool_result")
        assert "tool-output-42" in result.content and result.data["ok"] is True
        assert entries[-2].content == "The command printed tool-output-42."
        second = [r for r in llmock.requests() if "chat" in r["path"]][1]
        assert second["status"] == 200
        (item,) = await engine.items(session.id)
        assert item.status == WorkStatus.COMPLETED
    finally:
        await engine.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_key_echoed_by_the_server_never_reaches_the_reason(
    tmp_path: Path, llmock: LLMock, kind: str
) -> None:
    key = "sk-echoed-by-the-server-0451"
    llmock.scenario(
        {
            "type": "fail",
            "status": 401,
            "match": match(kind),
            "message": f"Incorrect API key provided: {key}",
        }
    )
    inner: Provider
    if kind == "openai":
        inner = OpenAICompatProvider(base_url=f"{llmock.base}/v1", api_key=key)
    else:
        inner = AnthropicProvider(base_url=f"{llmock.base}/anthropic", api_key=key)
    engine, result, reason = await run_one(tmp_path, inner)
    await engine.close()
    assert result == Result.FAILED
    assert reason is not None and key not in reason and "[redacted]" in reason
