"""The Runs table's model: one row per agent run of a root session's tree, oldest first.

``RunsModel`` holds frozen ``AgentRun`` snapshots (and the tree's signal events, to say what a
run raised) and updates rows in place, so the selection survives a refresh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from fxdesk.domain.agent_inbox import InboxEvent
from fxdesk.domain.agent_runs import AgentRun
from fxdesk.gui.agents.text import (
    MODE_MARKS,
    NONE,
    SEVERITY_MARKS,
    STATUS_LABELS,
    event_rank,
    run_cost,
    run_duration,
    run_model,
    run_result,
    run_tokens,
    run_tooltip,
)

AnyIndex = QModelIndex | QPersistentModelIndex

(
    COL_TASK,
    COL_AGENT,
    COL_MODEL,
    COL_STATUS,
    COL_DURATION,
    COL_TOOLS,
    COL_TOKENS,
    COL_COST,
    COL_RESULT,
    COL_SIGNALS,
) = range(10)
HEADERS = (
    "Task",
    "Agent",
    "Model",
    "Status",
    "Duration",
    "Tool calls",
    "Tokens",
    "Cost",
    "Result",
    "Signals",
)
ROLE_RUN_ID = Qt.ItemDataRole.UserRole + 1  # str
ROLE_RUN = Qt.ItemDataRole.UserRole + 2  # the frozen AgentRun
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
_NUMERIC = (COL_DURATION, COL_TOOLS, COL_TOKENS, COL_COST)


class RunsModel(QAbstractTableModel):
    """Agent runs as rows of snapshots, in the order given."""

    def __init__(self, now_ms: Callable[[], int], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._now_ms = now_ms
        self._rows: list[AgentRun] = []
        self._signals: dict[str, list[InboxEvent]] = {}  # run id -> the signals it raised

    def set_runs(self, runs: list[AgentRun], signals: Sequence[InboxEvent] = ()) -> None:
        """Replace the rows with ``runs``: rows are updated in place while the ids keep their
        order (runs only ever join at the end), else the model resets."""
        self._signals = {}
        for event in signals:  # a run's signal_ids are only written when it finishes
            self._signals.setdefault(event.run_id, []).append(event)
        ids = [run.id for run in runs]
        if ids[: len(self._rows)] != [run.id for run in self._rows]:
            self.beginResetModel()
            self._rows = list(runs)
            self.endResetModel()
            return
        for row, run in enumerate(runs[: len(self._rows)]):
            if self._rows[row] != run:
                self._rows[row] = run
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))
        if len(runs) > len(self._rows):
            first, last = len(self._rows), len(runs) - 1
            self.beginInsertRows(QModelIndex(), first, last)
            self._rows.extend(runs[first:])
            self.endInsertRows()

    def runs(self) -> list[AgentRun]:
        return list(self._rows)

    def run(self, row: int) -> AgentRun:
        return self._rows[row]

    def row_of(self, run_id: str) -> int | None:
        return next((i for i, r in enumerate(self._rows) if r.id == run_id), None)

    def tick(self) -> None:
        """Repaint the durations of unfinished runs (their clock moves)."""
        for row, run in enumerate(self._rows):
            if not run.status.terminal:
                index = self.index(row, COL_DURATION)
                self.dataChanged.emit(index, index, [Qt.ItemDataRole.DisplayRole])

    def signals_text(self, run: AgentRun) -> str:
        """ "⚠ warning" (the most severe), "+1" per other signal, "×3" when one repeated."""
        events = sorted(self._signals.get(run.id, []), key=event_rank)
        if not events:
            return str(len(run.signal_ids)) if run.signal_ids else NONE
        first = events[0]
        text = SEVERITY_MARKS[first.severity] if first.severity is not None else "signal"
        if len(events) > 1:
            text += f" +{len(events) - 1}"
        repeats = sum(e.count for e in events)
        if repeats > len(events):
            text += f" ×{repeats}"
        return text

    def _signals_tooltip(self, run: AgentRun) -> str | None:
        lines = []
        for event in self._signals.get(run.id, []):
            severity = event.severity.value if event.severity is not None else "signal"
            times = f" (×{event.count})" if event.count > 1 else ""
            lines.append(f"{severity}: {event.payload.get('summary', '')}{times}")
        return "\n".join(lines) or None

    # --- Qt ------------------------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(HEADERS):
            if role == Qt.ItemDataRole.DisplayRole:
                return HEADERS[section]
            if role == Qt.ItemDataRole.TextAlignmentRole and section in _NUMERIC:
                return _RIGHT
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        run = self._rows[index.row()]
        column = index.column()
        if role == ROLE_RUN_ID:
            return run.id
        if role == ROLE_RUN:
            return run
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(run, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in _NUMERIC:
            return _RIGHT
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == COL_RESULT and (run.result or run.error):
                return (run.result or run.error or "")[:2000]
            if column == COL_SIGNALS:
                return self._signals_tooltip(run)
            return run_tooltip(run, self._now_ms())
        return None

    def _display(self, run: AgentRun, column: int) -> str:
        if column == COL_TASK:
            return "  " * max(0, run.depth - 1) + " ".join(run.task.split())
        if column == COL_AGENT:
            return f"{run.agent_id} · {MODE_MARKS[run.mode]}"
        if column == COL_MODEL:
            return run_model(run)
        if column == COL_STATUS:
            return STATUS_LABELS[run.status]
        if column == COL_DURATION:
            return run_duration(run, self._now_ms())
        if column == COL_TOOLS:
            return NONE if run.tool_calls is None else str(run.tool_calls)
        if column == COL_TOKENS:
            return run_tokens(run)
        if column == COL_COST:
            return run_cost(run)
        if column == COL_RESULT:
            return run_result(run) or NONE
        if column == COL_SIGNALS:
            return self.signals_text(run)
        return ""

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return (
            Qt.ItemFlag.ItemIsEnabled
            | Qt.ItemFlag.ItemIsSelectable
            | Qt.ItemFlag.ItemNeverHasChildren
        )
