"""Permission checks for every tool action, and the approvals the person answers.

``check`` decides allow / ask / deny for one tool call against the authority of that moment: the
work item's permission mode (from its admission snapshot, never more than any ancestor's current
mode) and the rules as stored now (re-read for every action, so a rule added or removed mid-turn
applies at the next action). What a call touches is the tool's own declaration (``ToolFacts``:
read, write or execute, and which argument is the path or the command); its path is resolved as
the tool resolves it (``tools.workspace``), symlinks followed, before the pure decision in
``domain.permissions`` sees it (``engine/call_facts.py``), with what a command will run in: the
sandbox if this machine has one (``sandbox_status``) and the workspace's network setting. Then
``path_guard`` denies hidden paths and asks before writes to protected ones
(``tools/protected.py``). The ``Check`` also says what the call gets once allowed: the paths it
may write, the network, and whether it runs outside the sandbox (unrestricted mode; a session
in it runs as yolo while ``UNRESTRICTED_SETTING`` is off). ``edit_preview`` is the tool's own
dry run, so the change the person is shown is the change the tool makes (or the refusal it
gives), redacted of registered secrets like every tool output.

``ask`` raises a durable approval: the approval row and the work item's move to
``awaiting_approval`` commit together. ``wait`` returns when it is answered: in this process
(``resolve`` wakes it at once) or by another one (``fxdesk approve``; seen by polling).

``close`` is the registry's part of the owner's shutdown (spec §5.5 step 3): every blocked wait
is released, and from then on ``ask``, ``wait``, ``resolve`` and ``consume`` refuse with
``RegistryClosed`` and write nothing. The refusal is decided inside the write transaction
itself, so an ask already on its way to the writer when shutdown begins writes nothing either.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxdesk import messages
from fxdesk.domain import permissions as perms
from fxdesk.domain import work as reducers
from fxdesk.domain.approvals import (
    CHOICE_STATUS,
    Approval,
    ApprovalNotPending,
    Choice,
    ChoiceNotOffered,
    SandboxSummary,
)
from fxdesk.domain.authority import LiveAuthority
from fxdesk.domain.model import PermissionMode, Session
from fxdesk.domain.permissions import (
    Access,
    Confinement,
    Decision,
    Match,
    PermissionRule,
    Request,
    Scope,
    Verdict,
)
from fxdesk.domain.sandbox_settings import DEFAULTS, WorkspaceSandbox
from fxdesk.domain.work import Change, WaitTransition
from fxdesk.engine.bus import EventBus
from fxdesk.engine.call_facts import edit_preview as edit_preview
from fxdesk.engine.call_facts import known_tools, leaves, parse_arguments, understand
from fxdesk.engine.clock import Clock
from fxdesk.engine.errors import RegistryClosed
from fxdesk.engine.events import ApprovalChanged, RulesChanged, publish_change
from fxdesk.engine.path_guard import guard
from fxdesk.store import Store, approvals, control, repo
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.protected import PathPolicy
from fxdesk.tools.sandbox_probe import sandbox_status

log = logging.getLogger(__name__)

POLL_S = 1.0  # how often a waiting turn looks for an answer given by another process


@dataclass(frozen=True)
class Check:
    """One tool call, understood and decided."""

    decision: Decision
    label: str  # what the person is asked about: the exact command, or the path(s)
    outside: bool  # it reaches outside the workspace (the tool must be told it may)
    detail: dict[str, Any]  # for the approval: reason, parts not yet allowed, targets
    # What the call writes (resolved): once allowed, the sandbox lets the command write there.
    writes: tuple[Path, ...] = ()
    mode: PermissionMode | None = None  # the mode it was judged in (ancestors' included)
    protected: bool = False  # it writes a protected path (the tool must be told it may)
    sandbox: WorkspaceSandbox = DEFAULTS  # the workspace's sandbox settings, read now
    # Once allowed, a command runs with the network: outside auto mode, where the workspace
    # gives it, or for a command that needs it (asked about, or named by an allow rule).
    network: bool = False
    outside_sandbox: str = ""  # why it runs outside the sandbox ('' for in it)


class PermissionService:
    """Decides tool calls and keeps the approvals.

    Args:
        store: Rules, sessions and approvals.
        bus: Where approval and rule changes are published.
        clock: Stamps approvals.
        data_dir: fxdesk's data folder: hidden from the agent like ~/.ssh (None: unknown, as
            in tests of something else).
    """

    def __init__(
        self, store: Store, bus: EventBus, clock: Clock, *, data_dir: Path | None = None
    ) -> None:
        self.store = store
        self.bus = bus
        self.clock = clock
        self.data_dir = data_dir
        self._answers: dict[str, asyncio.Future[Approval]] = {}
        self._closed = False
        self._told_unrestricted_off: set[str] = set()

    # --- the registry's life ------------------------------------------------------------------

    def close(self) -> None:
        """Shutdown: release every blocked wait with ``RegistryClosed``; refuse from now on.

        Writes nothing: what was pending stays pending for restart recovery to settle."""
        self._closed = True
        for future in self._answers.values():
            if not future.done():
                future.set_exception(_closed())

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def routes(self) -> int:
        """How many turns of this process wait for an answer right now."""
        return sum(1 for future in self._answers.values() if not future.done())

    def _refuse_if_closed(self, stopping: Callable[[], bool] | None = None) -> None:
        """Raise ``RegistryClosed`` once shutdown began (checked again inside each write:
        the flag flips on the loop thread while a write may already wait for the writer)."""
        if self._closed or (stopping is not None and stopping()):
            raise _closed()

    # --- deciding ------------------------------------------------------------------------------

    async def check(
        self,
        session: Session,
        mode: PermissionMode,
        workspace: Path,
        tool: str,
        arguments: str,
        *,
        tools: ToolRegistry,
        live: LiveAuthority | None = None,
    ) -> Check:
        """Decide one tool call now (rules re-read, ancestors' modes re-read).

        Args:
            session: The session the call belongs to.
            mode: The work item's permission mode (from its admission snapshot).
            workspace: The session's workspace.
            tool: The tool's name as the model called it.
            arguments: The call's arguments (JSON text as the model sent it).
            tools: The registry the call will run from: the tool there says what the call
                touches, and what every tool there declares decides which tools a path rule
                covers (all of the same access) and which are always allowed (those touching
                nothing). A name it does not know is judged by its name alone: rules and mode.
            live: The host's authority of this moment: its rules and grants count with the
                saved rules (whether the tool is available at all is the caller's question).
        """

        def read() -> tuple[PermissionMode, list[PermissionRule], WorkspaceSandbox, bool]:
            effective = mode
            current = repo.get_session(session.id)
            parent_id = current.parent_id if current else session.parent_id
            seen = 0
            while parent_id is not None and seen < 1000:  # a child never outranks its parents
                parent = repo.get_session(parent_id)
                if parent is None:
                    break
                effective = perms.stricter(effective, parent.permission_mode)
                parent_id, seen = parent.parent_id, seen + 1
            rules = approvals.rules_for(session.id, session.workspace_id)
            sandbox = repo.get_workspace_sandbox(session.workspace_id)
            return effective, rules, sandbox, repo.unrestricted_enabled()

        effective, rules, sandbox, unrestricted = await self.store.read(read)
        if effective is PermissionMode.UNRESTRICTED and not unrestricted:
            effective = PermissionMode.YOLO  # still sandboxed: the person turned it off
            self._say_unrestricted_is_off(session)
        if live is not None:
            rules = [*rules, *live.permission_rules(session.id)]

        def read_call() -> tuple[Request, str, dict[str, str], PathPolicy]:
            status = sandbox_status()  # probed once per process
            confinement = Confinement(status.available, sandbox.network, status.reason)
            request, label, why = understand(
                tools.get(tool), tool, arguments, workspace, known_tools(tools), confinement
            )
            return request, label, why, PathPolicy.make(workspace, Path.home(), self.data_dir)

        request, label, why, paths = await asyncio.to_thread(read_call)
        decision, protected = guard(
            perms.decide(effective, rules, request), request, effective, paths, rules, why
        )
        outside = any(not t.inside for t in request.targets) or leaves(request)
        detail: dict[str, Any] = {
            "reason": decision.reason,
            "uncovered": list(decision.uncovered),
            "mode": effective.value,
            "targets": [t.path for t in request.targets],
            "outside": outside,
        }
        if protected:
            detail["protected"] = True
        if request.command is not None:  # run_command, start_background: judged as a command
            detail["command"] = True
        if decision.network:
            detail["network"] = list(decision.network)
        if live is not None:
            detail["generation"] = live.generation
        writes = tuple(Path(t.path) for t in request.targets if t.access is Access.WRITE)
        network = effective is not PermissionMode.AUTO or sandbox.network or bool(decision.network)
        unsandboxed = "unrestricted mode" if effective is PermissionMode.UNRESTRICTED else ""
        return Check(
            decision,
            label,
            outside,
            detail,
            writes,
            effective,
            protected,
            sandbox,
            network,
            unsandboxed,
        )

    def _say_unrestricted_is_off(self, session: Session) -> None:
        """Once per session and process: its unrestricted mode runs as yolo, sandboxed."""
        if session.id in self._told_unrestricted_off:
            return
        self._told_unrestricted_off.add(session.id)
        messages.warning(
            f"Session “{session.name}” is in unrestricted mode, which is turned off in "
            "Settings → General: it runs as yolo, in the sandbox.",
            key=f"unrestricted-off:{session.id}",
        )

    # --- asking ----------------------------------------------------------------------------

    async def ask(
        self,
        session: Session,
        work_id: str,
        call_id: str,
        tool: str,
        arguments: str,
        check: Check,
        explanation: str = "",
        preview: str = "",
        stopping: Callable[[], bool] | None = None,
        sandbox: SandboxSummary | None = None,
    ) -> Approval | None:
        """Raise (or find again) the approval for this call, and move the work item to
        ``awaiting_approval``, in one transaction. None when the item no longer runs.

        ``stopping`` says whether the asking turn is being stopped (its session closed or the
        owner shutting down): then, like after ``close``, ``RegistryClosed`` and nothing is
        written, even when the write was already queued. ``sandbox`` (commands): what it
        would run with if allowed, shown with the question."""
        self._refuse_if_closed(stopping)
        fingerprint = perms.fingerprint(tool, arguments)
        now = self.clock.now_ms()
        detail = dict(
            check.detail, arguments=parse_arguments(arguments), workspace_id=session.workspace_id
        )
        if preview:
            detail["preview"] = preview
        if sandbox is not None:
            detail["sandbox"] = sandbox.to_detail()
        wanted = Approval(
            id=perms.approval_id(session.id, work_id, fingerprint),
            session_id=session.id,
            root_id=session.root_id,
            work_id=work_id,
            call_id=call_id,
            fingerprint=fingerprint,
            tool=tool,
            label=check.label,
            explanation=explanation.strip()[-2000:],
            detail=detail,
            created_at_ms=now,
        )

        def write() -> tuple[Approval | None, Change | None, Session | None]:
            self._refuse_if_closed(stopping)
            record = control.load_record(session.id)
            if record is None:
                return None, None, None
            transition, change = reducers.set_awaiting_approval(record, work_id, now)
            if transition in (WaitTransition.STALE_WORK, WaitTransition.CANCELLATION_WON):
                return None, None, None
            stored = approvals.register(wanted)
            if not stored.pending:  # answered already: nothing to wait for
                return stored, None, None
            if change is not None:
                control.save_change(change)
            return stored, change, repo.get_session(session.id) if change else None

        stored, change, after = await self.store.write(write, label="approval")
        publish_change(self.bus, change, after)
        if stored is not None:
            self.bus.publish(ApprovalChanged(stored))
        return stored

    async def wait(self, approval_id: str) -> Approval:
        """The approval once it is no longer pending (answered here or by another process).
        ``RegistryClosed`` when shutdown releases the wait."""
        self._refuse_if_closed()
        future = self._answers.get(approval_id)
        if future is None or future.done():
            future = self._answers[approval_id] = asyncio.get_running_loop().create_future()
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(future), POLL_S)
                except TimeoutError:
                    current = await self.store.read(lambda: approvals.get_approval(approval_id))
                    if current is None or not current.pending:
                        assert current is not None, f"approval {approval_id} disappeared"
                        return current
        finally:
            if self._answers.get(approval_id) is future:
                del self._answers[approval_id]

    async def resolve(
        self,
        approval_id: str,
        choice: Choice,
        *,
        reason: str = "",
        rules: list[PermissionRule] | None = None,
        by: str = "",
    ) -> Approval:
        """Answer a pending approval (``by``: where the person answered, "the window" or
        "the command line", kept with the answer and shown with the call). ``session`` and
        ``always`` also store rules: ``rules`` as the person edited them, else the exact parts
        asked about. ``unsandboxed`` lets that one command run outside the sandbox
        (``ChoiceNotOffered`` unless it would run in it).
        The work item goes back to running in the same transaction. ``ApprovalNotPending`` when
        it was already answered, cancelled or went stale; ``RegistryClosed`` after shutdown
        began (nothing written)."""
        self._refuse_if_closed()
        now = self.clock.now_ms()

        def write() -> tuple[Approval, Change | None, Session | None, bool]:
            self._refuse_if_closed()
            current = approvals.get_approval(approval_id)
            if current is None or not current.pending:
                raise ApprovalNotPending(approval_id, current.status if current else None)
            if choice is Choice.ONCE_UNSANDBOXED and not current.offers_outside:
                raise ChoiceNotOffered(approval_id, choice)
            resolution: dict[str, Any] = {"choice": choice.value}
            if by:
                resolution["by"] = by[:40]
            if choice is Choice.ONCE_UNSANDBOXED:
                resolution["unsandboxed"] = True  # the status stays allowed_once
            if reason:
                resolution["reason"] = reason[:2000]
            made: list[PermissionRule] = []
            if choice in (Choice.SESSION, Choice.ALWAYS):
                wanted = rules if rules is not None else suggested_rules(current, choice)
                made = [approvals.add_rule(rule, now) for rule in wanted]
                resolution["rules"] = [rule.id for rule in made]
            answered = approvals.answer(approval_id, CHOICE_STATUS[choice], resolution, now)
            change = None
            record = control.load_record(current.session_id)
            if record is not None:
                _, change = reducers.resume_from_approval(record, current.work_id, now)
                if change is not None:
                    control.save_change(change)
            session = repo.get_session(current.session_id) if change else None
            return answered, change, session, bool(made)

        answered, change, after, rules_added = await self.store.write(write, label="approve")
        publish_change(self.bus, change, after)
        self.bus.publish(ApprovalChanged(answered))
        if rules_added:
            self.bus.publish(RulesChanged())
        future = self._answers.get(approval_id)
        if future is not None and not future.done():
            future.set_result(answered)
        return answered

    async def consume(self, approval_id: str, stopping: Callable[[], bool] | None = None) -> None:
        """The turn acts on the answer now: the same request asks again next time."""
        self._refuse_if_closed(stopping)
        now = self.clock.now_ms()

        def write() -> None:
            self._refuse_if_closed(stopping)
            approvals.consume(approval_id, now)

        await self.store.write(write, label="approval")

    async def withdraw(
        self, session: Session, work_id: str, stopping: Callable[[], bool] | None = None
    ) -> None:
        """After an ask whose save may have landed (an indeterminate failure): the turn will
        not wait, so its item goes back to ``running`` (spec §6.2 step 4) and the turn's pause
        can record it ``interrupted``; resuming finds the approval again by its stable id."""
        self._refuse_if_closed(stopping)
        now = self.clock.now_ms()

        def write() -> tuple[Change | None, Session | None]:
            self._refuse_if_closed(stopping)
            record = control.load_record(session.id)
            if record is None:
                return None, None
            _, change = reducers.resume_from_approval(record, work_id, now)
            if change is None:
                return None, None
            control.save_change(change)
            return change, repo.get_session(session.id)

        change, after = await self.store.write(write, label="approval_withdraw")
        publish_change(self.bus, change, after)

    def cancelled(self, approval_ids: list[str]) -> None:
        """After a committed cancel: tell views (the turn itself stops through its token)."""
        for approval_id in approval_ids:
            future = self._answers.pop(approval_id, None)
            if future is not None and not future.done():
                future.cancel()

    async def reconcile(self) -> tuple[list[str], list[str]]:
        """After start-up recovery: approvals of interrupted work go stale, of finished or
        cancelled work are cancelled (spec §6.4)."""
        now = self.clock.now_ms()
        stale, cancelled = await self.store.write(
            lambda: approvals.reconcile(now), label="approvals_reconcile"
        )
        if stale or cancelled:
            log.info("approvals: %d stale, %d cancelled after restart", len(stale), len(cancelled))
        return stale, cancelled

    # --- reading -------------------------------------------------------------------------------

    async def pending(self, session_id: str | None = None) -> list[Approval]:
        return await self.store.read(lambda: approvals.pending_approvals(session_id))

    async def get(self, approval_id: str) -> Approval | None:
        return await self.store.read(lambda: approvals.get_approval(approval_id))

    async def find(self, prefix: str) -> Approval | None:
        """An approval by its id or a unique prefix of it (as the CLI shows them)."""
        found = await self.store.read(lambda: approvals.find_approvals(prefix.lower()))
        return found[0] if len(found) == 1 else None

    async def counts(self) -> dict[str, int]:
        return await self.store.read(approvals.pending_counts)

    # --- rules ---------------------------------------------------------------------------------

    async def rules(self, scope: Scope | None = None) -> list[PermissionRule]:
        return await self.store.read(lambda: approvals.list_rules(scope))

    async def add_rule(self, rule: PermissionRule, note: str = "") -> PermissionRule:
        now = self.clock.now_ms()
        stored = await self.store.write(lambda: approvals.add_rule(rule, now, note), label="rule")
        self.bus.publish(RulesChanged())
        return stored

    async def remove_rule(self, rule_id: int) -> bool:
        removed = await self.store.write(lambda: approvals.remove_rule(rule_id), label="rule")
        if removed:
            self.bus.publish(RulesChanged())
        return removed


def _closed() -> RegistryClosed:
    return RegistryClosed("the approval registry is closed: fxdesk is shutting down")


def suggested_rules(approval: Approval, choice: Choice) -> list[PermissionRule]:
    """The rules "allow for this session" / "always allow" store unless the person edits them:
    exactly what was asked about, nothing broader."""
    scope = Scope.SESSION if choice == Choice.SESSION else Scope.WORKSPACE
    key = (
        approval.session_id
        if scope == Scope.SESSION
        else str(approval.detail.get("workspace_id", ""))
    )
    if approval.runs_command:  # a command rule: it covers the line whichever tool runs it
        parts = [p for p in approval.detail.get("uncovered", []) if not _is_effect(p)]
        patterns = parts or [approval.label]
        return [
            PermissionRule("run_command", p, Verdict.ALLOW, scope, Match.EXACT, scope_key=key)
            for p in patterns
        ]
    return [
        PermissionRule(approval.tool, path, Verdict.ALLOW, scope, Match.GLOB, scope_key=key)
        for path in approval.detail.get("targets", []) or [approval.label]
    ]


def _is_effect(part: str) -> bool:
    """Uncovered entries that are not commands ("writes PATH", "reads PATH", "cd PATH"): a
    command rule cannot allow them; they are asked about each time outside yolo mode."""
    return part.startswith(("writes ", "reads ", "cd ", "pushd "))
