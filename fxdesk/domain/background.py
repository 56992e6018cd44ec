"""Background tasks as values: states, policies, the task views show, stop outcomes (spec §2, §10).

A *background task* is a long-running command (a dev server, a watcher) the agent or the person
started; it has a number ``#N`` within its session, a stable id (32 hex, unique within its
session), a log file and, once captured, a process identity token (``process_identity``). Nothing
here does I/O: the runtime (``engine/background``) decides with these functions and keeps the
state; the store persists ``BackgroundRecord``.

Deliberate departures from the reference (spec Appendix A), each also said where it applies:

- a durable task is ``pending`` until its first record write (A 7), never ``confirmed`` before;
- every state change of a task this process may write is persisted, ``stale`` included (A 1);
- process-local tasks are never written (A 10): they cannot be re-attached anyway;
- "inside the workspace" compares resolved paths (A 12), done by the caller with ``realpath``.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from enum import StrEnum

from fxdesk.domain.process_identity import TokenMatch

STABLE_ID_ATTEMPTS = 16  # spec §2.15


class TaskState(StrEnum):
    """Where a background task is (spec §2.10); the labels are the names."""

    RUNNING = "running"
    EXITED = "exited"  # the exit marker said 0
    FAILED = "failed"  # the exit marker said another code
    DEAD = "dead"  # no marker, and the process is gone
    STOPPED = "stopped"  # a stop was confirmed
    STALE = "stale"  # the log vanished, no token to check, or found gone when stopped/restored

    @property
    def running(self) -> bool:
        return self is TaskState.RUNNING


class LaunchPolicy(StrEnum):
    """How long a task lives and when its record is written (spec §2.2)."""

    PROCESS_LOCAL = "process_local"  # dies with this fxdesk; no record; log in the temp folder
    DURABLE = "durable"  # survives fxdesk; record written right after release
    SAVED_HEADLESS = "saved_headless"  # survives; not released until its record is saved

    @property
    def durable(self) -> bool:
        return self is not LaunchPolicy.PROCESS_LOCAL


class RecordAuthority(StrEnum):
    """What this process may do with a task's record (spec §2.12)."""

    NONE = "none"  # process-local: nothing to write
    READ_ONLY = "read_only"  # another live fxdesk runs it: list, read the log, stop; never write
    WRITABLE = "writable"


class Persistence(StrEnum):
    """Whether the record matches memory (spec §2.11, with ``pending``: Appendix A 7)."""

    NOT_APPLICABLE = "not_applicable"
    PENDING = "pending"  # durable, first write not done yet
    CONFIRMED = "confirmed"
    INITIAL_RECORD_DEGRADED = "initial_record_degraded"  # never written: will not survive
    RECORD_UPDATE_DEGRADED = "record_update_degraded"  # a later write failed; retried

    @property
    def restorable(self) -> bool:
        """A record exists that a restart can re-attach."""
        return self in (Persistence.CONFIRMED, Persistence.RECORD_UPDATE_DEGRADED)


class Origin(StrEnum):
    AGENT = "agent"
    PERSON = "person"


class LaunchOutcome(StrEnum):
    """How a launch ended (spec §2.6)."""

    PROCESS_LOCAL_STARTED = "process_local_started"
    DURABLE_STARTED = "durable_started"
    DURABLE_STARTED_DEGRADED = "durable_started_degraded"


DEGRADED_WARNING = (
    "not saved: it will not be restored after a restart, and it will be stopped when fxdesk quits"
)


@dataclass(frozen=True)
class BackgroundTask:
    """One background task as the window, the CLI and the agent's tools see it (a snapshot).

    Attributes:
        number: ``#N`` within its session.
        stable_id: 32 lower-case hex, unique within its session; also a reference to it.
        session_id: The session that started it.
        workspace_id: The session's workspace.
        workspace: The workspace folder.
        command: The command text as given.
        cwd: Where it runs (inside the workspace).
        state: See ``TaskState``.
        exit_code: The code from the exit marker (``exited``/``failed``), else None.
        pid: The host PID of its wrapper (leader of its process group).
        has_token: Whether its identity was captured (no token: it can never be signalled).
        url: The server URL found in its log, once found.
        expect_url: A URL is still awaited.
        url_note: Why no URL will come ("no URL detected in 15 s"), else ''.
        started_at_ms: When it was registered (for a restored one: from its record).
        origin: Who started it.
        policy: See ``LaunchPolicy``.
        read_only: Another running fxdesk owns its record: this one lists it, reads its log
            and may stop it, but never writes its record.
        log_path: The log file.
        persistence: See ``Persistence``.
        persistence_warning: What the person should know when it was not saved, else ''.
    """

    number: int
    stable_id: str
    session_id: str
    workspace_id: int
    workspace: str
    command: str
    cwd: str
    state: TaskState
    exit_code: int | None
    pid: int
    has_token: bool
    url: str | None
    expect_url: bool
    url_note: str
    started_at_ms: int
    origin: Origin
    policy: LaunchPolicy
    read_only: bool
    log_path: str
    persistence: Persistence
    persistence_warning: str = ""

    @property
    def ref(self) -> str:
        return f"#{self.number}"

    @property
    def stoppable(self) -> bool:
        """Running, with an identity that can be checked before any signal."""
        return self.state.running and self.has_token


@dataclass(frozen=True)
class BackgroundRecord:
    """A durable task's row in the store (spec §2.19; keyed by session and number, unique by
    session and stable id). ``number`` is the number it got at launch; a restored task may
    show another one when that was taken, its record keeps this one."""

    session_id: str
    number: int
    stable_id: str
    workspace_id: int
    policy: LaunchPolicy
    origin: Origin
    pid: int
    token: str | None
    command: str
    cwd: str
    log_path: str
    expect_url: bool
    url: str | None
    exit_code: int | None
    state: TaskState
    started_at_ms: int
    updated_at_ms: int
    owner_instance: str | None = None
    diagnostic: str | None = None


# --- stopping ----------------------------------------------------------------------------------


class StopResult(StrEnum):
    """How a stop ended; each has its own sentence (spec §10)."""

    STOPPED = "stopped"
    KILLED = "killed"  # SIGTERM was ignored for the grace period; SIGKILL ended it
    ALREADY_GONE = "already_gone"
    INDETERMINATE = "indeterminate"
    NO_TOKEN = "no_token"
    SIGNAL_ERROR = "signal_error"
    NOT_CONFIRMED = "not_confirmed"
    NOT_RUNNING = "not_running"

    @property
    def ended(self) -> bool:
        """The process is known to be gone afterwards."""
        return self in (StopResult.STOPPED, StopResult.KILLED, StopResult.ALREADY_GONE)


_STOP_MESSAGES = {
    StopResult.STOPPED: "stopped",
    StopResult.KILLED: "stopped by force: it ignored SIGTERM, so its process group was killed",
    StopResult.ALREADY_GONE: "was no longer running (marked stale)",
    StopResult.INDETERMINATE: "could not verify the process; nothing was signalled",
    StopResult.NO_TOKEN: "cannot verify process identity — refusing to stop",
    StopResult.SIGNAL_ERROR: "could not be signalled",
    StopResult.NOT_CONFIRMED: "stop sent but exit not confirmed",
    StopResult.NOT_RUNNING: "is not running",
}


@dataclass(frozen=True)
class StopOutcome:
    """What a stop did to one task."""

    number: int
    session_id: str
    result: StopResult
    detail: str = ""  # the signal error ("permission denied"), when there was one
    # (pid, name) of processes it started that left its process group (setsid, a double
    # fork) and still run after the stop: a group signal does not reach them
    left_running: tuple[tuple[int, str], ...] = ()

    @property
    def message(self) -> str:
        """``Command #N <what happened>``, in the person's words; what still runs, if any."""
        said = _STOP_MESSAGES[self.result]
        if self.detail:
            said = f"{said}: {self.detail}"
        text = f"Command #{self.number} {said}."
        if self.left_running:
            names = ", ".join(
                f"PID {pid} ({name})" if name else f"PID {pid}" for pid, name in self.left_running
            )
            pids = " ".join(str(pid) for pid, _ in self.left_running)
            text += (
                f" Still running after it, outside its process group: {names}. fxdesk signals"
                " only the task's process group and did not stop these; if they should not"
                f" outlive the task, stop them yourself (kill {pids})."
            )
        return text


@dataclass(frozen=True)
class ForgetResult:
    """What stop-and-forget of a workspace did (spec §10: "S signalled, R removed")."""

    signalled: int
    removed: int
    kept: int

    @property
    def message(self) -> str:
        kept = f", {self.kept} kept (identity could not be verified)" if self.kept else ""
        return f"{self.signalled} signalled, {self.removed} removed{kept}"


# --- decisions ---------------------------------------------------------------------------------


def state_from_log(exit_code: int | None) -> TaskState | None:
    """The state the exit marker decides: exited or failed; None without a marker."""
    if exit_code is None:
        return None
    return TaskState.EXITED if exit_code == 0 else TaskState.FAILED


def refreshed_state(
    *, log_missing: bool, exit_code: int | None, has_token: bool, match: TokenMatch | None
) -> TaskState | None:
    """What a refresh makes of a running task (spec §3.7), or None: still running.

    The marker is read before the identity: a task with an invalid PID or no token whose log
    says 0 has ``exited``. ``match`` is the identity check, asked only when there is a token
    and no marker (None otherwise).
    """
    if log_missing:
        return TaskState.STALE
    by_log = state_from_log(exit_code)
    if by_log is not None:
        return by_log
    if not has_token:
        return TaskState.STALE
    if match is not None and match.gone:
        return TaskState.DEAD
    return None


def completion_notice(number: int, state: TaskState, exit_code: int | None) -> str:
    """The sentence a completion is announced with (spec §8 user notices)."""
    if state is TaskState.EXITED:
        return f"Command #{number} completed successfully."
    if state is TaskState.FAILED:
        return (
            f"Command #{number} failed (exit {exit_code})."
            if exit_code is not None
            else f"Command #{number} failed."
        )
    if state is TaskState.STOPPED:
        return f"Command #{number} stopped."
    if state is TaskState.DEAD:
        return f"Command #{number} is no longer running."
    if state is TaskState.STALE:
        return f"Command #{number} is stale."
    return f"Command #{number} is running."


def same_command(a: str, b: str) -> bool:
    """The reuse rule (spec §3.14): equal after trimming spaces, tabs, CR and LF at both ends."""
    return a.strip(" \t\r\n") == b.strip(" \t\r\n")


def is_inside(root: str, path: str) -> bool:
    """``path`` is ``root`` or below it (both already resolved: Appendix A 12)."""
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root if root == "/" else root + "/")


def new_stable_id() -> str:
    """16 random bytes as 32 lower-case hex (spec §2.15)."""
    return secrets.token_hex(16)


_REF = re.compile(r"#?([1-9][0-9]{0,18})")
_STABLE = re.compile(r"[0-9a-f]{32}")


def parse_ref(ref: str) -> int | str:
    """A task reference: ``#N`` (or ``N``) gives the number, 32 hex the stable id.
    ``ValueError`` for anything else."""
    text = ref.strip()
    number = _REF.fullmatch(text)
    if number is not None:
        return int(number.group(1))
    if _STABLE.fullmatch(text.lower()):
        return text.lower()
    raise ValueError(f"not a background task reference: {ref!r} (use #N or its id)")


# Explicit ports in a command line: --port 3000, --port=3000, -p 3000, PORT=3000, a bare
# ``http.server 8000``. Only what the command says; a server that picks its port from a config
# file is found by its failure instead.
_PORT_PATTERNS = (
    re.compile(r"(?:^|\s)--port(?:=|\s+)([0-9]{2,5})\b"),
    re.compile(r"(?:^|\s)-p\s*([0-9]{2,5})\b"),
    re.compile(r"(?:^|\s)PORT=([0-9]{2,5})\b"),
    re.compile(r"http\.server\s+([0-9]{2,5})\b"),
    re.compile(r"(?:^|\s)(?:--bind|-b|--listen|--host)(?:=|\s+)\S*:([0-9]{2,5})\b"),
)


def explicit_port(command: str) -> int | None:
    """The TCP port ``command`` names for its server, if it names one."""
    for pattern in _PORT_PATTERNS:
        match = pattern.search(command)
        if match is not None:
            port = int(match.group(1))
            if 0 < port < 65536:
                return port
    return None


# --- errors a caller handles (spec §2.23, in the person's words) -------------------------------


class BackgroundError(Exception):
    """A background request could not be done; ``str()`` is a sentence for the person.

    ``ran`` says whether the command ran: an error from a launch with ``ran=False`` means it
    did not start at all (spec §3.6 "what the user should see")."""

    ran: bool = False


class TaskNotFound(BackgroundError):
    """No task answers to the reference."""


class PersistenceUnavailable(BackgroundError):
    """A durable launch for a session the runtime cannot write records for."""


class PersistenceRequired(BackgroundError):
    """A saved-headless launch whose record could not be saved: the command did not run."""


class IdentityUnavailable(BackgroundError):
    """The new process's identity could not be read: the command did not run."""


class IdentityIndeterminate(BackgroundError):
    """The held-back wrapper could not be confirmed gone: its number is retired."""


class LaunchRefused(BackgroundError):
    """The wrapper could not be spawned or released: the command did not run."""


class PortTaken(BackgroundError):
    """The port the command names already answers: starting it would fail or clash."""

    def __init__(self, port: int, holder: BackgroundTask | None = None, process: str = "") -> None:
        by = f" by #{holder.number} ({holder.command})" if holder is not None else ""
        if not by and process:  # not one of ours: the process the system says listens there
            by = f" by {process}"
        super().__init__(
            f"port {port} is already taken{by}; the command was not started "
            "(stop that server, reuse it, or pick another port)"
        )
        self.port = port
        self.holder = holder
        self.process = process


class LogNotAccessible(BackgroundError):
    """The task's log cannot be read."""
