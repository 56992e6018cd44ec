"""Re-attaching durable tasks at start-up (spec §6.5-6.6, Appendix A 1 and 6 fixed).

Every record that says ``running`` is looked at, whatever its session. It is *attachable* only
if its cwd is inside its session's workspace, it has a valid token, its log exists and its PID
still matches the token now. Then:

- if the fxdesk process that owns it is alive (another window, a ``fxdesk run``), it is listed
  **read-only**: its log can be read and it can be stopped, its record is never written (the
  store refuses a write by another owner);
- otherwise this process adopts it (a conditional update: of two processes starting together
  one wins, the other lists it read-only) and it is writable again.

It keeps its ``#N`` when that is free in its session, otherwise it gets the next one; its record
keeps its number. A record that is not attachable is marked ``stale`` in the store (A 1) unless
another live process owns it, and listed as stale (never stoppable: it has no process to stop)
so the person sees that the server they left running is gone; it is listed by this start only,
since its record no longer says running. One whose identity cannot be read is left as it is,
unlisted (the next start looks again). A task already listed is never listed twice (A 6):
restoring again adds nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.background import (
    BackgroundRecord,
    Persistence,
    RecordAuthority,
    TaskState,
    is_inside,
)
from fxdesk.domain.process_identity import TokenMatch, parse_token
from fxdesk.engine.background.context import Context, log
from fxdesk.engine.background.table import Task
from fxdesk.store import background
from fxdesk.store.errors import StoreError


@dataclass(frozen=True)
class RestoreReport:
    live: int = 0
    read_only: int = 0
    stale: int = 0
    unverified: int = 0  # identity could not be read: left for the next start
    skipped: int = 0  # already listed

    @property
    def message(self) -> str:
        parts = [f"{self.live} background task(s) re-attached"]
        if self.read_only:
            parts.append(f"{self.read_only} of another fxdesk shown read-only")
        if self.stale:
            parts.append(f"{self.stale} no longer running (marked stale)")
        if self.unverified:
            parts.append(f"{self.unverified} could not be verified")
        return ", ".join(parts)


def _check(ctx: Context, record: BackgroundRecord, workspace: str | None) -> TokenMatch | None:
    """(in a worker thread) None if attachable; else why not as a match (MISSING for a record
    that is broken, outside its workspace or without its log)."""
    token = parse_token(record.token)
    if workspace is None or token is None or not is_inside(workspace, record.cwd):
        return TokenMatch.MISSING
    if not Path(record.log_path).exists():
        return TokenMatch.MISSING
    match = ctx.provider.match_token(record.pid, token)
    return None if match is TokenMatch.MATCHED else match


async def restore(ctx: Context) -> tuple[RestoreReport, list[Task]]:
    """Re-attach what still runs (module docstring); the report and the tasks listed."""
    try:
        found = await ctx.store.read(background.running)
    except StoreError as exc:
        log.warning("background restore could not read records: %s", type(exc).__name__)
        return RestoreReport(), []
    places: dict[str, tuple[int, str, int] | None] = {}
    listed: list[Task] = []
    live = read_only = stale = unverified = skipped = 0
    for record in found:
        if any(
            t.session_id == record.session_id and t.stable_id == record.stable_id for t in ctx.table
        ):
            skipped += 1
            continue
        if record.session_id not in places:
            places[record.session_id] = await _place(ctx, record.session_id)
        place = places[record.session_id]
        workspace = None if place is None else place[1]
        owner = record.owner_instance
        other = (
            owner is not None
            and owner != ctx.instance_id
            and await asyncio.to_thread(ctx.owner_alive, owner)
        )
        why_not = await asyncio.to_thread(_check, ctx, record, workspace)
        if why_not is TokenMatch.UNAVAILABLE:
            unverified += 1
            continue
        if why_not is not None or place is None:
            stale += 1
            if not other:
                await _mark_stale(ctx, record)
                if place is not None:  # shown as stale: the server the person left is gone
                    gone = _task(ctx, record, place, mine=True)
                    gone.finish(TaskState.STALE)
                    ctx.table.add(gone)
                    listed.append(gone)
            continue
        mine = not other and await _adopt(ctx, record)
        task = _task(ctx, record, place, mine)
        ctx.table.add(task)
        listed.append(task)
        live += 1
        read_only += not mine
    report = RestoreReport(live, read_only, stale, unverified, skipped)
    log.info(
        "resume restored background scope=all_workspaces live=%d read_only=%d stale=%d",
        live,
        read_only,
        stale,
    )
    return report, listed


async def _place(ctx: Context, session_id: str) -> tuple[int, str, int] | None:
    """(workspace id, resolved workspace folder, highest record number) of a session."""

    def read() -> tuple[tuple[int, str, str] | None, int]:
        return background.session_place(session_id), background.highest_number(session_id)

    place, highest = await ctx.store.read(read)
    if place is None:
        return None
    return place[0], await asyncio.to_thread(os.path.realpath, place[1]), highest


async def _adopt(ctx: Context, record: BackgroundRecord) -> bool:
    if ctx.instance_id is None:
        return False
    if record.owner_instance == ctx.instance_id:
        return True
    owner = ctx.instance_id
    try:
        return await ctx.store.write(
            lambda: background.adopt(
                record.session_id, record.stable_id, record.owner_instance, owner
            ),
            label="background adopt",
        )
    except StoreError:
        return False


async def _mark_stale(ctx: Context, record: BackgroundRecord) -> None:
    if not await _adopt(ctx, record):
        return
    gone = dataclasses.replace(
        record,
        state=TaskState.STALE,
        expect_url=False,
        exit_code=None,
        updated_at_ms=ctx.clock.now_ms(),
        owner_instance=ctx.instance_id,
    )
    try:
        await ctx.store.write(lambda: background.save(gone), label="background record")
    except (StoreError, background.RecordConflict) as exc:
        log.warning("background restore could not mark a record stale: %s", type(exc).__name__)


def _task(ctx: Context, record: BackgroundRecord, place: tuple[int, str, int], mine: bool) -> Task:
    number = ctx.table.claim(record.session_id, record.number, floor=place[2])
    return Task(
        number=number,
        stable_id=record.stable_id,
        session_id=record.session_id,
        workspace_id=place[0],
        workspace=place[1],
        command=record.command,
        cwd=record.cwd,
        log_path=record.log_path,
        policy=record.policy,
        origin=record.origin,
        pid=record.pid,
        token=parse_token(record.token),
        started_at_ms=record.started_at_ms,
        expect_url=record.expect_url and record.url is None,
        authority=RecordAuthority.WRITABLE if mine else RecordAuthority.READ_ONLY,
        persistence=Persistence.CONFIRMED,
        record_number=record.number,
        url=record.url,
        record_owner=None if mine else record.owner_instance,
    )
