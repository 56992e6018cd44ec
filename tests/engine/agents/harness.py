"""A real App with one scripted model per session: the root and each sub-agent play their own
script, chosen by the session's name (a sub-agent is named ``<agent>: <task's first line>``).

A script step may be a function of the request (``Dynamic``), so a root can cancel the run id a
``delegate`` call just returned, or stop delegating once it was refused.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fxdesk.app import App
from fxdesk.domain.agent_runs import Limits
from fxdesk.domain.model import Session
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider, Step

WAIT_S = 60.0


@dataclass(frozen=True)
class Dynamic:
    """A step computed from the request the model gets."""

    make: Callable[[ModelRequest], Step]


class Script(Provider):
    """Plays ``steps`` (``Reply``/``Fault``/``Stall`` or ``Dynamic``); records requests."""

    name = "script"

    def __init__(self, steps: Sequence[Step | Dynamic], *, when_done: str = "error") -> None:
        self.steps = list(steps)
        self.when_done = when_done
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        index = len(self.requests) - 1
        if index >= len(self.steps) and self.when_done == "repeat_last":
            index = len(self.steps) - 1
        step: Step | Dynamic = self.steps[index] if index < len(self.steps) else Reply("(done)")
        if isinstance(step, Dynamic):
            step = step.make(request)
        inner = ScriptedProvider([step])
        async for event in inner.stream(request):
            yield event


class ByName(ProviderResolver):
    """The script of the first route whose key is in the session's name (else ``default``)."""

    def __init__(self, routes: dict[str, Provider], default: Provider) -> None:
        self.routes = routes
        self.default = default

    async def resolve(self, session: Session) -> Resolved:
        for key, provider in self.routes.items():
            if key in session.name:
                return Resolved(provider, "scripted")
        return Resolved(self.default, "scripted")


@asynccontextmanager
async def desk(
    paths: DataPaths,
    root: Provider,
    routes: dict[str, Provider] | None = None,
    *,
    limits: Limits | None = None,
) -> AsyncIterator[App]:
    app = App(paths, providers=ByName(routes or {}, root), agent_limits=limits)
    await app.start(background=False)
    try:
        yield app
    finally:
        await app.stop()


def call(name: str, **arguments: object) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name, dict(arguments)),))


def delegate(*requests: tuple[str, str], mode: str = "foreground") -> Reply:
    return call(
        "delegate",
        requests=[{"agent": agent, "task": task} for agent, task in requests],
        mode=mode,
    )


def tool_results(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "tool"]


def user_texts(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if m.role == "user"]


def last_tool_result(request: ModelRequest) -> str:
    results = tool_results(request)
    return results[-1] if results else ""


RUN_ID = re.compile(r"^- ([0-9a-f-]{36}) \((\w+)\): (.*)$", re.M)


def started_runs(text: str) -> dict[str, str]:
    """Task -> run id, from a background ``delegate`` result."""
    return {match[2]: match[0] for match in RUN_ID.findall(text)}


async def eventually(condition: Callable[[], Awaitable[bool]], timeout_s: float = WAIT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def arguments(reply: Reply) -> dict[str, object]:
    (first,) = reply.tool_calls
    return first.arguments if isinstance(first.arguments, dict) else json.loads(first.arguments)
