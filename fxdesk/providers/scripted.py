"""A provider that plays a script: for tests, and as the clearly labelled offline demo agent.

A script is a list of steps, one per model call: a reply (text and/or tool calls) or a fault.
It comes from a JSON file (``{"responses": [...], "when_done": "error" | "repeat_last"}``) or from
Python objects in a test. Every request is recorded; a barrier can hold a call until a test
releases it.

JSON step forms::

    {"text": "Hello", "chunk": 4}                        # streamed in 4-character deltas
    {"tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}], "text": "Let me check."}
    {"error": {"code": "server_error", "message": "boom", "retryable": true}}
    {"stall": true}                                      # never answers (until cancelled)
    {"end_early": true, "text": "partial"}               # stream ends without finishing

A top-level ``"record_to": FILE`` appends one JSON line per request to FILE.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    arguments: dict[str, Any] | str
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    chunk: int = 0  # characters per text delta; 0 = the whole text at once
    delay_s: float = 0.0  # pause between deltas
    end_early: bool = False
    usage: tuple[int, int] | None = (10, 5)


@dataclass(frozen=True)
class Fault:
    code: str
    message: str = "scripted fault"
    retryable: bool = False
    after_text: str = ""  # stream this much text first


@dataclass(frozen=True)
class Stall:
    """Never answer; only cancelling the call ends it."""


Step = Reply | Fault | Stall


class ScriptedProvider(Provider):
    """Plays ``steps`` in order, one per model call.

    Attributes:
        requests: every request received, in order.
        hold: when set, calls wait until ``release()`` (``entered`` counts waiting calls).
    """

    name = "scripted"

    def __init__(
        self, steps: Sequence[Step], *, when_done: str = "error", record_to: str | None = None
    ) -> None:
        self.steps = list(steps)
        self.when_done = when_done
        self.record_to = record_to
        self.requests: list[ModelRequest] = []
        self.calls = 0
        self._barrier: asyncio.Event | None = None
        self.entered = 0

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ScriptedProvider:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ProviderError("unavailable", f"cannot read the script {path}: {exc}") from exc
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> ScriptedProvider:
        if isinstance(data, list):
            data = {"responses": data}
        if not isinstance(data, dict) or not isinstance(data.get("responses"), list):
            raise ProviderError("unavailable", 'a script needs a "responses" list')
        steps = [_step_from_json(item) for item in data["responses"]]
        record_to = data.get("record_to")
        return cls(
            steps,
            when_done=str(data.get("when_done", "error")),
            record_to=str(record_to) if record_to else None,
        )

    def hold(self) -> None:
        """Make the next calls wait at a barrier until ``release``."""
        self._barrier = asyncio.Event()

    def release(self) -> None:
        if self._barrier is not None:
            self._barrier.set()
            self._barrier = None

    def _next_step(self) -> Step:
        index = self.calls
        self.calls += 1
        if index < len(self.steps):
            return self.steps[index]
        if self.when_done == "repeat_last" and self.steps:
            return self.steps[-1]
        raise ProviderError(
            "script_exhausted", f"the script has no answer for model call {index + 1}"
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if self.record_to:  # so a test in another process can see what this one was asked
            last = request.messages[-1] if request.messages else None
            line = json.dumps(
                {
                    "model": request.model,
                    "messages": len(request.messages),
                    "last_role": last.role if last else None,
                    # The images the request carries (type, size, name): what a model saw.
                    "images": [
                        {"media_type": i.media_type, "size": len(i.data), "name": i.name}
                        for m in request.messages
                        for i in m.images
                    ],
                }
            )
            await asyncio.to_thread(_append_line, self.record_to, line)
        barrier = self._barrier
        if barrier is not None:
            self.entered += 1
            try:
                await barrier.wait()
            finally:
                self.entered -= 1
        step = self._next_step()
        if isinstance(step, Stall):
            await asyncio.Event().wait()
        if isinstance(step, Fault):
            if step.after_text:
                yield TextDelta(step.after_text)
            raise ProviderError(step.code, step.message, retryable=step.retryable)
        assert isinstance(step, Reply)
        for piece in _chunks(step.text, step.chunk):
            if step.delay_s:
                await asyncio.sleep(step.delay_s)
            yield TextDelta(piece)
        if step.end_early:
            return
        for index, call in enumerate(step.tool_calls):
            call_id = call.id or f"call_{uuid.uuid4().hex[:12]}_{index}"
            arguments = (
                call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            )
            yield ToolCallStarted(index, call_id, call.name)
            yield ToolCallDelta(index, arguments)
            yield ToolCallEnded(index)
        if step.usage is not None:  # None: a server that reports no usage
            yield Usage(*step.usage)
        yield Finished("tool_calls" if step.tool_calls else "stop")


def _append_line(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def _chunks(text: str, size: int) -> list[str]:
    if not text:
        return []
    if size <= 0:
        return [text]
    return [text[i : i + size] for i in range(0, len(text), size)]


def _step_from_json(item: Any) -> Step:
    if not isinstance(item, dict):
        raise ProviderError("unavailable", f"a script step must be an object, not {item!r}")
    if "error" in item:
        error = item["error"]
        if isinstance(error, str):
            return Fault(error)
        return Fault(
            str(error.get("code", "server_error")),
            str(error.get("message", "scripted fault")),
            bool(error.get("retryable", False)),
        )
    if item.get("stall"):
        return Stall()
    calls = tuple(
        ScriptedCall(str(call["name"]), call.get("arguments", {}), call.get("id"))
        for call in item.get("tool_calls", [])
    )
    return Reply(
        text=str(item.get("text", "")),
        tool_calls=calls,
        chunk=int(item.get("chunk", 0)),
        delay_s=float(item.get("delay_ms", 0)) / 1000,
        end_early=bool(item.get("end_early", False)),
    )
