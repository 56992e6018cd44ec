"""The Inbox dock: a root session's agent inbox, completions and signals by severity.

Each row is one event: its severity (a signal's, or how a run ended), what it says, the agent that
sent it, how many times a deduplicated signal was raised, its lane (⤷ steer: it goes into the
running turn) and whether it was delivered. Above the list, the capacity meter: pending events
and reserved completion slots of the inbox's maximum. The dock opens when something arrives
where the window has room for it (never widening the window) and stays until the person hides
it (View → Inbox).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QHeaderView,
    QMainWindow,
    QProgressBar,
    QStackedWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.agent_inbox import EventKind, EventStatus, InboxEvent
from fxdesk.engine.facade import InboxView
from fxdesk.gui.agents.text import event_rank, event_severity, event_summary, lane_mark
from fxdesk.gui.widgets import hint_label, widen_dock

AnyIndex = QModelIndex | QPersistentModelIndex

COL_SEVERITY, COL_WHAT, COL_COUNT, COL_LANE = range(4)
HEADERS = ("Severity", "What", "×", "Lane")  # who sent it leads "What"; the rest is its tooltip
ROLE_EVENT = Qt.ItemDataRole.UserRole + 1  # the frozen InboxEvent
STATUS_WORDS = {
    EventStatus.PENDING: "waiting",
    EventStatus.CLAIMED: "delivering",
    EventStatus.CONSUMED: "delivered",
    EventStatus.SUPERSEDED: "dropped",
    EventStatus.DEAD: "undeliverable",
}
EMPTY_TEXT = "Nothing has arrived from this session's sub-agents."
ROOM_MARGIN_PX = 40
PREFERRED_WIDTH_PX = 340
_BOLD = QFont()
_BOLD.setBold(True)


def capacity_text(view: InboxView) -> str:
    """ "3 of 32 slots used: 1 waiting, 2 reserved for running background runs"."""
    counters = view.counters
    return (
        f"{counters.used()} of {view.capacity} slots used: {counters.pending} waiting, "
        f"{counters.reserved} reserved for running background runs"
    )


def meter_text(view: InboxView) -> str:
    """The meter's own words: "3 of 32 slots · 1 waiting · 2 reserved"."""
    counters = view.counters
    return (
        f"{counters.used()} of {view.capacity} slots · {counters.pending} waiting · "
        f"{counters.reserved} reserved"
    )


class InboxModel(QAbstractTableModel):
    """Inbox events, most severe first, newest first within a severity."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[InboxEvent] = []

    def set_events(self, events: list[InboxEvent]) -> None:
        ordered = sorted(events, key=event_rank)
        if [e.id for e in ordered] == [e.id for e in self._rows]:
            for row, event in enumerate(ordered):
                if self._rows[row] != event:
                    self._rows[row] = event
                    self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))
            return
        self.beginResetModel()
        self._rows = ordered
        self.endResetModel()

    def event(self, row: int) -> InboxEvent:  # type: ignore[override]
        return self._rows[row]

    def events(self) -> list[InboxEvent]:
        return list(self._rows)

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(HEADERS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section]
        if role == Qt.ItemDataRole.ToolTipRole and section == COL_COUNT:
            return "How many times a signal was raised (repeats are folded into one row)"
        return None

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        event = self._rows[index.row()]
        column = index.column()
        if role == ROLE_EVENT:
            return event
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_SEVERITY:
                return event_severity(event)
            if column == COL_WHAT:
                if event.kind is EventKind.SIGNAL:
                    return f"{event.payload.get('agent_id') or 'sub-agent'}: {event_summary(event)}"
                return event_summary(event)
            if column == COL_COUNT:
                return f"×{event.count}" if event.count > 1 else ""
            if column == COL_LANE:
                return lane_mark(event)
        if role == Qt.ItemDataRole.FontRole and event.status.counted:
            return _BOLD  # not delivered yet
        if role == Qt.ItemDataRole.ToolTipRole:
            return _tooltip(event)
        return None

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return (
            Qt.ItemFlag.ItemIsEnabled
            | Qt.ItemFlag.ItemIsSelectable
            | Qt.ItemFlag.ItemNeverHasChildren
        )


def _tooltip(event: InboxEvent) -> str:
    payload = event.payload
    kind = "Signal" if event.kind is EventKind.SIGNAL else "Completion"
    lines = [f"{kind} from {payload.get('agent_id', 'a sub-agent')}: {event_summary(event)}"]
    if event.kind is EventKind.SIGNAL:
        raised = f" · raised {event.count}×" if event.count > 1 else ""
        lines.append(f"Key: {event.signal_key}{raised}")
        if payload.get("details") not in (None, "", {}, []):
            lines.append(f"Details: {str(payload.get('details'))[:500]}")
    lane = "steer: into the running turn" if lane_mark(event) else "queue: at the next turn"
    lines.append(f"Lane: {lane} · {STATUS_WORDS[event.status]}")
    if event.last_error:
        lines.append(f"Last error: {event.last_error}")
    lines.append(f"Run {event.run_id}")
    return "\n".join(lines)


class InboxDock(QDockWidget):
    """The "Inbox" dock.

    Signals:
        open_requested(str): show the run (its id) that sent the activated event.
    """

    open_requested = Signal(str)

    def __init__(self, since_ms: int, parent: QWidget | None = None) -> None:
        super().__init__("Inbox", parent)
        self.setObjectName("inbox-dock")
        self.root_id = ""
        self.since_ms = since_ms  # events from before the window opened are not news
        self._seen: set[str] = set()  # event ids already shown (new ones open the dock)
        self._opened_itself = False
        self.person_chose = False  # shown or hidden from View → Inbox: stays so
        self.model = InboxModel(self)
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(4, 4, 4, 4)
        self.meter = QProgressBar()
        self.meter.setAccessibleName("Inbox capacity")
        self.meter.setTextVisible(True)
        self.meter.setRange(0, 32)
        self.meter.setValue(0)
        self.meter.setFormat("%v of %m slots")
        column.addWidget(self.meter)
        self.stack = QStackedWidget()
        self.empty_label = hint_label(EMPTY_TEXT, wrap=True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.stack.addWidget(self.empty_label)
        self.view = QTreeView()
        self.view.setAccessibleName("Inbox events")
        self.view.setModel(self.model)
        self.view.setRootIsDecorated(False)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setAllColumnsShowFocus(True)
        self.view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.view.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(20)
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(COL_WHAT, QHeaderView.ResizeMode.Stretch)
        self.view.activated.connect(self._on_view_activated)
        self.stack.addWidget(self.view)
        column.addWidget(self.stack, 1)
        self.setWidget(body)
        self.toggleViewAction().triggered.connect(self._on_toggle_action_triggered)
        self.stack.setCurrentWidget(self.empty_label)

    def show_inbox(self, view: InboxView) -> None:
        """Show ``view``; opens the dock when an event arrived that was not shown before."""
        new = {e.id for e in view.events if e.created_at_ms >= self.since_ms} - self._seen
        self.root_id = view.root_session_id
        self._seen |= new
        self.model.set_events(view.events)
        used = view.counters.used()
        self.meter.setRange(0, max(view.capacity, 1))
        self.meter.setValue(min(used, view.capacity))
        self.meter.setFormat(meter_text(view).replace("%", "%%"))
        self.meter.setToolTip(capacity_text(view))
        self.meter.setAccessibleDescription(capacity_text(view))
        self.stack.setCurrentWidget(self.view if view.events else self.empty_label)
        if new:
            self.fit()

    def fit(self) -> None:
        """Open for something new, where the window has room, unless the person chose."""
        if self.isHidden() and not self.person_chose and self.has_room():
            self.show()
            self.raise_()  # the front tab where it shares the right side with Approvals
            self._opened_itself = True
            self._widen()

    def _widen(self) -> None:
        """Give a signal's words room: up to ``PREFERRED_WIDTH_PX``, within what the central
        area can spare (Qt would open it at its narrow minimum)."""
        widen_dock(self, PREFERRED_WIDTH_PX, ROOM_MARGIN_PX)

    def has_room(self) -> bool:
        """Whether the window can show the dock without growing: beside a dock already open
        on the right (they share its column), or with the central area's minimum to spare."""
        window = self.parentWidget()
        if not isinstance(window, QMainWindow) or window.centralWidget() is None:
            return True
        area = window.dockWidgetArea(self)
        for dock in window.findChildren(QDockWidget):
            visible = dock is not self and dock.isVisible() and not dock.isFloating()
            if visible and window.dockWidgetArea(dock) == area:
                return True
        central = window.centralWidget()
        assert central is not None
        needed = max(central.minimumSizeHint().width(), central.minimumWidth())
        spare = window.width() - needed
        return spare >= self.minimumSizeHint().width() + ROOM_MARGIN_PX

    @Slot(bool)
    def _on_toggle_action_triggered(self, _checked: bool) -> None:
        self.person_chose = True

    @Slot(QModelIndex)
    def _on_view_activated(self, index: QModelIndex) -> None:
        self.open_requested.emit(self.model.event(index.row()).run_id)
