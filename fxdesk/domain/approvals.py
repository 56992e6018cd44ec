"""Approvals: a question to the person about one tool action, and its answer.

An approval's id is stable (session, work item, request fingerprint), so asking again for the same
action in the same work item finds the same record (spec child-sessions §6.2). Its status moves
from ``pending`` to one answer, or to ``cancelled`` (the work was cancelled) or ``stale`` (the
work was interrupted by a restart; resuming asks again).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class ApprovalStatus(enum.StrEnum):
    PENDING = "pending"
    ALLOWED_ONCE = "allowed_once"
    ALLOWED_SESSION = "allowed_session"
    ALLOWED_ALWAYS = "allowed_always"
    DENIED = "denied"
    CANCELLED = "cancelled"
    STALE = "stale"


class Choice(enum.StrEnum):
    """What the person answers.

    ``ONCE_UNSANDBOXED`` ("run outside the sandbox, once") is offered for commands that would
    run in the sandbox (``offers_outside``), never for the session or always. It is stored as
    ``allowed_once`` with ``"unsandboxed": true`` in the resolution: the status column keeps
    its fixed set of answers.
    """

    ONCE = "once"
    SESSION = "session"
    ALWAYS = "always"
    DENY = "deny"
    ONCE_UNSANDBOXED = "unsandboxed"


CHOICE_STATUS = {
    Choice.ONCE: ApprovalStatus.ALLOWED_ONCE,
    Choice.SESSION: ApprovalStatus.ALLOWED_SESSION,
    Choice.ALWAYS: ApprovalStatus.ALLOWED_ALWAYS,
    Choice.DENY: ApprovalStatus.DENIED,
    Choice.ONCE_UNSANDBOXED: ApprovalStatus.ALLOWED_ONCE,
}


@dataclass(frozen=True)
class SandboxSummary:
    """What a command would run with if allowed as asked, for the approval's text.

    Attributes:
        sandboxed: It runs in the sandbox; False: outside it (``outside``: why).
        writes: What it may write besides the workspace and its /tmp (as the sandbox binds
            them: an existing path itself, a new file's folder).
        protected: Protected paths (``.git``, ``.fxdesk``) made writable for this command.
        network: Whether it has the network.
        refused: Writes asked for that the sandbox will not grant, with why.
        outside: Why it runs outside the sandbox ('' when it runs in it).
    """

    sandboxed: bool
    writes: tuple[str, ...] = ()
    protected: tuple[str, ...] = ()
    network: bool = False
    refused: tuple[str, ...] = ()
    outside: str = ""

    def lines(self) -> list[str]:
        """One or a few short lines: what the sandbox will let through."""
        if not self.sandboxed:
            return [f"Outside the sandbox: {self.outside}"]
        places = ["the workspace", "/tmp", *self.writes]
        places += [f"{path} (protected)" for path in self.protected]
        head, last = places[:-1], places[-1]
        network = "network on" if self.network else "network off"
        found = [f"Sandbox: may write {', '.join(head)} and {last}; {network}"]
        found += [f"Not writable there: {why}" for why in self.refused]
        return found

    def to_detail(self) -> dict[str, Any]:
        """As the approval's detail keeps it (JSON)."""
        return {
            "sandboxed": self.sandboxed,
            "writes": list(self.writes),
            "protected": list(self.protected),
            "network": self.network,
            "refused": list(self.refused),
            "outside": self.outside,
        }

    @classmethod
    def from_detail(cls, value: Any) -> SandboxSummary | None:
        """The summary an approval's detail holds (None when it has none: not a command)."""
        if not isinstance(value, dict) or not isinstance(value.get("sandboxed"), bool):
            return None

        def texts(key: str) -> tuple[str, ...]:
            found = value.get(key)
            return tuple(str(x) for x in found) if isinstance(found, list) else ()

        return cls(
            value["sandboxed"],
            texts("writes"),
            texts("protected"),
            value.get("network") is True,
            texts("refused"),
            str(value.get("outside") or ""),
        )


@dataclass(frozen=True)
class Approval:
    id: str
    session_id: str
    root_id: str
    work_id: str
    call_id: str
    fingerprint: str
    tool: str
    label: str  # the exact command, or the path(s)
    explanation: str = ""  # why, in the model's words
    detail: dict[str, Any] = field(default_factory=dict)  # reason, uncovered parts, diff preview
    status: ApprovalStatus = ApprovalStatus.PENDING
    resolution: dict[str, Any] = field(default_factory=dict)  # deny reason, rules created
    created_at_ms: int = 0
    resolved_at_ms: int | None = None

    @property
    def pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING

    @property
    def allowed(self) -> bool:
        return self.status in (
            ApprovalStatus.ALLOWED_ONCE,
            ApprovalStatus.ALLOWED_SESSION,
            ApprovalStatus.ALLOWED_ALWAYS,
        )

    @property
    def runs_command(self) -> bool:
        """Whether the call runs a command line (``run_command``, ``start_background``): its
        label is the line, and its rules are command rules."""
        return self.tool == "run_command" or self.detail.get("command") is True

    @property
    def sandbox(self) -> SandboxSummary | None:
        """What the command would run with if allowed (None: not a command)."""
        return SandboxSummary.from_detail(self.detail.get("sandbox"))

    @property
    def offers_outside(self) -> bool:
        """Whether "run outside the sandbox, once" is a choice: a command that would run in it.
        Not for a background task: it outlives the call, and always runs in its session's
        sandbox (unless the session is in unrestricted mode)."""
        summary = self.sandbox
        return summary is not None and summary.sandboxed and self.tool == "run_command"

    @property
    def unsandboxed(self) -> bool:
        """Allowed to run once outside the sandbox."""
        return self.allowed and self.resolution.get("unsandboxed") is True


class ApprovalNotPending(Exception):
    """Resolving an approval that is already answered, cancelled or stale."""

    def __init__(self, approval_id: str, status: ApprovalStatus | None) -> None:
        self.approval_id = approval_id
        self.status = status
        what = "does not exist" if status is None else f"is {status.value.replace('_', ' ')}"
        super().__init__(f"approval {approval_id[:12]} is no longer pending (it {what})")


class ChoiceNotOffered(ValueError):
    """An answer the approval does not offer ("run outside the sandbox" for a file edit)."""

    def __init__(self, approval_id: str, choice: Choice) -> None:
        self.approval_id = approval_id
        self.choice = choice
        super().__init__(
            f"approval {approval_id[:12]} is not a command that would run in the sandbox: "
            f"'{choice.value}' (run outside the sandbox) is offered only for those"
        )
