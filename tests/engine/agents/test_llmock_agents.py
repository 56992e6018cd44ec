"""Delegation over real HTTP: the official OpenAI SDK against a local llmock server.

A root agent delegates background runs to named agents (each with a model of its own, which is
how llmock's scenario tells the sessions apart), ends its turn, and is woken by continuations
that carry their results (and, in the three-run scenario, a signal and a cancellation). The
request bodies show what a real model sees: the agent tools as OpenAI function tools with sound
JSON schemas.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fxdesk.app import App
from fxdesk.domain.agent_inbox import EventKind, EventStatus
from fxdesk.domain.agent_runs import RunMode, RunStatus
from fxdesk.domain.model import PermissionMode, Session, WorkKind
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


def agent_file(folder: Path, name: str, extra: str = "") -> None:
    agents = folder / ".fxdesk" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(
        f"---\ndescription: The {name} helper.\nmodel: {name}-model\n{extra}---\nYou are {name}.\n"
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


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content") or "") for m in body["messages"] if m["role"] == "tool"]


GATE = "until [ -e go ]; do sleep 0.05; done"


async def test_three_background_runs_over_http_signal_cancel_complete_then_the_root_wakes(
    data_paths: DataPaths, tmp_path: Path, llmock: LLMock
) -> None:
    """The issue's scenario over HTTP (the scripted one: test_background.py): a watcher raises
    a signal and completes, a slow run is cancelled by the root, a quick one completes; the
    root wakes with a continuation and its model is sent both completions, the cancellation and
    the signal; the inbox ends with nothing pending or reserved.

    llmock's replies are fixed when a request arrives, and the root must cancel a run id only
    known once ``delegate`` returned it. So the root's second step is a shell command that waits
    for a file: meanwhile the test reads the slow run's id, queues the root's ``cancel_run``
    reply, and then creates the file."""
    project = tmp_path / "project"
    project.mkdir()
    agent_file(project, "watcher", "signals: queue\n")
    agent_file(project, "slowpoke")
    agent_file(project, "quick")
    root = {"model": ROOT_MODEL}
    fan_out = {
        "requests": [
            {"agent": "watcher", "task": "watch task"},
            {"agent": "slowpoke", "task": "slow task"},
            {"agent": "quick", "task": "quick task"},
        ],
        "mode": "background",
    }
    signal = {
        "key": "err-rate",
        "severity": "warning",
        "summary": "error rate 7%",
        "details": {"current": 0.071},
        "dedupe_key": "svc-a:err",
    }
    llmock.scenario(
        {
            "type": "reply",
            "tool_calls": [{"name": "delegate", "arguments": fan_out}],
            "match": root,
        },
        {
            "type": "reply",
            "tool_calls": [{"name": "run_command", "arguments": {"command": GATE}}],
            "match": root,
        },
        {
            "type": "reply",
            "tool_calls": [{"name": "emit_signal", "arguments": signal}],
            "match": {"model": "watcher-model"},
        },
        {
            "type": "reply",
            "text": "watched: all quiet after the spike",
            "match": {"model": "watcher-model"},
        },
        {"type": "reply", "text": "quick result", "match": {"model": "quick-model"}},
        # The slow run works until it is cancelled (a command that would take 10 minutes).
        {
            "type": "reply",
            "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 600"}}],
            "match": {"model": "slowpoke-model"},
        },
        {"type": "reply", "text": "slow result", "match": {"model": "slowpoke-model"}},
    )
    app = App(data_paths, providers=LocalOpenAI(llmock.base))
    await app.start(background=False)
    try:
        engine = app.engine
        session = await engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Fan out"
        )

        async def slow_running() -> bool:
            runs = {r.task: r for r in await engine.runs(session.id)}
            slow = runs.get("slow task")
            return len(runs) == 3 and slow is not None and slow.status is RunStatus.RUNNING

        await eventually(slow_running, WAIT_S)
        slow_id = next(r.id for r in await engine.runs(session.id) if r.task == "slow task")
        cancel = {"run_id": slow_id, "reason": "not needed"}
        llmock.scenario(
            {
                "type": "reply",
                "tool_calls": [{"name": "cancel_run", "arguments": cancel}],
                "match": root,
            },
            {"type": "reply", "text": "Waiting for my sub-agents.", "match": root},
            {"type": "reply", "text": "Noted.", "times": None, "match": root},
        )
        (project / "go").touch()

        async def settled() -> bool:
            runs = await engine.runs(session.id)
            view = await engine.inbox(session.id)
            return (
                len(runs) == 3
                and all(r.status.terminal for r in runs)
                and not engine.is_running(session.id)
                and view.counters.pending == 0
                and view.counters.reserved == 0
            )

        await eventually(settled, WAIT_S)
        runs = {r.task: r for r in await engine.runs(session.id)}
        assert {t: r.status for t, r in runs.items()} == {
            "watch task": RunStatus.COMPLETED,
            "slow task": RunStatus.CANCELLED,
            "quick task": RunStatus.COMPLETED,
        }
        assert all(r.mode is RunMode.BACKGROUND for r in runs.values())
        assert all(r.completion_slot_reserved for r in runs.values())
        view = await engine.inbox(session.id)
        (raised,) = [e for e in view.events if e.kind is EventKind.SIGNAL]
        assert runs["watch task"].signal_ids == (raised.id,)
        assert len([e for e in view.events if e.kind is EventKind.COMPLETION]) == 3
        assert all(e.status is EventStatus.CONSUMED for e in view.events)
        assert (view.counters.pending, view.counters.reserved) == (0, 0)
        items = await engine.items(session.id)
        continuations = [i for i in items if i.kind is WorkKind.CONTINUATION]
        assert continuations and all(i.source_id == "inbox" for i in continuations)
        slow_child = runs["slow task"].child_session_id
        assert slow_child is not None
        (slow_item,) = await engine.items(slow_child)
        assert slow_item.status.terminal

        # What the root's model was sent over HTTP.
        bodies = chat_bodies(llmock, ROOT_MODEL)
        assert {"delegate", "cancel_run", "list_runs"} <= tool_names(bodies[0])
        for name in ("delegate", "cancel_run"):
            (tool,) = [t for t in bodies[0]["tools"] if t["function"]["name"] == name]
            check_schema(tool["function"]["parameters"], name)
        assert f"Run {slow_id} cancelled." in tool_messages(bodies[3])
        woken = "\n".join(texts(b) for b in bodies[4:])
        assert "[inbox]" in woken
        assert "error rate 7%" in woken and '"current": 0.071' in woken
        assert f"Run {runs['quick task'].id} (quick) completed: quick result" in woken
        assert f"Run {slow_id} (slowpoke) cancelled" in woken
        assert f"Run {runs['watch task'].id} (watcher) completed" in woken
        assert "slow result" not in woken
        # The watcher was offered emit_signal (its definition may signal) and was told the
        # signal went to the queue lane; the quick agent, which may not signal, was not.
        first, second = chat_bodies(llmock, "watcher-model")
        assert "emit_signal" in tool_names(first)
        emit = next(t for t in first["tools"] if t["function"]["name"] == "emit_signal")
        check_schema(emit["function"]["parameters"], "emit_signal")
        (accepted,) = tool_messages(second)
        assert accepted == f"Signal {raised.id} accepted (lane queue)."
        (quick,) = chat_bodies(llmock, "quick-model")
        assert "emit_signal" not in tool_names(quick)
        # The slow run was cancelled inside its command: its model never got the result.
        (slow,) = chat_bodies(llmock, "slowpoke-model")
        assert "slow task" in texts(slow)
    finally:
        await app.stop()
        await asyncio.sleep(0)
