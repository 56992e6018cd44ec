"""Delegation over real HTTP: the official OpenAI SDK against a local llmock server.

A root agent delegates two background runs to named agents (each with a model of its own, which
is how llmock's scenario tells the sessions apart), ends its turn, and is woken by continuations
that carry both results. The request bodies show what a real model sees: the agent tools as
OpenAI function tools with sound JSON schemas.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fxdesk.app import App
from fxdesk.domain.agent_runs import RunStatus
from fxdesk.domain.model import Session, WorkKind
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.paths import DataPaths
from fxdesk.providers.openai_compat import OpenAICompatProvider
from tests.engine.agents.harness import WAIT_S, eventually
from tests.llmock_server import LLMock

ROOT_MODEL = "root-model"
JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


class LocalOpenAI(ProviderResolver):
    """Every session talks to llmock; its model is the session's (a named agent's) or root's."""

    def __init__(self, base: str) -> None:
        self.provider = OpenAICompatProvider(base_url=f"{base}/v1", api_key="test-key")

    async def resolve(self, session: Session) -> Resolved:
        return Resolved(self.provider, session.model or ROOT_MODEL)


def agent_file(folder: Path, name: str) -> None:
    agents = folder / ".fxdesk" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(
        f"---\ndescription: The {name} helper.\nmodel: {name}-model\n---\nYou are {name}.\n"
    )


def check_schema(schema: Any, where: str) -> None:
    """A JSON schema as a model provider checks it: types known, required ⊆ properties,
    objects closed, arrays with items, enums of their type."""
    assert isinstance(schema, dict), where
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    assert set(types) <= JSON_TYPES, where
    if "enum" in schema:
        assert schema["enum"] and all(isinstance(v, str) for v in schema["enum"]), where
    if "object" in types and "properties" in schema:
        assert schema.get("additionalProperties") is False, where
        assert set(schema.get("required", [])) <= set(schema["properties"]), where
        for name, sub in schema["properties"].items():
            check_schema(sub, f"{where}.{name}")
    if "array" in types:
        check_schema(schema["items"], f"{where}[]")


def chat_bodies(llmock: LLMock, model: str) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in llmock.requests()
        if "chat" in r["path"] and isinstance(r["body"], dict) and r["body"]["model"] == model
    ]


def texts(body: dict[str, Any]) -> str:
    parts = []
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        parts.append(str(content or ""))
    return "\n".join(parts)


async def test_a_root_delegates_background_runs_over_http_and_is_woken_with_their_results(
    data_paths: DataPaths, tmp_path: Path, llmock: LLMock
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent_file(project, "alpha")
    agent_file(project, "beta")
    delegate = {
        "requests": [
            {"agent": "alpha", "task": "find the alpha fact"},
            {"agent": "beta", "task": "find the beta fact"},
        ],
        "mode": "background",
    }
    root = {"model": ROOT_MODEL}
    llmock.scenario(
        {
            "type": "reply",
            "tool_calls": [{"name": "delegate", "arguments": delegate}],
            "match": root,
        },
        {"type": "reply", "text": "Both are running; I will read their results.", "match": root},
        {"type": "reply", "text": "alpha fact: 42", "match": {"model": "alpha-model"}},
        {"type": "reply", "text": "beta fact: 7", "match": {"model": "beta-model"}},
        {"type": "reply", "text": "Read them.", "times": None, "match": root},
    )
    app = App(data_paths, providers=LocalOpenAI(llmock.base))
    await app.start(background=False)
    try:
        engine = app.engine
        session = await engine.create_session(project, first_message="Find both facts")

        async def settled() -> bool:
            runs = await engine.runs(session.id)
            view = await engine.inbox(session.id)
            return (
                len(runs) == 2
                and all(r.status is RunStatus.COMPLETED for r in runs)
                and not engine.is_running(session.id)
                and view.counters.pending == 0
                and view.counters.reserved == 0
            )

        await eventually(settled, WAIT_S)
        items = await engine.items(session.id)
        assert WorkKind.CONTINUATION in {i.kind for i in items}

        bodies = chat_bodies(llmock, ROOT_MODEL)
        assert len(bodies) >= 3
        # The tools as the model sees them: OpenAI function tools with sound schemas.
        tools = {t["function"]["name"]: t for t in bodies[0]["tools"]}
        for name in ("delegate", "spawn_agent", "send_to_agent", "wait_for_agent"):
            assert tools[name]["type"] == "function"
            assert tools[name]["function"]["description"]
        assert {"close_agent", "list_agents", "list_runs", "cancel_run"} <= set(tools)
        for name, tool in tools.items():
            parameters = tool["function"]["parameters"]
            assert json.loads(json.dumps(parameters)) == parameters
            check_schema(parameters, name)
        delegate_items = tools["delegate"]["function"]["parameters"]["properties"]["requests"]
        assert delegate_items["items"]["required"] == ["agent", "task"]
        # The continuations carry both results (one wake, or one per completion).
        woken = "\n".join(texts(b) for b in bodies[2:])
        assert "[inbox]" in woken and "alpha fact: 42" in woken and "beta fact: 7" in woken
        # Each sub-agent ran on its own model with its role prompt, over HTTP too.
        (alpha,) = chat_bodies(llmock, "alpha-model")
        assert "You are alpha." in texts(alpha) and "find the alpha fact" in texts(alpha)
    finally:
        await app.stop()
        await asyncio.sleep(0)
