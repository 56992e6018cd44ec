"""The process backend of background tasks: the contract the runtime is written against.

Four operations (spec §2.1, §2.20, §3.3, §4): spawn a *held-back* wrapper, capture a PID's
identity token, compare a PID with a token, and signal a process group guarded by a token. The
real implementation (``launch.py``, ``identity.py``) runs ``bash`` wrappers, sandboxed like
``run_command``; tests use a recording fake where the spec's scenarios need a process identity
the OS cannot produce (PID reuse), and the real one everywhere else.

Every method is synchronous. Those that may wait (``spawn_prepared``, ``close_and_wait``,
``wait_for_exit``, ``OwnedProcess.wait``) are called by the runtime through
``asyncio.to_thread``; the others only read ``/proc`` and return at once.

The PID is always the host PID of the ``bash`` wrapper (inside bubblewrap: the wrapper among
bubblewrap's descendants, not bubblewrap itself). The wrapper leads its own process group, so
the group's id is that PID and a signal to the group reaches what the command started (unless
it left the group: a double fork).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fxdesk.domain.process_identity import ProcessToken, TokenMatch

if TYPE_CHECKING:
    from fxdesk.tools.background.escaped import Escaped
    from fxdesk.tools.sandbox import SandboxPolicy

# What the wrapper and the release agree on (spec §3.3).
READY_BYTE = b"R"
RELEASE_BYTE = b"\x06"
NOT_RELEASED_STATUS = 125  # the wrapper's exit status when closed without the release byte


class CleanupStatus(StrEnum):
    """Whether a held-back wrapper that was not released is known to have exited."""

    CONFIRMED = "confirmed"
    TIMED_OUT = "timed_out"


class ProcessIdentityUnavailable(Exception):
    """The PID's identity could not be read just now (transient: capture may try again)."""


class ProcessIdentityIndeterminate(Exception):
    """Right before a signal, the PID no longer certainly matched its token: nothing was sent."""


class LaunchFailed(Exception):
    """The wrapper could not be spawned or released; ``str()`` says why, for the person."""


@dataclass(frozen=True)
class LaunchSpec:
    """How to start one wrapper.

    Attributes:
        cwd: Where the command starts (inside the workspace).
        log_path: The log file, already created (0600): the wrapper's stdout and stderr go
            there, straight from the process; nothing passes through fxdesk.
        sandbox: The sandbox policy (the one ``run_command`` uses for this session, with the
            network on for a server), or None to run unsandboxed (unrestricted mode, or no
            sandbox on this machine and the person approved).
        environment: The command's whole environment (ignored when ``sandbox`` is given: the
            policy's environment is used).
        survives_fxdesk: A durable task keeps running when fxdesk exits or is killed; a
            process-local one dies with fxdesk (also when fxdesk is SIGKILLed).
    """

    cwd: Path
    log_path: Path
    sandbox: SandboxPolicy | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    survives_fxdesk: bool = False


class OwnedProcess(Protocol):
    """A released wrapper this fxdesk started (so it can reap it)."""

    @property
    def pid(self) -> int: ...

    def wait(self, timeout_s: float | None) -> int | None:
        """Reap it: its exit status, or None if it has not exited within ``timeout_s``."""
        ...

    def forget(self) -> None:
        """Drop the handle without touching the process (it keeps running)."""
        ...


class PreparedProcess(Protocol):
    """A spawned wrapper that said it is ready and waits for the command (spec §2.20)."""

    @property
    def pid(self) -> int: ...

    def release(self, command: str) -> OwnedProcess:
        """Send the release byte and the command (consumes the handle). ``LaunchFailed``."""
        ...

    def close_and_wait(self, timeout_s: float) -> CleanupStatus:
        """Close the control pipe without releasing: the wrapper exits with status 125."""
        ...

    def wait_for_exit(self, timeout_s: float) -> bool:
        """True once the wrapper has exited (and was reaped) within ``timeout_s``."""
        ...

    def detach_reaper(self) -> bool:
        """Leave reaping it to a background reaper; False if that cannot be arranged."""
        ...


class ProcessProvider(Protocol):
    """Spawns, identifies and signals background wrappers."""

    def spawn_prepared(self, spec: LaunchSpec) -> PreparedProcess:
        """Start a held-back wrapper and wait for its ready byte. ``LaunchFailed``."""
        ...

    def capture_token(self, pid: int) -> ProcessToken:
        """The PID's identity now. ``ProcessIdentityUnavailable`` when it cannot be read
        (the caller retries 3 times, 20 ms apart); ``ProcessLookupError`` when no such PID."""
        ...

    def match_token(self, pid: int, token: ProcessToken) -> TokenMatch:
        """How the PID compares with ``token`` now; never raises."""
        ...

    def left_running(self, log_path: str) -> list[Escaped]:
        """The processes of the task logging to ``log_path`` that left its process group
        (``setsid``, a double fork) and still run: a group signal does not reach them
        (``escaped``). Read only; blocking."""
        ...

    def end_sandbox(self, log_path: str) -> list[int]:
        """End the PID namespace that is this task's own sandbox, if one is left (its init
        carries the task's tag): what left the process group ends with it. The PIDs signalled
        (``escaped.end_sandbox``); blocking."""
        ...

    def signal_group(self, pid: int, token: ProcessToken, signal_number: int) -> None:
        """Send ``signal_number`` to the process group led by ``pid``, after checking again
        that ``pid`` still matches ``token``: ``ProcessIdentityIndeterminate`` if not (nothing
        sent). ``PermissionError`` passes through unchanged."""
        ...
