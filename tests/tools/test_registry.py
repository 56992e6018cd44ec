"""The full tool list, and bad arguments arriving through ``ToolRegistry.invoke``."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.tools.base import ToolContext, ToolRegistry
from fxdesk.tools.registry import all_tools

NAMES = [
    "cancel_run",
    "close_agent",
    "delegate",
    "echo",
    "edit_file",
    "emit_signal",
    "glob",
    "grep",
    "list_agents",
    "list_background",
    "list_dir",
    "list_runs",
    "read_background_log",
    "read_file",
    "run_command",
    "send_to_agent",
    "spawn_agent",
    "start_background",
    "stop_background",
    "wait_for_agent",
    "write_file",
]


def test_all_tools_sorted_by_name_with_sound_schemas() -> None:
    tools = all_tools()
    assert [tool.name for tool in tools] == NAMES
    for tool in tools:
        schema = tool.parameters
        assert tool.description
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        for spec in schema["properties"].values():
            types = [spec["type"]] if isinstance(spec["type"], str) else spec["type"]
            # Lists of objects (delegate's requests) and JSON objects (a signal's details).
            assert set(types) <= {"string", "integer", "number", "boolean", "array", "object"}
            assert spec["description"]
            if "array" in types:
                items = spec["items"]
                assert items["type"] == "object" and items["additionalProperties"] is False
                assert all(p["type"] == "string" for p in items["properties"].values())


def test_all_tools_gives_fresh_instances() -> None:
    first, second = all_tools(), all_tools()
    assert all(a is not b for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("read_file", "{not json", "not JSON"),
        ("read_file", "[1, 2]", "expected a JSON object"),
        ("read_file", "{}", "missing required argument 'path'"),
        ("read_file", '{"path": 3}', "argument 'path' must be a string"),
        ("read_file", '{"path": "a", "start_line": "2"}', "'start_line' must be a integer"),
        ("read_file", '{"path": "a", "end_line": 2.5}', "'end_line' must be a integer"),
        ("read_file", '{"path": "a", "start_line": true}', "'start_line' must be a integer"),
        ("list_dir", '{"path": null}', "argument 'path' must be a string"),
        ("list_dir", '{"folder": "."}', "unknown argument 'folder'"),
        ("glob", '{"path": "."}', "missing required argument 'pattern'"),
        ("grep", '{"pattern": "x", "ignore_case": "yes"}', "'ignore_case' must be a boolean"),
        ("grep", '{"pattern": ["x"]}', "argument 'pattern' must be a string"),
        ("edit_file", '{"path": "a", "old_text": "x"}', "missing required argument 'new_text'"),
        ("edit_file", '{"path": "a", "old_text": 1, "new_text": ""}', "'old_text' must be"),
        ("run_command", "{}", "missing required argument 'command'"),
        ("run_command", '{"command": ["ls"]}', "argument 'command' must be a string"),
        ("run_command", '{"command": "ls", "timeout_s": "9"}', "'timeout_s' must be a number"),
        ("run_command", '{"command": "ls", "timeout_s": true}', "'timeout_s' must be a number"),
        ("run_command", '{"command": "ls", "cwd": "/"}', "unknown argument 'cwd'"),
        ("stop_background", '{"task": true}', "argument 'task' must be a string or integer"),
        ("stop_background", '{"task": 1.5}', "argument 'task' must be a string or integer"),
        ("start_background", '{"command": "x", "expect_url": 1}', "must be a boolean"),
    ],
)
async def test_invalid_arguments_are_tool_errors(
    ctx: ToolContext, workspace: Path, name: str, arguments: str, problem: str
) -> None:
    (workspace / "a").write_text("x\n")
    result = await ToolRegistry(all_tools()).invoke(name, arguments, ctx)
    assert not result.ok
    assert result.output.startswith(f"invalid arguments for {name}: ")
    assert problem in result.output
    assert (workspace / "a").read_text() == "x\n"


@pytest.mark.parametrize(
    ("name", "arguments", "problem"),
    [
        ("run_command", '{"command": "  "}', "command must be a non-empty string"),
        ("run_command", '{"command": "ls", "timeout_s": 1e9}', "timeout_s must be a number"),
        ("read_file", '{"path": "a", "start_line": -1}', "start_line must be"),
        ("edit_file", '{"path": "a", "old_text": "", "new_text": "y"}', "must not be empty"),
        ("grep", '{"pattern": "("}', "invalid regular expression '('"),
        ("glob", '{"pattern": "/etc/*"}', "the pattern must be relative"),
        ("start_background", '{"command": " "}', "command must be a non-empty string"),
        ("read_background_log", '{"task": " "}', "task must be a task number"),
        # A process that runs no background tasks (the context has none): each tool says so.
        ("start_background", '{"command": "sleep 9"}', "background tasks are not available"),
        ("list_background", "{}", "background tasks are not available"),
        ("stop_background", '{"task": 1}', "background tasks are not available"),
    ],
)
async def test_values_the_schema_cannot_catch_are_tool_errors_too(
    ctx: ToolContext, workspace: Path, name: str, arguments: str, problem: str
) -> None:
    (workspace / "a").write_text("x\n")
    result = await ToolRegistry(all_tools()).invoke(name, arguments, ctx)
    assert not result.ok
    assert problem in result.output
    assert (workspace / "a").read_text() == "x\n"


async def test_tools_run_through_the_registry(ctx: ToolContext, workspace: Path) -> None:
    registry = ToolRegistry(all_tools())
    wrote = await registry.invoke("write_file", '{"path": "d/n.txt", "content": "hi\\n"}', ctx)
    assert wrote.ok
    read = await registry.invoke("read_file", '{"path": "d/n.txt"}', ctx)
    assert read.output == "     1\thi"
    ran = await registry.invoke("run_command", '{"command": "cat d/n.txt", "timeout_s": 10}', ctx)
    assert ran.output == "hi\n[exit code 0]"
    assert (workspace / "d" / "n.txt").read_text() == "hi\n"
