"""One turn of a session whose profile is an external ACP agent (``fxdesk.providers.acp``).

The agent runs its own loop, so the turn does not: it sends the work item's text as one ACP
prompt and records what streams back as native history rows, so the transcript and the model
of the session are the same as for a native turn:

- the agent's message chunks stream live (``TextStreamed``) and are saved as ``assistant`` rows:
  the text so far is saved when a tool call starts (with its ``tool_call`` row, one step), the
  rest at the end with ``turn_end`` (the history commit);
- each ACP tool call is a ``tool_call`` row (its title, its input as the content) and, once the
  agent says it completed or failed, a ``tool_result`` row; one still open when the prompt ends
  gets a result saying its last status, so no call is left "running" in the transcript;
- ``session/request_permission`` is judged like a native tool call by ``PermissionService``
  (the tool name is ``acp:<kind>``, so a rule answers without asking); otherwise it becomes an
  approval in the one inbox, and the person's answer picks the agent's allow or reject option;
- the turn ends when the prompt response arrives (its stop reason is kept as the finish
  reason); a cancel sends ``session/cancel`` and waits a little for the agent to end the prompt.

Updates arrive on the SDK's reader task; they are queued and handled here, one by one, on the
turn's task, so rows land in the order the agent sent them.

The agent and its ACP session are kept across the session's turns (``acp_agents``). A turn
interrupted by a restart is resumed when its agent takes the session up again
(``session/load``): its open calls get "outcome unknown", and the prompt is sent again after a
note that says it was interrupted. An agent that cannot load its session fails the turn with a
reason that says so plainly. A cancel another process committed is seen by polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from fxdesk.domain import reasons
from fxdesk.domain.approvals import ApprovalStatus
from fxdesk.domain.conversation import HistoryEntry, open_tool_calls
from fxdesk.domain.live import LiveEvent
from fxdesk.domain.model import EntryKind, WorkStatus
from fxdesk.domain.rules import Verdict
from fxdesk.engine.acp_agents import AcpAgents, Opened
from fxdesk.engine.acp_host import TurnHost
from fxdesk.engine.bus import EventBus
from fxdesk.engine.cancel import Cancelled
from fxdesk.engine.events import TextStreamed
from fxdesk.engine.permissions import PermissionService
from fxdesk.engine.turn_state import TurnEnd, TurnOutcome, TurnRuntime, TurnStop
from fxdesk.engine.turn_tools import ToolCalls
from fxdesk.providers.acp import (
    AcpAgentProvider,
    AcpConnection,
    AgentPlan,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentUpdate,
    AgentUsage,
    FileDiff,
    HostRefused,
    PermissionAsk,
    PromptEnd,
    describe_error,
)
from fxdesk.providers.base import ProviderError, Usage
from fxdesk.store import Store, StoreError, control, history
from fxdesk.tools.background.port import BackgroundPort
from fxdesk.tools.base import ToolRegistry

T = TypeVar("T")


class _Runner(Protocol):
    @property
    def permissions(self) -> PermissionService | None: ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def bus(self) -> EventBus: ...

    @property
    def acp_agents(self) -> AcpAgents: ...

    @property
    def background(self) -> BackgroundPort | None: ...


class _Turn(Protocol):
    """What this path uses of the native turn (``fxdesk.engine.turn._Turn``, which imports this
    module: a Protocol keeps the two out of an import circle)."""

    rt: TurnRuntime
    store: Store

    @property
    def runner(self) -> _Runner: ...

    entries: list[HistoryEntry]
    step: int
    explanation: str
    tools: ToolCalls
    model_calls: int
    usage: Usage
    usage_reported: bool

    def check(self) -> None: ...

    def entry(self, kind: EntryKind, **fields: object) -> HistoryEntry: ...

    async def commit(
        self, rows: list[HistoryEntry], label: str, *, final: bool = False
    ) -> None: ...

    async def _keep_partial(self, text: str) -> None: ...

    def _turn_data(self) -> dict[str, object]: ...


log = logging.getLogger(__name__)

# After session/cancel, how long the agent gets to answer the prompt with "cancelled".
CANCEL_GRACE_S = 10.0
EXIT_WAIT_S = 2.0  # a failed prompt: how long to wait for the agent's exit code
CANCEL_POLL_S = 0.5  # how often a running prompt looks for a cancel another process committed
# The first block of the prompt that resumes an interrupted turn (the request follows it).
RESUME_NOTE = (
    "fxdesk stopped while you worked on the request below, so your turn was interrupted; tool "
    "calls you had started may or may not have finished. Check where the work stands, then "
    "carry on with the request."
)
_DONE = object()  # the prompt response arrived (or the prompt failed)
_CANCEL = object()  # the person cancelled
_GIVE_UP = object()  # the agent did not end the prompt after session/cancel


@dataclass
class _Request:
    """An agent's file or terminal request, to run on the turn's task."""

    work: Callable[[], Awaitable[Any]]
    answer: asyncio.Future[Any]


@dataclass
class _Call:
    row_id: str  # the call id in fxdesk's history (unique in the session)
    title: str
    status: str | None = None
    text: str = ""
    settled: bool = False
    diffs: tuple[FileDiff, ...] = ()
    raw_input: Any = None  # what the agent said the call takes (shown when asking)
    kind: str | None = None  # ACP's tool kind (edit, execute, ...), from any update
    shown_input: Any = None  # the input its tool_call row was written with


@dataclass
class _AcpTurn:
    turn: _Turn
    provider: AcpAgentProvider
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    text: list[str] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)
    allowed_calls: set[str] = field(default_factory=set)  # agent calls fxdesk allowed
    thought: list[str] = field(default_factory=list)  # reasoning since the last row
    agent_usage: AgentUsage | None = None  # the last usage_update
    cost_before: float = 0.0  # the session's cumulative cost when the turn began
    acp_session: str = ""
    said: str = ""  # the agent's text in the last assistant row
    cancelled: bool = False  # the person cancelled (session/cancel sent)

    async def run(self) -> TurnOutcome:
        turn, rt = self.turn, self.turn.rt
        work_id = rt.item.id
        turn.entries = await turn.store.read(lambda: history.work_entries(work_id))
        if any(e.kind == EntryKind.TURN_END for e in turn.entries):
            return TurnOutcome(TurnEnd.COMPLETED, None, turn.model_calls, turn.usage)
        # Rows beyond the prompt: this turn ran before and was interrupted (a restart, a pause).
        interrupted = any(e.kind != EntryKind.USER for e in turn.entries)
        turn.step = max((e.step for e in turn.entries), default=0)
        if not any(e.kind == EntryKind.USER for e in turn.entries):
            await turn.commit([turn.entry(EntryKind.USER, content=rt.item.content)], "user")
        turn.check()
        agents = turn.runner.acp_agents
        try:
            opened = await agents.open(rt.session.id, rt.workspace, self.provider)
        except ProviderError as exc:
            turn.check()
            raise TurnStop(
                TurnEnd.FAILED, reasons.diagnostic(reasons.PROVIDER_FAILED, str(exc))
            ) from None
        agent = opened.connection
        self.acp_session = agent.session_id
        self.cost_before = await self._cost_so_far(agent.session_id)
        prompt_texts: tuple[str, ...] = (rt.item.content,)
        if interrupted:
            await self._settle_interrupted()
            if opened.fresh and not opened.loaded:
                raise TurnStop(
                    TurnEnd.FAILED,
                    reasons.diagnostic(reasons.PROVIDER_FAILED, _cannot_resume(opened)),
                )
            prompt_texts = (RESUME_NOTE, rt.item.content)
        turn.model_calls = 1

        def on_update(update: AgentUpdate) -> None:
            self.queue.put_nowait(update)

        async def on_permission(ask: PermissionAsk) -> str | None:
            answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            self.queue.put_nowait((ask, answer))
            return await answer

        host = TurnHost(turn, self.serve, self._assistant, self._preallowed, turn.runner.background)
        agent.attach(on_update, on_permission, host)
        prompt = asyncio.create_task(agent.prompt(*prompt_texts), name=f"acp:{work_id}")
        prompt.add_done_callback(lambda _: self.queue.put_nowait(_DONE))
        watch = asyncio.create_task(self._watch_cancel(), name=f"acp-cancel:{work_id}")
        try:
            cancelled = await self._pump(agent.cancel)
        finally:
            watch.cancel()
            host.closed = True
            agent.detach()
            if not prompt.done():
                # Stopping, a failed save, or an agent that ignored session/cancel: its state
                # is unknown, so it is stopped; the next turn starts it again (session/load).
                prompt.cancel()
                await agents.stop(rt.session.id)
        ended = _ended(prompt)
        stop_reason = ended.stop_reason if ended is not None else None
        if cancelled or stop_reason == "cancelled":
            await self._finish_cancelled()
        if stop_reason is None:
            exit_code = None  # did the agent die? (its pipe closed: it may have)
            with contextlib.suppress(TimeoutError):
                exit_code = await asyncio.wait_for(agent.process.wait(), EXIT_WAIT_S)
            await agents.stop(rt.session.id)
            turn.check()
            raise TurnStop(
                TurnEnd.FAILED,
                reasons.diagnostic(reasons.PROVIDER_FAILED, _failure(prompt, exit_code, agent)),
            )
        await self._settle_open("the agent ended its turn without saying how this call ended")
        turn.step += 1
        data: dict[str, object] = {"finish_reason": stop_reason, "model": rt.snapshot.model}
        if ended is not None and ended.tokens is not None:  # the agent said what the turn used
            turn.usage = Usage(*ended.tokens)
            turn.usage_reported = True
            data["usage"] = list(ended.tokens)
        else:
            data.update(usage=[0, 0], usage_reported=False)
        agent_usage = self._usage_data()
        if "cost_usd" in agent_usage:  # the turn's one "model call" carries its cost
            data["cost_usd"] = agent_usage["cost_usd"]
        end_data = turn._turn_data()
        end_data.update(agent_usage)
        rows = [self._assistant(data), turn.entry(EntryKind.TURN_END, data=end_data)]
        await turn.commit(rows, "history_commit", final=True)
        return TurnOutcome(TurnEnd.COMPLETED, None, turn.model_calls, turn.usage)

    # --- the queue ---------------------------------------------------------------------------

    async def _watch_cancel(self) -> None:
        """The person's cancel: this process's token, or one another process committed (the
        item's durable status, read every ``CANCEL_POLL_S``)."""
        turn, rt = self.turn, self.turn.rt
        work_id = rt.item.id
        while True:
            try:
                await asyncio.wait_for(rt.cancel.wait(), CANCEL_POLL_S)
                break
            except TimeoutError:
                pass
            try:
                status, _ = await turn.store.read(lambda: control.item_status(work_id))
            except StoreError as exc:  # read again at the next poll
                log.info("turn of %s: cancel poll failed: %s", work_id, exc)
                continue
            if status == WorkStatus.CANCELLED:
                break
        self.queue.put_nowait(_CANCEL)

    async def _pump(self, cancel_agent: Callable[[], Awaitable[None]]) -> bool:
        """Handle updates until the prompt ended; True when the person cancelled."""
        while True:
            item = await self.queue.get()
            if item is _DONE or item is _GIVE_UP:
                return self.cancelled
            if item is _CANCEL:
                await self._begin_cancel(cancel_agent)
            elif isinstance(item, AgentText):
                self._on_text(item.text)
            elif isinstance(item, AgentToolCall):
                await self._on_tool_call(item)
            elif isinstance(item, AgentThought):
                self.thought.append(item.text)
            elif isinstance(item, AgentPlan):
                await self._on_plan(item)
            elif isinstance(item, AgentUsage):
                self.agent_usage = item
            elif isinstance(item, _Request):
                await self._on_request(item, cancel_agent)
            elif isinstance(item, tuple):
                ask, answer = item
                try:
                    chosen = None if self.cancelled else await self._on_permission(ask)
                except BaseException:
                    if not answer.done():
                        answer.set_result(None)
                    raise
                if not answer.done():
                    answer.set_result(chosen)

    async def _begin_cancel(self, cancel_agent: Callable[[], Awaitable[None]]) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        await cancel_agent()
        asyncio.get_running_loop().call_later(CANCEL_GRACE_S, self.queue.put_nowait, _GIVE_UP)

    async def serve(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run an agent's file or terminal request on the turn's task, in order (``acp_host``)."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.queue.put_nowait(_Request(work, answer))
        return cast(T, await answer)

    async def _on_request(
        self, request: _Request, cancel_agent: Callable[[], Awaitable[None]]
    ) -> None:
        answer = request.answer
        if self.cancelled:
            answer.set_exception(HostRefused("the turn was cancelled"))
            return
        try:
            result = await request.work()
        except TurnStop as stop:
            if not answer.done():
                answer.set_exception(HostRefused(f"fxdesk stopped the turn ({stop.end.value})"))
            if stop.end is not TurnEnd.CANCELLED:
                raise
            await self._begin_cancel(cancel_agent)  # the person cancelled while it ran
            return
        except HostRefused as exc:
            if not answer.done():
                answer.set_exception(exc)
            return
        except BaseException:
            if not answer.done():
                answer.set_exception(HostRefused("fxdesk failed to serve the request"))
            raise
        if not answer.done():
            answer.set_result(result)

    def _assistant(self, data: dict[str, object] | None = None) -> HistoryEntry:
        """The agent's text (and reasoning) since the last row, as an ``assistant`` row."""
        text, self.text = "".join(self.text), []
        thought, self.thought = "".join(self.thought), []
        if text.strip():
            self.said = text  # what it said last, for a permission request that follows
        fields: dict[str, object] = {"acp": True} if data is None else dict(data)
        if thought.strip():
            fields["thought"] = thought
        return self.turn.entry(EntryKind.ASSISTANT, content=text, data=fields)

    async def _on_plan(self, plan: AgentPlan) -> None:
        """The agent's plan: a row of its own (the transcript shows the newest of a turn)."""
        turn = self.turn
        turn.step += 1
        steps = [
            {"content": s.content, "status": s.status, "priority": s.priority} for s in plan.steps
        ]
        rows = [
            self._assistant(),
            turn.entry(EntryKind.ASSISTANT, content="", data={"acp": True, "plan": steps}),
        ]
        await turn.commit(rows, "plan")

    async def _cost_so_far(self, acp_session: str) -> float:
        """The cumulative cost the agent reported at the end of this session's last turn in
        the same ACP session (0 when none: a new ACP session starts from nothing)."""
        session_id = self.turn.rt.session.id
        ends = await self.turn.store.read(
            lambda: [
                e
                for e in history.history_before(session_id, None, 200)
                if e.kind == EntryKind.TURN_END
            ]
        )
        for end in reversed(ends):
            cost = end.data.get("agent_cost")
            if end.data.get("acp_session") == acp_session and isinstance(cost, dict):
                amount = cost.get("amount")
                return float(amount) if isinstance(amount, int | float) else 0.0
        return 0.0

    def _usage_data(self) -> dict[str, object]:
        """What the agent's last ``usage_update`` said: the context's fill and the session's
        cumulative cost (in dollars also as the turn's ``cost_usd``: the growth over this turn,
        when the turn began with a known total)."""
        usage = self.agent_usage
        if usage is None:
            return {}
        data: dict[str, object] = {
            "context_tokens": [usage.used, usage.size],
            "acp_session": self.acp_session,
        }
        if usage.cost is not None:
            data["agent_cost"] = {"amount": usage.cost, "currency": usage.currency}
            if usage.currency == "USD":
                data["cost_usd"] = round(max(0.0, usage.cost - self.cost_before), 6)
        return data

    def _preallowed(self) -> bool:
        """An agent permission request fxdesk allowed covers the request that comes now: its
        tool call is still open (the agent acts on what the person allowed)."""
        return any(
            call_id in self.calls and not self.calls[call_id].settled
            for call_id in self.allowed_calls
        )

    def _on_text(self, text: str) -> None:
        rt = self.turn.rt
        self.text.append(text)
        self.turn.runner.bus.publish(TextStreamed(rt.session.id, rt.item.id, text))
        if rt.live is not None:
            rt.live.append_text(text)

    # --- tool calls ----------------------------------------------------------------------------

    async def _on_tool_call(self, update: AgentToolCall) -> None:
        call = self.calls.get(update.call_id)
        if call is None:
            call = await self._start(update)
        if update.title:
            call.title = update.title
        if update.kind:
            call.kind = update.kind
        if update.raw_input not in (None, {}):
            # Claude Code sends the tool_call first with an empty input (its stream's first
            # event), then again with the input: the row keeps the first, the result the last.
            call.raw_input = update.raw_input
        if update.status:
            call.status = update.status
        if update.text:
            call.text = update.text
        if update.diffs:
            call.diffs = update.diffs
        if call.status in ("completed", "failed") and not call.settled:
            ok = call.status == "completed"
            if call.diffs:  # shown as a diff in the tool's card
                shown = "\n".join(_unified(d) for d in call.diffs)
                content = f"{shown}\n{call.text}" if call.text else shown
                await self._result(call, content, ok=ok, diff=True)
            else:
                await self._result(call, call.text or call.status, ok=ok)

    async def _start(self, update: AgentToolCall) -> _Call:
        """The call's row, after the agent's text so far (one step, as a native turn)."""
        turn, rt = self.turn, self.turn.rt
        title = update.title or update.kind or "tool call"
        call = _Call(
            f"acp-{rt.item.id[:12]}-{update.call_id}",
            title,
            raw_input=update.raw_input,
            kind=update.kind,
            shown_input=update.raw_input,
        )
        self.calls[update.call_id] = call
        turn.step += 1
        arguments = json.dumps(
            update.raw_input if update.raw_input is not None else {}, default=str
        )
        rows = [
            self._assistant(),
            turn.entry(
                EntryKind.TOOL_CALL,
                call_id=call.row_id,
                tool_name=title,
                content=arguments,
                data={"acp_kind": update.kind or "other"},
            ),
        ]
        await turn.commit(rows, "model_response")
        if rt.live is not None:
            rt.live.append_event(LiveEvent("tool_started", title, call.row_id))
        return call

    async def _result(self, call: _Call, content: str, *, ok: bool, **data: object) -> None:
        call.settled = True
        if call.raw_input != call.shown_input:  # the input came after the tool_call row
            data["input"] = call.raw_input
        row = self.turn.entry(
            EntryKind.TOOL_RESULT,
            call_id=call.row_id,
            tool_name=call.title,
            content=content,
            data={"ok": ok, "status": call.status or "unknown", **data},
        )
        await self.turn.commit([row], "tool_result")

    async def _settle_open(self, why: str, **data: object) -> None:
        for call in self.calls.values():
            if not call.settled:
                await self._result(
                    call, f"{why} (last status: {call.status or 'unknown'})", ok=False, **data
                )

    async def _settle_interrupted(self) -> None:
        """A restart interrupted this turn: its open calls get "outcome unknown" (the agent's
        own report of them is lost with its process)."""
        turn = self.turn
        rows: list[HistoryEntry] = [
            turn.entry(
                EntryKind.TOOL_RESULT,
                call_id=entry.call_id,
                tool_name=entry.tool_name,
                content="interrupted, outcome unknown: fxdesk stopped while the agent ran it",
                data={"ok": False, "interrupted": True},
            )
            for entry in open_tool_calls(turn.entries)
        ]
        if rows:
            await turn.commit(rows, "tool_result")

    async def _finish_cancelled(self) -> None:
        await self._settle_open("cancelled", cancelled=True)
        await self.turn._keep_partial("".join(self.text))
        self.turn.check()
        raise TurnStop(TurnEnd.CANCELLED, self.turn.rt.cancel.reason or reasons.CANCELLED)

    # --- permission ----------------------------------------------------------------------------

    async def _on_permission(self, ask: PermissionAsk) -> str | None:
        """The option to answer with: fxdesk's rules first, then the person; None: cancelled."""
        turn, rt = self.turn, self.turn.rt
        if ask.call.call_id not in self.calls:
            await self._on_tool_call(ask.call)
        service = turn.runner.permissions
        if service is None:  # no permission checks in this runner (tests about other things)
            self.allowed_calls.add(ask.call.call_id)
            return ask.option(allow=True)
        call = self.calls[ask.call.call_id]
        # Claude Code's request carries no kind: it was in the call's tool_call.
        tool = f"acp:{ask.call.kind or call.kind or 'other'}"
        arguments = json.dumps(
            {
                "title": call.title,
                "input": ask.call.raw_input if ask.call.raw_input is not None else call.raw_input,
            },
            default=str,
            sort_keys=True,
        )
        check = await service.check(
            rt.session,
            rt.snapshot.permission_mode,
            rt.workspace,
            tool,
            arguments,
            tools=turn.runner.tools,
        )
        verdict = check.decision.verdict
        if verdict is Verdict.ALLOW:
            self.allowed_calls.add(ask.call.call_id)
            return ask.option(allow=True)
        if verdict is Verdict.DENY:
            return ask.option(allow=False)
        approval = await service.ask(
            rt.session,
            rt.item.id,
            call.row_id,
            tool,
            arguments,
            check,
            explanation=_asking(ask, call, "".join(self.text) or self.said),
            stopping=rt.stopping,
        )
        if approval is None:  # the item was cancelled meanwhile
            return None
        answered = approval
        if approval.pending:
            try:
                answered = await rt.cancel.race(service.wait(approval.id))
            except Cancelled:
                return None
        if not (answered.allowed or answered.status == ApprovalStatus.DENIED):
            return None
        await service.consume(answered.id, stopping=rt.stopping)
        if answered.allowed:
            self.allowed_calls.add(ask.call.call_id)
        return ask.option(allow=answered.allowed)


def _ended(prompt: asyncio.Task[PromptEnd]) -> PromptEnd | None:
    if not prompt.done() or prompt.cancelled() or prompt.exception() is not None:
        return None
    return prompt.result()


def _asking(ask: PermissionAsk, call: _Call, said: str) -> str:
    """What the person reads with the agent's permission request: what it said, then the
    call's title and input ("Edit notes.txt · {"path": "notes.txt"}")."""
    raw = ask.call.raw_input if ask.call.raw_input is not None else call.raw_input
    what = call.title + (f" · {json.dumps(raw, default=str)}" if raw not in (None, {}) else "")
    return f"{said.strip()}\n\n{what}" if said.strip() else what


def _unified(diff: FileDiff) -> str:
    """A unified diff of one file edit the agent reported."""
    before = (diff.old or "").splitlines(keepends=True)
    after = diff.new.splitlines(keepends=True)
    old_name = diff.path if diff.old is not None else "/dev/null"
    lines = difflib.unified_diff(before, after, old_name, diff.path)
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _cannot_resume(opened: Opened) -> str:
    """The plain reason an interrupted turn cannot go on: the agent lost the conversation."""
    label = opened.connection.label
    if not opened.connection.can_load:
        return (
            f"this turn was interrupted and the external agent {label!r} cannot reload its "
            "earlier session (it does not offer session/load), so it cannot be resumed: send "
            "the message again (the agent starts over in a new session)"
        )
    return (
        f"this turn was interrupted and the external agent {label!r} could not reload its "
        f"earlier session ({opened.previous or 'none was saved'}), so it cannot be resumed: "
        "send the message again (the agent starts over in a new session)"
    )


def _failure(prompt: asyncio.Task[PromptEnd], exit_code: int | None, agent: AcpConnection) -> str:
    if exit_code is not None:
        return (
            f"the agent exited (code {exit_code}) before ending its turn; its error output is "
            "in the log folder (acp-agent.stderr.log)"
        )
    if prompt.done() and not prompt.cancelled() and prompt.exception() is not None:
        error = cast(BaseException, prompt.exception())
        return f"the agent's prompt failed: {describe_error(error)}{agent.login_hint(error)}"
    return "the agent stopped without ending its turn"


async def run_acp_turn(turn: _Turn, provider: AcpAgentProvider) -> TurnOutcome:
    """Run ``turn`` against the external agent ``provider`` (see the module docstring)."""
    return await _AcpTurn(turn, provider).run()
