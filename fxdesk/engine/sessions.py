"""Session commands: create (root or child), send, close, detach, reparent; and the catalog.

Each command is one durable transaction, published on the bus after it commits. Running the work
is the ``SessionOwner``'s job; these only change what is queued and how sessions relate.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fxdesk.domain import work as reducers
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.images import ImageAttachment, ImageError
from fxdesk.domain.images import check_all as check_images
from fxdesk.domain.model import (
    UNRESTRICTED_OFF,
    PermissionMode,
    Receipt,
    Session,
    SessionMode,
    SessionState,
    WorkKind,
    Workspace,
    WorkStatus,
)
from fxdesk.domain.report_policy import ReportPolicy
from fxdesk.domain.work import Change, ControlEvent, WorkItem
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import Clock, SystemClock
from fxdesk.engine.errors import (
    ErrorCode,
    InvalidWorkspace,
    OperationConflict,
    SessionError,
    WorkActive,
)
from fxdesk.engine.events import SessionAdded, SessionChanged, WorkspaceAdded, publish_change
from fxdesk.engine.images import image_support
from fxdesk.engine.owner import SessionOwner
from fxdesk.store import Store, StoreError, attachments, control, history, repo

__all__ = [
    "Catalog",
    "EventPage",
    "InvalidWorkspace",
    "OperationConflict",
    "SessionError",
    "SessionService",
    "new_id",
    "validate_workspace",
]


@dataclass(frozen=True)
class Catalog:
    """Everything the session tree shows, read in one snapshot."""

    workspaces: list[Workspace]
    sessions: list[Session]


# Ids are cut from one ``os.urandom`` call per 64 of them: ``uuid4()`` for each cost ~4 µs
# (a getrandom system call and a UUID object) on every durable transition (issue 17); ~0.3 µs
# now. The same form as ``uuid4().hex[:16]``:
# 16 hex digits, the 13th the version's "4". A forked child starts a pool of its own.
_IDS_PER_DRAW = 64
_spare_ids: list[str] = []
os.register_at_fork(after_in_child=_spare_ids.clear)


def new_id() -> str:
    try:
        return _spare_ids.pop()  # one step under the GIL: no two threads get the same id
    except IndexError:
        pass
    digits = os.urandom(8 * _IDS_PER_DRAW).hex()
    fresh = [f"{digits[i : i + 12]}4{digits[i + 13 : i + 16]}" for i in range(0, len(digits), 16)]
    _spare_ids.extend(fresh[1:])
    return fresh[0]


def validate_workspace(path: str | os.PathLike[str]) -> Path:
    """The resolved workspace folder, or ``InvalidWorkspace`` saying why it cannot be used."""
    folder = Path(path).expanduser()
    if not folder.is_absolute():
        raise InvalidWorkspace(f"{folder} is not an absolute path")
    try:
        resolved = folder.resolve(strict=True)
    except OSError as exc:
        raise InvalidWorkspace(f"{folder} does not exist") from exc
    if not resolved.is_dir():
        raise InvalidWorkspace(f"{resolved} is not a folder")
    if not os.access(resolved, os.R_OK | os.X_OK):
        raise InvalidWorkspace(f"{resolved} cannot be read")
    return resolved


def _check_mode(mode: PermissionMode | None) -> None:
    """Inside a write: ``unrestricted`` (no sandbox) only once the person turned it on."""
    if mode is PermissionMode.UNRESTRICTED and not repo.unrestricted_enabled():
        raise SessionError(UNRESTRICTED_OFF, code=ErrorCode.INVALID_ARGUMENT)


def _load_for_enqueue(session_id: str) -> control.EnqueueTarget:
    """The session's queue with its head (the head decides the state), the next position and
    the session's row, in one read (inside a write)."""
    target = control.load_for_enqueue(session_id)
    if target is None:
        raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
    return target


def _enqueue(session_id: str, content: str, kind: WorkKind, source_id: str, at: int) -> Change:
    """Queue one message (inside a write)."""
    return _enqueue_on(_load_for_enqueue(session_id), content, kind, source_id, at)


def _enqueue_on(
    target: control.EnqueueTarget, content: str, kind: WorkKind, source_id: str, at: int
) -> Change:
    """Queue one message on the session ``_load_for_enqueue`` read (inside a write)."""
    record = target.record
    session_id = record.session_id
    if record.state == SessionState.ARCHIVED:
        raise SessionError(f"session {session_id} is closed")
    item = WorkItem(
        id=new_id(),
        session_id=session_id,
        position=target.position,
        source_id=source_id,
        kind=kind,
        content=content,
        status=WorkStatus.PENDING,
        reason=None,
        created_at_ms=at,
        updated_at_ms=at,
    )
    change = reducers.enqueue(record, item, at)
    control.save_change(change)
    return change


def _send_job(
    session_id: str,
    content: str,
    kind: WorkKind,
    source_id: str,
    images: Sequence[ImageAttachment],
    at: int,
) -> tuple[Change, Session]:
    """``SessionService.send``'s store job: queue the message, with its images."""
    target = _load_for_enqueue(session_id)
    if images:
        support = image_support(target.session())
        if not support.accepted:
            raise SessionError(support.refusal, code=ErrorCode.INVALID_ARGUMENT)
    change = _enqueue_on(target, content, kind, source_id, at)
    if images:
        attachments.add_images(session_id, change.items[0].id, images, at)
    after = target.session_after(change)  # no second read of the row just written
    if change.items[0].position == 1 and target.name == UNNAMED:
        # Named after what it is about as soon as that is known: made with no name
        # and no message, it was "New session" (and stayed so) until now.
        name = _title_from(content) or UNNAMED
        repo.rename_session(session_id, name, at)
        after = replace(after, name=name, updated_at_ms=at)
    return change, after


def enqueue_in_write(
    session_id: str, content: str, kind: WorkKind, source_id: str, at: int
) -> Change:
    """Queue one message inside a store job of the caller's (the inbox delivers its events and
    acknowledges them in the same transaction)."""
    return _enqueue(session_id, content, kind, source_id, at)


@dataclass(frozen=True)
class EventPage:
    events: list[ControlEvent]
    next_cursor: str | None
    generation: int
    restart_required: bool


log = logging.getLogger(__name__)


class SessionService:
    """Commands on sessions. Pair it with a ``SessionOwner`` to run what they queue.

    Args:
        store: The store every command is a transaction of.
        bus: Where committed changes are published.
        owner: When set, close also stops the session's live work, and detach or reparent
            refuse a session it is running.
        clock: The time commands are stamped with; by default the owner's, else the system's.
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        owner: SessionOwner | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self._store = store
        self._bus = bus
        self.owner = owner
        self._clock = clock or (owner.clock if owner is not None else SystemClock())

    async def catalog(self, *, include_archived: bool = True) -> Catalog:
        def read() -> Catalog:
            return Catalog(
                repo.list_workspaces(), repo.list_sessions(include_archived=include_archived)
            )

        return await self._store.read(read)

    async def get(self, session_id: str) -> Session | None:
        return await self._store.read(lambda: repo.get_session(session_id))

    async def create_root(
        self,
        workspace_path: str | os.PathLike[str],
        *,
        name: str = "",
        permission_mode: PermissionMode = PermissionMode.ASK,
        profile: str | None = None,
        model: str | None = None,
        first_message: str | None = None,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> Session:
        """Create a root session (and its workspace, if new) in one transaction; ``session_id``
        and ``config`` when the caller prepared for it (a worktree made for that id)."""
        folder = await asyncio.to_thread(validate_workspace, workspace_path)
        session_id = session_id or new_id()
        title = name.strip() or _title_from(first_message) or UNNAMED
        at = self._clock.now_ms()

        def write() -> tuple[Workspace, bool, Session, Change | None]:
            _check_mode(permission_mode)
            workspace, is_new = repo.ensure_workspace(str(folder), folder.name or str(folder), at)
            session = repo.create_session(
                session_id=session_id,
                workspace=workspace,
                name=title,
                mode=SessionMode.PERSISTENT,
                permission_mode=permission_mode,
                profile=profile,
                model=model,
                at_ms=at,
                config=config,
            )
            change = None
            if first_message:
                change = _enqueue(session_id, first_message, WorkKind.PROMPT, "person", at)
                session = repo.get_session(session_id) or session
            return workspace, is_new, session, change

        workspace, is_new, session, change = await self._store.write(write, label="create_session")
        if is_new:
            self._bus.publish(WorkspaceAdded(workspace))
        self._bus.publish(SessionAdded(session))
        publish_change(self._bus, change)
        return session

    async def create_child(
        self,
        parent_id: str,
        *,
        name: str,
        mode: SessionMode = SessionMode.ONE_OFF,
        first_message: str | None = None,
        permission_mode: PermissionMode = PermissionMode.YOLO,
        profile: str | None = None,
        model: str | None = None,
        effort: str | None = None,
        reports: ReportPolicy | None = None,
        config: dict[str, Any] | None = None,
    ) -> Session:
        """Create a child session under ``parent_id`` with its first message, in one
        transaction. The default permission mode of a child is ``yolo`` (spec §2.3)."""
        session_id = new_id()
        settings = dict(config or {})
        if reports is not None:  # stored under its spec name, "notifications"
            settings["notifications"] = json.loads(reports.to_json())
        at = self._clock.now_ms()

        def write() -> tuple[Session, Change | None]:
            _check_mode(permission_mode)
            parent = repo.get_session(parent_id)
            if parent is None:
                raise SessionError(f"no session {parent_id}", code=ErrorCode.NOT_FOUND)
            if parent.state == SessionState.ARCHIVED:
                raise SessionError(f"session {parent_id} is closed")
            workspace = next(w for w in repo.list_workspaces() if w.id == parent.workspace_id)
            session = repo.create_session(
                session_id=session_id,
                workspace=workspace,
                name=name.strip() or "Sub-agent",
                mode=mode,
                permission_mode=permission_mode,
                parent=parent,
                profile=profile or parent.profile,
                model=model,
                effort=effort,
                config=settings,
                at_ms=at,
            )
            change = None
            if first_message:
                change = _enqueue(session_id, first_message, WorkKind.TASK, parent_id, at)
                session = repo.get_session(session_id) or session
            return session, change

        session, change = await self._store.write(write, label="create_child")
        self._bus.publish(SessionAdded(session))
        publish_change(self._bus, change)
        return session

    async def create_child_once(
        self,
        operation_id: str,
        parent_id: str,
        *,
        actor_id: str = "person",
        expected_generation: int | None = None,
        **kwargs: Any,
    ) -> Receipt:
        """``create_child`` as an idempotent operation: replaying the same ``operation_id`` by
        the same actor returns the original receipt, whatever ran since (spec scenario 53)."""
        command_hash = hashlib.sha256(
            json.dumps(
                {"parent": parent_id, **{k: str(v) for k, v in sorted(kwargs.items())}},
                sort_keys=True,
            ).encode()
        ).hexdigest()

        def replay() -> Receipt | None:
            row = repo.get_operation(operation_id)
            if row is None:
                return None
            actor, source, receipt = row
            if actor != actor_id or source != command_hash:
                raise OperationConflict(f"{operation_id} was used otherwise")
            if expected_generation is not None and expected_generation != receipt.generation:
                raise OperationConflict(
                    f"{operation_id} is at generation {receipt.generation}, "
                    f"not {expected_generation}"
                )
            return receipt

        existing = await self._store.read(replay)
        if existing is not None:
            return existing
        session = await self.create_child(parent_id, **kwargs)
        record = await self._store.read(lambda: control.load_record(session.id))
        assert record is not None
        receipt = Receipt(
            "created",
            session.id,
            record.generation,
            record.next_event_sequence - 1,
            hashlib.sha256(f"{operation_id}:{session.id}".encode()).hexdigest()[:32],
        )
        at = self._clock.now_ms()
        await self._store.write(
            lambda: repo.save_operation(operation_id, actor_id, command_hash, receipt, at),
            label="operation",
        )
        return receipt

    async def send(
        self,
        session_id: str,
        content: str,
        *,
        kind: WorkKind = WorkKind.PROMPT,
        source_id: str = "person",
        images: Sequence[ImageAttachment] = (),
    ) -> WorkItem:
        """Queue a message (with the images it carries); ``SessionOwner.start`` runs it.

        Images go only to a session whose model takes them: otherwise ``SessionError`` says so
        and nothing is queued (never a message without the images the person attached)."""
        if images:
            try:
                images = check_images(images)
            except ImageError as exc:
                raise SessionError(str(exc), code=ErrorCode.INVALID_ARGUMENT) from None
        if not content.strip() and images:  # an image on its own says what it is
            content = " ".join(f"[image: {image.name}]" for image in images)
        if not content.strip():
            raise SessionError("the message is empty", code=ErrorCode.INVALID_ARGUMENT)
        at = self._clock.now_ms()
        # A partial of a module function rather than a closure: the job waits in the writer's
        # queue, and a closure over six names is eight objects for the garbage collector to
        # track and promote meanwhile (issue 17: durable transitions).
        write = functools.partial(_send_job, session_id, content, kind, source_id, images, at)
        change, session = await self._store.write(write, label="send")
        publish_change(self._bus, change, session)
        return change.items[0]

    async def steer(
        self, session_id: str, content: str, images: Sequence[ImageAttachment] = ()
    ) -> WorkItem:
        """A message for the running turn, delivered at its next step boundary. Durable like
        any queued message: if the turn ends first, it runs as the next message."""
        return await self.send(session_id, content, kind=WorkKind.STEER, images=images)

    async def remove_pending(self, session_id: str, work_id: str) -> bool:
        """Take a queued message out before it runs; False if it already started."""
        at = self._clock.now_ms()

        def write() -> tuple[Change | None, Session | None]:
            record = control.load_record(session_id)
            if record is None:
                raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
            change = reducers.cancel_item(record, work_id, "removed from the queue", at)
            if change is not None:
                control.save_change(change)
            return change, repo.get_session(session_id) if change else None

        change, session = await self._store.write(write, label="remove_pending")
        publish_change(self._bus, change, session)
        return change is not None

    async def configure(
        self,
        session_id: str,
        *,
        profile: str | None = None,
        permission_mode: PermissionMode | None = None,
        model: str | None = None,
        effort: str | None = None,
    ) -> Session:
        """Change what the session's next turns use (running work keeps its snapshot)."""
        at = self._clock.now_ms()

        def write() -> Session | None:
            _check_mode(permission_mode)
            repo.configure_session(
                session_id,
                profile=profile,
                permission_mode=permission_mode,
                model=model,
                effort=effort,
                at_ms=at,
            )
            return repo.get_session(session_id)

        session = await self._store.write(write, label="configure")
        if session is None:
            raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
        self._bus.publish(SessionChanged(session))
        return session

    async def rename(self, session_id: str, name: str) -> Session:
        title = name.strip()
        if not title:
            raise SessionError("the name is empty", code=ErrorCode.INVALID_ARGUMENT)
        at = self._clock.now_ms()

        def write() -> Session | None:
            repo.rename_session(session_id, title, at)
            return repo.get_session(session_id)

        session = await self._store.write(write, label="rename")
        if session is None:
            raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
        self._bus.publish(SessionChanged(session))
        return session

    async def close(
        self, session_id: str, *, actor_id: str | None = None, reason: str = "closed"
    ) -> Receipt:
        """Archive the session: its queue is cancelled and it is archived in one transaction,
        then its live work is stopped, then the terminal deliveries are written in a transaction
        of their own (as a cancel does: a failure there neither fails the close nor keeps the
        turn running; the next start's sweep repairs it). ``actor_id`` (an agent session) must be
        an ancestor the session is attached to; the person (no actor) may close anything."""
        at = self._clock.now_ms()

        def write() -> tuple[Change, Session | None]:
            session = repo.get_session(session_id)
            if session is None:
                raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
            if actor_id is not None and actor_id not in _ancestors(session):
                raise SessionError(
                    "the session is not attached to the caller", code=ErrorCode.CHILD_UNAVAILABLE
                )
            record = control.load_record(session_id)
            assert record is not None
            if record.state == SessionState.ARCHIVED:
                raise SessionError(f"session {session_id} is already closed")
            change = reducers.archive(record, reason, at)
            control.save_change(change)
            return change, repo.get_session(session_id)

        change, session = await self._store.write(write, label="close")
        publish_change(self._bus, change, session)
        if self.owner is not None:
            await self.owner.stop_live_work(session_id, reason)
            await self.owner.repair_terminals(session_id)
            await self.owner.stop_reports(session_id)
        else:
            try:
                await self._store.write(
                    lambda: control.reconcile_terminals(session_id, at), label="terminals"
                )
            except StoreError as exc:
                log.warning("session %s: terminal deliveries not saved yet: %s", session_id, exc)
        return _receipt("lifecycle_changed", change)

    async def detach(self, session_id: str) -> Receipt:
        """Detach a child from its parent (refused while it has active work)."""
        return await self._relate(session_id, None)

    async def reparent(self, session_id: str, parent_id: str) -> Receipt:
        """Move a child under another parent in the same workspace (refused while active)."""
        return await self._relate(session_id, parent_id)

    async def _relate(self, session_id: str, parent_id: str | None) -> Receipt:
        if self.owner is not None and self.owner.is_running(session_id):
            raise WorkActive()
        at = self._clock.now_ms()

        def write() -> tuple[Change, Session | None]:
            session = repo.get_session(session_id)
            if session is None or not session.is_child:
                raise SessionError(
                    f"{session_id} is not a sub-agent session",
                    code=ErrorCode.NOT_FOUND if session is None else ErrorCode.INVALID_STATE,
                )
            record = control.load_record(session_id)
            assert record is not None
            if any(
                i.status in (WorkStatus.RUNNING, WorkStatus.AWAITING_APPROVAL) for i in record.items
            ):
                raise WorkActive()
            root_id = session_id
            if parent_id is not None:
                parent = repo.get_session(parent_id)
                if parent is None or parent.workspace_id != session.workspace_id:
                    raise SessionError(
                        f"no session {parent_id} in the same workspace", code=ErrorCode.NOT_FOUND
                    )
                if session_id in (parent_id, *_ancestors(parent)):
                    raise SessionError(
                        "a session cannot be moved under itself", code=ErrorCode.INVALID_ARGUMENT
                    )
                root_id = parent.root_id
            change = reducers.relationship_changed(record, parent_id, at)
            repo.set_parent(session_id, parent_id, root_id)
            control.save_change(change)
            return change, repo.get_session(session_id)

        change, session = await self._store.write(write, label="relationship")
        if session is not None:
            self._bus.publish(SessionChanged(session))
        if parent_id is None and self.owner is not None:
            await self.owner.stop_reports(session_id)
        return _receipt("relationship_changed", change)

    async def inspect(
        self, session_id: str, cursor: str | None = None, limit: int = 50
    ) -> EventPage:
        """A page of control events. A cursor is bound to the revision it was taken at; after
        newer transitions it comes back with ``restart_required`` (page again from the start)."""

        def read() -> EventPage:
            record = control.load_record(session_id)
            if record is None:
                raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
            after = 0
            if cursor is not None:
                revision, _, sequence = cursor.partition(":")
                if int(revision) != record.generation:
                    return EventPage([], None, record.generation, True)
                after = int(sequence)
            events = control.events(session_id, after, limit)
            last = events[-1].sequence if events else after
            more = last < record.next_event_sequence - 1
            next_cursor = f"{record.generation}:{last}" if more else None
            return EventPage(events, next_cursor, record.generation, False)

        return await self._store.read(read)

    async def history_page(
        self, session_id: str, before_seq: int | None = None, limit: int = 200
    ) -> list[HistoryEntry]:
        """A page of the transcript: the newest rows, or those before ``before_seq``."""
        return await self._store.read(lambda: history.history_before(session_id, before_seq, limit))

    async def queue(self, session_id: str, limit: int = 200) -> list[tuple[WorkItem, str | None]]:
        """The session's newest work items with the reason each ended with, if any."""

        def read() -> list[tuple[WorkItem, str | None]]:
            items = control.list_items(session_id, limit)
            return [
                (i, i.reason or (control.failure_reason(i.id) if i.status.terminal else None))
                for i in items
            ]

        return await self._store.read(read)

    async def counts(self) -> dict[str, tuple[int, int]]:
        """Per session: (queued messages, unfinished items)."""
        return await self._store.read(control.queue_counts)

    async def last_failed(self) -> set[str]:
        """Sessions whose newest work item failed."""
        return await self._store.read(control.last_failed_sessions)

    async def items(self, session_id: str, limit: int = 200) -> list[WorkItem]:
        return await self._store.read(lambda: control.list_items(session_id, limit))


def _ancestors(session: Session) -> list[str]:
    """Ids of the sessions above ``session`` (inside a store job)."""
    found: list[str] = []
    current: Session | None = session
    while current is not None and current.parent_id is not None and len(found) < 1000:
        found.append(current.parent_id)
        current = repo.get_session(current.parent_id)
    return found


def _receipt(code: str, change: Change) -> Receipt:
    last = change.events[-1] if change.events else None
    sequence = last.sequence if last else change.record.next_event_sequence - 1
    fingerprint = hashlib.sha256(
        f"{code}:{change.record.session_id}:{change.record.generation}:{sequence}".encode()
    ).hexdigest()[:32]
    return Receipt(code, change.record.session_id, change.record.generation, sequence, fingerprint)


UNNAMED = "New session"  # a session made with no name and no message, until its first one


def _title_from(message: str | None) -> str:
    if not message:
        return ""
    line = message.strip().splitlines()[0] if message.strip() else ""
    return line if len(line) <= 60 else line[:59] + "…"
