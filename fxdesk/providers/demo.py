"""The offline demo agent: a scripted "model" that looks around the workspace, with no network.

It is clearly labelled as a demo in everything it says. For each message it lists the folder,
reads the first README-like file it finds, and answers with what it saw, so a person can try the
whole loop (streaming, tool cards, approvals, recovery) before setting up a real provider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fxdesk.domain.conversation import ChatMessage
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

DEMO_SCRIPT = "builtin:demo"
LABEL = "[offline demo agent — no AI model is involved]"


class DemoProvider(Provider):
    name = "demo"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        async for event in ScriptedProvider([_next_step(request.messages)]).stream(request):
            yield event


def _since_last_user(messages: tuple[ChatMessage, ...]) -> list[ChatMessage]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return list(messages[index:])
    return list(messages)


def _next_step(messages: tuple[ChatMessage, ...]) -> Reply:
    turn = _since_last_user(messages)
    results = {m.name: m.content for m in turn if m.role == "tool"}
    if "list_dir" not in results:
        return Reply(
            text=f"{LABEL}\nLet me look at the workspace first.",
            tool_calls=(ScriptedCall("list_dir", {"path": "."}),),
            chunk=6,
            delay_s=0.02,
        )
    listing = results["list_dir"]
    candidate = _readme_in(listing)
    if candidate and "read_file" not in results:
        return Reply(
            text=f"I'll read {candidate}.",
            tool_calls=(ScriptedCall("read_file", {"path": candidate, "end_line": 20}),),
            chunk=6,
            delay_s=0.02,
        )
    entries = [line for line in listing.splitlines() if line.strip() and not line.startswith("[")]
    summary = f"The workspace has {len(entries)} entries"
    if candidate:
        first = next(
            (
                line.split("\t", 1)[-1].strip()
                for line in results.get("read_file", "").splitlines()
                if line.split("\t", 1)[-1].strip()
            ),
            "",
        )
        summary += f"; {candidate} starts with: “{first[:120]}”"
    question = turn[0].content if turn else ""
    images = turn[0].images if turn else ()
    if images:  # what it was given, so the person sees the images reached the model call
        seen = ", ".join(f"{i.name} ({i.media_type}, {len(i.data):,} bytes)" for i in images)
        summary += f". With your message came {len(images)} image(s): {seen}"
    return Reply(
        text=(
            f"{LABEL}\n{summary}.\n\nYou asked: “{question[:200]}”. A real model would work on "
            "that now. Set up a provider (an OpenAI-compatible server, or Anthropic) to let an "
            "agent do real work here."
        ),
        chunk=8,
        delay_s=0.02,
    )


def _readme_in(listing: str) -> str | None:
    names = [line.split(" (")[0].strip() for line in listing.splitlines()]
    for name in names:
        if name.lower().startswith("readme") and not name.endswith("/"):
            return name
    return None
