"""Run as a child process by test_restart: an App whose root delegates one background run
whose sub-agent never answers; prints ``RUNNING <root> <run>`` once the run runs, then waits
to be killed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.agent_runs import RunStatus
from fxdesk.domain.model import PermissionMode
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, Stall
from tests.engine.agents.harness import ByName, Script, delegate


async def main(data_dir: str, project: str) -> None:
    root = Script([delegate(("general", "endless task"), mode="background"), Reply("Waiting.")])
    app = App(
        DataPaths(Path(data_dir), "test"), providers=ByName({"endless": Script([Stall()])}, root)
    )
    await app.start(background=False)
    engine = app.engine
    session = await engine.create_session(
        project, permission_mode=PermissionMode.YOLO, first_message="Start it"
    )
    while True:
        runs = await engine.runs(session.id)
        # The root's own turn ended too: killed mid-turn, its item would be interrupted and
        # hold up the person's next message (FIFO), which the test then sends.
        if runs and runs[0].status is RunStatus.RUNNING and not engine.is_running(session.id):
            print(f"RUNNING {session.id} {runs[0].id}", flush=True)
            break
        await asyncio.sleep(0.02)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
