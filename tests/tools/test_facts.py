"""What each tool declares about itself (``ToolFacts``), and its preview: the dry run the
approval shows, which must say exactly what running the call then does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fxdesk.tools.base import ToolAccess, ToolContext, ToolFacts, ToolRegistry, ToolResult
from fxdesk.tools.basic import WriteFileTool
from fxdesk.tools.files import EditFileTool
from fxdesk.tools.registry import all_tools

from .conftest import SECRET

FACTS = {
    "echo": ToolFacts(ToolAccess.NONE),
    "edit_file": ToolFacts(ToolAccess.WRITE, path_argument="path"),
    "glob": ToolFacts(ToolAccess.READ, path_argument="path", path_default="."),
    "grep": ToolFacts(ToolAccess.READ, path_argument="path", path_default="."),
    "list_dir": ToolFacts(ToolAccess.READ, path_argument="path", path_default="."),
    "read_file": ToolFacts(ToolAccess.READ, path_argument="path"),
    "run_command": ToolFacts(
        ToolAccess.EXECUTE, command_argument="command", network_argument="network"
    ),
    "write_file": ToolFacts(ToolAccess.WRITE, path_argument="path"),
    # A background command is judged as run_command's (from its folder), and always has the
    # network; the other three act on the session's own tasks only.
    "start_background": ToolFacts(
        ToolAccess.EXECUTE, command_argument="command", cwd_argument="cwd", network_always=True
    ),
    "list_background": ToolFacts(ToolAccess.NONE),
    "read_background_log": ToolFacts(ToolAccess.NONE),
    "stop_background": ToolFacts(ToolAccess.NONE),
    # Nothing outside the conversation: what a sub-agent then does is judged in its session.
    "delegate": ToolFacts(ToolAccess.NONE),
    "emit_signal": ToolFacts(ToolAccess.NONE),
    "list_runs": ToolFacts(ToolAccess.NONE),
    "cancel_run": ToolFacts(ToolAccess.NONE),
    # Persistent sub-agents: the same; a child's mode never exceeds its parent's.
    "spawn_agent": ToolFacts(ToolAccess.NONE),
    "send_to_agent": ToolFacts(ToolAccess.NONE),
    "wait_for_agent": ToolFacts(ToolAccess.NONE),
    "close_agent": ToolFacts(ToolAccess.NONE),
    "list_agents": ToolFacts(ToolAccess.NONE),
}


def test_every_tool_declares_its_facts() -> None:
    assert {tool.name: tool.facts for tool in all_tools()} == FACTS
    for tool in all_tools():
        facts = tool.facts
        for argument in (facts.path_argument, facts.command_argument, facts.network_argument):
            assert argument is None or argument in tool.parameters["properties"]


def test_facts_read_the_path_and_the_command_from_the_arguments() -> None:
    listing = FACTS["list_dir"]
    assert listing.path({}) == "."
    assert listing.path({"path": "src"}) == "src"
    assert listing.command({"path": "src"}) is None
    shell = FACTS["run_command"]
    assert shell.command({"command": "ls -a"}) == "ls -a"
    assert shell.command({}) == ""
    assert shell.path({"command": "ls"}) is None
    assert shell.wants_network({"command": "ls", "network": True})
    assert not shell.wants_network({"command": "ls", "network": "yes"})
    assert not shell.wants_network({"command": "ls"})
    assert FACTS["echo"].path({"text": "x"}) is None


# --- previews -----------------------------------------------------------------------------


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


async def preview_then_run(
    tool: EditFileTool | WriteFileTool, args: dict[str, Any], ctx: ToolContext
) -> tuple[ToolResult | None, ToolResult]:
    return await tool.preview(args, ctx), await tool.run(args, ctx)


async def test_edit_preview_of_an_overlapping_match_refuses_as_the_edit_does(
    ctx: ToolContext, workspace: Path
) -> None:
    # 'aa' occurs twice in 'aaa' (at 0 and 1); str.count says once. The preview must not
    # show a diff the tool then refuses to make.
    target = workspace / "t.txt"
    target.write_text("aaa\n")
    before = snapshot(target)
    args = {"path": "t.txt", "old_text": "aa", "new_text": "b"}
    preview = await EditFileTool().preview(args, ctx)
    assert preview is not None
    assert not preview.ok
    assert (
        preview.output
        == "old_text occurs 2 times in t.txt; include more context so it matches once"
    )
    assert snapshot(target) == before  # a dry run
    result = await EditFileTool().run(args, ctx)
    assert not result.ok
    assert result == preview
    assert snapshot(target) == before


async def test_edit_preview_is_the_diff_the_edit_then_makes(
    ctx: ToolContext, workspace: Path
) -> None:
    target = workspace / "pkg" / "mod.py"
    target.parent.mkdir()
    target.write_text("x = 1\ny = 2\n")
    args = {"path": "pkg/mod.py", "old_text": "y = 2", "new_text": "y = 3"}
    preview = await EditFileTool().preview(args, ctx)
    assert preview is not None and preview.ok
    assert target.read_text() == "x = 1\ny = 2\n"  # nothing written yet
    result = await EditFileTool().run(args, ctx)
    assert result == preview
    assert preview.output.splitlines()[:2] == ["--- a/pkg/mod.py", "+++ b/pkg/mod.py"]
    assert target.read_text() == "x = 1\ny = 3\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "t.txt", "old_text": "", "new_text": "b"}, "must not be empty"),
        ({"path": "t.txt", "old_text": "zzz", "new_text": "b"}, "was not found in t.txt"),
        ({"path": "nope.txt", "old_text": "a", "new_text": "b"}, "nope.txt does not exist"),
        ({"path": "../secret", "old_text": "secret", "new_text": "b"}, "outside the workspace"),
    ],
)
async def test_edit_preview_refuses_whatever_the_edit_refuses(
    ctx: ToolContext, workspace: Path, tmp_path: Path, args: dict[str, object], message: str
) -> None:
    (workspace / "t.txt").write_text("abc\n")
    preview, result = await preview_then_run(EditFileTool(), args, ctx)
    assert preview == result
    assert not result.ok and message in result.output
    assert (workspace / "t.txt").read_text() == "abc\n"
    assert (tmp_path / "secret").read_text() == SECRET


async def test_edit_preview_outside_once_reaching_out_is_allowed(
    workspace: Path, tmp_path: Path
) -> None:
    ctx = ToolContext(workspace, "s", "w", "c", outside_ok=True)
    args = {"path": "../secret", "old_text": "secret", "new_text": "public"}
    preview = await EditFileTool().preview(args, ctx)
    assert preview is not None and preview.ok
    assert f"+++ b/{(tmp_path / 'secret').resolve()}" in preview.output
    assert (tmp_path / "secret").read_text() == SECRET


@pytest.mark.parametrize("append", [False, True])
async def test_write_preview_is_the_diff_of_the_write(
    ctx: ToolContext, workspace: Path, append: bool
) -> None:
    target = workspace / "notes.txt"
    target.write_text("one\n")
    args = {"path": "notes.txt", "content": "two\n", "append": append}
    preview = await WriteFileTool().preview(args, ctx)
    assert preview is not None and preview.ok
    assert target.read_text() == "one\n"
    assert (await WriteFileTool().run(args, ctx)).ok
    after = target.read_text()
    assert after == ("one\ntwo\n" if append else "two\n")
    removed = [] if append else ["-one"]
    assert preview.output.splitlines()[2:] == [
        "@@ -1 +1,2 @@" if append else "@@ -1 +1 @@",
        *([" one"] if append else removed),
        "+two",
    ]


async def test_write_preview_of_a_new_file_and_of_its_refusals(
    ctx: ToolContext, workspace: Path
) -> None:
    new = await WriteFileTool().preview({"path": "d/new.txt", "content": "hi\n"}, ctx)
    assert new is not None and new.ok
    assert new.output == "--- a/d/new.txt\n+++ b/d/new.txt\n@@ -0,0 +1 @@\n+hi\n"
    assert not (workspace / "d").exists()
    (workspace / "folder").mkdir()
    for args in ({"path": "folder", "content": "x"}, {"path": "../secret", "content": "x"}):
        preview, result = await preview_then_run(WriteFileTool(), args, ctx)
        assert preview == result
        assert not result.ok


async def test_write_preview_shows_nothing_for_a_file_that_is_not_text(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    assert await WriteFileTool().preview({"path": "latin.txt", "content": "x"}, ctx) is None


async def test_the_registry_previews_after_the_checks_invoke_makes(
    ctx: ToolContext, workspace: Path
) -> None:
    (workspace / "a").write_text("x\n")
    registry = ToolRegistry(all_tools())
    for name, arguments in [
        ("edit_file", '{"path": "a", "old_text": "x"}'),
        ("write_file", "{not json"),
        ("read_file", '{"path": 3}'),
    ]:
        preview = await registry.preview(name, arguments, ctx)
        assert preview is not None and not preview.ok
        assert preview == await registry.invoke(name, arguments, ctx)
    assert await registry.preview("no_such_tool", "{}", ctx) is None
    for name, args in [
        ("read_file", {"path": "a"}),
        ("list_dir", {}),
        ("glob", {"pattern": "*"}),
        ("grep", {"pattern": "x"}),
        ("run_command", {"command": "touch made"}),
        ("echo", {"text": "hi"}),
    ]:
        assert await registry.preview(name, json.dumps(args), ctx) is None
    assert not (workspace / "made").exists()
    edit = json.dumps({"path": "a", "old_text": "x", "new_text": "y"})
    preview = await registry.preview("edit_file", edit, ctx)
    assert preview is not None and preview.ok
    assert (workspace / "a").read_text() == "x\n"
