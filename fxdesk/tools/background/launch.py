"""The real process backend of background tasks: held-back ``bash`` wrappers (spec §2.20, §3.3).

``WrapperProvider.spawn_prepared`` starts the wrapper (``launch_args``) with its stdout on the
log file (opened for appending: the output goes from the process to the file, never through
fxdesk), its stdin a pipe that will carry the command, and its stderr a pipe that carries the
ready byte. It waits for that byte, so when it returns the wrapper is blocked in ``read``: the
caller captures its identity, saves what it must, then ``release``-s the command.

Unsandboxed, the wrapper is fxdesk's child, in a session of its own. Sandboxed (``spec.sandbox``:
the policy ``run_command`` uses, from ``fxdesk.tools.sandbox``), bubblewrap runs it in namespaces
of its own: fxdesk's child is bubblewrap, whose child is the PID namespace's init, whose child
is the wrapper; the PID returned is the wrapper's *host* PID, found that way. When the wrapper
exits, bubblewrap exits. For a process-local task (``--die-with-parent``) the namespace's init
dies with it and the kernel kills whatever is left in the namespace, a process that left the
task's group included. For a durable task the init stays as long as anything in the namespace
runs (tested: a ``setsid`` process outlives the wrapper there too); such a process is found
and reported by the stop (``escaped``). Every wrapper's environment carries
``FXDESK_BACKGROUND_TASK`` (``escaped.TASK_VARIABLE``) for that. A server gets the host's
network through the policy (``network=True``). With the network or without, the same seccomp
filter as ``run_command`` (no Unix sockets: a socket file of the host would be reachable
without the network too).

Lifetimes (``LaunchSpec.survives_fxdesk``):

- process-local: the lifeline guard (``launch_args``) kills the task's process group when
  fxdesk ends, however it ends; in the sandbox bubblewrap's ``--die-with-parent`` also ends
  the namespace. PR_SET_PDEATHSIG fires when the *thread* that started the child ends, so every
  spawn runs on this provider's own thread, which lives as long as the provider.
- durable: no guard and no ``--die-with-parent``; nothing of the wrapper's is tied to fxdesk
  after the release (stdin is ``/dev/null``, stderr goes to the log), so it runs on when fxdesk
  is killed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO

import psutil  # type: ignore[import-untyped]

from fxdesk.domain.process_identity import ProcessToken, TokenMatch
from fxdesk.tools.background import identity
from fxdesk.tools.background.escaped import (
    TASK_VARIABLE,
    Escaped,
    end_sandbox,
    left_running,
    task_tag,
)
from fxdesk.tools.background.launch_args import (
    release_message,
    sandboxed_wrapper_command,
    wrapper_command,
    wrapper_environment,
)
from fxdesk.tools.background.provider import (
    READY_BYTE,
    CleanupStatus,
    LaunchFailed,
    LaunchSpec,
    OwnedProcess,
    PreparedProcess,
)
from fxdesk.tools.sandbox import bwrap_arguments, make_new_grants
from fxdesk.tools.sandbox_probe import SEATBELT, sandbox_status
from fxdesk.tools.sandbox_seccomp import filter_for, passed_to_bwrap

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 10.0
_ERROR_TEXT_MAX = 4096  # what bubblewrap said when it failed, for the message


def exit_status(returncode: int) -> int:
    """A status as a shell reports it: killed by signal N is 128 + N (bubblewrap's way too)."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True)
class _Start:
    argv: list[str]
    env: dict[str, str]
    seccomp: bytes | None
    sandboxed: bool


class WrapperProvider:
    """The ``ProcessProvider`` of fxdesk: ``bash`` wrappers, sandboxed as ``run_command`` is.

    Call ``close()`` when fxdesk shuts down: it ends every process-local task this provider
    started that is still running (closing the lifeline), as fxdesk's death would.
    """

    def __init__(self, *, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self.ready_timeout_s = ready_timeout_s
        self._lifeline_read, self._lifeline_write = os.pipe()  # both close-on-exec
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fxdesk-spawn")
        self._closed = False

    def close(self) -> None:
        """Close the lifeline (process-local tasks end) and the spawning thread."""
        if self._closed:
            return
        self._closed = True
        os.close(self._lifeline_write)
        os.close(self._lifeline_read)
        self._spawner.shutdown(wait=True)

    # -- ProcessProvider -------------------------------------------------------------------

    def spawn_prepared(self, spec: LaunchSpec) -> PreparedProcess:
        if self._closed:
            raise LaunchFailed("background tasks cannot start: fxdesk is shutting down")
        lifeline = None if spec.survives_fxdesk else self._lifeline_read
        start = _start_for(spec, lifeline)
        try:
            log_fd = os.open(spec.log_path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as exc:
            raise LaunchFailed(f"cannot open the task's log: {exc.strerror}") from exc
        try:
            with passed_to_bwrap(start.seccomp) as (seccomp_args, seccomp_fds):
                program, *arguments = start.argv
                fds = (*seccomp_fds, *(() if lifeline is None else (lifeline,)))
                popen = self._spawner.submit(
                    subprocess.Popen,
                    [program, *seccomp_args, *arguments],
                    stdin=subprocess.PIPE,
                    stdout=log_fd,
                    stderr=subprocess.PIPE,
                    cwd=spec.cwd,
                    env=start.env,
                    start_new_session=True,
                    pass_fds=fds,
                ).result()
        except OSError as exc:
            what = "the sandbox" if start.sandboxed else "bash"
            raise LaunchFailed(f"cannot start {what}: {exc.strerror or exc}") from exc
        finally:
            os.close(log_fd)
        try:
            _wait_ready(popen, self.ready_timeout_s, start.sandboxed)
            pid = _wrapper_pid(popen) if start.sandboxed else popen.pid
        except LaunchFailed:
            _abandon(popen)
            raise
        return _Prepared(popen, pid)

    def capture_token(self, pid: int) -> ProcessToken:
        return identity.capture_token(pid)

    def match_token(self, pid: int, token: ProcessToken) -> TokenMatch:
        return identity.match_token(pid, token)

    def signal_group(self, pid: int, token: ProcessToken, signal_number: int) -> None:
        identity.signal_group(pid, token, signal_number)

    def left_running(self, log_path: str) -> list[Escaped]:
        return left_running(task_tag(log_path))

    def end_sandbox(self, log_path: str) -> list[int]:
        return end_sandbox(task_tag(log_path))


def _start_for(spec: LaunchSpec, lifeline: int | None) -> _Start:
    """The command line and environment of the wrapper for ``spec``."""
    tag = {TASK_VARIABLE: task_tag(spec.log_path)}  # ``escaped``: found again after a setsid
    if spec.sandbox is None:
        environment = wrapper_environment(spec.environment) | tag
        return _Start(wrapper_command(lifeline), environment, None, False)
    status = sandbox_status()
    if not status.available:
        raise LaunchFailed(f"the sandbox does not work on this machine: {status.reason}")
    if status.kind == SEATBELT:
        raise LaunchFailed("background tasks cannot run in the macOS sandbox yet")
    policy = make_new_grants(spec.sandbox)
    try:
        command = sandboxed_wrapper_command(lifeline)
    except FileNotFoundError as exc:
        raise LaunchFailed(f"cannot start a sandboxed task: {exc}") from exc
    arguments = bwrap_arguments(
        policy,
        command,
        spec.cwd,
        disable_userns=status.disable_userns,
        die_with_parent=not spec.survives_fxdesk,
    )
    return _Start(
        [status.bwrap, *arguments],
        wrapper_environment(dict(policy.environment)) | tag,
        filter_for(),  # as run_command's: with the network or not
        True,
    )


def _wait_ready(popen: subprocess.Popen[bytes], timeout_s: float, sandboxed: bool) -> None:
    """Return once the wrapper wrote the ready byte; ``LaunchFailed`` saying why if it did not.

    The ready byte is the first thing on stderr. Anything else there first is an error from
    bubblewrap (or bash), read to its end (or the deadline) for the message.
    """
    assert popen.stderr is not None
    fd = popen.stderr.fileno()
    deadline = time.monotonic() + timeout_s
    said = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, _ERROR_TEXT_MAX)
        if not chunk:
            break
        if not said and chunk.startswith(READY_BYTE):
            return
        said += chunk
        if len(said) >= _ERROR_TEXT_MAX:
            break
    what = "the sandbox" if sandboxed else "the task's shell"
    text = said.decode("utf-8", "replace").strip()
    if text:
        raise LaunchFailed(f"{what} could not start: {text[:500]}")
    if popen.poll() is not None:
        raise LaunchFailed(
            f"{what} exited (status {exit_status(popen.returncode)}) before it was ready"
        )
    raise LaunchFailed(f"{what} was not ready within {timeout_s:g} s")


def _wrapper_pid(popen: subprocess.Popen[bytes]) -> int:
    """The host PID of the wrapper bubblewrap ``popen`` runs: bubblewrap's only child is the
    PID namespace's init, whose only child is the wrapper (blocked before the release, so it
    has started nothing yet). It must lead its own process group (``setsid`` made it)."""
    try:
        (init,) = psutil.Process(popen.pid).children()
        (wrapper,) = init.children()
    except (ValueError, psutil.Error) as exc:
        raise LaunchFailed("cannot find the task's shell in the sandbox") from exc
    try:
        leads = os.getpgid(wrapper.pid) == wrapper.pid
    except OSError:
        leads = False
    if not leads:
        raise LaunchFailed("the task's shell does not lead a process group of its own")
    return wrapper.pid


def _abandon(popen: subprocess.Popen[bytes]) -> None:
    """End a wrapper that never became ready: close its pipes, kill it (fxdesk's own child,
    not reaped yet, so its PID is still its own) and reap it."""
    _close_pipes(popen)
    with contextlib.suppress(ProcessLookupError):
        popen.kill()
    popen.wait()


def _close_pipes(popen: subprocess.Popen[bytes]) -> None:
    for pipe in (popen.stdin, popen.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _reap_in_background(popen: subprocess.Popen[bytes], pid: int) -> bool:
    """Leave waiting for ``popen`` to a daemon thread; False if no thread could be made."""

    def reap() -> None:
        with contextlib.suppress(ChildProcessError):
            popen.wait()

    try:
        threading.Thread(target=reap, name=f"fxdesk-reap-{pid}", daemon=True).start()
    except RuntimeError:
        return False
    return True


class _Prepared:
    """A wrapper blocked before its command (``PreparedProcess``)."""

    def __init__(self, popen: subprocess.Popen[bytes], pid: int) -> None:
        self._popen = popen
        self._pid = pid
        self._released = False

    @property
    def pid(self) -> int:
        return self._pid

    def release(self, command: str) -> OwnedProcess:
        if self._released:
            raise LaunchFailed("this task's command was handed over already")
        try:
            message = release_message(command)
        except ValueError as exc:
            raise LaunchFailed(str(exc)) from exc
        stdin: IO[bytes] | None = self._popen.stdin
        assert stdin is not None
        try:
            stdin.write(message)
            stdin.close()
        except OSError as exc:  # BrokenPipeError: it exited (or was killed) before
            raise LaunchFailed(
                "the command could not be handed to its shell: it is no longer waiting"
            ) from exc
        self._released = True
        _close_pipes(self._popen)
        return _Owned(self._popen, self._pid)

    def close_and_wait(self, timeout_s: float) -> CleanupStatus:
        _close_pipes(self._popen)
        return CleanupStatus.CONFIRMED if self.wait_for_exit(timeout_s) else CleanupStatus.TIMED_OUT

    def wait_for_exit(self, timeout_s: float) -> bool:
        try:
            self._popen.wait(max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            return False
        return True

    def detach_reaper(self) -> bool:
        return _reap_in_background(self._popen, self._pid)


class _Owned:
    """A released wrapper (``OwnedProcess``); ``wait`` gives its status the shell's way."""

    def __init__(self, popen: subprocess.Popen[bytes], pid: int) -> None:
        self._popen = popen
        self._pid = pid

    @property
    def pid(self) -> int:
        return self._pid

    def wait(self, timeout_s: float | None) -> int | None:
        try:
            code = self._popen.wait(None if timeout_s is None else max(0.0, timeout_s))
        except subprocess.TimeoutExpired:
            return None
        return exit_status(code)

    def forget(self) -> None:
        """Keep the process running; a daemon thread reaps it when it exits (no zombie)."""
        if self._popen.returncode is None and not _reap_in_background(self._popen, self._pid):
            log.warning("no thread to reap background pid=%d", self._pid)
