"""``fxdesk logs --follow`` and a foreground ``fxdesk start`` print a task's output until its exit
marker. A quick command writes its last line and the marker at once: if they land between the
follower's last read and the look for the marker, the line must still be printed (on a loaded CI
machine a saved command's only line was lost this way). A real file, appended to as the wrapper
does, at exactly that moment."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

from fxdesk.cli import background
from fxdesk.domain.log_scan import EXIT_MARKER


async def test_output_that_arrives_with_the_exit_marker_is_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"")
    look_for_marker = background._marker
    wrote = []

    def marker_after_the_command_ended(path: Path) -> int | None:
        if not wrote:  # the command prints and exits right after the follower's last read
            with path.open("ab") as file:
                file.write(b"hello from the task\n\n" + EXIT_MARKER + b"0\n")
            wrote.append(True)
        return look_for_marker(path)

    monkeypatch.setattr(background, "_marker", marker_after_the_command_ended)
    out = io.StringIO()

    async def still_running() -> bool:
        return True

    code = await asyncio.wait_for(
        background.follow_log(log, out, asyncio.Event(), still_running), 30
    )
    assert code == 0
    assert out.getvalue().strip("\n") == "hello from the task"
