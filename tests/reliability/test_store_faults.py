"""Store faults during real runs (issue 16 item 3): the disk fills up, or the data folder turns
read-only, while a session runs commands. fxdesk says so plainly, writes nothing half, keeps the
database intact, and once there is room again a restart and a resume finish the work with no
command run twice. And a WAL file deleted or cut short while fxdesk is closed.

The full disk is real where this process may mount a small tmpfs (root; CI may not), and
SQLite's ``max_page_count`` everywhere: SQLite then fails with the same SQLITE_FULL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from fxdesk import messages
from fxdesk.app import App
from fxdesk.cli.exit_codes import ExitCode
from fxdesk.domain.model import PermissionMode, Session, WorkStatus
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider
from fxdesk.store import StoreError
from tests.helpers import child_env, fxdesk_command
from tests.reliability import harness, invariants

STEPS = 5  # commands; each leaves a tag and prints 30 kB the history keeps
WAIT_S = 120.0


def command(step: int) -> str:
    return f"echo tag-{step} >> tags.txt; head -c 30000 /dev/zero | tr '\\\\0' x"


class FaultAt(Provider):
    """Asks for one command per step (chosen by the tool results so far, so a resumed turn
    asks for the next); before step ``at`` it runs ``fault`` once."""

    name = "fault-at"

    def __init__(self, at: int, fault: Callable[[], Awaitable[None]]) -> None:
        self.at = at
        self.fault: Callable[[], Awaitable[None]] | None = fault

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done >= self.at and self.fault is not None:
            fault, self.fault = self.fault, None
            await fault()
        step = (
            Reply("", (ScriptedCall("run_command", {"command": command(done)}),))
            if done < STEPS
            else Reply("All done.")
        )
        async for event in ScriptedProvider([step]).stream(request):
            yield event


class Fixed(ProviderResolver):
    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    async def resolve(self, session: Session) -> Resolved:
        return Resolved(self.provider, "scripted")


@contextlib.contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def remount(folder: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], check=True)


def integrity(database: Path) -> str:
    with sqlite3.connect(database) as db:
        return str(db.execute("PRAGMA integrity_check").fetchone()[0])


def tags(workspace: Path) -> list[str]:
    path = workspace / "tags.txt"
    return path.read_text().split() if path.exists() else []


async def run_with_fault(
    data: Path,
    workspace: Path,
    fault: Callable[[App], Awaitable[None]],
    repair: Callable[[App | None], Awaitable[None]],
) -> tuple[str, list[str]]:
    """Run the session with ``fault`` before step 2; quit; ``repair``; restart, resume, check.
    Returns the failed item's reason and what the person was told."""
    told: list[str] = []
    detach = messages.hub.attach(lambda m: told.append(m.text))
    paths = DataPaths(data, "test")
    app = App(paths, providers=Fixed(FaultAt(2, lambda: fault(app))))
    await app.start(background=False)
    try:
        engine = app.engine
        session = await engine.create_session(
            workspace, permission_mode=PermissionMode.YOLO, first_message="Run the steps."
        )
        await asyncio.wait_for(engine.join(session.id), WAIT_S)
        (item,) = await engine.items(session.id)
        assert item.status is not WorkStatus.COMPLETED  # the fault stopped it
        reason = await engine.failure_reason(item.id) or item.reason or ""
    finally:
        await app.stop()  # quitting with the disk still full (or read-only) must work too
        detach()
    await repair(None)
    assert integrity(paths.database) == "ok"
    done_before = tags(workspace)
    app = App(paths, providers=Fixed(FaultAt(99, _nothing)))
    await app.start(background=False)
    try:
        engine = app.engine
        engine.resume(session.id)
        await asyncio.wait_for(engine.join(session.id), WAIT_S)
        (item,) = await engine.items(session.id)
        assert item.status is WorkStatus.COMPLETED, await engine.failure_reason(item.id)
    finally:
        await app.stop()
    assert integrity(paths.database) == "ok"
    done = tags(workspace)
    assert sorted(set(done)) == sorted(done), f"a command ran twice: {done}"
    assert done[: len(done_before)] == done_before and len(done) >= len(done_before)
    return reason, told


async def _nothing() -> None:
    return None


def said_full(reason: str, told: list[str]) -> bool:
    return any("full" in text for text in [reason, *told])


async def test_database_full_during_a_run(tmp_path: Path) -> None:
    data, workspace = tmp_path / "data", tmp_path / "workspace"
    workspace.mkdir()
    limit: list[int] = []

    async def fill(app: App) -> None:
        (pages,) = await asyncio.to_thread(app.store.execute_for_tests, "PRAGMA page_count")
        limit.append(pages[0])
        await asyncio.to_thread(app.store.execute_for_tests, f"PRAGMA max_page_count = {pages[0]}")

    async def free(_app: App | None) -> None:
        return None  # max_page_count lasts for one connection: a restart has room again

    reason, told = await run_with_fault(data, workspace, fill, free)
    assert limit and said_full(reason, told), (reason, told)


async def test_the_disk_fills_up_during_a_run(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "6m") as disk:
        data, workspace = disk / "data", tmp_path / "workspace"
        workspace.mkdir()
        filler = disk / "filler"

        async def fill(_app: App) -> None:
            def write() -> None:
                with open(filler, "wb") as handle, contextlib.suppress(OSError):
                    while True:
                        handle.write(b"\0" * 65536)
                        handle.flush()

            await asyncio.to_thread(write)

        async def free(_app: App | None) -> None:
            filler.unlink()

        reason, told = await run_with_fault(data, workspace, fill, free)
        assert said_full(reason, told), (reason, told)


async def test_the_data_folder_turns_read_only(tmp_path: Path) -> None:
    """Linux refuses to remount a filesystem read-only while fxdesk holds its database open
    for writing (EBUSY), so the folder turns read-only between runs: fxdesk says so at start,
    touches nothing, and once writable again resumes the work."""
    with tmpfs(tmp_path / "disk", "16m") as disk:
        data, workspace = disk / "data", tmp_path / "workspace"
        workspace.mkdir()
        paths = DataPaths(data, "test")
        app = App(paths, providers=Fixed(FaultAt(99, _nothing)))
        await app.start(background=False)
        try:
            session = await app.engine.create_session(
                workspace, permission_mode=PermissionMode.YOLO, first_message="Run the steps."
            )
            await asyncio.wait_for(app.engine.join(session.id), WAIT_S)
            await app.engine.send(session.id, "And once more.", start=False)
        finally:
            await app.stop()
        await asyncio.to_thread(remount, disk, "ro")
        try:
            refused = await asyncio.to_thread(
                subprocess.run,
                fxdesk_command("--data-dir", str(data), "sessions"),
                env=child_env(),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert refused.returncode == ExitCode.DATA, refused.stderr
            assert "read-only" in refused.stderr.lower(), refused.stderr
            with pytest.raises(StoreError, match="read-only"):
                await App(paths).start(background=False)
        finally:
            await asyncio.to_thread(remount, disk, "rw")
        assert integrity(paths.database) == "ok"
        app = App(paths, providers=Fixed(FaultAt(99, _nothing)))
        await app.start(background=False)
        try:
            app.engine.resume(session.id)  # its queued message was interrupted (§3.7)
            await asyncio.wait_for(app.engine.join(session.id), WAIT_S)
            items = await app.engine.items(session.id)
            assert [i.status for i in items] == [WorkStatus.COMPLETED] * 2
        finally:
            await app.stop()
        done = tags(workspace)
        assert sorted(set(done)) == sorted(done), f"a command ran twice: {done}"


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_wal_lost_or_cut_while_closed(tmp_path: Path, damage: str) -> None:
    """Killed with committed work in the WAL; the WAL is then deleted or cut in half. What was
    only in the WAL may be gone (nobody can bring it back), but the database opens intact,
    recovery runs, and the work can be finished."""
    obs = harness.new_observed(tmp_path, "wal")
    try:
        killed = harness.spawn(obs, "run", kill_at_commit=40)
        assert killed.killed
        wal = obs.data / "fxdesk.sqlite3-wal"
        assert wal.exists() and wal.stat().st_size > 0
        if damage == "deleted":
            wal.unlink()
        else:
            os.truncate(wal, wal.stat().st_size // 2 + 100)  # mid-frame
        assert "RECOVERED" in harness.spawn(obs, "recover").lines
        assert invariants.integrity(obs) == []
        assert harness.spawn(obs, "run").done
        assert invariants.integrity(obs) == []
    finally:
        invariants.end_servers([obs.marker])
