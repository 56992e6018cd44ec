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
    """What the person answers."""

    ONCE = "once"
    SESSION = "session"
    ALWAYS = "always"
    DENY = "deny"


CHOICE_STATUS = {
    Choice.ONCE: ApprovalStatus.ALLOWED_ONCE,
    Choice.SESSION: ApprovalStatus.ALLOWED_SESSION,
    Choice.ALWAYS: ApprovalStatus.ALLOWED_ALWAYS,
    Choice.DENY: ApprovalStatus.DENIED,
}


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


class ApprovalNotPending(Exception):
    """Resolving an approval that is already answered, cancelled or stale."""

    def __init__(self, approval_id: str, status: ApprovalStatus | None) -> None:
        self.approval_id = approval_id
        self.status = status
        what = "does not exist" if status is None else f"is {status.value.replace('_', ' ')}"
        super().__init__(f"approval {approval_id[:12]} is no longer pending (it {what})")
