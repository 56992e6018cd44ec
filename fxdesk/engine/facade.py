"""The one way into the engine for its clients: the window and the command line.

Anki's ``operations`` are the model: a client says what the person wants ("send this", "cancel
that", "answer this approval") and reads what it shows (the catalog, a transcript page, the
queue), and never needs to know which service does it or that two steps are involved. Sending
queues the message *and* starts the session; resuming starts it with interrupted work included.

Neither ``fxdesk.gui`` nor ``fxdesk.cli`` imports ``fxdesk.store`` or the session owner; an
import-linter contract says so. The errors a client must handle are re-exported here
(``StoreError``: the data cannot be read or written; ``SecretsUnavailable``: no keyring), so the
vocabulary of the boundary lives in one place.

Events still arrive on the bus (``subscribe``); ``gui/bridge.py`` turns them into Qt signals.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from fxdesk.domain import reasons
from fxdesk.domain.agent_definitions import AgentDefinition, AgentEntry
from fxdesk.domain.agent_runs import AgentRun, AgentRunError
from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.background import (
    BackgroundError,
    BackgroundTask,
    ForgetResult,
    LaunchPolicy,
    Origin,
    StopOutcome,
    TaskNotFound,
)
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.images import ImageAttachment
from fxdesk.domain.model import (
    KeySource,
    PermissionMode,
    Session,
    SessionMode,
    SessionState,
    Workspace,
)
from fxdesk.domain.permissions import PermissionRule, Scope
from fxdesk.domain.run_commands import RunCommand, RunCommandError, checked
from fxdesk.domain.sandbox_settings import DEFAULTS, SandboxSettingsError, WorkspaceSandbox
from fxdesk.domain.search import SearchHit
from fxdesk.domain.text import storable
from fxdesk.domain.usage import DayUsage, SessionUsage, UsageSummary, UsageTotals
from fxdesk.domain.work import WorkItem
from fxdesk.domain.worktrees import WORKTREE_KEY, Worktree
from fxdesk.engine import agent_lookup, changes, health, mentions, transfer
from fxdesk.engine.agents.coordinator import AgentCoordinator
from fxdesk.engine.agents.facade_part import AgentRunsPart, InboxView
from fxdesk.engine.background import listing
from fxdesk.engine.background.runtime import BackgroundRuntime
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import Clock
from fxdesk.engine.errors import (
    BrokenAgent,
    EngineError,
    ErrorCode,
    RegistryClosed,
    UnknownAgent,
    WorktreeDirty,
    WorktreeError,
)
from fxdesk.engine.events import RecoveryReport, SessionChanged, WorkspaceAdded
from fxdesk.engine.images import ImagesPart
from fxdesk.engine.mcp import McpService
from fxdesk.engine.owner import Result, SessionOwner, StartResult
from fxdesk.engine.permissions import PermissionService, suggested_rules
from fxdesk.engine.profiles import ProfileError, ProfileService
from fxdesk.engine.sandbox_overview import SandboxOverview, SandboxStatus, overview, refusals
from fxdesk.engine.sessions import (
    Catalog,
    InvalidWorkspace,
    SessionError,
    SessionService,
    new_id,
    validate_workspace,
)
from fxdesk.engine.worktrees import WorktreePart, WorktreeService
from fxdesk.store import Store, control, history, owners, repo, usage
from fxdesk.store import approvals as approvals_store
from fxdesk.store.errors import StoreError
from fxdesk.store.lock_holder import describe_process
from fxdesk.store.locks import HandoffLock, instance_alive, is_locked_elsewhere
from fxdesk.store.secrets import SecretsUnavailable
from fxdesk.tools.background.logs import LogSummary
from fxdesk.tools.background.usage import TaskUsage, UsageRequest, UsageSampler

__all__ = [
    "AgentDefinition",
    "AgentEntry",
    "AgentRun",
    "AgentRunError",
    "BackgroundError",
    "BackgroundTask",
    "BrokenAgent",
    "Catalog",
    "Engine",
    "EngineError",
    "ErrorCode",
    "ForgetResult",
    "InboxView",
    "InvalidWorkspace",
    "LaunchPolicy",
    "LogSummary",
    "Origin",
    "ProfileError",
    "ProfileService",
    "RegistryClosed",
    "Result",
    "RunCommand",
    "RunCommandError",
    "SandboxOverview",
    "SandboxSettingsError",
    "SandboxStatus",
    "SecretsUnavailable",
    "SessionError",
    "StartResult",
    "StopOutcome",
    "StoreError",
    "TaskNotFound",
    "TaskUsage",
    "Transcript",
    "UnknownAgent",
    "UsageTotals",
    "WorkspaceSandbox",
    "WorktreeDirty",
    "WorktreeError",
    "suggested_rules",
]

E = TypeVar("E")
log = logging.getLogger(__name__)

PERSON_SESSION_NAME = "Commands"  # the session of the person's own commands in a workspace


@dataclass(frozen=True)
class Transcript:
    """All of one session for ``fxdesk show``: its queue with reasons, and its history."""

    session: Session
    items: list[WorkItem]
    reasons: dict[str, str | None]
    entries: list[HistoryEntry]


class Engine(AgentRunsPart, WorktreePart, ImagesPart):
    """What the window and the command line can do and read.

    Built by ``App`` once its services run. ``owner`` is None for clients that only read or
    queue without running anything (``fxdesk show``, ``fxdesk approvals``): then the methods
    that run work raise ``RuntimeError``.

    Attributes:
        profiles: model profiles and app settings (an engine service of its own).
        recovery: what start-up recovery did, if it ran.
    """

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        sessions: SessionService,
        permissions: PermissionService,
        profiles: ProfileService,
        *,
        lock_dir: Path,
        clock: Clock,
        owner: SessionOwner | None = None,
        recovery: RecoveryReport | None = None,
        background: BackgroundRuntime | None = None,
        user_agents: Path | None = None,
        agents: AgentCoordinator | None = None,
        mcp: McpService | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self._agents = agents
        # Sessions' git worktrees, under the data folder (the lock folder's parent by default).
        self._worktrees = WorktreeService(store, bus, data_dir or lock_dir.parent)
        # MCP tool servers (Settings → Tools, ``fxdesk mcp``); None where this process runs none.
        self.mcp = mcp
        self._store = store
        self._lock_dir = lock_dir
        self._clock = clock
        self._bus = bus
        self._sessions = sessions
        self._owner = owner
        self._permissions = permissions
        self.profiles = profiles
        self.recovery = recovery
        self._background = background
        self._user_agents = user_agents
        self._usage = UsageSampler()

    def subscribe(self, event_type: type[E], handler: Callable[[E], None]) -> Callable[[], None]:
        """Call ``handler`` for each published event of ``event_type``; returns the undo."""
        return self._bus.subscribe(event_type, handler)

    def now_ms(self) -> int:
        """The engine's time (its one clock): what approvals' and items' times are read against."""
        return self._clock.now_ms()

    # --- the catalog -------------------------------------------------------------------------

    async def catalog(self, *, include_archived: bool = True) -> Catalog:
        return await self._sessions.catalog(include_archived=include_archived)

    async def session(self, session_id: str) -> Session | None:
        return await self._sessions.get(session_id)

    async def find_session(self, given: str) -> Session:
        """A session by id or unique id prefix; a ``SessionError`` (``not_found``) says why not."""
        catalog = await self._sessions.catalog(include_archived=True)
        matches = [s for s in catalog.sessions if s.id == given] or [
            s for s in catalog.sessions if s.id.startswith(given)
        ]
        if not matches:
            raise SessionError(
                f"no session {given!r} (see `fxdesk sessions`)", code=ErrorCode.NOT_FOUND
            )
        if len(matches) > 1:
            raise SessionError(
                f"{given!r} matches {len(matches)} sessions; give more of the id",
                code=ErrorCode.NOT_FOUND,
            )
        return matches[0]

    async def find_workspace(self, folder: str | os.PathLike[str]) -> Workspace:
        """A known workspace by its folder (``~`` and links resolved)."""
        wanted = await asyncio.to_thread(lambda: os.path.realpath(os.path.expanduser(folder)))
        for workspace in (await self._sessions.catalog()).workspaces:
            if workspace.path == wanted:
                return workspace
        raise SessionError(
            f"no workspace {wanted} (start a session there first)", code=ErrorCode.NOT_FOUND
        )

    # --- what the person does ----------------------------------------------------------------

    async def create_session(
        self,
        workspace: str | os.PathLike[str],
        *,
        name: str = "",
        permission_mode: PermissionMode = PermissionMode.ASK,
        profile: str | None = None,
        model: str | None = None,
        first_message: str | None = None,
        start: bool = True,
        worktree: bool | None = None,
    ) -> Session:
        """A root session in ``workspace``; its first message, if any, starts running unless
        ``start`` is False (a client that must listen first starts it itself).

        ``worktree``: run it in a git worktree of its own, on a new branch from HEAD
        (docs/worktrees.md); None takes the workspace's default. ``WorktreeError`` says why
        not (not a git repository, no commit yet) and nothing is created then."""
        owner = self._running() if first_message and start else None  # refuse before writing
        folder = await asyncio.to_thread(validate_workspace, workspace)
        if worktree is None:
            known = [
                w for w in (await self._sessions.catalog()).workspaces if w.path == str(folder)
            ]
            worktree = bool(known) and await self.worktree_default(known[0].id)
        session_id = new_id()
        made = await self._worktrees.make(folder, session_id) if worktree else None
        try:
            session = await self._sessions.create_root(
                folder,
                name=storable(name),
                permission_mode=permission_mode,
                profile=profile,
                model=model,
                first_message=storable(first_message) if first_message else first_message,
                session_id=session_id,
                config={WORKTREE_KEY: made.to_value()} if made is not None else None,
            )
        except BaseException:
            if made is not None:
                await self._worktrees.unmake(made)
            raise
        if owner is not None:
            owner.start(session.id)
        return session

    async def create_child(
        self,
        parent_id: str,
        task: str,
        *,
        name: str = "",
        mode: SessionMode = SessionMode.ONE_OFF,
        permission_mode: PermissionMode | None = None,
        profile: str | None = None,
    ) -> Session:
        """A sub-agent under ``parent_id`` with ``task`` as its first message, started at once.
        It runs in its parent's permission mode unless told otherwise, and is named after the
        task's first line unless given a name."""
        owner = self._running()  # refuse before writing
        if not task.strip():
            raise SessionError("the task is empty", code=ErrorCode.INVALID_ARGUMENT)
        if permission_mode is None:
            parent = await self._sessions.get(parent_id)
            if parent is None:
                raise SessionError(f"no session {parent_id}", code=ErrorCode.NOT_FOUND)
            permission_mode = parent.permission_mode
        child = await self._sessions.create_child(
            parent_id,
            name=name or task.strip().splitlines()[0][:60],
            mode=mode,
            first_message=task,
            permission_mode=permission_mode,
            profile=profile,
        )
        owner.start(child.id)
        return child

    async def send(
        self,
        session_id: str,
        text: str,
        *,
        start: bool = True,
        images: Sequence[ImageAttachment] = (),
    ) -> WorkItem:
        """Queue a message (with the images it carries) and start the session (it runs after
        what is already queued). Images to a model that takes none: ``SessionError``."""
        owner = self._running() if start else None  # refuse before writing
        item = await self._sessions.send(session_id, storable(text), images=images)
        if self._agents is not None:  # inbox events wait for this turn: they go in behind it
            await self._agents.delivery.attach_to_next_turn(session_id)
        if owner is not None:
            owner.start(session_id)
        return item

    async def hand_off(self, work_id: str) -> bool:
        """Leave a queued message to whichever fxdesk runs its session next, as ``send
        --no-wait`` does (a command that queued it is about to end); False if it started."""
        return await self._store.write(lambda: owners.hand_off(work_id), label="hand_off")

    async def steer(
        self, session_id: str, text: str, *, images: Sequence[ImageAttachment] = ()
    ) -> WorkItem:
        """Deliver ``text`` into the running turn at its next step; when no turn runs, it is
        an ordinary message."""
        owner = self._running()
        text = storable(text)
        if owner.is_running(session_id):
            item = await self._sessions.steer(session_id, text, images)
        else:
            item = await self._sessions.send(session_id, text, images=images)
        owner.start(session_id)
        return item

    async def remove_queued(self, session_id: str, work_id: str) -> bool:
        """Take a queued message out before it runs; False if it already started."""
        return await self._sessions.remove_pending(session_id, work_id)

    async def cancel(self, session_id: str, reason: str = reasons.CANCELLED_BY_PERSON) -> int:
        """Cancel the running turn and everything queued; how many items changed."""
        return await self._running().cancel(session_id, reason)

    def resume(self, session_id: str) -> StartResult:
        """Run the session again, interrupted and approval-held work first; a root session's
        inbox events that wait to continue it are delivered too."""
        result = self._running().start(session_id, retry=True)
        if self._agents is not None:
            self._agents.wake_inbox(session_id)
        return result

    def start(self, session_id: str, *, retry: bool = False) -> StartResult:
        """Run what is queued (``retry``: interrupted work too)."""
        return self._running().start(session_id, retry=retry)

    async def join(self, session_id: str) -> Result:
        """Wait until the session's run ends; what it came to."""
        return await self._running().join(session_id)

    async def shutdown(self) -> None:
        """Stop every running turn without recording anything (resume continues them)."""
        if self._owner is not None:
            await self._owner.shutdown()

    async def rename(self, session_id: str, name: str) -> Session:
        return await self._sessions.rename(session_id, storable(name))

    async def close(self, session_id: str, *, force: bool = False, keep_branch: bool = True) -> str:
        """Archive the session and its sub-agents; their live work stops. A root session's
        worktree is removed with it (its branch too unless it holds unmerged commits and
        ``keep_branch``); one holding uncommitted changes is refused with ``WorktreeDirty``
        unless ``force``. What was done with the worktree, as a sentence ('' when none)."""
        worktree = await self._worktrees.check_close(session_id, force=force)
        await self._sessions.close(session_id)
        if worktree is None:
            return ""
        try:
            return await self._worktrees.remove(session_id, worktree, delete_branch=not keep_branch)
        except WorktreeError as exc:  # the session is closed anyway; say what is left
            return f"the session is closed, but its worktree {worktree.path} is left: {exc}"

    async def configure(
        self,
        session_id: str,
        *,
        profile: str | None = None,
        permission_mode: PermissionMode | None = None,
    ) -> Session:
        return await self._sessions.configure(
            session_id, profile=profile, permission_mode=permission_mode
        )

    # --- what the person reads ---------------------------------------------------------------

    def is_running(self, session_id: str) -> bool:
        return self._owner is not None and self._owner.is_running(session_id)

    def busy_elsewhere(self) -> Mapping[str, int | None]:
        """Sessions another fxdesk process is running, with its pid when known."""
        return dict(self._owner.busy_elsewhere) if self._owner is not None else {}

    @staticmethod
    def describe_process(pid: int) -> str:
        """``process 1234 (python)``, with ``stopped`` when it is frozen: for "in use by …"."""
        return describe_process(pid)

    def in_use_elsewhere(self, session_id: str) -> int | None:
        """The pid of another process holding the session's lock right now (or None)."""
        return is_locked_elsewhere(self._lock_dir, session_id)

    def handed_off_work_is_picked_up(self) -> bool:
        """Whether a running fxdesk (the window) runs work queued for whichever fxdesk runs
        next (``send`` without an engine here: ``fxdesk send --no-wait``)."""
        return HandoffLock.held_elsewhere(self._lock_dir)

    async def history_page(
        self, session_id: str, before_seq: int | None = None, limit: int = 200
    ) -> list[HistoryEntry]:
        return await self._sessions.history_page(session_id, before_seq, limit)

    async def queue(self, session_id: str, limit: int = 200) -> list[tuple[WorkItem, str | None]]:
        """The newest work items with the reason each ended with."""
        return await self._sessions.queue(session_id, limit)

    async def items(self, session_id: str, limit: int = 200) -> list[WorkItem]:
        return await self._sessions.items(session_id, limit)

    async def transcript(self, session_id: str) -> Transcript:
        """Everything of a session at once (``fxdesk show``)."""
        session = await self._sessions.get(session_id)
        if session is None:
            raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)

        def read() -> Transcript:
            items = control.list_items(session.id)
            reasons = {i.id: i.reason or control.failure_reason(i.id) for i in items}
            entries = history.page_history(session.id, 0, 100_000)
            return Transcript(session, items, reasons, entries)

        return await self._store.read(read)

    async def failure_reason(self, work_id: str) -> str | None:
        """Why a work item ended as it did, as recorded."""
        return await self._store.read(lambda: control.failure_reason(work_id))

    async def counts(self) -> dict[str, tuple[int, int]]:
        """Per session: (queued messages, unfinished items)."""
        return await self._sessions.counts()

    async def last_failed(self) -> set[str]:
        """Sessions whose newest work item failed."""
        return await self._sessions.last_failed()

    def database(self) -> tuple[Path, int]:
        """The database file and its schema version (shown in the window's status bar)."""
        return self._store.path, self._store.schema_version

    # --- approvals and rules -----------------------------------------------------------------

    async def pending_approvals(self, session_id: str | None = None) -> list[Approval]:
        return await self._permissions.pending(session_id)

    async def find_approval(self, prefix: str) -> Approval | None:
        return await self._permissions.find(prefix)

    async def answer_approval(
        self,
        approval_id: str,
        choice: Choice,
        *,
        reason: str = "",
        rules: list[PermissionRule] | None = None,
        by: str = "",
    ) -> Approval:
        """Answer an approval (raises ``ApprovalNotPending`` if it was answered already,
        ``ChoiceNotOffered`` for "run outside the sandbox" where it does not apply); ``by``
        says where ("the window", "the command line"), shown with the call afterwards."""
        return await self._permissions.resolve(
            approval_id, choice, reason=reason, rules=rules, by=by
        )

    async def sessions_mentioning(self, text: str) -> list[str]:
        """Sessions whose conversation contains ``text`` (the filter box matches them too)."""
        return await self._store.read(lambda: history.sessions_mentioning(text))

    async def search(self, text: str, limit: int = 50) -> list[SearchHit]:
        """Messages and answers in every session that contain every word of ``text`` (each
        as the start of a word; "a phrase" in quotes), best first, with marked snippets."""
        return await self._store.read(lambda: history.search(text, limit))

    async def workspace_files(self, session_id: str) -> list[str]:
        """The files of the session's workspace, relative (the composer completes ``@`` with
        them)."""
        folder = await self._folder_of(session_id)
        return await asyncio.to_thread(mentions.list_files, folder)

    async def with_attachments(self, session_id: str, text: str) -> str:
        """``text`` with the workspace files it mentions (``@path``, ``@path:10-40``) attached
        for the model."""
        folder = await self._folder_of(session_id)
        return await asyncio.to_thread(mentions.attach, folder, text)

    async def changes(self, session_id: str, *, whole_tree: bool = False) -> changes.Changes:
        """What the session (``whole_tree``: it and every session of its tree) changed in its
        workspace, and (in git) what else changed there since the last commit
        (``engine/changes.py``)."""
        folder = await self._folder_of(session_id)
        tools = sorted(changes.FILE_TOOLS)
        entries = await self._store.read(
            lambda: history.tool_entries(session_id, tools, whole_tree=whole_tree)
        )
        touched = changes.touched_by(entries, folder)
        session = await self.session(session_id)
        root = await self.session(session.root_id) if session is not None else None
        worktree = Worktree.from_config(root.config) if root is not None else None
        base = worktree.base if worktree is not None else "HEAD"
        return await asyncio.to_thread(changes.changes, folder, touched, base)

    async def revert_change(self, session_id: str, path: str) -> str:
        """Put one changed file back as the last commit has it (git only); what was done.
        ``ChangesError`` says why not."""
        folder = await self._folder_of(session_id)
        found = await self.changes(session_id)
        change = next((c for c in found.files if c.path == path), None)
        if change is None:
            raise changes.ChangesError(f"{path} has no change to revert")
        done = await asyncio.to_thread(changes.revert, folder, change)
        log.info("session %s: the person reverted %s (%s)", session_id, path, done)
        return done

    async def revert_hunk(self, session_id: str, path: str, index: int) -> str:
        """Undo one hunk (``index`` from 0) of a changed file (git only); what was done."""
        folder = await self._folder_of(session_id)
        found = await self.changes(session_id)
        change = next((c for c in found.files if c.path == path), None)
        if change is None:
            raise changes.ChangesError(f"{path} has no change to revert")
        done = await asyncio.to_thread(changes.revert_hunk, folder, change, index)
        log.info("session %s: the person reverted a hunk (%s)", session_id, done)
        return done

    async def _folder_of(self, session_id: str) -> Path:
        """The folder the session works in: its tree's worktree, else its workspace."""
        session = await self.session(session_id)
        if session is None:
            raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
        try:
            _, worktree = await self._worktrees.of(session_id)
        except WorktreeError:
            return await self._workspace_folder(session.workspace_id)
        return Path(worktree.folder)

    async def export(self, session_id: str, *, whole_tree: bool = False) -> dict[str, Any]:
        """The session (``whole_tree``: its whole tree) as an export document, every known
        API key masked in every text (``engine.transfer``)."""
        return await transfer.export_document(
            self._store, self.profiles, session_id, whole_tree=whole_tree
        )

    async def import_export(
        self, text: str, workspace: str | os.PathLike[str] | None = None
    ) -> list[Session]:
        """Import an export as new sessions (never overwriting anything); the top one first.
        ``TransferError`` says why a file cannot be imported."""
        ids = await transfer.import_document(self._store, text, workspace, self._clock.now_ms())
        imported = [await self.session(i) for i in ids]
        found = [s for s in imported if s is not None]
        for session in found:
            self._bus.publish(SessionChanged(session))
        return found

    async def approvals_of(self, session_id: str, limit: int = 200) -> list[Approval]:
        """The session's approvals, answered or not, newest first: who answered what, how and
        when, for the calls they were about."""
        return await self._store.read(lambda: approvals_store.approvals_of(session_id, limit))

    async def approval_counts(self) -> dict[str, int]:
        """Per session: approvals waiting."""
        return await self._permissions.counts()

    async def rules(self, scope: Scope | None = None) -> list[PermissionRule]:
        return await self._permissions.rules(scope)

    async def add_rule(self, rule: PermissionRule, note: str = "") -> PermissionRule:
        return await self._permissions.add_rule(rule, note)

    async def remove_rule(self, rule_id: int) -> bool:
        return await self._permissions.remove_rule(rule_id)

    # --- the sandbox ---------------------------------------------------------------------------

    async def workspace_sandbox(self, workspace_id: int) -> WorkspaceSandbox:
        """What the person lets one workspace's commands do beyond the sandbox's defaults."""
        return await self._store.read(lambda: repo.get_workspace_sandbox(workspace_id))

    async def set_workspace_sandbox(self, workspace_id: int, settings: WorkspaceSandbox) -> None:
        """Save one workspace's sandbox settings (its next command runs with them).

        Raises:
            SandboxSettingsError: a writable path the sandbox would not make writable (hidden,
                holding a hidden path, protected, under /tmp, missing outside the home
                folder), naming it and why; nothing is saved then.
        """
        folder = await self._workspace_folder(workspace_id)
        refused = await asyncio.to_thread(
            refusals, folder, settings.writable, data_dir=self._permissions.data_dir
        )
        if refused:
            raise SandboxSettingsError("; ".join(refused))
        await self._store.write(
            lambda: repo.set_workspace_sandbox(workspace_id, settings), label="workspace sandbox"
        )

    async def sandbox_status(self) -> SandboxStatus:
        """Whether commands run in the sandbox on this machine, or why not and the fix (the
        first call probes bubblewrap, in a worker thread)."""
        return await asyncio.to_thread(health.sandbox_status)

    async def sandbox_overview(self, workspace_id: int | None = None) -> SandboxOverview:
        """What the sandbox gives the commands of a workspace (None: of any workspace, by
        default): writable, read-only, hidden, network, and the workspace's settings."""
        status = await self.sandbox_status()
        folder, settings = None, DEFAULTS
        if workspace_id is not None:
            folder = await self._workspace_folder(workspace_id)
            settings = await self.workspace_sandbox(workspace_id)
        keys = {
            p.key_env
            for p in await self.profiles.list()
            if p.key_source == KeySource.ENV and p.key_env
        }
        return await asyncio.to_thread(
            overview,
            status,
            folder,
            settings,
            data_dir=self._permissions.data_dir,
            key_variables=keys,
        )

    async def run_commands(self, workspace_id: int) -> tuple[RunCommand, ...]:
        """The person's saved commands of a workspace ("dev server"), in their order."""
        await self._workspace_folder(workspace_id)
        return await self._store.read(lambda: repo.get_run_commands(workspace_id))

    async def set_run_commands(self, workspace_id: int, commands: tuple[RunCommand, ...]) -> None:
        """Replace a workspace's saved commands.

        Raises:
            RunCommandError: a command that cannot be saved (no name, a name used twice, a
                folder outside the workspace…), naming it; nothing is saved then.
        """
        await self._workspace_folder(workspace_id)
        commands = checked(commands)
        await self._store.write(
            lambda: repo.set_run_commands(workspace_id, commands), label="run commands"
        )

    async def ensure_workspace(self, folder: str | os.PathLike[str]) -> Workspace:
        """The workspace of ``folder``, made known now if it was not (``fxdesk sandbox set``
        before the first session there); ``InvalidWorkspace`` says why a folder cannot be one."""
        path = await asyncio.to_thread(validate_workspace, folder)
        at = self._clock.now_ms()
        workspace, is_new = await self._store.write(
            lambda: repo.ensure_workspace(str(path), path.name or str(path), at),
            label="ensure workspace",
        )
        if is_new:
            self._bus.publish(WorkspaceAdded(workspace))
        return workspace

    async def _workspace_folder(self, workspace_id: int) -> Path:
        for workspace in (await self._sessions.catalog()).workspaces:
            if workspace.id == workspace_id:
                return Path(workspace.path)
        raise SessionError(f"no workspace {workspace_id}", code=ErrorCode.NOT_FOUND)

    # --- named agents (issue 13, docs/agents.md) ---------------------------------------------

    async def agent_definitions(self, workspace: str | os.PathLike[str]) -> list[AgentEntry]:
        """The named agents a session in ``workspace`` can use, by id, broken files included
        (with their error); raises ``InvalidWorkspace`` for a folder that cannot be one."""

        def read() -> list[AgentEntry]:
            folder = validate_workspace(workspace)
            claude_user = agent_lookup.claude_user_folder()
            folders = agent_lookup.agent_folders(folder, self._user_agents, claude_user)
            return agent_lookup.lookup(folders)

        return await asyncio.to_thread(read)

    async def agent_entry(self, workspace: str | os.PathLike[str], agent_id: str) -> AgentEntry:
        """The entry that decides what ``agent_id`` means there (``UnknownAgent`` if none)."""
        entries = await self.agent_definitions(workspace)
        entry = agent_lookup.find(entries, agent_id)
        if entry is None:
            known = ", ".join(sorted({e.id for e in entries}))
            raise UnknownAgent(f"no agent {agent_id!r} (known: {known})")
        return entry

    async def agent_definition(
        self, workspace: str | os.PathLike[str], agent_id: str
    ) -> AgentDefinition:
        """The definition of ``agent_id`` as a run would use it: ``UnknownAgent`` if there is
        none, ``BrokenAgent`` (file, line, field) if its file cannot be used."""
        entry = await self.agent_entry(workspace, agent_id)
        if entry.definition is None:
            raise BrokenAgent(entry.error or f"agent {agent_id!r} cannot be used")
        return entry.definition

    # --- usage and cost ------------------------------------------------------------------------

    async def usage_summary(self, session_id: str) -> UsageSummary:
        """What the session, its tree (root and sub-agents) and every session today used."""
        session = await self.session(session_id)
        if session is None:
            raise SessionError(f"no session {session_id}", code=ErrorCode.NOT_FOUND)
        midnight_ms, _ = self._local_day()

        def read() -> UsageSummary:
            return UsageSummary(
                usage.totals([session_id]),
                usage.totals(usage.tree_ids(session.root_id)),
                usage.totals(None, midnight_ms),
            )

        return await self._store.read(read)

    async def usage_by_day(self, days: int = 30) -> list[DayUsage]:
        """Totals per local day for the last ``days`` days with calls, newest first."""
        midnight_ms, offset_s = self._local_day()
        since = midnight_ms - (days - 1) * 86_400_000
        return await self._store.read(lambda: usage.by_day(since, offset_s))

    async def usage_by_session(self, days: int = 30, limit: int = 20) -> list[SessionUsage]:
        """The sessions that used the most in the last ``days`` days."""
        midnight_ms, _ = self._local_day()
        since = midnight_ms - (days - 1) * 86_400_000
        return await self._store.read(lambda: usage.by_session(since, limit))

    def _local_day(self) -> tuple[int, int]:
        """(this local day's midnight in ms, the local UTC offset in seconds), by the engine's
        clock."""
        now = datetime.datetime.fromtimestamp(self._clock.now_ms() / 1000).astimezone()
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        offset = now.utcoffset() or datetime.timedelta()
        return int(midnight.timestamp() * 1000), int(offset.total_seconds())

    # --- background tasks (issue 12) ----------------------------------------------------------

    @property
    def runs_background(self) -> bool:
        """Whether this fxdesk runs background tasks (the window and ``fxdesk start`` do)."""
        return self._background is not None

    async def start_background(
        self,
        session_id: str,
        command: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        expect_url: bool = False,
        durable: bool = True,
        origin: Origin = Origin.PERSON,
    ) -> BackgroundTask:
        """Start ``command`` in the background for the session, in its sandbox.

        ``durable`` tasks keep running when fxdesk quits and are found again at the next
        start; the others stop at quit. Raises ``BackgroundError`` saying why (and whether the
        command ran at all)."""
        policy = LaunchPolicy.DURABLE if durable else LaunchPolicy.PROCESS_LOCAL
        return await self._tasks().launch(
            session_id, command, cwd=cwd, expect_url=expect_url, policy=policy, origin=origin
        )

    async def restart_background(
        self, ref: str, session_id: str | None = None
    ) -> tuple[StopOutcome | None, BackgroundTask]:
        """Stop a task if it runs, then start its command again in the same folder, with the
        same policy, under a new number. The stop's outcome (None when it was not running)."""
        runtime = self._tasks()
        old = runtime.task(ref, session_id)
        if old.read_only:
            raise BackgroundError(f"{old.ref} belongs to another fxdesk: restart it there")
        outcome = None
        if old.state.running:
            outcome = await runtime.stop(old.stable_id, old.session_id)
            if not outcome.result.ended:
                raise BackgroundError(f"{old.ref} could not be stopped: {outcome.message}")
        started = await runtime.launch(
            old.session_id,
            old.command,
            cwd=old.cwd,
            expect_url=old.url is not None or old.expect_url,
            policy=old.policy,
            origin=old.origin,
        )
        return outcome, started

    def background_tasks(self, session_id: str) -> list[BackgroundTask]:
        """The session's background tasks, oldest first."""
        return self._tasks().tasks(session_id)

    def workspace_background_tasks(self, workspace_id: int) -> list[BackgroundTask]:
        """Every session's tasks in a workspace (another fxdesk's are ``read_only``)."""
        return self._tasks().workspace_tasks(workspace_id)

    def all_background_tasks(self) -> list[BackgroundTask]:
        """Every task this fxdesk lists, of every session."""
        return self._tasks().all_tasks()

    def background_task(self, ref: str, session_id: str | None = None) -> BackgroundTask:
        """One task by ``#N`` (within ``session_id``) or stable id; ``TaskNotFound`` else."""
        return self._tasks().task(ref, session_id)

    async def stop_background(self, ref: str, session_id: str | None = None) -> StopOutcome:
        """Stop a task (SIGTERM to its group after an identity match, SIGKILL if it stays);
        the outcome's ``message`` says what happened."""
        return await self._tasks().stop(ref, session_id)

    async def background_log(self, ref: str, session_id: str | None = None) -> LogSummary:
        """The head and tail of a task's log (``LogNotAccessible`` when it cannot be read)."""
        return await self._tasks().log_summary(ref, session_id)

    def background_log_path(self, ref: str, session_id: str | None = None) -> Path:
        """The task's log file, for a view that follows it."""
        return self._tasks().log_path(ref, session_id)

    async def reusable_background(
        self, session_id: str, command: str, cwd: str | os.PathLike[str] | None = None
    ) -> BackgroundTask | None:
        """A running task of the same command in the same folder: use it, start nothing."""
        return await self._tasks().reusable(session_id, command, cwd)

    async def forget_workspace_background(self, workspace_id: int) -> ForgetResult:
        """Stop a workspace's running tasks and drop them from the list."""
        return await self._tasks().forget_workspace(workspace_id)

    async def look_background(self, *, include_ended: bool = False) -> list[BackgroundTask]:
        """Every recorded (durable) task of every session, judged now, for a process that only
        looks (``fxdesk ps``, ``fxdesk logs``): it needs no runtime, and adopts, marks and
        signals nothing (``background.listing``). With ``include_ended``, the ended ones too.
        Another fxdesk's process-local tasks have no record, so they are not among them."""
        return await listing.look(
            self._store,
            functools.partial(instance_alive, self._lock_dir),
            include_ended=include_ended,
        )

    async def person_session(
        self, folder: str | os.PathLike[str], given: str | None = None
    ) -> Session:
        """The session a person's own command runs under in ``folder``: ``given`` (an id or
        prefix, which must be of that workspace), else the workspace's open session named
        ``Commands``, created the first time (``PERSON_SESSION_NAME``).

        The person's commands get a session of their own rather than the newest agent
        session: their ``#N`` stay predictable (1, 2, 3 in the order started), and closing an
        agent's session never takes the person's dev server with it."""
        path = await asyncio.to_thread(validate_workspace, folder)
        if given is not None:
            session = await self.find_session(given)
            place = await self._workspace_folder(session.workspace_id)
            if place.resolve() != path:
                raise SessionError(f"session {session.id} is not of the workspace {path}")
            if session.state is SessionState.ARCHIVED:
                raise SessionError(f"session {session.id} is closed")
            return session
        catalog = await self._sessions.catalog(include_archived=False)
        workspace = next((w for w in catalog.workspaces if Path(w.path) == path), None)
        if workspace is not None:
            mine = [
                s
                for s in catalog.sessions
                if s.workspace_id == workspace.id
                and s.parent_id is None
                and s.name == PERSON_SESSION_NAME
                and s.state is not SessionState.ARCHIVED
            ]
            if mine:
                return max(mine, key=lambda s: s.created_at_ms)
        return await self._sessions.create_root(path, name=PERSON_SESSION_NAME)

    async def workspace_of(self, folder: str | os.PathLike[str]) -> Workspace:
        """The known workspace of ``folder``; ``InvalidWorkspace`` when it is not a folder, or
        no session was ever started there."""
        path = await asyncio.to_thread(validate_workspace, folder)
        for workspace in (await self._sessions.catalog()).workspaces:
            if Path(workspace.path) == path:
                return workspace
        raise InvalidWorkspace(f"{path} is not a workspace of fxdesk yet (no session there)")

    def background_quit_plan(self) -> tuple[list[BackgroundTask], list[BackgroundTask]]:
        """(stopped at quit, kept running): what the quit dialog tells the person."""
        if self._background is None:
            return [], []
        return self._background.quit_plan()

    async def background_usage(self, tasks: list[BackgroundTask]) -> dict[str, TaskUsage]:
        """CPU and memory of the running ``tasks``' process groups, keyed by stable id (read
        in a worker thread: it walks ``/proc``); a task whose PID was reused is left out."""
        requests = [
            UsageRequest(t.stable_id, t.pid, t.started_at_ms)
            for t in tasks
            if t.state.running and t.pid > 0
        ]
        if not requests:
            return {}
        return await asyncio.to_thread(self._usage.sample, requests)

    def _tasks(self) -> BackgroundRuntime:
        if self._background is None:
            raise RuntimeError("this fxdesk runs no background tasks (started without them)")
        return self._background

    def _running(self) -> SessionOwner:
        if self._owner is None:
            raise RuntimeError("this fxdesk runs no sessions (started without the engine)")
        return self._owner
