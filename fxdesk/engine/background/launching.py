"""Launching a background task: the held-back handshake and the launch policies (spec §3.2-3.6).

1. A number is reserved (per session) and, for every task, a stable id (32 hex, unique in its
   session, 16 tries). A log file is made: in the temp folder for a process-local task, in the
   data folder for a durable one.
2. The provider spawns the wrapper *held back*: it has said it is ready, it has not got the
   command. Its identity token is captured: 3 tries, 20 ms apart, retrying only while the
   identity is "unavailable" (spec §3.4 step 2).
3. The task is listed. A saved-headless task's record is saved *before* the release: if that
   fails the command never runs (``PersistenceRequired``).
4. The command is released. A durable task's record is saved right after; if that fails the
   task runs all the same, *degraded* (it will be stopped at quit: nothing could find it again).

Any failure before the release goes through ``_fail_blocked`` (spec §3.5): close the wrapper's
pipe and wait; if it is not confirmed gone and a token is known, signal it and wait again; if
still not, leave it to a reaper, delete the log and *retire* the number and stable id for the
rest of the run (``IdentityIndeterminate``). A confirmed cleanup gives the original error back
and frees the number. So a command never runs without being trackable (spec §1.2).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.background import (
    STABLE_ID_ATTEMPTS,
    IdentityIndeterminate,
    IdentityUnavailable,
    LaunchOutcome,
    LaunchPolicy,
    LaunchRefused,
    Origin,
    Persistence,
    PersistenceRequired,
    PersistenceUnavailable,
    RecordAuthority,
    new_stable_id,
)
from fxdesk.domain.process_identity import ProcessToken
from fxdesk.engine.background import records
from fxdesk.engine.background.context import Context, SessionPlace, log
from fxdesk.engine.background.table import Task
from fxdesk.store import background
from fxdesk.store.errors import StoreError
from fxdesk.tools.background.log_files import LogFileUnavailable, new_log_file
from fxdesk.tools.background.provider import (
    CleanupStatus,
    LaunchFailed,
    PreparedProcess,
    ProcessIdentityUnavailable,
)


@dataclass(frozen=True)
class LaunchRequest:
    place: SessionPlace
    command: str
    cwd: Path  # resolved, inside the workspace
    expect_url: bool
    policy: LaunchPolicy
    origin: Origin


@dataclass
class _Prepared:
    """A launch between its reservation and its registration (spec §2.5)."""

    session_id: str
    number: int
    stable_id: str
    log_path: Path


async def launch(ctx: Context, request: LaunchRequest) -> tuple[Task, LaunchOutcome]:
    """Start ``request``'s command held back, identify it, release it (module docstring).

    A cancel (the person cancels the turn that asked) does not cut the handshake in the
    middle: the steps go on in their own task, and the cancel is honoured at the release.
    Before it, the held-back wrapper is closed and nothing is kept; once the command is
    released, the task stays listed and recorded (it runs), and the caller is cancelled all the
    same. Cut anywhere, it used to leave a wrapper held back for ever, listed as running with
    an empty log (found by the soak, tests/reliability/soak.py)."""
    if ctx.stop_requested:
        raise LaunchRefused("fxdesk is quitting; the command was not started")
    cancelled = asyncio.Event()
    steps = asyncio.ensure_future(_launch(ctx, request, cancelled))
    try:
        return await asyncio.shield(steps)
    except asyncio.CancelledError:
        cancelled.set()
        with contextlib.suppress(BaseException):
            await asyncio.shield(steps)
        raise


async def _launch(
    ctx: Context, request: LaunchRequest, cancelled: asyncio.Event
) -> tuple[Task, LaunchOutcome]:
    prepared = await _prepare(ctx, request)
    spec = await asyncio.to_thread(
        ctx.build_spec, request.place, request.cwd, prepared.log_path, request.policy.durable
    )
    try:
        wrapper = await asyncio.to_thread(ctx.provider.spawn_prepared, spec)
    except LaunchFailed as exc:
        _cancel(ctx, prepared)
        raise LaunchRefused(f"Failed to start the command: {exc}") from exc
    token = await _capture(ctx, wrapper)
    if token is None:
        raise await _fail_blocked(
            ctx,
            prepared,
            wrapper,
            None,
            IdentityUnavailable("Could not verify the new process; the command was not started."),
        )
    task = _task(ctx, request, prepared, wrapper.pid, token)
    ctx.table.add(task)
    # A durable task's record is written before its command may run, as a saved-headless
    # one's: killed between the two, fxdesk would leave a server running that no record names
    # and no later fxdesk finds (found by the crash harness, tests/reliability). A record whose
    # command never ran names a wrapper that is gone: the next start marks it stale.
    saved = await records.save(ctx, task, "initial record") if request.policy.durable else False
    if request.policy is LaunchPolicy.SAVED_HEADLESS and not saved:
        ctx.table.remove(task)
        raise await _fail_blocked(
            ctx,
            prepared,
            wrapper,
            token,
            PersistenceRequired(
                "Could not save the background record; the command was not started."
            ),
            listed=True,
        )
    try:
        if cancelled.is_set():  # the caller is gone: the held-back wrapper goes too
            raise LaunchFailed("the turn was cancelled")
        task.owned = await asyncio.to_thread(wrapper.release, request.command)
    except LaunchFailed as exc:
        if saved:
            await records.delete(ctx, task)
        ctx.table.remove(task)
        raise await _fail_blocked(
            ctx,
            prepared,
            wrapper,
            token,
            LaunchRefused(f"Failed to start the command: {exc}"),
            listed=True,
        ) from exc
    if not request.policy.durable:
        return task, LaunchOutcome.PROCESS_LOCAL_STARTED
    if not saved:  # durable: the command runs all the same, its record to be retried
        log.warning(
            "record persistence degraded policy=%s display_id=%d outcome=%s",
            task.policy.value,
            task.number,
            Persistence.INITIAL_RECORD_DEGRADED.value,
        )
        return task, LaunchOutcome.DURABLE_STARTED_DEGRADED
    return task, LaunchOutcome.DURABLE_STARTED


async def _prepare(ctx: Context, request: LaunchRequest) -> _Prepared:
    session_id = request.place.session_id
    # Every task's number goes above the session's recorded ones, a process-local task's too:
    # ``#1`` must not name both an ended durable task (``fxdesk ps --all``) and a new one.
    floor = 0
    try:
        floor = await ctx.store.read(lambda: background.highest_number(session_id))
    except StoreError as exc:
        if request.policy.durable:
            raise PersistenceUnavailable(
                "Background persistence is not available for this session; cannot start a "
                f"durable command ({exc})."
            ) from exc
    number = ctx.table.reserve(session_id, floor)
    try:
        stable_id = await _stable_id(ctx, session_id)
        folder = ctx.durable_logs / session_id if request.policy.durable else ctx.local_logs
        log_path = await asyncio.to_thread(new_log_file, folder)
    except BaseException as exc:
        ctx.table.release(session_id, number)
        if isinstance(exc, LogFileUnavailable):
            raise LaunchRefused(f"No log file for the command: {exc}") from exc
        raise
    return _Prepared(session_id, number, stable_id, log_path)


async def _stable_id(ctx: Context, session_id: str) -> str:
    for _ in range(STABLE_ID_ATTEMPTS):
        candidate = new_stable_id()
        if ctx.table.stable_id_taken(session_id, candidate):
            continue
        try:
            stored = await ctx.store.read(
                lambda c=candidate: background.by_stable_id(session_id, c)  # type: ignore[misc]
            )
        except StoreError as exc:
            raise PersistenceUnavailable(f"cannot check background records: {exc}") from exc
        if stored is None:
            return candidate
    raise LaunchRefused("no free background task id after 16 tries")


async def _capture(ctx: Context, wrapper: PreparedProcess) -> ProcessToken | None:
    """The wrapper's token: up to 3 tries, 20 ms apart, only while it is "unavailable"."""
    attempts = ctx.timings.capture_attempts
    for attempt in range(1, attempts + 1):
        try:
            return await asyncio.to_thread(ctx.provider.capture_token, wrapper.pid)
        except ProcessIdentityUnavailable as exc:
            log.info(
                "process identity capture %s pid=%d attempt=%d/%d err=%s",
                "retry" if attempt < attempts else "exhausted",
                wrapper.pid,
                attempt,
                attempts,
                type(exc).__name__,
            )
            if attempt < attempts:
                await asyncio.sleep(ctx.timings.capture_delay_s)
        except (ProcessLookupError, OSError) as exc:
            log.info(
                "process identity capture failed pid=%d err=%s", wrapper.pid, type(exc).__name__
            )
            return None
    return None


def _task(
    ctx: Context, request: LaunchRequest, prepared: _Prepared, pid: int, token: ProcessToken
) -> Task:
    durable = request.policy.durable
    return Task(
        number=prepared.number,
        stable_id=prepared.stable_id,
        session_id=prepared.session_id,
        workspace_id=request.place.workspace_id,
        workspace=str(request.place.workspace),
        command=request.command,
        cwd=str(request.cwd),
        log_path=str(prepared.log_path),
        policy=request.policy,
        origin=request.origin,
        pid=pid,
        token=token,
        started_at_ms=ctx.clock.now_ms(),
        expect_url=request.expect_url,
        authority=RecordAuthority.WRITABLE if durable else RecordAuthority.NONE,
        persistence=Persistence.PENDING if durable else Persistence.NOT_APPLICABLE,
        record_number=prepared.number,
    )


def _cancel(ctx: Context, prepared: _Prepared) -> None:
    """Undo a launch that never ran: delete the log, free the number (spec §3.2 "cancel")."""
    with contextlib.suppress(OSError):
        prepared.log_path.unlink()
    ctx.table.release(prepared.session_id, prepared.number)


async def _fail_blocked(
    ctx: Context,
    prepared: _Prepared,
    wrapper: PreparedProcess,
    token: ProcessToken | None,
    error: Exception,
    *,
    listed: bool = False,
) -> Exception:
    """Clean up a wrapper that was never released; the error to raise (spec §3.5)."""
    timeout = ctx.timings.cleanup_timeout_s
    status = await asyncio.to_thread(wrapper.close_and_wait, timeout)
    confirmed = status is CleanupStatus.CONFIRMED
    if not confirmed and token is not None:  # never a signal without a token
        with contextlib.suppress(Exception):
            await asyncio.to_thread(ctx.provider.signal_group, wrapper.pid, token, signal.SIGKILL)
        confirmed = await asyncio.to_thread(wrapper.wait_for_exit, timeout)
    if confirmed:
        if listed:
            ctx.table.release(prepared.session_id, prepared.number)
        _cancel(ctx, prepared)
        return error
    if not await asyncio.to_thread(wrapper.detach_reaper):
        log.warning("blocked wrapper cleanup could not retain reaper pid=%d", wrapper.pid)
    with contextlib.suppress(OSError):
        prepared.log_path.unlink()
    ctx.table.retire(prepared.session_id, prepared.number, prepared.stable_id)
    return IdentityIndeterminate(
        f"Process state is unknown; #{prepared.number} is retired (the command was held back, "
        "but its wrapper could not be confirmed gone)."
    )
