"""Fault injection at commit points, for durability tests.

Every write transaction through ``Store.write`` is one *commit*, numbered from 1 in the order the
writer thread runs them (optionally counted per label). A plan makes the Nth commit, or every commit
from the Nth on, fail:

- ``DEFINITE``: the transaction is rolled back and ``CommitFailed`` raised; nothing was written.
- ``INDETERMINATE``: the transaction commits, then ``CommitIndeterminate`` is raised, as when the
  disk acknowledged the write but the process never heard back.

The injector records every commit it saw and what it did to it, so tests assert on that record.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass


class Fault(enum.Enum):
    DEFINITE = "definite"
    INDETERMINATE = "indeterminate"


@dataclass(frozen=True)
class FaultPlan:
    """Fail commit number ``nth`` (1-based), or every commit from it on when ``onward``.

    With ``label`` set, only commits carrying that label are counted and failed.
    """

    nth: int
    fault: Fault
    onward: bool = False
    label: str | None = None

    def __post_init__(self) -> None:
        if self.nth < 1:
            raise ValueError("commits are numbered from 1")


@dataclass(frozen=True)
class CommitRecord:
    number: int  # position among all commits
    label: str
    fault: Fault | None


class FaultInjector:
    """Decides, per commit, whether to inject a fault; records every decision."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: list[FaultPlan] = []
        self._total = 0
        self._per_label: dict[str, int] = {}
        self.records: list[CommitRecord] = []

    def fail(
        self, nth: int, fault: Fault, *, onward: bool = False, label: str | None = None
    ) -> FaultPlan:
        plan = FaultPlan(nth, fault, onward, label)
        with self._lock:
            self._plans.append(plan)
        return plan

    def clear(self) -> None:
        """Drop every plan (the counters and the record stay)."""
        with self._lock:
            self._plans.clear()

    @property
    def commits_seen(self) -> int:
        return self._total

    def on_commit(self, label: str) -> Fault | None:
        """Called by the store just before it commits; returns the fault to inject, if any."""
        with self._lock:
            self._total += 1
            count = self._per_label[label] = self._per_label.get(label, 0) + 1
            chosen: Fault | None = None
            for plan in self._plans:
                number = self._total if plan.label is None else count
                if plan.label is not None and plan.label != label:
                    continue
                if number == plan.nth or (plan.onward and number > plan.nth):
                    chosen = plan.fault
                    break
            self.records.append(CommitRecord(self._total, label, chosen))
            return chosen


# --- steps inside one transaction -------------------------------------------------------------

Steps = Callable[[str], None]
"""A hook a multi-step store function calls after each step (``"reserved"``, ``"insert:0"``...);
production passes ``no_steps``, tests pass a ``StepFaults`` that raises at one of them so the
whole transaction must roll back."""


def no_steps(step: str) -> None:
    """The production hook: nothing happens between steps."""


class StepFault(Exception):
    """Raised by ``StepFaults`` at the step it was told to fail."""


class StepFaults:
    """Records the steps a store function passed and raises ``StepFault`` at ``fail_at``."""

    def __init__(self, fail_at: str | None = None) -> None:
        self.fail_at = fail_at
        self.seen: list[str] = []

    def __call__(self, step: str) -> None:
        self.seen.append(step)
        if step == self.fail_at:
            raise StepFault(f"injected failure after step {step!r}")
