"""What a finished child session came to, as a run's terminal outcome (inside a store job).

A run executes as the one work item of a one-off child session; once the owner's slot for it
ends, the item's status and committed history say how the run ended: the final answer, the
tool calls and model calls it made, the tokens and cost its turn recorded.
"""

from __future__ import annotations

from fxdesk.domain.agent_runs import TerminalOutcome
from fxdesk.domain.model import EntryKind, WorkStatus
from fxdesk.store import control, history


def child_outcome(child_session_id: str) -> TerminalOutcome | None:
    """The run's outcome from its child session's first item, or None while it is unfinished
    (pending, running, awaiting approval, interrupted)."""
    items = control.list_items(child_session_id, 5)
    if not items:
        return TerminalOutcome.failed("the sub-agent session has no task")
    item = min(items, key=lambda i: i.position)
    if item.status is WorkStatus.CANCELLED:
        return TerminalOutcome.cancelled(item.reason or "the sub-agent was cancelled")
    if item.status is WorkStatus.FAILED:
        reason = item.reason or control.failure_reason(item.id) or "the sub-agent failed"
        # What it did before it failed (an iteration limit: every call it was allowed).
        entries = history.work_entries(item.id)
        return TerminalOutcome.failed(
            reason,
            tool_calls=sum(1 for e in entries if e.kind == EntryKind.TOOL_CALL),
            iterations=sum(1 for e in entries if e.kind == EntryKind.ASSISTANT),
        )
    if item.status is not WorkStatus.COMPLETED:
        return None
    entries = history.work_entries(item.id)
    answers = [e for e in entries if e.kind == EntryKind.ASSISTANT]
    calls = sum(1 for e in entries if e.kind == EntryKind.TOOL_CALL)
    end = next((e for e in reversed(entries) if e.kind == EntryKind.TURN_END), None)
    tokens_in = tokens_out = None
    cost = None
    if end is not None and end.data.get("usage_reported", True):
        used = end.data.get("usage") or [None, None]
        tokens_in, tokens_out = used[0], used[1]
        cost = end.data.get("cost_usd")
    return TerminalOutcome.completed(
        answers[-1].content if answers else "",
        tool_calls=calls,
        iterations=len(answers),
        prompt_tokens=tokens_in,
        completion_tokens=tokens_out,
        cost=cost,
    )
