"""Persistent sub-agents an agent manages itself (issue 13 item 3; spec child-sessions §2.15).

An agent spawns a *persistent* child session (``spawn_agent``), sends it messages, waits for
them, closes it. Such a child is marked in its config with the session that spawned it
(``MANAGED_BY_KEY``); its parent is the caller, and only its current parent may steer it.

Each of its finished work items has a terminal delivery (its outcome, with a stable id); the
parent's model receives those it has not read yet at its next step boundary, once: the history
row that carries a result to the model lists the delivery ids it carries
(``CHILD_RESULTS_KEY``), and that row is the proof it was delivered. A ``wait_for_agent`` or
``close_agent`` result lists the ids it returned the same way. Tool activity and approvals
never go to the parent's model (they are the person's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MANAGED_BY_KEY = "managed_by"  # a child's config: the session whose agent spawned it
# A session's config when an external (ACP) agent runs it: {"id": its ACP session id, "agent":
# its command line, "name": the agent's name}.
ACP_SESSION_KEY = "acp_session"
CHILD_RESULTS_KEY = "child_results"  # a history row's data: the delivery ids it carried
ANSWER_CHARS = 4_000  # of one result, in the text the parent's model reads
MAX_OPEN_CHILDREN = 8  # open (not closed) children one session's agent may keep


@dataclass(frozen=True)
class ChildInfo:
    """One child as its parent's agent sees it."""

    id: str
    name: str
    agent_id: str | None
    state: str
    permission_mode: str
    queued: int = 0


@dataclass(frozen=True)
class ChildResult:
    """A finished work item of a managed child: its terminal state and last answer."""

    delivery_id: str
    child_id: str
    child_name: str
    work_id: str
    state: str  # completed, failed, cancelled
    answer: str  # the child's final answer of that item ('' when it did not complete)
    reason: str | None = None
    at_ms: int = 0


def describe_result(result: ChildResult) -> str:
    """One result as the parent's model reads it."""
    head = f"- {result.child_name} (sub-agent {result.child_id}): terminal state {result.state}"
    done = result.state == "completed"
    body = (result.answer if done else result.reason or "").strip()
    if len(body) > ANSWER_CHARS:
        body = body[:ANSWER_CHARS] + " …(cut)"
    return f"{head}\n{body}".rstrip()


def describe_results(results: Sequence[ChildResult]) -> str:
    """The message injected into the parent's turn at its next step boundary."""
    lines = [f"[sub-agents] {len(results)} terminal result(s) from your sub-agents:"]
    lines += [describe_result(r) for r in results]
    return "\n".join(lines)


@dataclass(frozen=True)
class ChildWait:
    """What ``wait_for_agent`` (or ``close_agent``) came to.

    ``finished``: the child has no work left to do (its current work ended); ``results``: the
    terminal results the parent had not read yet, oldest first (these are now read); when there
    are none, ``last`` is its newest result, already read before, for reference.
    """

    child: ChildInfo
    finished: bool
    results: tuple[ChildResult, ...] = ()
    last: ChildResult | None = None
    note: str = ""

    @property
    def delivery_ids(self) -> list[str]:
        return [r.delivery_id for r in self.results]
