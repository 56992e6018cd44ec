"""A running command's output reaches the window while it runs (``ToolOutput`` events), with
secrets masked, before its result is committed. A real App and real bash; the model scripted."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.engine.events import HistoryAppended, ToolOutput
from fxdesk.engine.facade import Result
from fxdesk.engine.providers import FixedResolver
from fxdesk.logs import redact, register_secret
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

SECRET = "sk-live-output-test-0123456789abcdef"


async def test_lines_are_published_while_the_command_runs_with_secrets_masked(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    register_secret(SECRET)
    line = f"echo building; sleep 1; echo 'key {SECRET}'; echo done"
    steps = [Reply(tool_calls=(ScriptedCall("run_command", {"command": line}),)), Reply("ok")]
    app = App(data_paths, providers=FixedResolver(ScriptedProvider(steps)))
    await app.start()
    seen: list[tuple[str, str]] = []
    try:
        engine = app.engine

        def on_history(event: HistoryAppended) -> None:
            if any(e.kind == EntryKind.TOOL_RESULT for e in event.entries):
                seen.append(("result", ""))

        engine.subscribe(ToolOutput, lambda e: seen.append(("output", e.text)))
        engine.subscribe(HistoryAppended, on_history)
        (tmp_path / "p").mkdir()
        session = await engine.create_session(
            tmp_path / "p", permission_mode=PermissionMode.YOLO, first_message="build"
        )
        assert await asyncio.wait_for(engine.join(session.id), 60) == Result.IDLE
    finally:
        await app.stop()
    outputs = [text for kind, text in seen if kind == "output"]
    assert "".join(outputs) == redact(f"building\nkey {SECRET}\ndone\n")
    assert SECRET not in "".join(outputs)
    assert seen.index(("output", "building\n")) < seen.index(("result", ""))
