"""Stopping background tasks: one, a workspace's (stop-and-forget), and at quit (spec §3.9-3.12).

Nothing is signalled unless the task has a token and its PID matches it *now* (spec §4): a PID
that is gone or reused (``missing``/``mismatched``) is never signalled, and one whose identity
cannot be read (``unavailable``) is neither signalled nor called gone. The provider checks once
more right before the signal.

A stop sends SIGTERM to the task's process group, then polls the identity every 10 ms, reaping
our own child between polls without waiting on it (Appendix A 2: the reference's blocking wait
could hang on a child that ignores SIGTERM), for the grace period (2 s). If the process is still
there it escalates, deliberately and logged, to SIGKILL of the group, after checking the identity
again, and confirms once more. All of it awaits on the loop: nothing blocks it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterable

from fxdesk.domain.background import (
    ForgetResult,
    RecordAuthority,
    StopOutcome,
    StopResult,
    TaskState,
)
from fxdesk.domain.process_identity import ProcessToken, TokenMatch
from fxdesk.engine.background import records
from fxdesk.engine.background.context import Context, log
from fxdesk.engine.background.table import Task
from fxdesk.tools.background.provider import ProcessIdentityIndeterminate

_SIGNALLED = (StopResult.STOPPED, StopResult.KILLED, StopResult.NOT_CONFIRMED)


def _reap_and_match(ctx: Context, task: Task, token: ProcessToken) -> tuple[TokenMatch, bool]:
    """(in a worker thread) Reap our child if it has exited, never waiting, then compare its
    identity: a child that exited but was not reaped still has its PID and start time."""
    reaped = False
    owned = task.owned
    if owned is not None:
        with contextlib.suppress(Exception):
            reaped = owned.wait(0) is not None
    return ctx.provider.match_token(task.pid, token), reaped


async def _probe(ctx: Context, task: Task, token: ProcessToken) -> TokenMatch:
    match, reaped = await asyncio.to_thread(_reap_and_match, ctx, task, token)
    if reaped:
        task.owned = None
    return match


async def _gone_within(
    ctx: Context, task: Task, token: ProcessToken, seconds: float
) -> bool | None:
    """True once the identity is gone within ``seconds``; False if still there; None if it
    could not be read (give up at once: spec §3.9 step 5)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        match = await _probe(ctx, task, token)
        if match.gone:
            return True
        if match is TokenMatch.UNAVAILABLE:
            return None
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(ctx.timings.poll_s)


async def _send(
    ctx: Context, task: Task, token: ProcessToken, number: int
) -> tuple[StopResult | None, str]:
    """Signal the group; (None, '') when sent, else how the stop ends."""
    try:
        await asyncio.to_thread(ctx.provider.signal_group, task.pid, token, number)
    except ProcessIdentityIndeterminate:
        match = await _probe(ctx, task, token)
        return (StopResult.ALREADY_GONE if match.gone else StopResult.INDETERMINATE), ""
    except PermissionError:
        return StopResult.SIGNAL_ERROR, "permission denied"
    except OSError as exc:
        return StopResult.SIGNAL_ERROR, exc.strerror or type(exc).__name__
    return None, ""


async def terminate(ctx: Context, task: Task) -> tuple[StopResult, str]:
    """Stop ``task``'s process group if its identity matches (module docstring)."""
    token = task.token
    if token is None:
        return StopResult.NO_TOKEN, ""
    match = await _probe(ctx, task, token)
    if match.gone:
        return StopResult.ALREADY_GONE, ""
    if match is TokenMatch.UNAVAILABLE:
        return StopResult.INDETERMINATE, ""
    failed, detail = await _send(ctx, task, token, signal.SIGTERM)
    if failed is not None:
        return failed, detail
    gone = await _gone_within(ctx, task, token, ctx.timings.stop_grace_s)
    if gone:
        return StopResult.STOPPED, ""
    if gone is None:
        return StopResult.NOT_CONFIRMED, ""
    log.warning(
        "background task display_id=%d pid=%d still there %.1f s after SIGTERM: "
        "sending SIGKILL to its process group",
        task.number,
        task.pid,
        ctx.timings.stop_grace_s,
    )
    failed, detail = await _send(ctx, task, token, signal.SIGKILL)
    if failed is StopResult.ALREADY_GONE:
        return StopResult.STOPPED, ""  # it went between the last poll and the SIGKILL
    if failed is not None:
        return (StopResult.NOT_CONFIRMED if failed is StopResult.INDETERMINATE else failed), detail
    gone = await _gone_within(ctx, task, token, ctx.timings.kill_grace_s)
    return (StopResult.KILLED if gone else StopResult.NOT_CONFIRMED), ""


async def _apply(ctx: Context, task: Task, result: StopResult) -> None:
    """Record what a stop found (Appendix A 1: stale is persisted too) and say so."""
    if result not in (StopResult.STOPPED, StopResult.KILLED, StopResult.ALREADY_GONE):
        return
    previous = task.state
    task.finish(TaskState.STALE if result is StopResult.ALREADY_GONE else TaskState.STOPPED)
    task.let_go()
    await records.save(ctx, task, "stop background task")
    ctx.publish(task, previous)


async def stop(ctx: Context, task: Task) -> StopOutcome:
    """Stop one task (spec §3.9); the outcome says what happened, in its own words."""
    async with ctx.lock_for(task):
        if not task.state.running:
            return StopOutcome(task.number, task.session_id, StopResult.NOT_RUNNING)
        task.stopping = True
        try:
            result, detail = await terminate(ctx, task)
            await _apply(ctx, task, result)
        finally:
            task.stopping = False
    log.info("background stop display_id=%d outcome=%s", task.number, result.value)
    left: tuple[tuple[int, str], ...] = ()
    if result.ended:
        left = await _left_running(ctx, task)
    return StopOutcome(task.number, task.session_id, result, detail, left)


async def _left_running(ctx: Context, task: Task) -> tuple[tuple[int, str], ...]:
    """What the task started that left its process group and outlived the stop (never
    signalled: no token, and not the task's group); logged with PIDs only. A sandboxed task's
    own PID namespace is the exception: when something is left in it, its init is killed,
    which ends the whole namespace (``escaped.end_sandbox``); only what is still found after
    that is reported.

    What is found is looked at again for up to ``escape_settle_s``: what ends on its own
    right after the group (a sandbox's namespace is torn down just after its wrapper exits,
    and bubblewrap with it) is not reported."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ctx.timings.escape_settle_s
    sandbox_ended = False
    while True:
        try:
            found = await asyncio.to_thread(ctx.provider.left_running, task.log_path)
            if found and not sandbox_ended:
                # What is left inside the task's own sandbox is the task's: end it whole.
                sandbox_ended = True
                try:
                    ended = await asyncio.to_thread(ctx.provider.end_sandbox, task.log_path)
                except Exception:
                    log.exception("background stop could not end the task's sandbox")
                    ended = []
                if ended:
                    log.info(
                        "background task display_id=%d: ended its sandbox (init %s) with "
                        "what was left in it",
                        task.number,
                        " ".join(map(str, ended)),
                    )
                    deadline = max(deadline, loop.time() + ctx.timings.kill_grace_s)
                    continue
        except Exception:
            log.exception("background stop could not look for escaped processes")
            return ()
        if not found or loop.time() >= deadline:
            break
        await asyncio.sleep(0.1)
    if found:
        log.warning(
            "background task display_id=%d left %d process(es) outside its group running: %s",
            task.number,
            len(found),
            " ".join(str(e.pid) for e in found),
        )
    return tuple((e.pid, e.name) for e in found)


async def stop_and_forget(ctx: Context, tasks: Iterable[Task]) -> ForgetResult:
    """Stop a workspace's running tasks that have a token and drop them from the list
    (spec §3.10). Those whose identity cannot be verified, or that could not be signalled or
    confirmed gone, stay listed; so do tasks not running or without a token."""
    chosen = [t for t in tasks if t.state.running and t.token is not None]
    kept_aside = 0

    async def one(task: Task) -> StopResult:
        async with ctx.lock_for(task):
            if not task.state.running:
                return StopResult.NOT_RUNNING
            result, _ = await terminate(ctx, task)
            await _apply(ctx, task, result)
            return result

    results = await asyncio.gather(*(one(task) for task in chosen))
    signalled = removed = 0
    for task, result in zip(chosen, results, strict=True):
        signalled += result in _SIGNALLED
        if result.ended:
            task.let_go()
            ctx.table.remove(task)
            ctx.publish(task, task.state, removed=True)
            removed += 1
        else:
            kept_aside += 1
    log.info("reset stop/forget scope=current_workspace signaled=%d removed=%d", signalled, removed)
    return ForgetResult(signalled, removed, kept_aside)


async def stop_at_quit(ctx: Context) -> int:
    """Stop what nothing could find again after this fxdesk ends (spec §3.12 step 4):
    process-local tasks and durable ones whose record was never written; forget every other
    handle (durable servers keep running). The number of tasks stopped."""
    doomed = [t for t in ctx.table.running() if t.stops_at_quit and t.token is not None]

    async def one(task: Task) -> bool:
        async with ctx.lock_for(task):
            result, _ = await terminate(ctx, task)
            if result is StopResult.INDETERMINATE:
                log.warning("shutdown process identity indeterminate display_id=%d", task.number)
            previous = task.state
            if result.ended:
                task.finish(TaskState.STOPPED)
                if task.authority is RecordAuthority.WRITABLE:
                    await records.save(ctx, task, "shutdown")
                ctx.publish(task, previous)
            return result.ended

    stopped = sum(await asyncio.gather(*(one(task) for task in doomed)))
    for task in ctx.table:
        task.let_go()
    return stopped
