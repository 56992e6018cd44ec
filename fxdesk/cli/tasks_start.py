"""``fxdesk start``: the person starts a command in the background of a workspace.

Which session it belongs to: ``-s SESSION`` when given (a session of that workspace), else the
workspace's ``Commands`` session, made the first time (``Engine.person_session``): the person's
commands keep their own ``#1, #2…`` and outlive any agent session.

Without ``--durable`` the task lives as long as this fxdesk process (a process-local task dies
with the fxdesk that started it, even when it is killed). So ``start`` then behaves like a
terminal: it stays in the foreground, prints the output live, stops the task on Ctrl+C or
SIGTERM (with the same identity-checked stop as the window), and exits with the task's own exit
code. With ``--durable`` the task keeps running after ``start`` returns; ``fxdesk ps``,
``logs`` and ``stop`` reach it, and any fxdesk that starts later finds it again.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fxdesk.cli.background import follow_log, interrupts, text_output
from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.background import BackgroundTask, Origin, TaskState
from fxdesk.domain.run_commands import find
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine

URL_WAIT_S = 20.0  # a little over the URL watcher's own 15 s give-up


def register(commands: Any) -> None:
    start = commands.add_parser(
        "start",
        help="start a command in the background of a workspace",
        description="Start COMMAND (a bash line) in the background in DIR, in the same sandbox "
        "as the agent's commands (with the network, so a server is reachable). It belongs to "
        "-s SESSION, else to the workspace's 'Commands' session (made the first time).\n\n"
        "Without --durable the command lives only as long as this fxdesk: `start` stays in "
        "the foreground like a terminal, prints its output, stops it on Ctrl+C, and exits "
        "with its exit code. With --durable it keeps running after `start` returns: see it "
        "with `fxdesk ps`, read it with `fxdesk logs N`, stop it with `fxdesk stop N`.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    start.add_argument("-w", "--workspace", metavar="DIR", required=True, help="the workspace")
    start.add_argument(
        "--durable",
        action="store_true",
        help="keep it running after this command returns (found again by every fxdesk)",
    )
    start.add_argument(
        "--url", action="store_true", help="it is a server: look for its URL in its output"
    )
    start.add_argument(
        "-s", "--session", metavar="SESSION", help="the session it belongs to (id or prefix)"
    )
    start.add_argument(
        "-C",
        "--cwd",
        metavar="FOLDER",
        help="where it starts, relative to the workspace (default: the workspace)",
    )
    start.add_argument(
        "--saved",
        metavar="NAME",
        help="start the workspace's saved run command NAME (see `fxdesk run-commands`)",
    )
    start.add_argument("command", nargs="*", metavar="COMMAND", help="after --: the bash line")
    start.set_defaults(handler=cmd_start)


def _command_line(words: list[str]) -> str:
    """One word is the bash line itself; several are quoted back into one (``-- sh -c 'a'``)."""
    return words[0] if len(words) == 1 else shlex.join(words)


def cmd_start(args: argparse.Namespace, paths: DataPaths) -> int:
    if bool(args.command) == bool(args.saved):
        print("fxdesk: give either -- COMMAND or --saved NAME", file=sys.stderr)
        return ExitCode.USAGE
    folder = Path(args.workspace).expanduser().absolute()

    async def body(engine: Engine) -> int:
        from fxdesk.engine.facade import BackgroundError, InvalidWorkspace

        try:
            session = await engine.person_session(folder, args.session)
        except InvalidWorkspace as exc:
            raise CommandError(f"cannot use that workspace: {exc}") from exc
        command, cwd = _command_line(args.command), args.cwd
        expect_url, durable = args.url, args.durable
        if args.saved:
            saved = await engine.run_commands(session.workspace_id)
            chosen = find(saved, args.saved)
            if chosen is None:
                names = ", ".join(repr(c.name) for c in saved) or "none saved"
                raise CommandError(f"no run command named {args.saved!r} here ({names})")
            command, cwd = chosen.command, cwd or chosen.folder or None
            expect_url, durable = expect_url or chosen.expect_url, durable or chosen.durable
        try:
            task = await engine.start_background(
                session.id,
                command,
                cwd=cwd,
                expect_url=expect_url,
                durable=durable,
                origin=Origin.PERSON,
            )
        except BackgroundError as exc:
            ran = "" if exc.ran else " (it did not start)"
            raise CommandError(f"{exc}{ran}", ExitCode.FAILED) from exc
        where = f"session {session.id[:8]} ({session.name})"
        if durable:
            return await _report_durable(engine, task, where)
        return await _foreground(engine, task, where)

    return execute(paths, body, recover=False, background=True)


async def _report_durable(engine: Engine, task: BackgroundTask, where: str) -> int:
    print(f"{task.ref} started (durable) in {where}: log at {task.log_path}")
    if task.expect_url:
        task = await _until_url(engine, task)
        if task.url is not None:
            print(f"{task.ref} serves at {task.url}")
        elif task.state.running:
            print(f"{task.ref}: {task.url_note or 'no URL detected yet'}", file=sys.stderr)
    if task.persistence_warning:
        print(f"fxdesk: warning: {task.ref} {task.persistence_warning}", file=sys.stderr)
    if not task.state.running:
        print(f"fxdesk: {_ended(task)}", file=sys.stderr)
        return ExitCode.FAILED
    print(f"stop it with: fxdesk stop {task.number} -s {task.session_id[:8]}")
    return ExitCode.OK


async def _until_url(engine: Engine, task: BackgroundTask) -> BackgroundTask:
    deadline = asyncio.get_running_loop().time() + URL_WAIT_S
    while task.state.running and task.url is None and task.expect_url:
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.1)
        task = engine.background_task(task.stable_id, task.session_id)
    return task


def _ended(task: BackgroundTask) -> str:
    if task.state in (TaskState.EXITED, TaskState.FAILED):
        return f"{task.ref} ended with code {task.exit_code}"
    return f"{task.ref} is {task.state.value}"


async def _foreground(engine: Engine, task: BackgroundTask, where: str) -> int:
    """Print the task's output until it ends; Ctrl+C or SIGTERM stop it. Its exit code."""
    print(
        f"fxdesk: {task.ref} started in {where}; it stops when this command ends "
        "(Ctrl+C stops it; --durable keeps it running)",
        file=sys.stderr,
    )
    out = text_output()
    stop = asyncio.Event()
    received: list[int] = []
    loop = asyncio.get_running_loop()
    shown_url = False

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()

    async def still_running() -> bool:
        nonlocal shown_url
        now = engine.background_task(task.stable_id, task.session_id)
        if now.url is not None and not shown_url:
            shown_url = True
            print(f"fxdesk: {task.ref} serves at {now.url}", file=sys.stderr)
        return now.state.running

    stopped: list[str] = []

    async def stop_it() -> None:  # before the log's last lines: what it wrote to its end
        outcome = await engine.stop_background(task.stable_id, task.session_id)
        stopped.append(outcome.message)

    with interrupts(stop):  # replaced below by handlers that remember which signal
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
        code = await follow_log(Path(task.log_path), out, stop, still_running, stop_it)
    if received:
        for message in stopped:
            print(f"fxdesk: {message}", file=sys.stderr)
        return 128 + received[0]
    if code is not None:  # its exit marker: it ended, whether or not the runtime saw it yet
        print(f"fxdesk: {task.ref} ended with code {code}", file=sys.stderr)
        return code
    ended = engine.background_task(task.stable_id, task.session_id)
    print(f"fxdesk: {_ended(ended)}", file=sys.stderr)
    return ended.exit_code if ended.exit_code is not None else ExitCode.FAILED
