"""One turn's tool calls: the permission check, the approval, the effect and its record.

Each call is decided against the authority of that moment: the host's live authority, resolved
again for this action (a tool it no longer offers is ``unavailable``, spec §2.7, §6.1), and the
permission check (``PermissionService``: mode, saved rules, the host's rules and grants); an
*ask* parks the turn on a durable approval, and the answer is checked again against the
authority of the moment it arrives. A call that may run commits a ``started`` activity first,
then runs, then commits its result row together with the final activity (``succeeded`` or
``failed``).

**A decision holds for one authority generation.** The ``started`` commit checks, inside its
transaction, that the host's generation is still the one the call was decided under; if the host
revoked or granted anything meanwhile, nothing is written and the call is decided again (what
the person already allowed stays allowed; a revoked grant or tool no longer counts).

**Tool-activity repair (spec child-sessions §5.3).** The result of an effect that happened must
not be lost, nor reported as "outcome unknown" or "failed". A save of it that fails is retried a
few times (the write is idempotent: the result row is added only if the history lacks it, and
the activity has a stable id), unless the store cannot recover (corrupt, read-only, closed).
If it still cannot be saved, the turn pauses and this process keeps the result in memory
(``UnsavedResults``): resuming the turn writes it as it was, with its real phase, and tells the
model the real output; the tool never runs twice. Only a result that never reached the disk
before its process ended is, honestly, "outcome unknown" after a restart.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from fxdesk.domain import reasons
from fxdesk.domain.approvals import Approval, ApprovalStatus
from fxdesk.domain.authority import LiveAuthority, ToolDecision, tool_decision
from fxdesk.domain.conversation import (
    CANCELLED_BEFORE_RUN_RESULT,
    STOPPED_RESULT,
    UNKNOWN_OUTCOME_RESULT,
    HistoryEntry,
    ToolCall,
)
from fxdesk.domain.deliveries import Delivery, DeliveryKind, ToolPhase, tool_activity_id
from fxdesk.domain.live import LiveEvent
from fxdesk.domain.model import EntryKind, PermissionMode, WorkStatus
from fxdesk.engine.allowed import OUTSIDE_ONCE, Allowed, command_sandbox
from fxdesk.engine.authority import AuthorityResolver, SnapshotAuthority
from fxdesk.engine.bus import EventBus
from fxdesk.engine.cancel import Cancelled
from fxdesk.engine.clock import Clock
from fxdesk.engine.events import ToolOutput
from fxdesk.engine.permissions import Check, PermissionService, edit_preview
from fxdesk.engine.turn_state import StaleAuthority, TurnEnd, TurnRuntime, TurnStop, paused
from fxdesk.logs import redact
from fxdesk.paths import SANDBOX_TEMP
from fxdesk.store import StoreError, control
from fxdesk.store.errors import (
    CorruptDatabaseError,
    NewerSchemaError,
    NotADatabaseError,
    ReadOnlyError,
    StoreClosedError,
)
from fxdesk.tools.agents.port import AgentsPort
from fxdesk.tools.background.port import BackgroundPort
from fxdesk.tools.base import ToolContext, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

# Pauses before saving a tool's result again after a failure (seconds; the first try is at once).
RESULT_RETRY_S = (0.05, 0.2, 0.5)

# How often one call is decided again because the host's authority changed meanwhile, before
# it is refused: a host that changes faster than an action can start is not waited for.
MAX_DECISIONS = 8

# Store failures that waiting does not cure: retrying them only delays the pause.
_LASTING = (
    CorruptDatabaseError,
    NewerSchemaError,
    NotADatabaseError,
    ReadOnlyError,
    StoreClosedError,
)


class TurnSteps(Protocol):
    """What the turn loop gives its tool calls (``turn._Turn``)."""

    rt: TurnRuntime
    explanation: str

    def check(self) -> None: ...

    async def check_durable(self) -> None: ...

    def entry(self, kind: EntryKind, **fields: object) -> HistoryEntry: ...

    async def commit(
        self,
        rows: list[HistoryEntry],
        label: str,
        *,
        delivery: Delivery | None = None,
        valid: Callable[[], bool] | None = None,
    ) -> None: ...

    async def save(
        self,
        rows: list[HistoryEntry],
        label: str,
        *,
        delivery: Delivery | None = None,
        result_of: str | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class HeldResult:
    """A tool's result whose effect happened but whose save failed."""

    row: HistoryEntry
    phase: ToolPhase


@dataclass
class Asked:
    """What the person allowed for one call, kept across its decisions: the parts asked about
    (a decision made again asks only about new ones), and why it may run outside the sandbox
    ('' when it may not)."""

    parts: set[str] = field(default_factory=set)
    outside_sandbox: str = ""
    # The person already allowed what this call does (an external agent's permission request
    # for it, ``turn_acp``): where the check would ask, it runs; a deny still refuses, and a
    # protected path is still asked about.
    preallowed: bool = False


class UnsavedResults:
    """Results a turn could not save, kept by this process for its resume (bounded)."""

    def __init__(self, cap: int = 256) -> None:
        self._cap = cap
        self._held: collections.OrderedDict[tuple[str, str], HeldResult] = collections.OrderedDict()

    def hold(self, work_id: str, call_id: str, held: HeldResult) -> None:
        self._held[(work_id, call_id)] = held
        self._held.move_to_end((work_id, call_id))
        while len(self._held) > self._cap:  # the oldest: long cancelled or never resumed
            self._held.popitem(last=False)

    def take(self, work_id: str, call_id: str) -> HeldResult | None:
        return self._held.pop((work_id, call_id), None)

    def __len__(self) -> int:
        return len(self._held)


class ToolCalls:
    """Runs the tool calls of one turn.

    Args:
        turn: The turn's steps: its runtime, checks, rows and commits.
        tools: The registry the calls run from.
        permissions: The permission service (None: no checks, tools stay in the workspace).
        clock: Stamps activities.
        unsaved: This process's results that could not be saved yet.
        retry_s: Pauses between attempts to save a result.
        data_dir: fxdesk's data folder: hidden from commands; their /tmp is kept in it.
        background: The background runtime, for the background tools (None: none here).
        bus: Where a running command's output is published (None: nowhere).
        agents: The agent coordinator, for the delegation tools (None: no sub-agents).
    """

    def __init__(
        self,
        turn: TurnSteps,
        tools: ToolRegistry,
        permissions: PermissionService | None,
        clock: Clock,
        unsaved: UnsavedResults,
        retry_s: Sequence[float] = RESULT_RETRY_S,
        data_dir: Path | None = None,
        background: BackgroundPort | None = None,
        bus: EventBus | None = None,
        agents: AgentsPort | None = None,
    ) -> None:
        self.turn = turn
        self.agents = agents
        self.bus = bus
        self.data_dir = data_dir
        self.background = background
        self.rt = turn.rt
        self.tools = tools
        self.permissions = permissions
        self.clock = clock
        self.unsaved = unsaved
        self.retry_s = tuple(retry_s)
        self.authority: AuthorityResolver = self.rt.authority or SnapshotAuthority(self.rt.snapshot)

    def live(self) -> LiveAuthority:
        """The host's authority of this moment, for this turn's session."""
        return self.authority.resolve(self.rt.session, self.rt.snapshot.permission_mode)

    def offered(self) -> list[str]:
        """The tools a model call offers now: admitted with the turn and still available."""
        live = self.live()
        return [name for name in self.tools.names if live.available(name, self._admitted)]

    def _startable(self, generation: int) -> bool:
        """``_current``, and no cancel committed since the turn last looked (asked inside the
        transaction that starts the action). A cancel another process commits while this one
        is stopped between that look and the start (SIGSTOP, a long pause of the machine)
        wins here: the action never starts (found by ``test_concurrency.py``)."""
        status, _steer = control.item_status(self.rt.item.id)
        if status == WorkStatus.CANCELLED:
            raise TurnStop(TurnEnd.CANCELLED, reasons.CANCELLED)
        return self._current(generation)

    def _current(self, generation: int) -> bool:
        """Whether the host's authority is still at ``generation`` (asked on the writer
        thread, inside the transaction that starts the action)."""
        return self.authority.generation == generation

    @property
    def _admitted(self) -> tuple[str, ...]:
        return self.rt.snapshot.tool_names

    # --- running a call ----------------------------------------------------------------------

    async def run(self, call: ToolCall, asked: Asked | None = None) -> None:
        """Decide, (ask,) run and record one call the model made."""
        await self.turn.check_durable()
        asked = asked or Asked()  # what the person allowed for this call, kept across decisions
        for _ in range(MAX_DECISIONS):
            refusal, allowed, generation = await self._permit(call, asked)
            if refusal is not None:
                await self._record_refusal(call, refusal)
                return
            try:
                await self.turn.commit(
                    [],
                    "tool_started",
                    delivery=self._activity(call, ToolPhase.STARTED),
                    valid=functools.partial(self._startable, generation),
                )
            except StaleAuthority:
                log.info(
                    "turn of %s: authority changed; deciding %s again", self.rt.item.id, call.id
                )
                continue
            break
        else:
            await self._record_refusal(
                call, ToolResult.error("Not run: the host's authority kept changing.", denied=True)
            )
            return
        self._live_tool(call, ToolPhase.STARTED)
        rt = self.rt
        ctx = self._context(call, allowed)
        began = time.monotonic()  # a duration, not a timestamp: the clock that never jumps
        try:
            result = await rt.cancel.race(self.tools.invoke(call.name, call.arguments, ctx))
        except Cancelled:
            await self._record_cancelled(call, STOPPED_RESULT, began=began)
            raise TurnStop(TurnEnd.CANCELLED, rt.cancel.reason) from None
        except Exception as exc:  # a tool bug must not take the session down
            log.exception("tool %s crashed", call.name)
            result = ToolResult.error(f"the tool {call.name} failed: {type(exc).__name__}")
        # The one way a tool's output reaches history, and so the model and the transcript.
        # Off the loop: a command's output may be tens of MiB (~2.5 ms a MiB, bench/redaction).
        result = await asyncio.to_thread(redacted, result)
        phase = ToolPhase.SUCCEEDED if result.ok else ToolPhase.FAILED
        self._live_tool(call, phase)
        row = self.turn.entry(
            EntryKind.TOOL_RESULT,
            call_id=call.id,
            tool_name=call.name,
            content=result.output,
            full_text=result.full_output,
            data={"ok": result.ok, "duration_ms": int((time.monotonic() - began) * 1000)}
            | ({"data": result.data} if result.data else {}),
        )
        # The effect happened: its result is saved even when a cancel arrived meanwhile (the
        # history stays true; the cancel still wins over the item's outcome).
        await self._save_result(call, HeldResult(row, phase))
        self.turn.check()

    async def settle_started(self, call: ToolCall) -> None:
        """A call whose start was committed but whose result was not (found on resume).

        If this process still holds its result (the save failed), that result is written as it
        was: the repair. Otherwise nobody knows what it did: "outcome unknown", never re-run.
        """
        held = self.unsaved.take(self.rt.item.id, call.id)
        if held is not None:
            log.info("turn of %s: saving the held result of %s", self.rt.item.id, call.id)
            await self._save_result(call, held)
            return
        row = self.turn.entry(
            EntryKind.TOOL_RESULT,
            call_id=call.id,
            tool_name=call.name,
            content=UNKNOWN_OUTCOME_RESULT,
            data={"ok": False, "interrupted": True},
        )
        await self.turn.commit(
            [row], "tool_result", delivery=self._activity(call, ToolPhase.FAILED)
        )

    async def _save_result(self, call: ToolCall, held: HeldResult) -> None:
        """Save a result whose effect happened, retrying a failed save; if it cannot be saved,
        keep it for the resume and pause the turn."""
        work_id = self.rt.item.id
        failure: StoreError | None = None
        for delay in (0.0, *self.retry_s):
            if delay:
                await asyncio.sleep(delay)
            try:
                await self.turn.save(
                    [held.row],
                    "tool_result",
                    delivery=self._activity(call, held.phase),
                    result_of=call.id,
                )
                return
            except StoreError as exc:
                failure = exc
                log.warning("turn of %s could not save the result of %s: %s", work_id, call.id, exc)
                if isinstance(exc, _LASTING):
                    break
        assert failure is not None
        self.unsaved.hold(work_id, call.id, held)
        raise paused(failure)

    # --- deciding ------------------------------------------------------------------------------

    def _context(self, call: ToolCall, allowed: Allowed) -> ToolContext:
        """Where the call runs, and what its sandbox lets through: the writes it was allowed,
        the network as the check found it (outside auto mode, where the workspace gives it,
        or for a command that needs it once allowed), the workspace's writable paths and
        variables; or that it runs outside the sandbox, and why."""
        rt = self.rt
        data = self.data_dir
        if data is None and self.permissions is not None:  # one data folder, known to either
            data = self.permissions.data_dir
        return ToolContext(
            rt.workspace,
            rt.session.id,
            rt.item.id,
            call.id,
            allowed.outside,
            write_grants=allowed.writes,
            network=allowed.network,
            data_dir=data,
            temp_dir=None if data is None else data / SANDBOX_TEMP / rt.session.id,
            protected_ok=allowed.protected,
            extra_writable=allowed.sandbox.writable,
            extra_env=allowed.sandbox.extra_env,
            outside_sandbox=allowed.outside_sandbox,
            background=self.background,
            agents=self.agents,
            on_output=self._live_output(call),
        )

    async def _permit(self, call: ToolCall, asked: Asked) -> tuple[ToolResult | None, Allowed, int]:
        """Decide the call against the authority of this moment; ask the person when it says
        so. (a refusal for the model, or None to run it; what it was allowed; the authority
        generation the decision was made under). ``asked`` collects what the person allowed,
        so a decision made again does not ask the same again."""
        live = self.live()
        service = self.permissions
        none = Allowed()
        rt = self.rt
        mode = rt.snapshot.permission_mode
        if service is None:  # no checks: availability alone, in the sandbox
            if not live.available(call.name, self._admitted):
                return self._unavailable(call), none, live.generation
            return (
                None,
                Allowed(mode=mode, network=mode is not PermissionMode.AUTO),
                live.generation,
            )
        outside = protected = False
        writes: tuple[Path, ...] = ()
        while True:
            check = await service.check(
                rt.session,
                mode,
                rt.workspace,
                call.name,
                call.arguments,
                tools=self.tools,
                live=live,
            )
            outside = outside or check.outside
            writes = tuple(dict.fromkeys((*writes, *check.writes)))
            protected = protected or check.protected
            allowed = replace(
                Allowed.by_check(check, asked.outside_sandbox),
                outside=outside,
                writes=writes,
                protected=protected,
            )
            decision = tool_decision(live, call.name, self._admitted, check.decision.verdict)
            if decision == ToolDecision.UNAVAILABLE:
                return self._unavailable(call), none, live.generation
            if decision == ToolDecision.DENY:
                prefix = (
                    "Approved, but a rule added since denies it: "
                    if asked.parts
                    else "Not allowed: "
                )
                refusal = ToolResult.error(prefix + check.decision.reason, denied=True)
                return refusal, none, live.generation
            if decision == ToolDecision.ALLOW:
                return None, allowed, live.generation
            # Asking (again only when the rules changed so that something new needs an answer:
            # what the person already allowed stays allowed).
            new_parts = set(check.decision.uncovered) - asked.parts
            if (asked.parts and not new_parts) or (asked.preallowed and not check.protected):
                return None, allowed, live.generation
            widening = sorted(new_parts) if asked.parts else None
            answered = await self._ask(call, check, widening=widening)
            if answered.status == ApprovalStatus.DENIED:
                why = answered.resolution.get("reason")
                text = "The person denied this action" + (f": {why}" if why else ".")
                return ToolResult.error(text, denied=True), none, live.generation
            asked.parts |= set(check.decision.uncovered) or {check.label}
            if answered.unsandboxed:
                asked.outside_sandbox = OUTSIDE_ONCE
            # Check again against the authority of now: a tool revoked, or a deny added, while
            # the person was deciding wins.
            live = self.live()

    async def _ask(self, call: ToolCall, check: Check, widening: list[str] | None) -> Approval:
        """Raise the approval (or find it answered already), wait for the answer, and mark it
        used. Stops the turn when the work is cancelled or fxdesk shuts down meanwhile; pauses
        it when the store fails."""
        service = self.permissions
        assert service is not None
        rt = self.rt
        arguments = call.arguments
        if widening is not None:  # a distinct question: the same call, more access than before
            arguments = json.dumps({"call": call.arguments, "also": widening})
        # The context it would run in once allowed: for the tool's own dry run, and for a
        # command what its sandbox would let through.
        ctx = self._context(call, Allowed.by_check(check))
        try:
            approval = await service.ask(
                rt.session,
                rt.item.id,
                call.id,
                call.name,
                arguments,
                check,
                explanation=self.turn.explanation,
                preview=await edit_preview(call, ctx, self.tools),
                stopping=rt.stopping,
                sandbox=await command_sandbox(self.tools, call, ctx),
            )
        except StoreError as exc:
            if not exc.definite:  # it may have landed: the item may wait with nobody waiting
                await self._withdraw_ask()
            raise paused(exc) from None
        if approval is None:  # the item was cancelled or is no longer the active work
            raise TurnStop(TurnEnd.CANCELLED, rt.cancel.reason or reasons.CANCELLED)
        answered = approval
        if approval.pending:
            try:
                answered = await rt.cancel.race(service.wait(approval.id))
            except Cancelled:
                if rt.stopping():
                    raise TurnStop(TurnEnd.STOPPED) from None
                await self._record_cancelled(call, CANCELLED_BEFORE_RUN_RESULT)
                raise TurnStop(TurnEnd.CANCELLED, rt.cancel.reason) from None
            except StoreError as exc:  # looking for an answer given elsewhere failed
                await self._withdraw_ask()
                raise paused(exc) from None
        if not (answered.allowed or answered.status == ApprovalStatus.DENIED):
            raise TurnStop(TurnEnd.CANCELLED, rt.cancel.reason or reasons.CANCELLED)
        try:
            await service.consume(answered.id, stopping=rt.stopping)
        except StoreError as exc:
            # Not acted on: the answer stays unused, so resuming acts on it without asking
            # again (an indeterminate save that did land makes resuming ask again instead).
            raise paused(exc) from None
        return answered

    async def _withdraw_ask(self) -> None:
        """The turn stops waiting (it pauses): put the item back to running so the pause
        records it interrupted, not awaiting approval with nobody waiting (answering would then
        leave it running with no worker). Best effort: if this fails too, the item stays
        awaiting approval, and resume still continues it."""
        service = self.permissions
        assert service is not None
        try:
            await service.withdraw(self.rt.session, self.rt.item.id, stopping=self.rt.stopping)
        except StoreError as exc:
            log.warning("turn of %s: could not withdraw its ask: %s", self.rt.item.id, exc)

    # --- recording -----------------------------------------------------------------------------

    async def _record_refusal(self, call: ToolCall, result: ToolResult) -> None:
        """A denied call: its result tells the model why; nothing ran."""
        self._live_tool(call, ToolPhase.DENIED)
        row = self.turn.entry(
            EntryKind.TOOL_RESULT,
            call_id=call.id,
            tool_name=call.name,
            content=redact(result.output),
            data={"ok": False, "denied": True}
            | ({"unavailable": True} if result.data.get("unavailable") else {}),
        )
        self.turn.check()
        await self.turn.commit(
            [row], "tool_result", delivery=self._activity(call, ToolPhase.DENIED)
        )

    async def _record_cancelled(
        self, call: ToolCall, text: str, *, began: float | None = None
    ) -> None:
        """The person's cancel ended this call: say so in its result (a card that stays
        "running…" forever, and a model that cannot tell "stopped" from "never ran", are what
        this prevents). Best effort: if fxdesk is stopping or the store fails, the call stays
        without a result and the next resume settles it as "outcome unknown"."""
        data: dict[str, object] = {"ok": False, "cancelled": True}
        if began is None:
            data["not_run"] = True
        else:
            data["duration_ms"] = int((time.monotonic() - began) * 1000)
        phase = ToolPhase.FAILED
        self._live_tool(call, phase)
        row = self.turn.entry(
            EntryKind.TOOL_RESULT, call_id=call.id, tool_name=call.name, content=text, data=data
        )
        try:
            await self.turn.save(
                [row], "tool_result", delivery=self._activity(call, phase), result_of=call.id
            )
        except (StoreError, TurnStop) as exc:
            log.info("turn of %s: %s left without a result: %s", self.rt.item.id, call.id, exc)

    def _unavailable(self, call: ToolCall) -> ToolResult:
        """The refusal of a tool the host does not offer now, with the tool's own word on why
        (an MCP server that stopped and is being restarted)."""
        result = _unavailable(call)
        tool = self.tools.get(call.name)
        note = tool.unavailable_note(self.rt.workspace) if tool is not None else ""
        if not note:
            return result
        return replace(result, output=f"{result.output} {note}")

    def _live_output(self, call: ToolCall) -> Callable[[str], None] | None:
        """Publish what a running command prints (secrets masked) for the window's live view."""
        bus = self.bus
        if bus is None:
            return None
        session_id, work_id = self.rt.session.id, self.rt.item.id

        def tell(text: str) -> None:
            bus.publish(ToolOutput(session_id, work_id, call.id, redact(text)))

        return tell

    def _live_tool(self, call: ToolCall, phase: ToolPhase) -> None:
        live = self.rt.live
        if live is not None:
            live.append_tool(call.name, phase.value, call.id)
            live.append_event(
                LiveEvent(
                    "tool_finished" if phase != ToolPhase.STARTED else "tool_started",
                    call.name,
                    call.id,
                    call.arguments if phase == ToolPhase.STARTED else phase.value,
                )
            )

    def _activity(self, call: ToolCall, phase: ToolPhase) -> Delivery:
        session = self.rt.session
        return Delivery(
            id=tool_activity_id(session.id, self.rt.item.id, call.id, phase),
            session_id=session.id,
            target_id=session.root_id,
            kind=DeliveryKind.TOOL_ACTIVITY,
            payload={"tool": call.name, "phase": phase.value, "call_id": call.id},
            work_id=self.rt.item.id,
            created_at_ms=self.clock.now_ms(),
        )


def redacted(result: ToolResult) -> ToolResult:
    """``result`` with every registered secret masked (``logs.redact``) in its output, its
    full output and the strings of its data: what the model and the transcript may see.

    On the whole text, after the tool joined it: a key a command printed across two reads of
    its pipe is whole here, and one a cap cut in half is masked by its start or end piece."""
    full = redact(result.full_output) if result.full_output is not None else None
    return ToolResult(result.ok, redact(result.output), full, _redact_data(result.data))


def _redact_data(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redact_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_data(item) for item in value]
    return value


def _unavailable(call: ToolCall) -> ToolResult:
    return ToolResult.error(
        f"Not run: the tool {call.name!r} is not available to this session now.",
        denied=True,
        unavailable=True,
    )
