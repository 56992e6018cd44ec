"""One work item as one turn: model call → tool calls → model call … until a final answer.

The turn is persisted step by step. Each finished model response (with its tool calls) is one
commit; each tool call commits a ``started`` activity before it runs and its result (with the
final activity) after. The final answer, a ``turn_end`` row and the session's ``last_work_id`` are
the *history commit* that proves the turn finished.

Resuming an interrupted turn continues after the last committed step. A tool call whose start was
committed but whose result was not is reported to the model as "interrupted, outcome unknown" and
never run again; a call that never started runs normally.

If saving a step fails, or any other store failure meets the turn (reading its history, raising
or answering an approval), the turn stops (``PAUSED``): what was committed is consistent, and an
explicit resume carries on from there.

Once its session is stopped (closed, or the owner shutting down) the turn writes nothing more:
each write checks that inside its own transaction, so a write already queued when shutdown began
is refused too (spec §5.5).
"""

from __future__ import annotations

import enum
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.domain import reasons
from fxdesk.domain.approvals import Approval, ApprovalStatus
from fxdesk.domain.authority import AdmissionSnapshot
from fxdesk.domain.conversation import (
    UNKNOWN_OUTCOME_RESULT,
    HistoryEntry,
    ToolCall,
    build_messages,
    open_tool_calls,
)
from fxdesk.domain.deliveries import Delivery, DeliveryKind, ToolPhase, tool_activity_id
from fxdesk.domain.live import LiveEvent, LivePresentation
from fxdesk.domain.model import EntryKind, Profile, Session, WorkKind, WorkStatus
from fxdesk.domain.permissions import Verdict
from fxdesk.domain.work import Change, WorkItem, consume_steer
from fxdesk.engine.bus import EventBus
from fxdesk.engine.cancel import Cancelled, CancelToken
from fxdesk.engine.clock import Clock, SystemClock
from fxdesk.engine.errors import RegistryClosed
from fxdesk.engine.events import DeliveryAdded, HistoryAppended, TextStreamed, publish_change
from fxdesk.engine.permissions import Check, PermissionService, edit_preview
from fxdesk.providers.base import (
    ModelRequest,
    ModelResponse,
    Provider,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallStarted,
    ToolSpec,
    Usage,
    collect,
)
from fxdesk.store import Store, StoreError, control, history
from fxdesk.tools.base import ToolContext, ToolRegistry, ToolResult

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in the person's project folder through the tools you are "
    "given. Work step by step, use tools to inspect and change files, and finish with a short "
    "summary of what you did."
)


class TurnEnd(enum.StrEnum):
    COMPLETED = "completed"  # the history commit landed
    FAILED = "failed"  # provider failure, max iterations...
    PAUSED = "paused"  # a step could not be saved; resume continues
    CANCELLED = "cancelled"  # the cancel token was raised
    STOPPED = "stopped"  # the owner is shutting down: nothing more is written


@dataclass(frozen=True)
class TurnOutcome:
    end: TurnEnd
    diagnostic: str | None = None
    model_calls: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass
class TurnRuntime:
    """What one turn runs with; built fresh per work item, never shared."""

    session: Session
    workspace: Path
    item: WorkItem
    snapshot: AdmissionSnapshot
    provider: Provider
    cancel: CancelToken
    stopping: Callable[[], bool]
    live: LivePresentation | None = None
    profile: Profile | None = None  # for prices


class _Stop(Exception):
    def __init__(self, outcome: TurnEnd, diagnostic: str | None = None) -> None:
        super().__init__(outcome.value)
        self.end = outcome
        self.diagnostic = diagnostic


class _Stopping(Exception):
    """Raised inside a write transaction that found the turn stopped: nothing is written."""


def _paused(exc: StoreError) -> _Stop:
    return _Stop(TurnEnd.PAUSED, reasons.diagnostic(reasons.TURN_NOT_COMMITTED, exc.user_message))


class TurnRunner:
    """Runs turns against one store, tool registry and event bus."""

    def __init__(
        self,
        store: Store,
        tools: ToolRegistry,
        bus: EventBus,
        *,
        max_iterations: int = 25,
        max_history_turns: int = 8,
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        permissions: PermissionService | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.tools = tools
        self.bus = bus
        self.clock = clock or SystemClock()  # stamps history rows and deliveries
        # None: no permission checks (engine tests that are about something else); tools then
        # stay inside the workspace whatever they are asked.
        self.permissions = permissions
        self.max_iterations = max_iterations
        self.max_history_turns = max_history_turns
        self.system_prompt = system_prompt

    def close(self) -> None:
        """The owner is shutting down: release every turn waiting for an approval, and refuse
        new asks (spec §5.5 step 3). The turns themselves stop through their own flags."""
        if self.permissions is not None:
            self.permissions.close()

    async def run(self, rt: TurnRuntime) -> TurnOutcome:
        turn = _Turn(self, rt)
        try:
            return await turn.run()
        except _Stop as stop:
            return TurnOutcome(stop.end, stop.diagnostic, turn.model_calls, turn.usage)
        except (_Stopping, RegistryClosed):
            return TurnOutcome(TurnEnd.STOPPED, None, turn.model_calls, turn.usage)
        except StoreError as exc:
            # Wherever it came from (a read, a permission check, an answer's poll): the item
            # must not stay running with no worker. Paused, it is interrupted and resumable.
            log.warning("turn of %s met a store failure: %s", rt.item.id, exc)
            if rt.stopping():
                return TurnOutcome(TurnEnd.STOPPED, None, turn.model_calls, turn.usage)
            paused = _paused(exc)
            return TurnOutcome(paused.end, paused.diagnostic, turn.model_calls, turn.usage)


class _Turn:
    def __init__(self, runner: TurnRunner, rt: TurnRuntime) -> None:
        self.runner = runner
        self.rt = rt
        self.store = runner.store
        self.model_calls = 0
        self.explanation = ""  # the model's text before its tool calls, shown when asking
        self.usage = Usage()
        self.context: list[HistoryEntry] = []
        self.entries: list[HistoryEntry] = []
        self.step = 0

    # --- the loop ---------------------------------------------------------------------------

    async def run(self) -> TurnOutcome:
        session_id, work_id = self.rt.session.id, self.rt.item.id
        max_turns = self.runner.max_history_turns

        def load() -> tuple[list[HistoryEntry], list[HistoryEntry], set[str]]:
            context = [
                e for e in history.context_entries(session_id, max_turns) if e.work_id != work_id
            ]
            own = history.work_entries(work_id)
            started = {
                d.payload.get("call_id", "")
                for d in control.deliveries(
                    session_id=session_id, work_id=work_id, kind=DeliveryKind.TOOL_ACTIVITY
                )
                if d.payload.get("phase") == ToolPhase.STARTED.value
            }
            return context, own, started

        self.context, self.entries, started = await self.store.read(load)
        if any(e.kind == EntryKind.TURN_END for e in self.entries):
            return self._outcome(TurnEnd.COMPLETED)  # the history commit already landed
        self.step = max((e.step for e in self.entries), default=0)
        if not any(e.kind == EntryKind.USER for e in self.entries):
            await self._commit([self._entry(EntryKind.USER, content=self.rt.item.content)], "user")
        for call_entry in open_tool_calls(self.entries):
            call = ToolCall(
                call_entry.call_id or "", call_entry.tool_name or "", call_entry.content
            )
            if call.id in started:
                await self._record_unknown_outcome(call)
            else:
                await self._run_tool(call)
        while True:
            await self._check_durable(boundary=True)
            if self.model_calls >= self.runner.max_iterations:
                raise _Stop(
                    TurnEnd.FAILED,
                    reasons.diagnostic(
                        reasons.MAX_ITERATIONS,
                        f"{self.model_calls} model calls without a final answer",
                    ),
                )
            response = await self._call_model()
            self.step += 1
            self.explanation = response.text
            rows = [
                self._entry(
                    EntryKind.ASSISTANT,
                    content=response.text,
                    data=self._call_data(response),
                )
            ]
            rows += [
                self._entry(
                    EntryKind.TOOL_CALL, call_id=c.id, tool_name=c.name, content=c.arguments
                )
                for c in response.tool_calls
            ]
            if not response.tool_calls:
                rows.append(
                    self._entry(
                        EntryKind.TURN_END,
                        data=self._turn_data(),
                    )
                )
                await self._commit(rows, "history_commit", final=True)
                return self._outcome(TurnEnd.COMPLETED)
            await self._commit(rows, "model_response")
            for call in response.tool_calls:
                await self._run_tool(call)

    def _call_data(self, response: ModelResponse) -> dict[str, object]:
        used = response.usage
        data: dict[str, object] = {
            "finish_reason": response.finish_reason,
            "model": self.rt.snapshot.model,
            "usage": [used.input_tokens, used.output_tokens],
        }
        if self.rt.profile is not None:
            cost = self.rt.profile.cost_usd(used.input_tokens, used.output_tokens)
            if cost is not None:
                data["cost_usd"] = round(cost, 6)
        return data

    def _turn_data(self) -> dict[str, object]:
        data: dict[str, object] = {
            "model_calls": self.model_calls,
            "usage": [self.usage.input_tokens, self.usage.output_tokens],
        }
        if self.rt.profile is not None:
            cost = self.rt.profile.cost_usd(self.usage.input_tokens, self.usage.output_tokens)
            if cost is not None:
                data["cost_usd"] = round(cost, 6)
        return data

    def _outcome(self, end: TurnEnd) -> TurnOutcome:
        return TurnOutcome(end, None, self.model_calls, self.usage)

    def _check(self) -> None:
        if self.rt.stopping():
            raise _Stop(TurnEnd.STOPPED)
        if self.rt.cancel.cancelled:
            raise _Stop(TurnEnd.CANCELLED, self.rt.cancel.reason)

    async def _check_durable(self, *, boundary: bool = False) -> None:
        """``_check``, plus a cancel committed by another process, and, at a step boundary,
        steer messages to take into the turn."""
        self._check()
        work_id = self.rt.item.id
        status, steer = await self.store.read(lambda: control.item_status(work_id))
        if status == WorkStatus.CANCELLED:
            raise _Stop(TurnEnd.CANCELLED, "cancelled")
        if steer and boundary:
            await self._take_steers()

    async def _take_steers(self) -> None:
        """Deliver waiting steer messages into this turn, in one transaction each batch."""
        session_id, work_id, step = self.rt.session.id, self.rt.item.id, self.step
        now = self.runner.clock.now_ms()

        def write() -> tuple[list[HistoryEntry], list[Change]]:
            self._refuse_if_stopping()
            record = control.load_record(session_id)
            if record is None:
                return [], []
            steers = [
                i
                for i in record.items
                if i.kind == WorkKind.STEER and i.status == WorkStatus.PENDING
            ]
            rows = [
                HistoryEntry(
                    session_id=session_id,
                    seq=0,
                    kind=EntryKind.USER,
                    work_id=work_id,
                    step=step,
                    content=i.content,
                    data={"steer": True, "steer_id": i.id},
                    created_at_ms=now,
                )
                for i in steers
            ]
            stored = history.append_history(session_id, rows) if rows else []
            changes = []
            for i in steers:
                change = consume_steer(record, i.id, work_id, now)
                if change is not None:
                    control.save_change(change)
                    record = change.record
                    changes.append(change)
            return stored, changes

        try:
            stored, changes = await self.store.write(write, label="steer")
        except StoreError as exc:
            raise _paused(exc) from None
        self.entries.extend(stored)
        if stored:
            self.runner.bus.publish(HistoryAppended(session_id, tuple(stored)))
        for change in changes:
            publish_change(self.runner.bus, change)

    # --- model calls -------------------------------------------------------------------------

    async def _call_model(self) -> ModelResponse:
        tools = tuple(
            ToolSpec(t.name, t.description, t.parameters)
            for t in self.runner.tools
            if t.name in self.rt.snapshot.tool_names
        )
        request = ModelRequest(
            model=self.rt.snapshot.model,
            messages=tuple(build_messages(self.context + self.entries)),
            tools=tools,
            system=self.runner.system_prompt,
            effort=self.rt.snapshot.effort or (self.rt.profile.effort if self.rt.profile else None),
        )
        self.model_calls += 1
        live = self.rt.live
        bus, session_id, work_id = self.runner.bus, self.rt.session.id, self.rt.item.id

        def on_event(event: StreamEvent) -> None:
            if isinstance(event, TextDelta):
                bus.publish(TextStreamed(session_id, work_id, event.text))
            if live is None:
                return
            if isinstance(event, TextDelta):
                live.append_text(event.text)
            elif isinstance(event, ToolCallStarted):
                live.append_event(LiveEvent("tool_started", event.name, event.call_id))
            elif isinstance(event, Usage):
                live.append_event(LiveEvent("usage"))

        try:
            response = await self.rt.cancel.race(
                collect(self.rt.provider.stream(request), on_event)
            )
        except Cancelled:
            self._check()
            raise _Stop(TurnEnd.CANCELLED, self.rt.cancel.reason) from None
        except ProviderError as exc:
            self._check()
            raise _Stop(
                TurnEnd.FAILED, reasons.diagnostic(reasons.PROVIDER_FAILED, str(exc))
            ) from None
        self.usage = Usage(
            self.usage.input_tokens + response.usage.input_tokens,
            self.usage.output_tokens + response.usage.output_tokens,
        )
        self._check()
        if response.tool_calls:
            response.tool_calls = await self._unique_call_ids(response.tool_calls)
        return response

    async def _unique_call_ids(self, calls: list[ToolCall]) -> list[ToolCall]:
        """Tool-call ids must be unique in the session's history; some servers reuse
        ``call_0`` in every response. Replace empty, repeated or already-used ids."""
        session_id = self.rt.session.id
        ids = [call.id for call in calls if call.id]
        used = await self.store.read(lambda: history.existing_call_ids(session_id, ids))
        unique: list[ToolCall] = []
        for call in calls:
            if not call.id or call.id in used:
                call = ToolCall(f"call_fx{uuid.uuid4().hex[:20]}", call.name, call.arguments)
            used.add(call.id)
            unique.append(call)
        return unique

    # --- tools -------------------------------------------------------------------------------

    async def _permit(self, call: ToolCall) -> tuple[ToolResult | None, bool]:
        """Check the call against the authority of this moment; ask the person when the rules
        say so. (a refusal for the model, or None to run it; whether it may leave the
        workspace)."""
        service = self.runner.permissions
        if service is None:
            return None, False
        rt = self.rt
        mode = rt.snapshot.permission_mode
        check = await service.check(
            rt.session, mode, rt.workspace, call.name, call.arguments, tools=self.runner.tools
        )
        asked: set[str] = set()
        outside = check.outside
        while True:
            verdict = check.decision.verdict
            if verdict == Verdict.DENY:
                prefix = (
                    "Approved, but a rule added since denies it: " if asked else "Not allowed: "
                )
                return ToolResult.error(prefix + check.decision.reason, denied=True), False
            if verdict == Verdict.ALLOW:
                return None, outside or check.outside
            # Asking (again only when the rules changed so that something new needs an answer:
            # what the person already allowed stays allowed).
            new_parts = set(check.decision.uncovered) - asked
            if asked and not new_parts:
                return None, outside or check.outside
            answered = await self._ask(call, check, widening=sorted(new_parts) if asked else None)
            if answered.status == ApprovalStatus.DENIED:
                why = answered.resolution.get("reason")
                text = "The person denied this action" + (f": {why}" if why else ".")
                return ToolResult.error(text, denied=True), False
            asked |= set(check.decision.uncovered) or {check.label}
            outside = outside or check.outside
            # Re-check against the rules of now: a deny added while the person was deciding wins.
            check = await service.check(
                rt.session, mode, rt.workspace, call.name, call.arguments, tools=self.runner.tools
            )

    async def _ask(self, call: ToolCall, check: Check, widening: list[str] | None) -> Approval:
        """Raise the approval (or find it answered already), wait for the answer, and mark it
        used. Stops the turn when the work is cancelled or fxdesk shuts down meanwhile."""
        service = self.runner.permissions
        assert service is not None
        rt = self.rt
        arguments = call.arguments
        if widening is not None:  # a distinct question: the same call, more access than before
            arguments = json.dumps({"call": call.arguments, "also": widening})
        try:
            approval = await service.ask(
                rt.session,
                rt.item.id,
                call.id,
                call.name,
                arguments,
                check,
                explanation=self.explanation,
                # The tool's own dry run, in the context it would run in once allowed.
                preview=await edit_preview(
                    call,
                    ToolContext(rt.workspace, rt.session.id, rt.item.id, call.id, check.outside),
                    self.runner.tools,
                ),
                stopping=rt.stopping,
            )
        except StoreError as exc:
            if not exc.definite:  # it may have landed: the item may wait with nobody waiting
                await self._withdraw_ask()
            raise _paused(exc) from None
        if approval is None:  # the item was cancelled or is no longer the active work
            raise _Stop(TurnEnd.CANCELLED, rt.cancel.reason or reasons.CANCELLED)
        answered = approval
        if approval.pending:
            try:
                answered = await rt.cancel.race(service.wait(approval.id))
            except Cancelled:
                if rt.stopping():
                    raise _Stop(TurnEnd.STOPPED) from None
                raise _Stop(TurnEnd.CANCELLED, rt.cancel.reason) from None
        if not (answered.allowed or answered.status == ApprovalStatus.DENIED):
            raise _Stop(TurnEnd.CANCELLED, rt.cancel.reason or reasons.CANCELLED)
        try:
            await service.consume(answered.id, stopping=rt.stopping)
        except StoreError as exc:
            # Not acted on: the answer stays unused, so resuming acts on it without asking
            # again (an indeterminate save that did land makes resuming ask again instead).
            raise _paused(exc) from None
        return answered

    async def _withdraw_ask(self) -> None:
        """Best effort: put the item back to running so the pause records it interrupted. If
        this fails too, the item stays awaiting approval, and resume still continues it."""
        service = self.runner.permissions
        assert service is not None
        try:
            await service.withdraw(self.rt.session, self.rt.item.id, stopping=self.rt.stopping)
        except StoreError as exc:
            log.warning("turn of %s: could not withdraw its ask: %s", self.rt.item.id, exc)

    async def _run_tool(self, call: ToolCall) -> None:
        await self._check_durable()
        refusal, outside_ok = await self._permit(call)
        if refusal is not None:
            await self._record_refusal(call, refusal)
            return
        self._live_tool(call, ToolPhase.STARTED)
        await self._commit([], "tool_started", delivery=self._activity(call, ToolPhase.STARTED))
        ctx = ToolContext(
            self.rt.workspace, self.rt.session.id, self.rt.item.id, call.id, outside_ok
        )
        began = time.monotonic()  # a duration, not a timestamp: the clock that never jumps
        if call.name not in self.rt.snapshot.tool_names:
            result = ToolResult.error(f"the tool {call.name!r} is not available to this session")
        else:
            try:
                result = await self.rt.cancel.race(
                    self.runner.tools.invoke(call.name, call.arguments, ctx)
                )
            except Cancelled:
                raise _Stop(TurnEnd.CANCELLED, self.rt.cancel.reason) from None
            except Exception as exc:  # a tool bug must not take the session down
                log.exception("tool %s crashed", call.name)
                result = ToolResult.error(f"the tool {call.name} failed: {type(exc).__name__}")
        phase = ToolPhase.SUCCEEDED if result.ok else ToolPhase.FAILED
        self._live_tool(call, phase)
        row = self._entry(
            EntryKind.TOOL_RESULT,
            call_id=call.id,
            tool_name=call.name,
            content=result.output,
            full_text=result.full_output,
            data={"ok": result.ok, "duration_ms": int((time.monotonic() - began) * 1000)}
            | ({"data": result.data} if result.data else {}),
        )
        self._check()
        await self._commit([row], "tool_result", delivery=self._activity(call, phase))

    async def _record_refusal(self, call: ToolCall, result: ToolResult) -> None:
        """A denied call: its result tells the model why; nothing ran."""
        self._live_tool(call, ToolPhase.DENIED)
        row = self._entry(
            EntryKind.TOOL_RESULT,
            call_id=call.id,
            tool_name=call.name,
            content=result.output,
            data={"ok": False, "denied": True},
        )
        self._check()
        await self._commit([row], "tool_result", delivery=self._activity(call, ToolPhase.DENIED))

    async def _record_unknown_outcome(self, call: ToolCall) -> None:
        row = self._entry(
            EntryKind.TOOL_RESULT,
            call_id=call.id,
            tool_name=call.name,
            content=UNKNOWN_OUTCOME_RESULT,
            data={"ok": False, "interrupted": True},
        )
        await self._commit([row], "tool_result", delivery=self._activity(call, ToolPhase.FAILED))

    def _live_tool(self, call: ToolCall, phase: ToolPhase) -> None:
        if self.rt.live is not None:
            self.rt.live.append_tool(call.name, phase.value, call.id)
            self.rt.live.append_event(
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
            created_at_ms=self.runner.clock.now_ms(),
        )

    # --- persistence -------------------------------------------------------------------------

    def _refuse_if_stopping(self) -> None:
        """Called first inside every write of the turn, on the writer thread: once the turn is
        stopped nothing more is written, even a write queued before the flag flipped."""
        if self.rt.stopping():
            raise _Stopping()

    def _entry(self, kind: EntryKind, **fields: object) -> HistoryEntry:
        return HistoryEntry(
            session_id=self.rt.session.id,
            seq=0,
            kind=kind,
            work_id=self.rt.item.id,
            step=self.step,
            created_at_ms=self.runner.clock.now_ms(),
            **fields,  # type: ignore[arg-type]
        )

    async def _commit(
        self,
        rows: list[HistoryEntry],
        label: str,
        *,
        delivery: Delivery | None = None,
        final: bool = False,
    ) -> None:
        """Save one step; on failure stop the turn (PAUSED), never guess what landed."""
        if self.rt.stopping():
            raise _Stop(TurnEnd.STOPPED)
        session_id, work_id = self.rt.session.id, self.rt.item.id

        def write() -> tuple[list[HistoryEntry], bool]:
            self._refuse_if_stopping()
            stored = history.append_history(session_id, rows) if rows else []
            added = control.append_delivery(delivery) if delivery is not None else False
            if final:
                control.set_last_work_id(session_id, work_id)
            return stored, added

        try:
            stored, added = await self.store.write(write, label=label)
        except StoreError as exc:
            log.warning("turn of %s could not save %s: %s", work_id, label, exc)
            raise _paused(exc) from None
        self.entries.extend(stored)
        if stored:
            self.runner.bus.publish(HistoryAppended(session_id, tuple(stored)))
        if added and delivery is not None:
            self.runner.bus.publish(DeliveryAdded(delivery))
