"""The runtime's tasks in memory and their numbers (spec §2.1 "task table", §2.15).

Numbers are per session: ``#N`` names a task within its session, as the agent and the person
say it. A session's next number is above every number in use, reserved, retired or recorded in
the store (the caller passes the store's highest as ``floor``), and never goes back within a
run, so a number is not reused while the app runs (spec §3.11: "keeps the counter"). A number
whose launch ended *indeterminate* is retired for good, with its stable id (spec §3.5).

Everything here runs on the event loop; nothing blocks.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fxdesk.domain.background import (
    DEGRADED_WARNING,
    BackgroundTask,
    LaunchPolicy,
    Origin,
    Persistence,
    RecordAuthority,
    TaskState,
)
from fxdesk.domain.process_identity import ProcessToken
from fxdesk.tools.background.provider import OwnedProcess


@dataclass(eq=False)
class Task:
    """One task's live state (mutable; views get ``snapshot()``)."""

    number: int
    stable_id: str
    session_id: str
    workspace_id: int
    workspace: str
    command: str
    cwd: str
    log_path: str
    policy: LaunchPolicy
    origin: Origin
    pid: int
    token: ProcessToken | None
    started_at_ms: int
    expect_url: bool
    authority: RecordAuthority
    persistence: Persistence
    record_number: int  # the number its record is keyed by (its launch number)
    state: TaskState = TaskState.RUNNING
    exit_code: int | None = None
    url: str | None = None
    url_note: str = ""
    owned: OwnedProcess | None = None
    record_owner: str | None = None  # for a read-only task: the process that owns its record
    stopping: bool = False
    warned: bool = False  # the degradation was said once this episode (spec §2.9)

    def let_go(self) -> None:
        """Drop the handle on the process fxdesk spawned (bubblewrap, or the wrapper), leaving
        its reaping to a thread. Never just drop it: the task's own PID can be gone (the wrapper
        inside the sandbox exited) while bubblewrap is still tearing the sandbox down, and a
        handle dropped then leaves bubblewrap a zombie for as long as fxdesk runs."""
        owned, self.owned = self.owned, None
        if owned is not None:
            owned.forget()

    def snapshot(self) -> BackgroundTask:
        warning = ""
        if self.policy.durable and not self.persistence.restorable:
            if self.persistence is Persistence.INITIAL_RECORD_DEGRADED:
                warning = DEGRADED_WARNING
        elif self.persistence is Persistence.RECORD_UPDATE_DEGRADED:
            warning = "its saved record is out of date; fxdesk keeps trying to save it"
        return BackgroundTask(
            number=self.number,
            stable_id=self.stable_id,
            session_id=self.session_id,
            workspace_id=self.workspace_id,
            workspace=self.workspace,
            command=self.command,
            cwd=self.cwd,
            state=self.state,
            exit_code=self.exit_code,
            pid=self.pid,
            has_token=self.token is not None,
            url=self.url,
            expect_url=self.expect_url,
            url_note=self.url_note,
            started_at_ms=self.started_at_ms,
            origin=self.origin,
            policy=self.policy,
            read_only=self.authority is RecordAuthority.READ_ONLY,
            log_path=self.log_path,
            persistence=self.persistence,
            persistence_warning=warning,
        )

    def finish(self, state: TaskState, exit_code: int | None = None) -> None:
        """A terminal move: clears ``expect_url`` (spec §2.10); a stop clears the code."""
        self.state = state
        self.exit_code = exit_code if state in (TaskState.EXITED, TaskState.FAILED) else None
        self.expect_url = False

    @property
    def stops_at_quit(self) -> bool:
        """Nothing could find it again after this fxdesk ends: it is stopped at quit
        (spec §3.12 step 4: process-local, or durable whose record was never written)."""
        if self.authority is RecordAuthority.READ_ONLY:
            return False
        return not self.policy.durable or not self.persistence.restorable


@dataclass
class _Numbers:
    next: int = 1
    reserved: set[int] = field(default_factory=set)
    retired: set[int] = field(default_factory=set)


class TaskTable:
    """Tasks in insertion order, and each session's numbers."""

    def __init__(self) -> None:
        self._tasks: list[Task] = []
        self._numbers: dict[str, _Numbers] = {}
        self._retired_ids: set[tuple[str, str]] = set()

    def __iter__(self) -> Iterator[Task]:
        return iter(list(self._tasks))

    def __len__(self) -> int:
        return len(self._tasks)

    def _used(self, session_id: str) -> set[int]:
        return {t.number for t in self._tasks if t.session_id == session_id}

    def _free(self, session_id: str, number: int) -> bool:
        numbers = self._numbers.setdefault(session_id, _Numbers())
        return (
            number not in self._used(session_id)
            and number not in numbers.reserved
            and number not in numbers.retired
        )

    def reserve(self, session_id: str, floor: int = 0) -> int:
        """A new number for the session, above ``floor`` (the store's highest) and every
        number handed out this run; held until ``add`` or ``release``."""
        numbers = self._numbers.setdefault(session_id, _Numbers())
        number = max(numbers.next, floor + 1)
        while not self._free(session_id, number):
            number += 1
        numbers.reserved.add(number)
        numbers.next = number + 1
        return number

    def claim(self, session_id: str, wanted: int, floor: int = 0) -> int:
        """``wanted`` if it is free in the session (a restored task keeps its ``#N``), else a
        new number (spec §2.15 "on restore")."""
        numbers = self._numbers.setdefault(session_id, _Numbers())
        if self._free(session_id, wanted):
            numbers.reserved.add(wanted)
            numbers.next = max(numbers.next, wanted + 1)
            return wanted
        return self.reserve(session_id, floor)

    def release(self, session_id: str, number: int) -> None:
        self._numbers.setdefault(session_id, _Numbers()).reserved.discard(number)

    def retire(self, session_id: str, number: int, stable_id: str) -> None:
        """Never hand out this number or stable id again in this run (indeterminate cleanup)."""
        numbers = self._numbers.setdefault(session_id, _Numbers())
        numbers.reserved.discard(number)
        numbers.retired.add(number)
        self._retired_ids.add((session_id, stable_id))

    def stable_id_taken(self, session_id: str, stable_id: str) -> bool:
        return (session_id, stable_id) in self._retired_ids or any(
            t.session_id == session_id and t.stable_id == stable_id for t in self._tasks
        )

    def retired(self, session_id: str) -> frozenset[int]:
        return frozenset(self._numbers.get(session_id, _Numbers()).retired)

    def add(self, task: Task) -> None:
        """List ``task``; its reservation passes to it."""
        self._numbers.setdefault(task.session_id, _Numbers()).reserved.discard(task.number)
        self._tasks.append(task)

    def remove(self, task: Task) -> None:
        if task in self._tasks:
            self._tasks.remove(task)

    def find(self, session_id: str, number: int) -> Task | None:
        return next(
            (t for t in self._tasks if t.session_id == session_id and t.number == number), None
        )

    def with_stable_id(self, stable_id: str) -> list[Task]:
        return [t for t in self._tasks if t.stable_id == stable_id]

    def of_session(self, session_id: str) -> list[Task]:
        return [t for t in self._tasks if t.session_id == session_id]

    def of_workspace(self, workspace_id: int) -> list[Task]:
        return [t for t in self._tasks if t.workspace_id == workspace_id]

    def running(self) -> list[Task]:
        return [t for t in self._tasks if t.state.running]
