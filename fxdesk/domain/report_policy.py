"""Per-work report policies (the spec's "notification policies", child-sessions §2.4, §7.1).

Reports are what a child tells its parent about its work: progress at intervals and its outcome.
They are not desktop notifications (``gui/desktop``) nor messages to the person (``messages``).

A policy says which terminal outcomes produce a delivery, and whether interval progress reports
run (every ``report_interval_ms``, for at most ``report_duration_ms``). It is captured for each
work item at admission, so later configuration changes do not affect running work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fxdesk.domain.model import WorkStatus

TERMINAL = "terminal"
DURATION_ELAPSED = "duration_elapsed"


class InvalidPolicy(ValueError):
    pass


@dataclass(frozen=True)
class ReportPolicy:
    on_completed: bool = True
    on_failed: bool = True
    on_cancelled: bool = True
    report_interval_ms: int | None = None
    report_duration_ms: int | None = None
    stop_conditions: frozenset[str] = frozenset({TERMINAL})

    def __post_init__(self) -> None:
        if self.report_duration_ms is not None and self.report_interval_ms is None:
            raise InvalidPolicy("a report duration needs a report interval")
        if DURATION_ELAPSED in self.stop_conditions and self.report_duration_ms is None:
            raise InvalidPolicy("stopping on duration_elapsed needs a report duration")
        if self.report_interval_ms is not None and self.report_interval_ms <= 0:
            raise InvalidPolicy("the report interval must be positive")
        unknown = self.stop_conditions - {TERMINAL, DURATION_ELAPSED}
        if unknown:
            raise InvalidPolicy(f"unknown stop conditions: {sorted(unknown)}")

    def wants_terminal(self, status: WorkStatus) -> bool:
        return {
            WorkStatus.COMPLETED: self.on_completed,
            WorkStatus.FAILED: self.on_failed,
            WorkStatus.CANCELLED: self.on_cancelled,
        }.get(status, False)

    def first_check(self, started_at_ms: int) -> int | None:
        """When the first interval report is due, or None without interval reporting."""
        if self.report_interval_ms is None:
            return None
        return started_at_ms + self.report_interval_ms

    def to_json(self) -> str:
        return json.dumps(
            {
                "terminal": {
                    "completed": self.on_completed,
                    "failed": self.on_failed,
                    "cancelled": self.on_cancelled,
                },
                "report_interval_ms": self.report_interval_ms,
                "report_duration_ms": self.report_duration_ms,
                "stop_conditions": sorted(self.stop_conditions),
            },
            sort_keys=True,
        )

    @classmethod
    def from_data(cls, data: dict[str, Any] | None) -> ReportPolicy:
        if not data:
            return cls()
        terminal = data.get("terminal", {})
        return cls(
            on_completed=bool(terminal.get("completed", True)),
            on_failed=bool(terminal.get("failed", True)),
            on_cancelled=bool(terminal.get("cancelled", True)),
            report_interval_ms=data.get("report_interval_ms"),
            report_duration_ms=data.get("report_duration_ms"),
            stop_conditions=frozenset(data.get("stop_conditions", [TERMINAL])),
        )

    @classmethod
    def from_json(cls, text: str | None) -> ReportPolicy:
        return cls.from_data(json.loads(text) if text else None)
