"""fxdesk SIGKILLed while durable servers run (issue 12, "Tests must show"): after a restart both
are re-attached with the same numbers and URLs and stopping them works; a server killed while
fxdesk was down shows as stale. And looking in between (``fxdesk ps``) changed nothing.

Everything is real: a real fxdesk process (a ``python -c`` child running an ``App``) starts
three ``python3 -m http.server`` through the engine facade and is SIGKILLed; one server's process
group is killed while no fxdesk runs; then the CLI looks, and a new ``App`` re-attaches.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fxdesk.app import App
from fxdesk.domain.background import StopResult, TaskState
from fxdesk.paths import resolve
from tests.helpers import child_env, run_fxdesk

SERVER = "python3 -m http.server 0 --bind 127.0.0.1"

# A real fxdesk: starts the App as the window does, three durable servers, prints their
# numbers and URLs as one JSON line, then waits to be killed.
FXDESK_CHILD = """
import asyncio, json, sys
from fxdesk.app import App
from fxdesk.paths import resolve

async def main():
    app = App(resolve(sys.argv[1]))
    await app.start()
    engine = app.engine
    session = await engine.create_session(sys.argv[2], start=False)
    started = [
        await engine.start_background(session.id, sys.argv[3], expect_url=True)
        for _ in range(3)
    ]
    found = []
    for task in started:
        while engine.background_task(task.ref, session.id).url is None:
            await asyncio.sleep(0.05)
        found.append(engine.background_task(task.ref, session.id))
    print(json.dumps({"session": session.id, "tasks": [
        {"ref": t.ref, "url": t.url, "pid": t.pid, "id": t.stable_id} for t in found
    ]}), flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def answers(url: str) -> bool:
    try:
        fetch(url)
    except OSError:
        return False
    return True


def fx(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_fxdesk("--data-dir", str(data), *args)


def ps(data: Path) -> dict[str, dict[str, Any]]:
    done = fx(data, "ps", "--json", "--all")
    assert done.returncode == 0, done.stderr
    return {row["ref"]: row for row in json.loads(done.stdout)}


def start_fxdesk(data: Path, project: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-u", "-c", FXDESK_CHILD, str(data), str(project), SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )


def kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


@pytest.mark.slow
async def test_durable_servers_survive_a_killed_fxdesk_and_are_re_attached_and_stopped(
    tmp_path: Path,
) -> None:
    data, project = tmp_path / "data", tmp_path / "project"
    project.mkdir()
    (project / "index.html").write_text("served\n")
    child = start_fxdesk(data, project)
    pids: list[int] = []
    try:
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 90)  # type: ignore[union-attr]
        assert line, child.stderr.read()  # type: ignore[union-attr]
        before = json.loads(line)
        session = before["session"]
        first, second, third = before["tasks"]
        pids += [t["pid"] for t in before["tasks"]]
        assert [t["ref"] for t in before["tasks"]] == ["#1", "#2", "#3"]

        child.send_signal(signal.SIGKILL)  # no shutdown: nothing runs after this
        child.wait(timeout=30)
        for task in before["tasks"]:
            assert await asyncio.to_thread(answers, task["url"])  # durable: they outlived it
        kill_group(third["pid"])  # killed while no fxdesk runs

        # Looking while fxdesk is down: the truth now, and nothing written (no adoption).
        looked = await asyncio.to_thread(ps, data)
        assert {ref: row["state"] for ref, row in looked.items()} == {
            "#1": "running",
            "#2": "running",
            "#3": "stale",
        }
        assert looked["#1"]["url"] == first["url"] and looked["#2"]["url"] == second["url"]
        assert not any(row["read_only"] for row in looked.values())  # its owner is dead

        app = App(resolve(data))
        await app.start()
        try:
            report = app.background.restored
            assert report is not None  # ps had marked nothing: the restore finds it all
            assert (report.live, report.read_only, report.stale) == (2, 0, 1)
            engine = app.engine
            for was in (first, second):
                now = engine.background_task(was["ref"], session)
                assert (now.state, now.url, now.pid, now.stable_id) == (
                    TaskState.RUNNING,
                    was["url"],
                    was["pid"],
                    was["id"],
                )
                assert await asyncio.to_thread(fetch, was["url"] + "index.html") == "served\n"
            gone = engine.background_task("#3", session)  # shown stale, never stoppable
            assert (gone.state, gone.stoppable) == (TaskState.STALE, False)

            # Another process looks while this fxdesk owns them: read-only, still running.
            looked = await asyncio.to_thread(ps, data)
            assert looked["#1"]["read_only"] and looked["#2"]["read_only"]
            assert looked["#3"]["state"] == "stale"

            outcome = await engine.stop_background("#1", session)
            assert outcome.result is StopResult.STOPPED
            assert not await asyncio.to_thread(answers, first["url"])
            # ... and from the command line, a task this live fxdesk owns.
            stopped = await asyncio.to_thread(fx, data, "stop", "2", "-s", session)
            assert (stopped.returncode, stopped.stdout.strip()) == (0, "Command #2 stopped.")
            assert not await asyncio.to_thread(answers, second["url"])
        finally:
            await app.stop()
        after = await asyncio.to_thread(ps, data)
        assert (after["#1"]["state"], after["#3"]["state"]) == ("stopped", "stale")
        # Stopped by another process: how its owner recorded the end depends on whether the
        # wrapper wrote its exit marker in time; it is not running any more, whatever it says.
        assert after["#2"]["state"] != "running"
    finally:
        if child.poll() is None:
            child.kill()
        for pid in pids:
            kill_group(pid)
