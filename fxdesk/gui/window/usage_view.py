"""View → Usage: what model calls used, per day and per session (issue 14 item 6).

Two tables read from the engine (``Engine.usage_by_day``, ``usage_by_session``): the last 30
days with calls, newest first, and the sessions that used the most in that time. Calls whose
server reported nothing are counted in their own column, never as free.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.usage import DayUsage, SessionUsage, UsageTotals, money, tokens

COLUMNS = ("Model calls", "In", "Out", "Cost", "Unreported")
DAYS = 30


def _cells(totals: UsageTotals) -> list[str]:
    priced = totals.reported - totals.unpriced
    cost = money(totals.cost_usd) + ("+" if totals.unpriced and priced else "") if priced else "—"
    return [
        f"{totals.model_calls:,}",
        tokens(totals.input_tokens),
        tokens(totals.output_tokens),
        cost,
        f"{totals.unreported:,}" if totals.unreported else "",
    ]


def _table(first: str, rows: list[tuple[str, UsageTotals]], name: str) -> QTableWidget:
    table = QTableWidget(len(rows), len(COLUMNS) + 1)
    table.setAccessibleName(name)
    table.setHorizontalHeaderLabels([first, *COLUMNS])
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    for r, (label, totals) in enumerate(rows):
        table.setItem(r, 0, QTableWidgetItem(label))
        for c, text in enumerate(_cells(totals), start=1):
            item = QTableWidgetItem(text)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)
    header = table.horizontalHeader()
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    for c in range(1, len(COLUMNS) + 1):
        header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
    return table


class UsageDialog(QDialog):
    """Usage per day and per session over the last 30 days."""

    def __init__(
        self, days: list[DayUsage], sessions: list[SessionUsage], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Usage")
        self.resize(720, 560)
        layout = QVBoxLayout(self)
        if not days:
            layout.addWidget(QLabel(f"No model calls in the last {DAYS} days."))
        layout.addWidget(QLabel(f"<b>Per day</b> (last {DAYS} days)"))
        self.days = _table("Day", [(d.day, d.totals) for d in days], "Usage per day")
        layout.addWidget(self.days, 1)
        layout.addWidget(QLabel("<b>Sessions that used the most</b>"))
        self.sessions = _table(
            "Session", [(s.name, s.totals) for s in sessions], "Usage per session"
        )
        layout.addWidget(self.sessions, 1)
        note = QLabel(
            "Tokens as each server reported them; cost from the prices in each profile "
            "(“—” where a profile has none). “Unreported”: calls whose server said nothing."
        )
        note.setWordWrap(True)
        layout.addWidget(note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.days.setFocus()
