"""``run_command``: a shell command in the workspace, in the sandbox, with a timeout and a clean
stop.

The command runs as ``bash -c COMMAND`` inside bubblewrap (``fxdesk.tools.sandbox``): the
workspace and a private ``/tmp`` writable, ``.git`` and ``.fxdesk`` read-only, the data folder
and credential stores hidden, a PID namespace of its own, an allow-listed environment, the
network per the context, and no Unix socket of its own (``sandbox_seccomp``). On macOS, Seatbelt
(``sandbox_macos``). It runs outside the sandbox, with the same allow-listed environment,
when the context says why (unrestricted mode, or the person's "run outside the sandbox, once")
or where this machine has no working sandbox (``sandbox_status``: auto mode then asks before
each command); the result then says so, so neither the model nor the person mistakes it for a
sandboxed run. Without the network, a failure that looks like one (``Could not resolve host``)
gets a hint telling the model how to ask for it (the ``network`` argument).

A timeout or a cancelled turn stops everything the command started: SIGTERM, a grace period,
then SIGKILL. Unsandboxed, the signals go to the command's session (and so process group).
Sandboxed, SIGTERM goes to every process inside (also those that left the group), and SIGKILL
to bubblewrap, whose death ends its PID namespace and so every process in it; the same happens
when the command ends, so nothing it started outlives it in the sandbox.

Bash, not /bin/sh: the permission check reads the line as bash does (``fxdesk.domain.shell``), so
the shell that runs it must be bash. Under dash, ``a && b &> f`` is ``a && b &`` then ``> f``: a
write the check placed elsewhere (found by tests/unit/test_shell_against_bash.py). For the same
reason the variables that change how bash reads or starts (``BASH_ENV``, ``ENV``,
``SHELLOPTS``, ``BASHOPTS``, exported functions) are not passed on, nor are API keys.

Output is read in chunks from both pipes at once and decoded incrementally, each stream with its
own decoder so a character split across chunks is never garbled.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import re
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from fxdesk.domain.approvals import SandboxSummary
from fxdesk.domain.sandbox_settings import SHELL_VARIABLES
from fxdesk.logs import environment_without_secrets
from fxdesk.tools.base import Tool, ToolAccess, ToolContext, ToolFacts, ToolResult, bounded
from fxdesk.tools.sandbox import (
    SandboxPolicy,
    allowed_environment,
    bwrap_arguments,
    make_new_grants,
    policy_for,
)
from fxdesk.tools.sandbox_macos import seatbelt_launch
from fxdesk.tools.sandbox_placeholders import make_fxdesk_folder
from fxdesk.tools.sandbox_probe import SEATBELT, SandboxStatus, sandbox_status
from fxdesk.tools.sandbox_seccomp import filter_for, passed_to_bwrap

CHUNK_BYTES = 64 * 1024
LIVE_LINE_MAX = 4096  # a line longer than this is passed on unfinished (a progress bar)

log = logging.getLogger(__name__)
# What programs print when they find no network (or no server on the host's loopback).
NETWORK_FAILURE = re.compile(
    r"Network is unreachable|Could not resolve host|Temporary failure in name resolution|"
    r"Name or service not known|getaddrinfo (?:EAI_AGAIN|ENOTFOUND)|No route to host|"
    r"Connection refused|Failed to connect to",
    re.IGNORECASE,
)
NETWORK_HINT = (
    "[the sandbox has no network in auto mode; if this command needs the internet or a server "
    'on the host\'s localhost, ask for it by running it again with "network": true (the person '
    "is asked)]"
)
_SCANNED = 256 * 1024  # the end of the output, where a failure is printed


class _Capture:
    """Combined stdout and stderr in arrival order, at most ``limit`` bytes of it."""

    def __init__(self, limit: int, on_output: Callable[[str], None] | None = None) -> None:
        self.limit = limit
        self.kept = 0
        self.dropped = 0
        self.parts: list[str] = []
        self._on_output = on_output
        self._partial = {"": ""}  # per stream: the start of a line not finished yet

    def _tell(self, stream: str, text: str, final: bool = False) -> None:
        """Pass whole lines to whoever watches (a line's end may arrive in a later read)."""
        if self._on_output is None:
            return
        pending = self._partial.get(stream, "") + text
        if final:
            whole, self._partial[stream] = pending, ""
        else:
            cut = pending.rfind("\n") + 1
            whole, self._partial[stream] = pending[:cut], pending[cut:]
            if len(self._partial[stream]) > LIVE_LINE_MAX:  # no newline for a long time
                whole, self._partial[stream] = pending, ""
        if whole:
            try:
                self._on_output(whole)
            except Exception:  # a watcher's failure never fails the command
                log.exception("live output watcher failed")
                self._on_output = None

    async def pump(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        name = str(id(stream))
        while chunk := await stream.read(CHUNK_BYTES):
            room = self.limit - self.kept
            if room <= 0:
                # Keep reading: a child blocked on a full pipe would never finish.
                self.dropped += len(chunk)
                continue
            if len(chunk) > room:
                self.dropped += len(chunk) - room
                chunk = chunk[:room]
            self.kept += len(chunk)
            text = decoder.decode(chunk)
            self.parts.append(text)
            self._tell(name, text)
        last = decoder.decode(b"", final=True)
        self.parts.append(last)
        self._tell(name, last, final=True)

    def text(self, footer: str) -> str:
        """The output, a note if some was dropped, then ``footer``; joined once, because the
        output may be tens of MiB and every extra copy costs that much again."""
        pieces = [part for part in self.parts if part] or ["(no output)"]
        self.parts = []
        if self.dropped:
            pieces.append(
                f"\n[output cut: only the first {self.kept} bytes were kept; "
                f"{self.dropped} more bytes were dropped]"
            )
        if not pieces[-1].endswith("\n"):
            pieces.append("\n")
        pieces.append(footer)
        return "".join(pieces)


BASH = shutil.which("bash", path=os.defpath) or "/bin/bash"  # Essential on Debian


def _source_environment() -> dict[str, str]:
    """fxdesk's environment without API keys and without what would make bash run something
    other than the line it was given; commands get its allow-listed part
    (``fxdesk.tools.sandbox.ALLOWED_VARIABLES``), in the sandbox or not."""
    return {
        name: value
        for name, value in environment_without_secrets().items()
        if name not in SHELL_VARIABLES and not name.startswith("BASH_FUNC_")
    }


def command_policy(ctx: ToolContext) -> SandboxPolicy:
    """The sandbox of a command run in ``ctx``, with the workspace's writable paths and
    variables (reads the file system and may make folders: off the loop)."""
    if ctx.temp_dir is not None:
        ctx.temp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return policy_for(
        ctx.workspace,
        data_dir=ctx.data_dir,
        write_grants=ctx.write_grants,
        network=ctx.network,
        temp_dir=ctx.temp_dir,
        extra_env=ctx.extra_env,
        extra_writable=ctx.extra_writable,
        environ=_source_environment(),
    )


@dataclass(frozen=True)
class _Launch:
    """What to start: the program and its arguments, its environment, whether it is the
    sandbox, whether that sandbox has a PID namespace (bubblewrap's; Seatbelt has none, so
    its command is stopped through its process group as an unsandboxed one), and why it is not
    ('' when it is, or when this tool runs unconfined by design)."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    pid_namespace: bool = False
    seccomp: bytes | None = None  # bubblewrap installs it (sandbox_seccomp)
    outside: str = ""


def no_sandbox(status: SandboxStatus) -> str:
    """Why commands run outside the sandbox on this machine, in a few words."""
    return f"no sandbox on this machine ({status.reason or 'unknown reason'})"


def _launch(command: str, ctx: ToolContext, use_sandbox: bool) -> _Launch:
    """The process for ``command`` in ``ctx`` (blocking: the first call probes the sandbox)."""
    unconfined = [BASH, "-c", command]
    environment = allowed_environment(_source_environment(), ctx.extra_env)
    if ctx.outside_sandbox:
        return _Launch(unconfined, environment, sandboxed=False, outside=ctx.outside_sandbox)
    if not use_sandbox:
        return _Launch(unconfined, environment, sandboxed=False)
    status = sandbox_status()
    if not status.available:
        return _Launch(unconfined, environment, sandboxed=False, outside=no_sandbox(status))
    if status.kind != SEATBELT:
        make_fxdesk_folder(ctx.workspace)  # bubblewrap keeps only what exists read-only
    policy = make_new_grants(command_policy(ctx))  # an approved new file: bound itself
    if status.kind == SEATBELT:
        argv, env = seatbelt_launch(status.bwrap, policy, unconfined)
        return _Launch(argv, env, sandboxed=True)
    arguments = bwrap_arguments(
        policy, unconfined, ctx.workspace, disable_userns=status.disable_userns
    )
    return _Launch(
        [status.bwrap, *arguments],
        dict(policy.environment),
        sandboxed=True,
        pid_namespace=True,
        seccomp=filter_for(),  # with the network or not: a socket file needs no network
    )


def sandbox_summary(ctx: ToolContext) -> SandboxSummary:
    """What a command run in ``ctx`` may do, for the approval that asks about it (blocking:
    reads the file system, and the first call probes the sandbox)."""
    if ctx.outside_sandbox:
        return SandboxSummary(False, outside=ctx.outside_sandbox)
    status = sandbox_status()
    if not status.available:
        return SandboxSummary(False, outside=no_sandbox(status))
    policy = command_policy(ctx)

    def protected(path: Path) -> bool:
        return any(path == p or p in path.parents for p in policy.protected)

    return SandboxSummary(
        True,
        writes=tuple(str(path) for path in policy.grants if not protected(path)),
        protected=tuple(str(path) for path in policy.grants if protected(path)),
        network=policy.network,
        refused=policy.refused,
    )


class RunCommandTool(Tool):
    name = "run_command"
    description = (
        "Run a shell command (bash -c) in the workspace and return its combined output and "
        "exit code. It is stopped after timeout_s seconds (default 120, at most 3600). It runs "
        "in a sandbox: only the workspace and /tmp are writable (.git and .fxdesk are not), "
        "credential folders are hidden, the network may be off (set network: true when the "
        "command needs it, and the person is asked), and whatever the command leaves running "
        "in the background is stopped when it ends. A 'Read-only file system' or network "
        "error there means the sandbox refused it."
    )
    parameters = {  # noqa: RUF012 - a schema, read only
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command to run."},
            "timeout_s": {
                "type": "number",
                "description": "Seconds before the command is stopped (default 120, max 3600).",
            },
            "network": {
                "type": "boolean",
                "description": "true when the command needs the internet or a server on the "
                "host's localhost: where the sandbox has no network, the person is asked to "
                "give it to this command.",
            },
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    # The check reads the line as bash will (fxdesk.domain.shell); the command's own output is
    # its result, so there is nothing to preview beyond the line itself.
    facts = ToolFacts(ToolAccess.EXECUTE, command_argument="command", network_argument="network")

    default_timeout_s: float = 120.0
    max_timeout_s: float = 3600.0
    # Between SIGTERM and SIGKILL; tests shorten it.
    grace_s: float = 2.0
    # How long to keep reading after the shell exits while something it started in the background
    # still holds the output pipes open.
    drain_s: float = 1.0
    capture_limit: int = 64 * 1024 * 1024
    # Off: run unconfined even where the sandbox works (tests of the fallback use it).
    use_sandbox: bool = True

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = args.get("command")
        timeout = args.get("timeout_s", self.default_timeout_s)
        if not isinstance(command, str) or not command.strip():
            return ToolResult.error("command must be a non-empty string")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= self.max_timeout_s
        ):
            return ToolResult.error(
                f"timeout_s must be a number above 0 and at most {self.max_timeout_s:g}"
            )
        started = time.monotonic()
        try:
            launch = await asyncio.to_thread(_launch, command, ctx, self.use_sandbox)
            program, *arguments = launch.argv
            with passed_to_bwrap(launch.seccomp) as (seccomp, fds):
                proc = await asyncio.create_subprocess_exec(
                    program,
                    *seccomp,
                    *arguments,
                    cwd=ctx.workspace,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    start_new_session=True,
                    env=launch.env,
                    pass_fds=fds,
                )
        except OSError as exc:
            return ToolResult.error(f"cannot start the command: {exc.strerror or exc}")

        capture = _Capture(self.capture_limit, ctx.on_output)
        pumps = asyncio.gather(capture.pump(proc.stdout), capture.pump(proc.stderr))
        timed_out = lingering = False
        try:
            try:
                lingering = await asyncio.wait_for(self._finish(proc, pumps), timeout)
            except TimeoutError:
                timed_out = True
            if timed_out or lingering:
                await self._stop_group(proc, pumps, launch.pid_namespace)
                await self._settle(proc, pumps)
        except asyncio.CancelledError:
            await self._stop_group(proc, pumps, launch.pid_namespace)
            await self._settle(proc, pumps)
            raise
        finally:
            pumps.cancel()

        notes = _notes(launch, ctx)
        result = self._result(proc, capture, timeout, timed_out, lingering, started, notes)
        result.data["sandboxed"] = launch.sandboxed
        if launch.outside:
            result.data["outside_sandbox"] = launch.outside
        return result

    async def _finish(self, proc: asyncio.subprocess.Process, pumps: asyncio.Future[Any]) -> bool:
        """Wait for the shell and its output; True when background processes kept the pipes."""
        exited = asyncio.ensure_future(_exited(proc))
        try:
            await asyncio.wait({exited, pumps}, return_when=asyncio.FIRST_COMPLETED)
            if pumps.done():
                # The output is closed, so wait() cannot hang on the pipes (see _exited).
                await proc.wait()
                return False
            return not await self._drain(pumps)
        finally:
            exited.cancel()

    async def _drain(self, pumps: asyncio.Future[Any]) -> bool:
        """Give the readers ``drain_s`` to reach the end of the output; True when they did."""
        await asyncio.wait({pumps}, timeout=self.drain_s)
        return pumps.done()

    async def _stop_group(
        self, proc: asyncio.subprocess.Process, pumps: asyncio.Future[Any], pid_namespace: bool
    ) -> None:
        """SIGTERM the command's processes, wait ``grace_s``, SIGKILL them, and wait for the
        shell (or bubblewrap).

        The grace ends early once the shell is gone and the output pipes are closed, that is once
        nothing that holds them is left. Sandboxed, SIGKILL goes to bubblewrap's group (itself
        and the sandbox's init): the init's death ends the PID namespace and all in it.
        """
        if pid_namespace:
            if proc.returncode is None:  # once reaped, its pid may be another process's
                _terminate_inside(proc.pid)
        else:
            _signal_group(proc.pid, signal.SIGTERM)
        exited = asyncio.ensure_future(_exited(proc))
        try:
            await asyncio.wait({exited, pumps}, timeout=self.grace_s)
        finally:
            # Also when the shell went on TERM: children that ignore it may still be in the group.
            # In `finally` so that a second cancellation during the grace still kills.
            _signal_group(proc.pid, signal.SIGKILL)
        try:
            await exited
        finally:
            exited.cancel()

    async def _settle(self, proc: asyncio.subprocess.Process, pumps: asyncio.Future[Any]) -> None:
        """After the group was stopped: read the rest of the output and let the pipes close."""
        if not await self._drain(pumps):
            # A process that left the group (setsid, a daemon) still holds the pipes. Close our
            # ends rather than wait for it: that ends the readers and frees the transport, which
            # would otherwise stay open as long as that process lives. asyncio.subprocess.Process
            # has no public way to do it.
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
            await self._drain(pumps)
        if pumps.done():
            await proc.wait()  # reaped already; on 3.11 this also needs the pipes closed

    def _result(
        self,
        proc: asyncio.subprocess.Process,
        capture: _Capture,
        timeout: float,
        timed_out: bool,
        lingering: bool,
        started: float,
        notes: _Notes,
    ) -> ToolResult:
        code = proc.returncode
        if timed_out:
            footer = f"[timed out after {timeout:g} s; the command and its processes were stopped]"
        elif code is not None and code < 0:
            footer = f"[killed by signal {_signal_name(-code)}]"
        else:
            footer = f"[exit code {code}]"
        if lingering:
            footer += (
                "\n[processes left in the background still held the output open, so its process "
                "group was stopped; redirect the output of anything meant to keep running]"
            )
        if notes.outside:
            footer += f"\n[ran outside the sandbox: {notes.outside}]"
        text = capture.text(footer)
        if (
            notes.offline
            and code != 0
            and NETWORK_FAILURE.search(text, max(0, len(text) - _SCANNED))
        ):
            text += "\n" + NETWORK_HINT
        output, full = bounded(text)
        data = {
            "exit_code": code,
            "timed_out": timed_out,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "pid": proc.pid,
        }
        return ToolResult(code == 0 and not timed_out, output, full, data)


@dataclass(frozen=True)
class _Notes:
    """What the result adds to the command's output: why it ran outside the sandbox, and
    whether it ran in it without the network (a network failure then gets the hint)."""

    outside: str
    offline: bool


def _notes(launch: _Launch, ctx: ToolContext) -> _Notes:
    return _Notes(launch.outside, launch.sandboxed and not ctx.network)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The shell's exit status, as soon as it has exited and been reaped.

    Not ``proc.wait()``: on Python 3.11 that also waits until every pipe is closed, which never
    happens while a background process (or one that left the group) still holds them.
    """
    delay = 0.005
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    return proc.returncode


def _terminate_inside(bwrap: int) -> None:
    """SIGTERM every process in the sandbox bubblewrap ``bwrap`` runs, but not bubblewrap and
    its init: they do not pass the signal on but die of it, and their death would SIGKILL the
    rest at once, with no grace. (Orphans inside are the init's children, so this reaches
    processes that started a session of their own too.)"""
    try:
        inits = psutil.Process(bwrap).children()
    except psutil.Error:
        return
    for init in inits:
        try:
            members = init.children(recursive=True)
        except psutil.Error:
            continue
        for member in members:
            with contextlib.suppress(psutil.Error):  # gone already, or beyond our reach
                member.send_signal(signal.SIGTERM)


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        pass  # the whole group is gone already
    except PermissionError:
        pass  # a member changed its user (setuid); nothing more we may do


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def shell_tools() -> list[Tool]:
    return [RunCommandTool()]
