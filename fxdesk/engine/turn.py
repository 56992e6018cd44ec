"""One work item as one turn: model call → tool calls → model call … until a final answer.

The turn is persisted step by step. Each finished model response (with its tool calls) is one
commit; each tool call commits a ``started`` activity before it runs and its result (with the
final activity) after. The final answer, a ``turn_end`` row and the session's ``last_work_id`` are
the *history commit* that proves the turn finished.

Resuming an interrupted turn continues after the last committed step. A tool call whose start was
committed but whose result was not is never run again: its result is the one this process kept
when saving it failed (the repair, ``turn_tools``), else "interrupted, outcome unknown"; a call
that never started runs normally. Tool calls themselves run in ``turn_tools``.

If saving a step fails, or any other store failure meets the turn (reading its history, raising
or answering an approval), the turn stops (``PAUSED``): what was committed is consistent, and an
explicit resume carries on from there.

Once its session is stopped (closed, or the owner shutting down) the turn writes nothing more:
each write checks that inside its own transaction, so a write already queued when shutdown began
is refused too (spec §5.5).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from fxdesk.domain import reasons
from fxdesk.domain.conversation import HistoryEntry, ToolCall, build_messages, open_tool_calls
from fxdesk.domain.deliveries import Delivery, DeliveryKind, ToolPhase
from fxdesk.domain.images import ImageAttachment, refs_of
from fxdesk.domain.live import LiveEvent
from fxdesk.domain.model import EntryKind, Session, WorkKind, WorkStatus
from fxdesk.domain.work import Change, WorkItem, consume_steer
from fxdesk.engine.acp_agents import AcpAgents
from fxdesk.engine.bus import EventBus
from fxdesk.engine.cancel import Cancelled
from fxdesk.engine.clock import Clock, SystemClock
from fxdesk.engine.errors import RegistryClosed
from fxdesk.engine.events import DeliveryAdded, HistoryAppended, TextStreamed, publish_change
from fxdesk.engine.images import context_images, support_for
from fxdesk.engine.permissions import PermissionService
from fxdesk.engine.turn_acp import run_acp_turn
from fxdesk.engine.turn_children import take_child_results
from fxdesk.engine.turn_state import (
    StaleAuthority,
    Stopping,
    TurnEnd,
    TurnOutcome,
    TurnRuntime,
    TurnStop,
    paused,
)
from fxdesk.engine.turn_tools import RESULT_RETRY_S, ToolCalls, UnsavedResults
from fxdesk.providers.acp import AcpAgentProvider
from fxdesk.providers.base import (
    ModelRequest,
    ModelResponse,
    ProviderError,
    StreamEvent,
    StreamRestart,
    TextDelta,
    ToolCallStarted,
    ToolSpec,
    Usage,
    collect,
)
from fxdesk.store import Store, StoreError, attachments, control, history
from fxdesk.tools.agents.port import AgentsPort
from fxdesk.tools.background.port import BackgroundPort
from fxdesk.tools.base import ToolRegistry

__all__ = ["DEFAULT_SYSTEM_PROMPT", "TurnEnd", "TurnOutcome", "TurnRunner", "TurnRuntime"]

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are a coding agent working in the person's project folder through the tools you are "
    "given. Work step by step, use tools to inspect and change files, and finish with a short "
    "summary of what you did."
)


ROLE_PROMPT_KEY = "role_prompt"  # a session's own role text (a named agent's definition body)
# A session's own cap on model calls per turn (a named agent's ``max_iterations``); when absent,
# the runner's.
MAX_ITERATIONS_KEY = "max_iterations"


def iteration_limit(default: int, session: Session) -> int:
    """Model calls a turn of ``session`` may make: its own limit (a named agent's definition
    sets it) when it has a sound one, else ``default``."""
    limit = session.config.get(MAX_ITERATIONS_KEY)
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1:
        return limit
    return default


def system_prompt(base: str, session: Session) -> str:
    """The system text of a session's model calls: fxdesk's, then the session's role prompt
    (a sub-agent run by a named agent gets its definition's body here)."""
    role = session.config.get(ROLE_PROMPT_KEY)
    if isinstance(role, str) and role.strip():
        return f"{base}\n\n{role.strip()}"
    return base


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
        result_retry_s: Sequence[float] = RESULT_RETRY_S,
        data_dir: Path | None = None,
    ) -> None:
        self.store = store
        # Hidden from the agent's commands; their /tmp is kept in it (fxdesk.tools.sandbox).
        self.data_dir = data_dir
        self.tools = tools
        self.bus = bus
        self.clock = clock or SystemClock()  # stamps history rows and deliveries
        # None: no permission checks (engine tests that are about something else); tools then
        # stay inside the workspace whatever they are asked.
        self.permissions = permissions
        self.max_iterations = max_iterations
        self.max_history_turns = max_history_turns
        self.system_prompt = system_prompt
        self.result_retry_s = tuple(result_retry_s)
        # The background runtime, for the agent's background tools (set by the App once it
        # runs; None: this process runs no background tasks).
        self.background: BackgroundPort | None = None
        # The agent coordinator, for the delegation tools (set by the App; None: no sub-agents).
        self.agents: AgentsPort | None = None
        # Results of effects that happened but could not be saved: a resume here writes them.
        self.unsaved = UnsavedResults()
        # External agents (ACP) kept per session across turns; the owner stops them.
        self.acp_agents = AcpAgents(store)

    def close(self) -> None:
        """The owner is shutting down: release every turn waiting for an approval, and refuse
        new asks (spec §5.5 step 3). The turns themselves stop through their own flags."""
        if self.permissions is not None:
            self.permissions.close()

    async def run(self, rt: TurnRuntime) -> TurnOutcome:
        turn = _Turn(self, rt)
        try:
            if isinstance(rt.provider, AcpAgentProvider):  # an external agent runs its own loop
                return await run_acp_turn(turn, rt.provider)
            return await turn.run()
        except TurnStop as stop:
            return TurnOutcome(stop.end, stop.diagnostic, turn.model_calls, turn.usage)
        except (Stopping, RegistryClosed):
            return TurnOutcome(TurnEnd.STOPPED, None, turn.model_calls, turn.usage)
        except StoreError as exc:
            # Wherever it came from (a read, a permission check, an answer's poll): the item
            # must not stay running with no worker. Paused, it is interrupted and resumable.
            log.warning("turn of %s met a store failure: %s", rt.item.id, exc)
            if rt.stopping():
                return TurnOutcome(TurnEnd.STOPPED, None, turn.model_calls, turn.usage)
            pause = paused(exc)
            return TurnOutcome(pause.end, pause.diagnostic, turn.model_calls, turn.usage)


class _Turn:
    def __init__(self, runner: TurnRunner, rt: TurnRuntime) -> None:
        self.runner = runner
        self.rt = rt
        self.store = runner.store
        self.model_calls = 0
        self.max_iterations = iteration_limit(runner.max_iterations, rt.session)
        self.explanation = ""  # the model's text before its tool calls, shown when asking
        self.usage = Usage()
        self.usage_reported = False  # some model call of this turn said what it used
        self.context: list[HistoryEntry] = []
        self.entries: list[HistoryEntry] = []
        self.images: dict[int, ImageAttachment] = {}  # by id: those the model calls carry
        self.step = 0
        self.tools = ToolCalls(
            self,
            runner.tools,
            runner.permissions,
            runner.clock,
            runner.unsaved,
            runner.result_retry_s,
            runner.data_dir,
            runner.background,
            runner.bus,
            runner.agents,
        )

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
            data = await self.store.read(lambda: attachments.user_entry_data(work_id))
            await self.commit(
                [self.entry(EntryKind.USER, content=self.rt.item.content, data=data)], "user"
            )
        await self._load_images()
        for call_entry in open_tool_calls(self.entries):
            call = ToolCall(
                call_entry.call_id or "", call_entry.tool_name or "", call_entry.content
            )
            if call.id in started:
                await self.tools.settle_started(call)
            else:
                await self.tools.run(call)
        while True:
            await self.check_durable(boundary=True)
            if self.model_calls >= self.max_iterations:
                raise TurnStop(
                    TurnEnd.FAILED,
                    reasons.diagnostic(
                        reasons.MAX_ITERATIONS,
                        f"{self.model_calls} model calls (the limit) without a final answer",
                    ),
                )
            response = await self._call_model()
            self.step += 1
            self.explanation = response.text
            rows = [
                self.entry(
                    EntryKind.ASSISTANT,
                    content=response.text,
                    data=self._call_data(response),
                )
            ]
            rows += [
                self.entry(EntryKind.TOOL_CALL, call_id=c.id, tool_name=c.name, content=c.arguments)
                for c in response.tool_calls
            ]
            if not response.tool_calls:
                rows.append(
                    self.entry(
                        EntryKind.TURN_END,
                        data=self._turn_data(),
                    )
                )
                await self.commit(rows, "history_commit", final=True)
                return self._outcome(TurnEnd.COMPLETED)
            await self.commit(rows, "model_response")
            for call in response.tool_calls:
                await self.tools.run(call)

    def _call_data(self, response: ModelResponse) -> dict[str, object]:
        used = response.usage
        data: dict[str, object] = {
            "finish_reason": response.finish_reason,
            "model": self.rt.snapshot.model,
            "usage": [used.input_tokens, used.output_tokens],
        }
        if not response.usage_reported:  # no numbers: none shown, no cost computed from zeros
            data["usage_reported"] = False
            return data
        self.usage_reported = True
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
        if not self.usage_reported:
            data["usage_reported"] = False
            return data
        if self.rt.profile is not None:
            cost = self.rt.profile.cost_usd(self.usage.input_tokens, self.usage.output_tokens)
            if cost is not None:
                data["cost_usd"] = round(cost, 6)
        return data

    def _outcome(self, end: TurnEnd) -> TurnOutcome:
        return TurnOutcome(end, None, self.model_calls, self.usage)

    def check(self) -> None:
        if self.rt.stopping():
            raise TurnStop(TurnEnd.STOPPED)
        if self.rt.cancel.cancelled:
            raise TurnStop(TurnEnd.CANCELLED, self.rt.cancel.reason)

    async def check_durable(self, *, boundary: bool = False) -> None:
        """``_check``, plus a cancel committed by another process, and, at a step boundary,
        steer messages to take into the turn."""
        self.check()
        work_id = self.rt.item.id
        status, steer = await self.store.read(lambda: control.item_status(work_id))
        if status == WorkStatus.CANCELLED:
            raise TurnStop(TurnEnd.CANCELLED, "cancelled")
        if steer and boundary:
            await self._take_steers()
        if boundary:
            await self._take_child_results()

    async def _take_child_results(self) -> None:
        """Its managed children's unread terminal results, before the next model call."""
        session_id = self.rt.session.id
        try:
            stored = await take_child_results(
                self.store,
                session_id,
                self.rt.item.id,
                self.step,
                self.runner.clock.now_ms(),
                self._refuse_if_stopping,
            )
        except StoreError as exc:
            raise paused(exc) from None
        if stored:
            self.entries.extend(stored)
            self.runner.bus.publish(HistoryAppended(session_id, tuple(stored)))

    async def _take_steers(self) -> None:
        """Deliver waiting steer messages into this turn, in one transaction each batch.

        Only the steers next in line are taken: those queued right behind this turn's item, up
        to the first message of another kind. A steer sent after a queued message waits for
        that message's turn, so the model sees messages in the order they were sent (FIFO)."""
        session_id, work_id, step = self.rt.session.id, self.rt.item.id, self.step
        now = self.runner.clock.now_ms()

        def write() -> tuple[list[HistoryEntry], list[Change]]:
            self._refuse_if_stopping()
            record = control.load_record(session_id)  # unfinished items, in queue order
            if record is None:
                return [], []
            steers: list[WorkItem] = []
            for i in record.items:
                if i.id == work_id or i.status.terminal:
                    continue
                if i.kind != WorkKind.STEER or i.status != WorkStatus.PENDING:
                    break  # a message queued before any later steer: it goes first
                steers.append(i)
            rows = [
                HistoryEntry(
                    session_id=session_id,
                    seq=0,
                    kind=EntryKind.USER,
                    work_id=work_id,
                    step=step,
                    content=i.content,
                    data={"steer": True, "steer_id": i.id, **attachments.user_entry_data(i.id)},
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
            raise paused(exc) from None
        self.entries.extend(stored)
        if stored:
            self.runner.bus.publish(HistoryAppended(session_id, tuple(stored)))
        if any(refs_of(e.data) for e in stored):
            await self._load_images()
        for change in changes:
            publish_change(self.runner.bus, change)

    async def _load_images(self) -> None:
        """Read the images the model calls of this turn carry (``engine/images.py``)."""
        entries = self.context + self.entries
        if not any(refs_of(e.data) for e in entries):
            return
        accepted = support_for(self.rt.profile, self.rt.snapshot.model).accepted
        try:
            self.images = await self.store.read(lambda: context_images(entries, accepted))
        except StoreError as exc:
            raise paused(exc) from None

    # --- model calls -------------------------------------------------------------------------

    async def _call_model(self) -> ModelResponse:
        offered = set(self.tools.offered())  # a tool revoked mid-turn is no longer offered
        tools = tuple(
            ToolSpec(t.name, t.description, t.parameters)
            for t in self.runner.tools
            if t.name in offered
        )
        request = ModelRequest(
            model=self.rt.snapshot.model,
            messages=tuple(build_messages(self.context + self.entries, self.images)),
            tools=tools,
            system=system_prompt(self.runner.system_prompt, self.rt.session),
            effort=self.rt.snapshot.effort or (self.rt.profile.effort if self.rt.profile else None),
        )
        self.model_calls += 1
        live = self.rt.live
        bus, session_id, work_id = self.runner.bus, self.rt.session.id, self.rt.item.id
        streamed: list[str] = []  # this call's text so far (kept if the person cancels)

        def on_event(event: StreamEvent) -> None:
            if isinstance(event, StreamRestart):
                streamed.clear()
            if isinstance(event, TextDelta):
                streamed.append(event.text)
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
            await self._keep_partial("".join(streamed))
            self.check()
            raise TurnStop(TurnEnd.CANCELLED, self.rt.cancel.reason) from None
        except ProviderError as exc:
            self.check()
            raise TurnStop(
                TurnEnd.FAILED, reasons.diagnostic(reasons.PROVIDER_FAILED, str(exc))
            ) from None
        self.usage = Usage(
            self.usage.input_tokens + response.usage.input_tokens,
            self.usage.output_tokens + response.usage.output_tokens,
        )
        self.check()
        if response.tool_calls:
            response.tool_calls = await self._unique_call_ids(response.tool_calls)
        return response

    async def _keep_partial(self, text: str) -> None:
        """The person cancelled while the answer streamed: what had arrived stays in the
        history, marked ``partial``: the window shows it as cut off, and the model reads it
        back at the next turn with a note that it was cut off (``build_messages``). Best
        effort: while fxdesk stops, or if the store fails, the partial text is only lost,
        never guessed at."""
        if not text.strip() or self.rt.stopping():
            return
        row = self.entry(
            EntryKind.ASSISTANT, content=text, data={"partial": True, "stopped": "cancelled"}
        )
        try:
            await self.save([row], "partial answer")
        except (StoreError, TurnStop) as exc:
            log.info("turn of %s: its partial answer was not kept: %s", self.rt.item.id, exc)

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

    # --- persistence -------------------------------------------------------------------------

    def _refuse_if_stopping(self) -> None:
        """Called first inside every write of the turn, on the writer thread: once the turn is
        stopped nothing more is written, even a write queued before the flag flipped."""
        if self.rt.stopping():
            raise Stopping()

    def entry(self, kind: EntryKind, **fields: object) -> HistoryEntry:
        return HistoryEntry(
            session_id=self.rt.session.id,
            seq=0,
            kind=kind,
            work_id=self.rt.item.id,
            step=self.step,
            created_at_ms=self.runner.clock.now_ms(),
            **fields,  # type: ignore[arg-type]
        )

    async def commit(
        self,
        rows: list[HistoryEntry],
        label: str,
        *,
        delivery: Delivery | None = None,
        final: bool = False,
        valid: Callable[[], bool] | None = None,
    ) -> None:
        """Save one step; on failure stop the turn (PAUSED), never guess what landed."""
        try:
            await self.save(rows, label, delivery=delivery, final=final, valid=valid)
        except StoreError as exc:
            log.warning("turn of %s could not save %s: %s", self.rt.item.id, label, exc)
            raise paused(exc) from None

    async def save(
        self,
        rows: list[HistoryEntry],
        label: str,
        *,
        delivery: Delivery | None = None,
        final: bool = False,
        result_of: str | None = None,
        valid: Callable[[], bool] | None = None,
    ) -> None:
        """Save one step in one transaction; a ``StoreError`` passes to the caller.

        ``result_of`` makes saving a tool's result idempotent (for its retries): when the
        history already holds that call's result (an earlier save that did land), it is taken
        as saved instead of added again. ``valid`` is asked inside the transaction; False
        writes nothing and raises ``StaleAuthority`` (an action decided under an older
        authority generation does not start)."""
        if self.rt.stopping():
            raise TurnStop(TurnEnd.STOPPED)
        session_id, work_id = self.rt.session.id, self.rt.item.id

        def write() -> tuple[list[HistoryEntry], bool]:
            self._refuse_if_stopping()
            if valid is not None and not valid():
                raise StaleAuthority()
            landed = history.tool_result_of(session_id, result_of) if result_of else None
            if landed is not None:
                stored = [landed]
            else:
                stored = history.append_history(session_id, rows) if rows else []
            added = control.append_delivery(delivery) if delivery is not None else False
            if final:
                control.set_last_work_id(session_id, work_id)
            return stored, added

        stored, added = await self.store.write(write, label=label)
        self.entries.extend(stored)
        if stored:
            self.runner.bus.publish(HistoryAppended(session_id, tuple(stored)))
        if added and delivery is not None:
            self.runner.bus.publish(DeliveryAdded(delivery))
