"""Writing task records (spec §6.4, with Appendix A 1, 7, 10 and 11 fixed).

Only durable tasks this process may write have records; a process-local task never does (A 10)
and a read-only one (another live fxdesk owns it) is never written. A write that fails leaves
the task *degraded*: ``initial_record_degraded`` while no record was ever written (it will not
survive a restart, so it is stopped at quit), ``record_update_degraded`` after. Every refresh
retries the degraded ones (A 11). A failure whose commit is unknown is decided by reading the
record back (spec §2.19 "commit indeterminate").
"""

from __future__ import annotations

import asyncio

from fxdesk.domain.background import BackgroundRecord, Persistence, RecordAuthority
from fxdesk.domain.process_identity import TokenMatch
from fxdesk.engine.background.context import Context, log
from fxdesk.engine.background.table import Task
from fxdesk.store import background
from fxdesk.store.errors import StoreError


def record_of(ctx: Context, task: Task) -> BackgroundRecord:
    return BackgroundRecord(
        session_id=task.session_id,
        number=task.record_number,
        stable_id=task.stable_id,
        workspace_id=task.workspace_id,
        policy=task.policy,
        origin=task.origin,
        pid=task.pid,
        token=None if task.token is None else task.token.text,
        command=task.command,
        cwd=task.cwd,
        log_path=task.log_path,
        expect_url=task.expect_url,
        url=task.url,
        exit_code=task.exit_code,
        state=task.state,
        started_at_ms=task.started_at_ms,
        updated_at_ms=ctx.clock.now_ms(),
        owner_instance=ctx.instance_id,
    )


def _degrade(task: Task, operation: str, reason: str) -> None:
    first = task.persistence in (Persistence.PENDING, Persistence.INITIAL_RECORD_DEGRADED)
    task.persistence = (
        Persistence.INITIAL_RECORD_DEGRADED if first else Persistence.RECORD_UPDATE_DEGRADED
    )
    if not task.warned:
        task.warned = True
        log.warning(
            "record update degraded policy=%s display_id=%d outcome=%s operation=%s err=%s",
            task.policy.value,
            task.number,
            task.persistence.value,
            operation,
            reason,
        )


async def save(ctx: Context, task: Task, operation: str) -> bool:
    """Write ``task``'s record if it has one to write; True when the record matches memory."""
    if not task.policy.durable:
        return True
    if task.authority is not RecordAuthority.WRITABLE:
        return False
    creating = task.persistence in (Persistence.PENDING, Persistence.INITIAL_RECORD_DEGRADED)
    if creating and task.token is None:
        _degrade(task, operation, "BackgroundProcessIdentityUnavailable")
        return False
    record = record_of(ctx, task)
    try:
        await ctx.store.write(lambda: background.save(record), label="background record")
    except background.RecordConflict:
        _degrade(task, operation, "BackgroundRecordIdentityMismatch")
        return False
    except StoreError as exc:
        if not await _landed(ctx, record):
            _degrade(task, operation, type(exc).__name__)
            return False
    task.persistence = Persistence.CONFIRMED
    task.warned = False
    return True


async def _landed(ctx: Context, record: BackgroundRecord) -> bool:
    """After a failed write: whether it landed all the same (read back by stable id)."""
    try:
        stored = await ctx.store.read(
            lambda: background.by_stable_id(record.session_id, record.stable_id)
        )
    except StoreError:
        return False
    return stored == record


async def retry_degraded(ctx: Context) -> None:
    """Try again to save every degraded task this process writes (Appendix A 11).

    A record never written is created only for a task that is no longer running or whose
    identity still matches (spec §6.4 step 4): never a record for a process that is not ours."""
    for task in ctx.table:
        if task.authority is not RecordAuthority.WRITABLE or task.persistence not in (
            Persistence.INITIAL_RECORD_DEGRADED,
            Persistence.RECORD_UPDATE_DEGRADED,
        ):
            continue
        if task.persistence is Persistence.INITIAL_RECORD_DEGRADED and task.state.running:
            if task.token is None:
                continue
            token = task.token
            match = await asyncio.to_thread(ctx.provider.match_token, task.pid, token)
            if match is not TokenMatch.MATCHED:
                continue
        await save(ctx, task, "retry degraded record")


async def delete(ctx: Context, task: Task) -> None:
    """Remove the record of a durable launch whose release failed (best effort)."""
    try:
        await ctx.store.write(
            lambda: background.delete(task.session_id, task.stable_id, ctx.instance_id),
            label="background record",
        )
    except StoreError as exc:
        log.warning(
            "initial record cleanup failed display_id=%d err=%s", task.number, type(exc).__name__
        )
