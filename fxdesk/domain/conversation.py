"""Messages between a session and its model, and the committed history they come from.

The history is stored one row per step (``HistoryEntry``): the person's message, each finished
model response, each tool call and each tool result, and a ``turn_end`` marker when a turn
committed. ``build_messages`` turns those rows back into the provider-neutral ``ChatMessage`` list a
model receives, repairing what an interrupted or cancelled turn left half-done.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fxdesk.domain.images import ImageAttachment, placeholder, refs_of
from fxdesk.domain.model import EntryKind

Role = Literal["system", "user", "assistant", "tool"]

NOT_RUN_RESULT = "not run: the turn ended before this tool call was executed"
# What the model is told of a call the person's cancel ended (issue 14: "started, then stopped",
# never "not run", for a call that had started).
STOPPED_RESULT = (
    "stopped: the work was cancelled while this tool call was running. It had started, so "
    "whatever it did before it was stopped stays done; check its effect before repeating it."
)
CANCELLED_BEFORE_RUN_RESULT = (
    "not run: the work was cancelled while this tool call waited for approval."
)
# Appended, for the model only, to an answer the person's cancel cut off.
CUT_OFF_NOTE = "[cut off here: the person cancelled this answer]"
UNKNOWN_OUTCOME_RESULT = (
    "interrupted, outcome unknown: fxdesk stopped while this tool call was running, so it may "
    "or may not have taken effect. It was not run again; check its effect before repeating it."
)


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for; ``arguments`` is the raw JSON text it produced."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the tool's name, on tool results
    images: tuple[ImageAttachment, ...] = ()  # on the person's messages (domain/images.py)


@dataclass(frozen=True)
class HistoryEntry:
    """One committed step of a session's history."""

    session_id: str
    seq: int
    kind: EntryKind
    work_id: str | None = None
    step: int = 0
    call_id: str | None = None
    tool_name: str | None = None
    content: str = ""
    full_text: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    created_at_ms: int = 0
    id: int | None = None


def build_messages(
    entries: Iterable[HistoryEntry], images: Mapping[int, ImageAttachment] | None = None
) -> list[ChatMessage]:
    """The messages a model sees for these history rows, in order.

    A message's attached images go with it when ``images`` holds them (by id); the others are
    named in its text as ``[image: name]``, so the model knows they were there.

    Every tool call gets exactly one result right after its assistant message (providers reject
    anything else): a call whose result was never committed gets ``NOT_RUN_RESULT``.
    """
    messages: list[ChatMessage] = []
    pending_calls: list[ToolCall] = []
    answered: set[str] = set()
    text = ""
    calls: list[ToolCall] = []
    in_assistant = False

    def close_assistant() -> None:
        nonlocal text, calls, in_assistant, pending_calls
        if in_assistant:
            messages.append(ChatMessage("assistant", text, tuple(calls)))
            pending_calls = list(calls)
        text, calls, in_assistant = "", [], False

    def settle_calls() -> None:
        nonlocal pending_calls
        for call in pending_calls:
            if call.id not in answered:
                messages.append(
                    ChatMessage("tool", NOT_RUN_RESULT, tool_call_id=call.id, name=call.name)
                )
                answered.add(call.id)
        pending_calls = []

    for entry in entries:
        if entry.kind == EntryKind.ASSISTANT:
            close_assistant()
            settle_calls()
            text, in_assistant = entry.content, True
            if entry.data.get("partial"):
                text = f"{entry.content}\n\n{CUT_OFF_NOTE}"
        elif entry.kind == EntryKind.TOOL_CALL:
            if not in_assistant:  # a call row always follows its response; be forgiving
                settle_calls()
                in_assistant = True
            calls.append(ToolCall(entry.call_id or "", entry.tool_name or "", entry.content))
        elif entry.kind == EntryKind.TOOL_RESULT:
            close_assistant()
            if entry.call_id in {c.id for c in pending_calls} and entry.call_id not in answered:
                messages.append(
                    ChatMessage(
                        "tool", entry.content, tool_call_id=entry.call_id, name=entry.tool_name
                    )
                )
                answered.add(entry.call_id or "")
        elif entry.kind == EntryKind.USER:
            close_assistant()
            settle_calls()
            messages.append(_user_message(entry, images or {}))
        elif entry.kind == EntryKind.TURN_END:
            close_assistant()
            settle_calls()
    close_assistant()
    settle_calls()
    return messages


def _user_message(entry: HistoryEntry, images: Mapping[int, ImageAttachment]) -> ChatMessage:
    refs = refs_of(entry.data)
    carried = tuple(images[r["id"]] for r in refs if r["id"] in images)
    missing = [placeholder(r) for r in refs if r["id"] not in images]
    text = "\n".join([entry.content, *missing]) if missing else entry.content
    return ChatMessage("user", text, images=carried)


def open_tool_calls(entries: Iterable[HistoryEntry]) -> list[HistoryEntry]:
    """Tool-call rows with no committed result, in order."""
    calls: dict[str, HistoryEntry] = {}
    for entry in entries:
        if entry.kind == EntryKind.TOOL_CALL and entry.call_id:
            calls[entry.call_id] = entry
        elif entry.kind == EntryKind.TOOL_RESULT and entry.call_id:
            calls.pop(entry.call_id, None)
    return list(calls.values())
