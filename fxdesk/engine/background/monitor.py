"""Exit detection: what became of each running task (spec §3.7, Appendix A 1 and 11 fixed).

For each running task, in a worker thread: the log's last 4096 bytes are read for the wrapper's
exit marker; without one, its identity is compared. The marker decides first (``exited`` for 0,
``failed`` otherwise), then a vanished log (``stale``), no token (``stale``) and a gone identity
(``dead``) (``domain.background.refreshed_state``). Every change is persisted when this process
writes the task's record (the reference left ``stale`` unwritten: A 1), our child is reaped, and
``BackgroundChanged`` is published (a *completion* when it stopped running).

A persisting refresh less than 500 ms after the previous one does nothing unless forced; every
one first retries the degraded records (A 11). A read-only task changes in memory only.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from fxdesk.domain.background import TaskState, refreshed_state
from fxdesk.domain.log_scan import EXIT_MARKER_WINDOW, exit_code
from fxdesk.domain.process_identity import TokenMatch
from fxdesk.engine.background import records
from fxdesk.engine.background.context import Context, log
from fxdesk.engine.background.table import Task
from fxdesk.tools.background.provider import ProcessProvider


@dataclass(frozen=True)
class Completion:
    """A running task that stopped running (spec §2.16)."""

    number: int
    session_id: str
    state: TaskState
    exit_code: int | None


def _read_marker(path: str) -> tuple[bool, int | None]:
    """(log missing, exit code from its last 4096 bytes)."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            file.seek(max(0, size - EXIT_MARKER_WINDOW))
            return False, exit_code(file.read(EXIT_MARKER_WINDOW))
    except FileNotFoundError:
        return True, None
    except OSError:
        return False, None  # any other read error: "no code" (spec §3.7 step 3)


def _look(provider: ProcessProvider, task: Task) -> tuple[TaskState, int | None] | None:
    """(in a worker thread) The task's new state and exit code, or None: still running."""
    missing, code = _read_marker(task.log_path)
    match: TokenMatch | None = None
    if not missing and code is None and task.token is not None:
        match = provider.match_token(task.pid, task.token)
    new = refreshed_state(
        log_missing=missing, exit_code=code, has_token=task.token is not None, match=match
    )
    return None if new is None else (new, code)


async def refresh(ctx: Context) -> list[Completion]:
    """Look at every running task once (module docstring); the completions, in list order."""
    completions: list[Completion] = []
    if ctx.stop_requested:
        return completions
    await records.retry_degraded(ctx)
    for task in ctx.table.running():
        if task.stopping:
            continue  # its stop decides
        found = await asyncio.to_thread(_look, ctx.provider, task)
        if found is None or not task.state.running or task.stopping:
            continue
        state, code = found
        previous = task.state
        task.finish(state, code)
        task.let_go()
        if state is TaskState.STALE:
            log.info("background task lifecycle display_id=%d outcome=stale", task.number)
        else:
            log.info(
                "background task completed id=%d state=%s exit_code=%s",
                task.number,
                state.value,
                "null" if task.exit_code is None else task.exit_code,
            )
        await records.save(ctx, task, "refresh background tasks")
        ctx.publish(task, previous)
        completions.append(Completion(task.number, task.session_id, state, task.exit_code))
    return completions
