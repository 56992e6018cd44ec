"""The sandbox's former gaps, closed: a missing ``.fxdesk`` cannot be made by a command, and a
closed (or deleted) session's ``/tmp`` folder is removed at the next start.

Real bubblewrap through run_command, and a real ``App`` on a temporary data folder (only the
model is scripted). Workspaces live under /var/tmp: the sandbox's /tmp is its own, so anything
under the host's /tmp would be out of its sight and prove nothing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider
from fxdesk.tools.base import ToolContext, ToolResult
from fxdesk.tools.shell import RunCommandTool


@pytest.fixture
def root() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="fxdesk-gaps-", dir="/var/tmp")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def run(workspace: Path, command: str) -> ToolResult:
    result = await RunCommandTool().run(
        {"command": command, "timeout_s": 30}, ToolContext(workspace, "s", "w", "c")
    )
    assert result.data.get("sandboxed") is True, result.output
    return result


async def test_a_missing_fxdesk_cannot_be_made_by_a_command(root: Path) -> None:
    workspace = root / "ws"
    workspace.mkdir()
    attempts = (
        "mkdir -p .fxdesk && echo 'allow: *' > .fxdesk/settings",
        "rmdir .fxdesk; mv .fxdesk moved; ln -s /var/tmp .fxdesk; echo x > .fxdesk/settings",
    )
    for attempt in attempts:
        result = await run(workspace, f"{attempt}; ls -A")
        assert "Read-only file system" in result.output or "busy" in result.output
    # What stays on the host: an empty .fxdesk folder (fxdesk's own, invisible to git), nothing
    # the commands wrote, nothing moved.
    assert sorted(p.name for p in workspace.iterdir()) == [".fxdesk"]
    assert list((workspace / ".fxdesk").iterdir()) == []
    # The command itself still works as usual.
    assert (await run(workspace, "echo ok > made.txt")).ok
    assert (workspace / "made.txt").read_text() == "ok\n"


async def test_a_fxdesk_file_is_left_as_it_is_and_read_only(root: Path) -> None:
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / ".fxdesk").write_text("the person's\n")
    result = await run(workspace, "echo agent > .fxdesk; echo done")
    assert "Read-only file system" in result.output and "done" in result.output
    assert (workspace / ".fxdesk").read_text() == "the person's\n"


def _step(command: str) -> list[Reply]:
    call = ScriptedCall("run_command", {"command": command, "timeout_s": 30})
    return [Reply(tool_calls=(call,)), Reply("done")]


async def test_closed_and_unknown_sessions_temp_folders_go_at_the_next_start(root: Path) -> None:
    paths = DataPaths(root / "data", "test")
    paths.ensure()
    workspace = root / "ws"
    workspace.mkdir()
    outside = root / "outside.txt"
    outside.write_text("the person's\n")
    script = [*_step("echo kept > /tmp/mark"), *_step("echo gone > /tmp/mark")]
    app = App(paths, providers=FixedResolver(ScriptedProvider(script)))
    await app.start()
    try:
        ids = []
        for name in ("open", "closed"):
            session = await app.engine.create_session(
                workspace, name=name, permission_mode=PermissionMode.YOLO, first_message="go"
            )
            await asyncio.wait_for(app.engine.join(session.id), 60)
            ids.append(session.id)
        open_id, closed_id = ids
        await app.engine.close(closed_id)
    finally:
        await app.stop()
    temp = paths.sandbox_temp
    assert (temp / open_id / "mark").read_text() == "kept\n"
    assert (temp / closed_id / "mark").read_text() == "gone\n"
    # A session gone from the database (its folder holds a link out, which must not be
    # followed), and a stray file.
    (temp / "deleted-session").mkdir()
    os.symlink(outside, temp / "deleted-session" / "link")
    (temp / "stray").write_text("x")

    again = App(paths, providers=FixedResolver(ScriptedProvider([])))
    await again.start()
    await again.stop()

    assert sorted(p.name for p in temp.iterdir()) == [open_id]
    assert (temp / open_id / "mark").read_text() == "kept\n"
    assert outside.read_text() == "the person's\n"
