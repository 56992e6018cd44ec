"""Run as a child process by test_acp_sessions: an engine whose session's external agent
(tests/acp_agent.py) is mid-turn on ``hang``; prints ``RUNNING <session> <agent pid>`` once
the agent's tool call is in the history, then waits to be killed (SIGKILL)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.store import history
from tests.engine.acp_support import make, start


async def main(root: str, no_load: str) -> None:
    engine = await make(Path(root), no_load=no_load == "1")
    sid = await start(engine, "hang", PermissionMode.YOLO)
    while True:
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        if any(e.kind == EntryKind.TOOL_CALL for e in entries):
            agent = engine.owner.runner.acp_agents.running(sid)
            assert agent is not None
            print(f"RUNNING {sid} {agent.process.pid}", flush=True)
            break
        await asyncio.sleep(0.02)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
