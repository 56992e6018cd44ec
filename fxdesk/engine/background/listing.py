"""Looking at background tasks without running them: ``fxdesk ps`` and ``fxdesk logs``.

A process that only looks must not recover (issue 10 item 13, and spec §6.5 for tasks): it
adopts no record, marks nothing stale, signals nothing and starts no watcher. So this reads the
records as they are and judges each running one *now*, the way a restore would, without
writing what it found:

- its identity still matches and its log exists: ``running`` (the record's URL, if any);
- the exit marker is in its log: ``exited`` or ``failed`` with the code;
- otherwise (gone, PID reused, no token, log deleted, outside its workspace): ``stale``;
- its identity cannot be read right now: left ``running`` as recorded (never "gone").

``read_only`` marks a task whose record another live fxdesk owns (a window, a ``fxdesk run``).
Process-local tasks have no record (Appendix A 10), so no other process can see them.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from fxdesk.domain.background import (
    BackgroundRecord,
    BackgroundTask,
    Persistence,
    TaskState,
    is_inside,
    state_from_log,
)
from fxdesk.domain.log_scan import EXIT_MARKER_WINDOW, exit_code
from fxdesk.domain.process_identity import TokenMatch, parse_token
from fxdesk.store import Store, background
from fxdesk.tools.background.identity import match_token


def _log_exit_code(path: str) -> tuple[bool, int | None]:
    """(the log exists, the code of its exit marker if it has one)."""
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            file.seek(max(0, size - EXIT_MARKER_WINDOW))
            return True, exit_code(file.read(EXIT_MARKER_WINDOW))
    except OSError:
        return False, None


def _inside(workspace: str | None, cwd: str) -> bool:
    return workspace is not None and is_inside(workspace, cwd)


def judged(
    record: BackgroundRecord,
    workspace: str | None,
    owner_alive: Callable[[str], bool],
) -> BackgroundTask:
    """(blocking) The task a record stands for, as it is now; nothing is written."""
    state, code = record.state, record.exit_code
    read_only = record.owner_instance is not None and owner_alive(record.owner_instance)
    token = parse_token(record.token)
    if state.running:
        exists, marked = _log_exit_code(record.log_path)
        by_log = state_from_log(marked)
        if by_log is not None:
            state, code = by_log, marked
        elif not (exists and token is not None and _inside(workspace, record.cwd)):
            state = TaskState.STALE
        else:
            match = match_token(record.pid, token)
            if match in (TokenMatch.MISSING, TokenMatch.MISMATCHED):
                state = TaskState.STALE
    return BackgroundTask(
        number=record.number,
        stable_id=record.stable_id,
        session_id=record.session_id,
        workspace_id=record.workspace_id,
        workspace=workspace or "",
        command=record.command,
        cwd=record.cwd,
        state=state,
        exit_code=code if state in (TaskState.EXITED, TaskState.FAILED) else None,
        pid=record.pid,
        has_token=token is not None,
        url=record.url,
        expect_url=record.expect_url and state.running and record.url is None,
        url_note="",
        started_at_ms=record.started_at_ms,
        origin=record.origin,
        policy=record.policy,
        read_only=read_only,
        log_path=record.log_path,
        persistence=Persistence.CONFIRMED,
    )


async def look(
    store: Store,
    owner_alive: Callable[[str], bool],
    *,
    include_ended: bool = False,
) -> list[BackgroundTask]:
    """Every recorded task (with ``include_ended``, the ended ones too), judged now."""

    def read() -> tuple[list[BackgroundRecord], dict[str, str | None]]:
        records = background.listed(include_ended=include_ended)
        places: dict[str, str | None] = {}
        for record in records:
            if record.session_id not in places:
                place = background.session_place(record.session_id)
                places[record.session_id] = None if place is None else place[1]
        return records, places

    records, places = await store.read(read)

    def judge_all() -> list[BackgroundTask]:
        resolved = {
            session: None if folder is None else os.path.realpath(folder)
            for session, folder in places.items()
        }
        alive: dict[str, bool] = {}

        def cached_alive(owner: str) -> bool:
            if owner not in alive:
                alive[owner] = owner_alive(owner)
            return alive[owner]

        tasks = [judged(r, resolved[r.session_id], cached_alive) for r in records]
        if include_ended:
            return tasks
        return [t for t in tasks if t.state.running]

    return await asyncio.to_thread(judge_all)
