"""The Inbox dock on its own: rows by severity, the dedupe count, the steer marker, the capacity
meter, and opening only where the window has room (never widening it)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMainWindow, QWidget
from pytestqt.qtbot import QtBot

from fxdesk.domain.agent_inbox import EventKind, EventStatus, InboxEvent, Lane, Severity
from fxdesk.domain.agent_runs import Counters
from fxdesk.engine.facade import InboxView
from fxdesk.gui.agents.inbox_dock import COL_COUNT, COL_LANE, COL_SEVERITY, COL_WHAT, InboxDock


def event(
    id: str,
    kind: EventKind,
    *,
    severity: Severity | None = None,
    lane: Lane = Lane.QUEUE,
    count: int = 1,
    state: EventStatus = EventStatus.PENDING,
    created: int = 1_000,
    **payload: object,
) -> InboxEvent:
    return InboxEvent(
        id,
        "root",
        "run-1",
        kind,
        f"{kind}:{id}",
        lane,
        state,
        True,
        dict(payload),
        severity,
        "err" if kind is EventKind.SIGNAL else None,
        None,
        count,
        1,
        0,
        None,
        None,
        created,
        created,
        created,
        None,
        None,
    )


EVENTS = [
    event("c1", EventKind.COMPLETION, agent_id="general", status="completed", summary="done"),
    event("s1", EventKind.SIGNAL, severity=Severity.INFO, agent_id="watcher", summary="calm"),
    event(
        "s2",
        EventKind.SIGNAL,
        severity=Severity.CRITICAL,
        lane=Lane.STEER,
        count=3,
        agent_id="watcher",
        summary="svc-a is down",
    ),
]


def window_with_dock(qtbot: QtBot, width: int) -> tuple[QMainWindow, InboxDock]:
    window = QMainWindow()
    qtbot.addWidget(window)
    central = QWidget()
    central.setMinimumSize(700, 400)
    window.setCentralWidget(central)
    dock = InboxDock(since_ms=0, parent=window)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    dock.hide()
    window.resize(width, 600)
    window.show()
    qtbot.waitExposed(window)
    return window, dock


def test_rows_by_severity_with_count_lane_and_the_capacity_meter(qtbot: QtBot) -> None:
    _window, dock = window_with_dock(qtbot, 1280)
    dock.show_inbox(InboxView("root", EVENTS, Counters(pending=3, reserved=2), 32))
    model = dock.model
    rows = [model.index(r, COL_WHAT).data() for r in range(model.rowCount())]
    assert rows == ["watcher: svc-a is down", "watcher: calm", "general completed: done"]
    assert model.index(0, COL_SEVERITY).data() == "‼ critical"
    assert model.index(0, COL_COUNT).data() == "×3"
    assert model.index(0, COL_LANE).data() == "⤷ steer"
    assert model.index(1, COL_LANE).data() == ""
    assert model.index(2, COL_SEVERITY).data() == "✓ done"
    assert (dock.meter.value(), dock.meter.maximum()) == (5, 32)
    assert dock.meter.text() == "5 of 32 slots · 3 waiting · 2 reserved"
    assert dock.isVisible()  # something arrived and there is room


def test_a_narrow_window_keeps_the_dock_closed_and_its_width(qtbot: QtBot) -> None:
    window, dock = window_with_dock(qtbot, 800)
    dock.show_inbox(InboxView("root", EVENTS, Counters(pending=3), 32))
    assert dock.isHidden()
    assert window.width() == 800
    dock.toggleViewAction().trigger()  # View → Inbox still opens it
    assert dock.isVisible()


def test_events_from_before_the_window_opened_are_not_news(qtbot: QtBot) -> None:
    _window, dock = window_with_dock(qtbot, 1280)
    dock.since_ms = 5_000
    dock.show_inbox(InboxView("root", EVENTS, Counters(), 32))
    assert dock.isHidden() and dock.model.rowCount() == 3
    fresh = event("s3", EventKind.SIGNAL, severity=Severity.WARNING, created=6_000, summary="x")
    dock.show_inbox(InboxView("root", [*EVENTS, fresh], Counters(pending=1), 32))
    assert dock.isVisible()
    dock.toggleViewAction().trigger()  # the person hides it: it stays hidden
    assert dock.isHidden()
    later = event("s4", EventKind.SIGNAL, severity=Severity.ERROR, created=7_000, summary="y")
    dock.show_inbox(InboxView("root", [*EVENTS, fresh, later], Counters(pending=2), 32))
    assert dock.isHidden()
