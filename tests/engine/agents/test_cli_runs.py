"""``fxdesk runs``, ``fxdesk inbox`` and ``fxdesk cancel-run`` over a data folder a real App
delegated in (the CLI reads through the facade, never the store)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from fxdesk.cli.main import main
from fxdesk.domain.model import PermissionMode
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply
from tests.engine.agents.harness import WAIT_S, Script, delegate, desk


async def test_runs_inbox_and_cancel_run_from_the_command_line(
    data_paths: DataPaths, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Script([delegate(("general", "small task")), Reply("Done.")])
    async with desk(data_paths, root, {"small task": Script([Reply("small answer")])}) as app:
        session = await app.engine.create_session(
            tmp_path, permission_mode=PermissionMode.YOLO, first_message="Do it"
        )
        await asyncio.wait_for(app.engine.join(session.id), WAIT_S)
    base = ["--data-dir", str(data_paths.root)]

    assert await asyncio.to_thread(main, [*base, "runs", session.id, "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["agent"], run["status"], run["summary"]) == ("general", "completed", "small answer")
    assert await asyncio.to_thread(main, [*base, "runs", session.id[:6]]) == 0
    assert "general" in capsys.readouterr().out

    assert await asyncio.to_thread(main, [*base, "inbox", session.id, "--json"]) == 0
    inbox = json.loads(capsys.readouterr().out)
    assert (inbox["pending"], inbox["reserved"], inbox["events"]) == (0, 0, [])

    assert await asyncio.to_thread(main, [*base, "cancel-run", run["id"][:8]]) == 0
    assert "already finished" in capsys.readouterr().out
    assert await asyncio.to_thread(main, [*base, "cancel-run", "nope"]) == 1
    assert "no agent run 'nope'" in capsys.readouterr().err
