"""What a session reports to its root (the UI, or a parent agent), with stable ids.

Stable ids make every append exactly-once: recording the same tool phase or terminal outcome twice,
or repairing one after a failed save, can never duplicate it (spec child-sessions §5.3).
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field
from typing import Any


class DeliveryKind(enum.StrEnum):
    TOOL_ACTIVITY = "tool_activity"
    TERMINAL = "terminal"
    INTERVAL = "interval"


class ToolPhase(enum.StrEnum):
    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DENIED = "denied"


@dataclass(frozen=True)
class Delivery:
    id: str
    session_id: str
    target_id: str
    kind: DeliveryKind
    payload: dict[str, Any] = field(default_factory=dict)
    work_id: str | None = None
    created_at_ms: int = 0


def _stable(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def tool_activity_id(session_id: str, work_id: str, call_id: str, phase: ToolPhase) -> str:
    return "ta-" + _stable(session_id, work_id, call_id, phase.value)


def terminal_id(session_id: str, work_id: str) -> str:
    return "term-" + _stable(session_id, work_id)


def interval_id(session_id: str, work_id: str, due_ms: int) -> str:
    return "int-" + _stable(session_id, work_id, str(due_ms))
