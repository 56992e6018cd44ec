"""A recording fake of ``ProcessProvider`` (``fxdesk/tools/background/provider.py``).

Used where a scenario needs what the OS cannot give on demand: a PID reused by another process,
an identity that cannot be read, a spawn, release or signal that fails, a wrapper whose cleanup
cannot be confirmed. Every call is recorded in ``calls`` (name and arguments, in order) so a test
asserts on what the runtime *did*, above all which signals it sent.

A fake process is not a process. Its "command" does not run unless ``on_release`` makes it
(scenarios 1-5 write the marker file from there); it writes its exit marker to the real log file
when a test calls ``finish``; it dies on SIGTERM unless ``ignores_sigterm``; SIGKILL always ends
it. ``reuse_pid`` puts another process instance under a PID: the old token then ``mismatched``.
"""

from __future__ import annotations

import itertools
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain.process_identity import ProcessToken, TokenMatch
from fxdesk.tools.background.escaped import Escaped
from fxdesk.tools.background.provider import (
    CleanupStatus,
    LaunchFailed,
    LaunchSpec,
    ProcessIdentityIndeterminate,
    ProcessIdentityUnavailable,
)

BOOT = "00112233445566778899aabbccddeeff"
TOKEN = f"linux:{BOOT}:12345"  # the spec's test token


def token_for(pid: int, generation: int = 0) -> ProcessToken:
    return ProcessToken(f"linux:{BOOT}:{pid * 1000 + generation}")


@dataclass
class FakeProcess:
    """One fake wrapper: its PID, its current identity and what happened to it."""

    pid: int
    spec: LaunchSpec | None
    token: ProcessToken
    alive: bool = True
    released: str | None = None
    closed: bool = False
    reaped: bool = False
    exit_status: int | None = None
    ignores_sigterm: bool = False
    orphaned: bool = False  # its parent fxdesk is gone: init reaps it when it ends
    # The handle's process (bubblewrap, in the sandbox) outlives the task's identity for a
    # moment: the wrapper inside is gone while bubblewrap still tears the sandbox down.
    handle_lingers: bool = False
    signals: list[int] = field(default_factory=list)

    @property
    def log_path(self) -> Path:
        assert self.spec is not None
        return self.spec.log_path


class FakeOwned:
    def __init__(self, provider: FakeProvider, process: FakeProcess) -> None:
        self._provider = provider
        self.process = process

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self, timeout_s: float | None) -> int | None:
        self._provider._record("wait", self.pid, timeout_s)
        if self.process.alive or self.process.handle_lingers:
            return None
        self.process.reaped = True
        return self.process.exit_status if self.process.exit_status is not None else -15

    def forget(self) -> None:
        self._provider._record("forget", self.pid)


class FakePrepared:
    def __init__(self, provider: FakeProvider, process: FakeProcess) -> None:
        self._provider = provider
        self.process = process

    @property
    def pid(self) -> int:
        return self.process.pid

    def release(self, command: str) -> FakeOwned:
        provider = self._provider
        provider._record("release", self.pid, command)
        if provider.release_error is not None:
            raise provider.release_error
        self.process.released = command
        if provider.on_release is not None:
            provider.on_release(self.process, command)
        return FakeOwned(provider, self.process)

    def close_and_wait(self, timeout_s: float) -> CleanupStatus:
        provider = self._provider
        provider._record("close_and_wait", self.pid, timeout_s)
        self.process.closed = True
        if provider.cleanup_confirms:
            self.process.alive = False
            self.process.exit_status = 125
            return CleanupStatus.CONFIRMED
        return CleanupStatus.TIMED_OUT

    def wait_for_exit(self, timeout_s: float) -> bool:
        self._provider._record("wait_for_exit", self.pid, timeout_s)
        return self._provider.cleanup_confirms and not self.process.alive

    def detach_reaper(self) -> bool:
        self._provider._record("detach_reaper", self.pid)
        return True


class FakeProvider:
    """Spawns fake processes; identities and failures are the test's to set.

    Attributes:
        calls: Every call, in order: ``(name, *arguments)``.
        capture_failures: How many captures fail with ``ProcessIdentityUnavailable`` first.
        capture_always_fails: Every capture fails so.
        spawn_error, release_error, signal_error: Raised by those calls when set.
        cleanup_confirms: ``close_and_wait`` and ``wait_for_exit`` confirm the wrapper exited
            (else they time out).
        identity: Forced answers of ``match_token`` by PID (e.g. ``UNAVAILABLE``).
        on_release: Called with the process and the command when one is released.
    """

    def __init__(self, first_pid: int = 40000) -> None:
        self.calls: list[tuple[object, ...]] = []
        self.processes: dict[int, FakeProcess] = {}
        self._pids = itertools.count(first_pid)
        self._lock = threading.Lock()
        self.capture_failures = 0
        self.capture_always_fails = False
        self.spawn_error: Exception | None = None
        self.release_error: Exception | None = None
        self.signal_error: Exception | None = None
        self.cleanup_confirms = True
        self.identity: dict[int, TokenMatch] = {}
        self.on_release: Callable[[FakeProcess, str], None] | None = None
        self.ignores_sigterm = False
        self.escaped: dict[str, list[Escaped]] = {}  # by log path: what left the group

    def _record(self, *call: object) -> None:
        with self._lock:
            self.calls.append(call)

    def named(self, name: str) -> list[tuple[object, ...]]:
        """The recorded calls of one kind."""
        with self._lock:
            return [call for call in self.calls if call[0] == name]

    @property
    def signals(self) -> list[tuple[int, int]]:
        """(pid, signal) of every signal sent."""
        return [(int(str(c[1])), int(str(c[3]))) for c in self.named("signal")]

    # --- what tests do to the processes -------------------------------------------------------

    def adopt(self, pid: int, token: ProcessToken | None = None) -> FakeProcess:
        """A process this fake did not spawn (a restored record's)."""
        process = FakeProcess(pid, None, token or token_for(pid))
        self.processes[pid] = process
        return process

    def finish(self, pid: int, status: int) -> None:
        """The command ends with ``status``: the wrapper writes its exit marker and exits."""
        process = self.processes[pid]
        with process.log_path.open("ab") as log:
            log.write(f"\n__FX_EXIT_CODE__={status}\n".encode())
        process.alive = False
        process.exit_status = status

    def vanish(self, pid: int) -> None:
        """The process is gone without a marker (killed from outside)."""
        self.processes[pid].alive = False

    def orphan_all(self) -> None:
        """The fxdesk that started these processes is gone (killed): init is their parent
        now and reaps each one as it ends, so a dead one is ``missing`` at once."""
        for process in self.processes.values():
            process.orphaned = True

    def reuse_pid(self, pid: int) -> None:
        """The process ended and another one now has its PID (another start time)."""
        old = self.processes[pid]
        old.alive = False
        generation = int(old.token.text.rsplit(":", 1)[1]) % 1000 + 1
        self.processes[pid] = FakeProcess(pid, None, token_for(pid, generation))

    # --- the protocol ---------------------------------------------------------------------------

    def spawn_prepared(self, spec: LaunchSpec) -> FakePrepared:
        pid = next(self._pids)
        self._record("spawn", pid, spec)
        if self.spawn_error is not None:
            raise self.spawn_error
        process = FakeProcess(pid, spec, token_for(pid), ignores_sigterm=self.ignores_sigterm)
        self.processes[pid] = process
        return FakePrepared(self, process)

    def capture_token(self, pid: int) -> ProcessToken:
        self._record("capture", pid)
        if self.capture_always_fails:
            raise ProcessIdentityUnavailable("cannot read /proc (fake)")
        if self.capture_failures > 0:
            self.capture_failures -= 1
            raise ProcessIdentityUnavailable("cannot read /proc (fake)")
        process = self.processes.get(pid)
        if process is None or not process.alive:
            raise ProcessLookupError(pid)
        return process.token

    def _match(self, pid: int, token: ProcessToken) -> TokenMatch:
        forced = self.identity.get(pid)
        if forced is not None:
            return forced
        process = self.processes.get(pid)
        if process is None or (
            not process.alive
            and (
                process.reaped
                or process.orphaned
                or process.handle_lingers  # the wrapper is the sandbox init's to reap
                or process.spec is None
            )
        ):
            return TokenMatch.MISSING
        if not process.alive and not process.reaped:
            # A zombie keeps its /proc entry until reaped: still "matched", as the real one.
            return TokenMatch.MATCHED if process.token == token else TokenMatch.MISMATCHED
        return TokenMatch.MATCHED if process.token == token else TokenMatch.MISMATCHED

    def match_token(self, pid: int, token: ProcessToken) -> TokenMatch:
        answer = self._match(pid, token)
        self._record("match", pid, token.text, answer)
        return answer

    def left_running(self, log_path: str) -> list[Escaped]:
        self._record("left_running", log_path)
        return list(self.escaped.get(str(log_path), []))

    def end_sandbox(self, log_path: str) -> list[int]:
        self._record("end_sandbox", log_path)
        return []

    def signal_group(self, pid: int, token: ProcessToken, signal_number: int) -> None:
        self._record("signal", pid, token.text, signal_number)
        if self.signal_error is not None:
            raise self.signal_error
        if self._match(pid, token) is not TokenMatch.MATCHED:
            raise ProcessIdentityIndeterminate(f"pid {pid} no longer matches")
        process = self.processes[pid]
        process.signals.append(signal_number)
        if signal_number == signal.SIGKILL or not process.ignores_sigterm:
            process.alive = False


__all__ = ["TOKEN", "FakeOwned", "FakePrepared", "FakeProcess", "FakeProvider", "LaunchFailed"]
