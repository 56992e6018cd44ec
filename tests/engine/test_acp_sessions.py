"""External agents kept per session: one agent process and ACP session across turns, loaded
again after a restart (``session/load``), and a turn interrupted by SIGKILL resumed through it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxdesk.domain.model import PermissionMode, WorkStatus
from fxdesk.engine.acp_agents import ACP_SESSION_KEY
from fxdesk.engine.owner import Result
from fxdesk.store import Store
from tests.engine.acp_support import (
    TIMEOUT,
    failure_reason,
    finished,
    make,
    opened,
    rows,
    start,
    until_row,
)
from tests.helpers import child_env, killed_when_running


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not reaped yet) counts as gone.
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


async def gone(pid: int) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while alive(pid):
        assert asyncio.get_running_loop().time() < deadline, f"process {pid} still runs"
        await asyncio.sleep(0.05)


def whoami(text: str) -> dict[str, str]:
    """The test agent's ``whoami`` answer as a dict (session, pid, prompt, loaded)."""
    words = text.split()
    return dict(zip(words[::2], words[1::2], strict=True))


async def answers(engine: object, sid: str) -> list[str]:
    return [content for kind, content, _ in await rows(engine, sid) if kind == "assistant"]  # type: ignore[arg-type]


async def test_one_agent_and_acp_session_serve_every_turn_and_stop_with_the_session(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "whoami", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.IDLE
        await engine.sessions.send(sid, "whoami")
        engine.owner.start(sid)
        assert await finished(engine, sid) == Result.IDLE
        first, second = (whoami(a) for a in await answers(engine, sid))
        assert first["session"] == second["session"] and first["pid"] == second["pid"]
        assert (first["prompt"], second["prompt"]) == ("1", "2")  # the agent remembers
        session = await engine.session(sid)
        assert session.config[ACP_SESSION_KEY]["id"] == first["session"]  # kept durably
        assert alive(int(first["pid"]))  # kept between turns
        await engine.sessions.close(sid)
        await gone(int(first["pid"]))  # closing the session stops it


async def test_a_later_start_loads_the_stored_acp_session(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "whoami", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.IDLE
    (before,) = [whoami(a) for a in await _answers_after(tmp_path, sid, None)]
    await gone(int(before["pid"]))  # the owner's shutdown stopped the agent

    async with opened(make(tmp_path)) as engine:
        await engine.sessions.send(sid, "whoami")
        engine.owner.start(sid)
        assert await finished(engine, sid) == Result.IDLE
        found = await answers(engine, sid)
        # The history the agent replays while loading is not recorded a second time.
        assert len(found) == 2, found
        after = whoami(found[1])
        assert after["session"] == before["session"] and after["pid"] != before["pid"]
        assert (after["prompt"], after["loaded"]) == ("2", "True")


async def _answers_after(root: Path, sid: str, _: object) -> list[str]:
    store = await Store.aopen(root / "fxdesk.sqlite3")
    try:
        from fxdesk.store import history

        entries = await store.read(lambda: history.page_history(sid, 0, 100))
        return [e.content for e in entries if e.kind.value == "assistant"]
    finally:
        await asyncio.get_running_loop().run_in_executor(None, store.close)


def run_until_mid_turn(root: Path, no_load: bool) -> tuple[str, int]:
    """A real fxdesk engine in a child process, its agent mid-turn; then SIGKILL it."""
    sid, pid = killed_when_running(
        "tests.engine.acp_kill_host", str(root), "1" if no_load else "0", env=child_env()
    )
    return sid, int(pid)


@pytest.mark.parametrize("no_load", [False, True], ids=["loads", "cannot-load"])
async def test_a_turn_killed_mid_way_is_interrupted_and_resume_reloads_the_agents_session(
    tmp_path: Path, no_load: bool
) -> None:
    sid, old_agent = await asyncio.to_thread(run_until_mid_turn, tmp_path, no_load)
    await gone(old_agent)  # its stdin closed with fxdesk: the agent ends too
    async with opened(make(tmp_path, no_load=no_load)) as engine:
        report = await engine.owner.recover()
        assert report.work_interrupted == 1
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.INTERRUPTED  # shown interrupted, nothing re-run
        engine.owner.start(sid, retry=True)  # Resume
        result = await finished(engine, sid)
        found = await rows(engine, sid)
        assert found[:4] == [
            ("user", "hang", None),
            ("assistant", "working on it", None),
            ("tool_call", "{}", "Run a long job"),
            (
                "tool_result",
                "interrupted, outcome unknown: fxdesk stopped while the agent ran it",
                "Run a long job",
            ),
        ]
        if no_load:
            assert result == Result.FAILED
            reason = await failure_reason(engine, sid)
            assert reason is not None
            assert "cannot reload its earlier session (it does not offer session/load)" in reason
            assert len(found) == 4
        else:
            assert result == Result.IDLE, await failure_reason(engine, sid)
            # The same agent session, loaded; the prompt again, after the note.
            assert found[4:] == [
                ("assistant", "picked up after reload (2 blocks)", None),
                ("turn_end", "", None),
            ]
            (item,) = await engine.items(sid)
            assert item.status == WorkStatus.COMPLETED


CANCEL_ELSEWHERE = """
import sys
from pathlib import Path
from fxdesk.domain import work as reducers
from fxdesk.store import Store, control

store = Store.open(Path(sys.argv[1]))
def cancel():
    record = control.load_record(sys.argv[2])
    _, change = reducers.cancel(record, "cancelled", 0)
    control.save_change(change)
store.write_blocking(cancel, label="cancel")
store.close()
"""


async def test_a_cancel_committed_by_another_process_ends_the_running_prompt(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "wait", PermissionMode.YOLO)
        await until_row(engine, sid, ("tool_call", "{}", "Run sleep 1000"))
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-c", CANCEL_ELSEWHERE, str(tmp_path / "fxdesk.sqlite3"), sid],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 0, done.stderr
        await finished(engine, sid)  # this owner was not told
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.CANCELLED
        found = await rows(engine, sid)
        assert found[-1][0] == "tool_result" and found[-1][1].startswith("cancelled")
