"""The background-task commands: ps, stop, logs (``start`` is in ``tasks_start``, the saved
run commands in ``run_commands``).

``ps`` and ``logs`` only look: they start no background runtime, so they adopt no record,
mark nothing stale and signal nothing (``Engine.look_background``); what another running
fxdesk owns stays its own. ``stop`` acts, so it runs the runtime (without session recovery).

A task is named by ``N`` (or ``#N``) within its session, or by its 32-hex id. ``N`` alone is
enough while only one session has a task with that number; otherwise ``-s SESSION`` says which.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.background import BackgroundTask, TaskState, parse_ref
from fxdesk.domain.log_scan import EXIT_MARKER_WINDOW, exit_code
from fxdesk.paths import DataPaths
from fxdesk.tools.background.logs import LogFollower

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine

STREAM_CHUNK_BYTES = 256 * 1024
FOLLOW_POLL_S = 0.2
FOLLOW_CHECK_S = 1.0  # how often --follow asks whether a task without exit marker still runs


def register(commands: Any) -> None:
    ps = commands.add_parser(
        "ps",
        help="list background tasks (dev servers, watchers) of every session",
        description="List the background tasks fxdesk keeps track of, of every session: "
        "#N within its session, state, exit code, uptime, URL, command and folder. Only looks: "
        "it adopts, marks and stops nothing. Tasks started without --durable live inside the "
        "fxdesk that started them and are not listed here.",
    )
    ps.add_argument("--json", action="store_true", help="machine-readable rows")
    ps.add_argument("--all", action="store_true", help="ended and stale tasks too")
    ps.set_defaults(handler=cmd_ps)

    stop = commands.add_parser(
        "stop",
        help="stop a background task",
        description="Stop a background task: SIGTERM to its process group once its identity "
        "is confirmed, SIGKILL after a grace period if it stays. N alone names the one running "
        "#N when several sessions used N. Exit 0 when it is not "
        "running afterwards (stopped now, or had already ended), 1 when it may still run, "
        "2 when there is no such task.",
    )
    _task_arguments(stop)
    stop.set_defaults(handler=cmd_stop)

    logs = commands.add_parser(
        "logs",
        help="print a background task's log",
        description="Print a background task's whole log (streamed, so a huge log costs no "
        "memory). Invalid UTF-8 shows as U+FFFD and NUL as ␀.",
    )
    _task_arguments(logs)
    logs.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep printing what it writes until it ends (or Ctrl+C)",
    )
    logs.set_defaults(handler=cmd_logs)


def _task_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", metavar="N", help="#N (or N) within its session, or the task id")
    parser.add_argument(
        "-s",
        "--session",
        metavar="SESSION",
        help="the task's session (id or prefix), when N is used in more than one",
    )


# --- ps -------------------------------------------------------------------------------------


def cmd_ps(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        tasks = await engine.look_background(include_ended=args.all)
        names = await _session_names(engine)
        now_ms = int(time.time() * 1000)
        rows = [_row(t, names.get(t.session_id, ""), now_ms) for t in tasks]
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            what = "background tasks" if args.all else "running background tasks"
            print(f"no {what}; start one with: fxdesk start -w DIR --durable -- COMMAND")
        else:
            for line in _table(rows):
                print(line)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


async def _session_names(engine: Engine) -> dict[str, str]:
    catalog = await engine.catalog(include_archived=True)
    return {s.id: s.name for s in catalog.sessions}


def _row(task: BackgroundTask, session_name: str, now_ms: int) -> dict[str, Any]:
    """One task as ``ps --json`` gives it: these keys are kept stable."""
    running = task.state is TaskState.RUNNING
    return {
        "number": task.number,
        "ref": task.ref,
        "id": task.stable_id,
        "session_id": task.session_id,
        "session_name": session_name,
        "workspace": task.workspace,
        "state": task.state.value,
        "exit_code": task.exit_code,
        "pid": task.pid,
        "started_at_ms": task.started_at_ms,
        "uptime_s": max(0, (now_ms - task.started_at_ms) // 1000) if running else None,
        "url": task.url,
        "command": task.command,
        "cwd": task.cwd,
        "origin": task.origin.value,
        "policy": task.policy.value,
        "read_only": task.read_only,
        "log_path": task.log_path,
    }


def _uptime(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'#':<4} {'SESSION':<24} {'STATE':<8} {'EXIT':>4} {'UP':>7}  {'URL':<26} COMMAND"]
    for row in rows:
        session = f"{row['session_id'][:8]} {row['session_name']}"[:24]
        code = "" if row["exit_code"] is None else str(row["exit_code"])
        marks = [row["origin"]]
        if row["read_only"]:
            marks.append("read-only: another fxdesk runs it")
        lines.append(
            f"{row['ref']:<4} {session:<24} {row['state']:<8} {code:>4} "
            f"{_uptime(row['uptime_s']):>7}  {row['url'] or '-':<26} {row['command']}"
        )
        lines.append(f"{'':<4} in {row['cwd']}  ({', '.join(marks)})")
    return lines


# --- finding one task -------------------------------------------------------------------------


async def find_task(
    engine: Engine, ref: str, session: str | None, *, running: bool = False
) -> BackgroundTask:
    """The recorded task ``ref`` names (``CommandError`` saying why not, or which to pick).
    With ``running``, a number several sessions used names the one task of them that runs."""
    try:
        wanted = parse_ref(ref)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    tasks = await engine.look_background(include_ended=True)
    if session is not None:
        session_id = (await engine.find_session(session)).id
        tasks = [t for t in tasks if t.session_id == session_id]
    if isinstance(wanted, int):
        found = [t for t in tasks if t.number == wanted]
        named = f"#{wanted}"
    else:
        found = [t for t in tasks if t.stable_id == wanted]
        named = wanted
    if not found:
        where = " in that session" if session is not None else ""
        raise CommandError(f"no background task {named}{where} (see `fxdesk ps --all`)")
    if len(found) > 1 and running:
        found = [t for t in found if t.state.running] or found
    if len(found) > 1:
        names = await _session_names(engine)
        which = ", ".join(f"{t.session_id[:8]} ({names.get(t.session_id, '')})" for t in found)
        raise CommandError(
            f"{named} names a task in more than one session: {which}; "
            "say which with -s SESSION, or use the task's id (`fxdesk ps --json`)"
        )
    return found[0]


# --- stop -----------------------------------------------------------------------------------


def cmd_stop(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        from fxdesk.engine.facade import BackgroundError

        task = await find_task(engine, args.task, args.session, running=True)
        if not task.state.running:
            print(f"Command {task.ref} is not running ({task.state.value}).")
            return ExitCode.OK
        try:
            outcome = await engine.stop_background(task.stable_id, task.session_id)
        except BackgroundError as exc:
            raise CommandError(f"{task.ref} cannot be stopped: {exc}", ExitCode.FAILED) from exc
        print(outcome.message)
        return ExitCode.OK if outcome.result.ended else ExitCode.FAILED

    # Stopping acts: the runtime runs (it finds the task again), sessions are not recovered.
    return execute(paths, body, recover=False, background=True)


# --- logs -----------------------------------------------------------------------------------


def cmd_logs(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        task = await find_task(engine, args.task, args.session)
        out = text_output()
        stop = asyncio.Event()
        with interrupts(stop):
            if not args.follow:
                await asyncio.to_thread(print_log, Path(task.log_path), out)
                return ExitCode.OK

            async def still_running() -> bool:
                tasks = await engine.look_background(include_ended=True)
                now = next((t for t in tasks if t.stable_id == task.stable_id), None)
                return now is not None and now.state.running

            code = await follow_log(Path(task.log_path), out, stop, still_running)
        if stop.is_set():
            return ExitCode.KEYBOARD_INTERRUPT
        ended = f"with code {code}" if code is not None else "(no exit code)"
        print(f"fxdesk: {task.ref} ended {ended}", file=sys.stderr)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def text_output() -> TextIO:
    """stdout, made to write what it cannot encode as '?' instead of failing (LANG=C)."""
    out = sys.stdout
    reconfigure = getattr(out, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")
    return out


class interrupts:  # noqa: N801 - used as a context manager, like contextlib's
    """Ctrl+C and SIGTERM set ``stop`` (instead of raising) while inside."""

    def __init__(self, stop: asyncio.Event) -> None:
        self._stop = stop
        self._loop = asyncio.get_running_loop()

    def __enter__(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._loop.add_signal_handler(signum, self._stop.set)

    def __exit__(self, *_exc: object) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._loop.remove_signal_handler(signum)


def print_log(path: Path, out: TextIO) -> None:
    """(blocking) The whole log, in chunks: never more than ``STREAM_CHUNK_BYTES`` in memory."""
    follower = _follower(path)
    try:
        while (chunk := follower.read_new()) is not None:
            out.write(chunk.text)
        out.flush()
    finally:
        follower.close()


def _follower(path: Path) -> LogFollower:
    if not path.exists():
        raise CommandError(f"the log {path} no longer exists", ExitCode.FAILED)
    return LogFollower(path, 0, read_bytes=STREAM_CHUNK_BYTES, max_behind=None)


def _marker(path: Path) -> int | None:
    try:
        with open(path, "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - EXIT_MARKER_WINDOW))
            return exit_code(file.read(EXIT_MARKER_WINDOW))
    except OSError:
        return None


async def follow_log(
    path: Path,
    out: TextIO,
    stop: asyncio.Event,
    still_running: Any,
    on_stop: Callable[[], Awaitable[object]] | None = None,
) -> int | None:
    """Print the log from its start and what it gains, until its exit marker appears, the
    task is no longer running (asked every ``FOLLOW_CHECK_S``) or ``stop`` is set. The exit
    code from the marker, if there is one.

    On ``stop``, ``on_stop`` (stopping the task) runs before the last of the log is printed:
    what the task wrote up to its end is shown, not lost with Ctrl+C."""
    follower = _follower(path)
    checked = 0.0
    try:
        while True:
            chunk = await asyncio.to_thread(follower.read_new)
            if chunk is not None:
                out.write(chunk.text)
                out.flush()
                continue
            code = await asyncio.to_thread(_marker, path)
            if code is not None:
                # What came with the marker, and a last line the follower held back in case
                # it was the marker, is printed before the end (a quick command's only line
                # was lost that way).
                await asyncio.to_thread(_drain, follower, out)
                return code
            if stop.is_set():
                if on_stop is not None:
                    await on_stop()
                await asyncio.to_thread(_drain, follower, out)
                return None
            loop = asyncio.get_running_loop()
            if loop.time() - checked >= FOLLOW_CHECK_S:
                checked = loop.time()
                if not await still_running():
                    await asyncio.to_thread(_drain, follower, out)
                    return await asyncio.to_thread(_marker, path)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FOLLOW_POLL_S)
    finally:
        follower.close()


def _drain(follower: LogFollower, out: TextIO) -> None:
    while (chunk := follower.read_new()) is not None:
        out.write(chunk.text)
    out.flush()
