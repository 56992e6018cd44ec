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


async def test_ctrl_c_prints_what_the_task_wrote_up_to_its_stop(tmp_path: Path) -> None:
    """Ctrl+C on a foreground ``fxdesk start``: the task is stopped first, then the rest of its
    log is printed, so nothing it wrote before its end is lost (a loaded CI machine lost the
    task's only line this way)."""
    log = tmp_path / "task.log"
    log.write_bytes(b"started\n")
    stop = asyncio.Event()
    stop.set()  # Ctrl+C came before the follower's first read
    out = io.StringIO()

    async def still_running() -> bool:
        return True

    async def stop_the_task() -> None:
        assert out.getvalue() == "started\n"  # what was there is printed before the stop
        with log.open("ab") as file:  # its last words, flushed as it ends
            file.write(b"shutting down\n")

    code = await asyncio.wait_for(
        background.follow_log(log, out, stop, still_running, stop_the_task), 30
    )
    assert code is None
    assert out.getvalue() == "started\nshutting down\n"
