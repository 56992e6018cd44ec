"""What the reliability tests on the real App share: a data folder, the App started on it with
scripted models, a turn run to its end, and the database's own integrity check."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.facade import Result
from fxdesk.paths import DataPaths
from tests.engine.agents.harness import WAIT_S, ByName, Script


def data(tmp_path: Path) -> DataPaths:
    return DataPaths(tmp_path / "data", "test")


@asynccontextmanager
async def running(
    paths: DataPaths,
    root: Script,
    routes: dict[str, Script] | None = None,
    *,
    background: bool = False,
    mcp: bool | None = None,
) -> AsyncIterator[App]:
    """The App on ``paths``, its sessions' models ``root`` (or ``routes``' by name);
    ``background``: with the background runtime (durable tasks are found again), and then
    the MCP servers unless ``mcp`` says otherwise."""
    app = App(paths, providers=ByName(routes or {}, root))
    await app.start(background=background, mcp=mcp)
    try:
        yield app
    finally:
        await app.stop()


async def run_turn(
    app: App,
    workspace: Path,
    text: str,
    mode: PermissionMode = PermissionMode.YOLO,
    within: float = WAIT_S,
) -> str:
    """A new session on ``workspace`` whose first message is ``text``, its turn ended idle;
    its id."""
    session = await app.engine.create_session(workspace, permission_mode=mode, first_message=text)
    result = await asyncio.wait_for(app.engine.join(session.id), within)
    if result != Result.IDLE:
        items = await app.engine.items(session.id)
        reasons = [await app.engine.failure_reason(i.id) for i in items]
        raise AssertionError(f"the turn ended {result}: {reasons}")
    return session.id


def integrity(paths: DataPaths) -> str:
    db = sqlite3.connect(paths.database)
    try:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        db.close()
