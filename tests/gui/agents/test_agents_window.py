"""Sub-agents in the window, against a real App whose models are scripted per session.

A root agent delegates background runs (a watcher that raises a signal, a slow one) and the
window shows them under the root with the agent's name, a background mark and a countdown; the
Runs dock lists them and cancels one; the signal is in the Inbox dock with its severity and the
inbox's capacity; Stop all agents cancels the rest; everything is reachable with the keyboard.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu

from fxdesk.app import App
from fxdesk.domain.agent_runs import AgentRun, RunMode, RunStatus
from fxdesk.domain.model import PermissionMode, Session, SessionState
from fxdesk.domain.usage import UsageTotals
from fxdesk.gui.agents.controller import AgentsController
from fxdesk.gui.agents.inbox_dock import COL_COUNT, COL_LANE, COL_SEVERITY, COL_WHAT
from fxdesk.gui.agents.runs_model import COL_AGENT, COL_SIGNALS, COL_STATUS, COL_TASK
from fxdesk.gui.application import GuiController
from fxdesk.gui.sessions.delegate import SessionDelegate
from fxdesk.gui.sessions.model import (
    ROLE_AGENT_RUN,
    ROLE_RUN_LEFT,
    ROLE_SPAWNED_AGENT,
    ROLE_STATE,
    ROLE_TREE_USAGE,
)
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, Stall
from tests.engine.agents.harness import ByName, Script, call, delegate
from tests.gui.waiting import until

WATCHER = """---
id: watcher
description: Watches and raises alerts.
signals: queue
timeout: 10m
---
You watch things and raise signals when they go wrong.
"""
CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


class Desk:
    """The window over a real App; each session's model is chosen by its name."""

    def __init__(self, paths: DataPaths, root: Script, routes: dict[str, Script]) -> None:
        self.app = App(paths, providers=ByName(dict(routes), root))
        self.controller = GuiController(self.app)
        self.task = asyncio.ensure_future(self.controller.main())
        self.confirmations: list[tuple[str, str, str]] = []

    async def started(self) -> Desk:
        await until(lambda: self.controller.ready.is_set() or self.task.done())
        assert self.controller.sessions is not None

        async def confirm(title: str, _text: str, do: str, keep: str) -> bool:
            self.confirmations.append((title, do, keep))
            return True

        self.controller.sessions.confirm = confirm
        return self

    @property
    def agents(self) -> AgentsController:
        assert self.controller.agents is not None
        return self.controller.agents

    def run_of(self, child_id: str) -> AgentRun | None:
        run = self.controller.model.session_index(child_id).data(ROLE_AGENT_RUN)
        return run if isinstance(run, AgentRun) else None

    def children(self, root_id: str) -> list[str]:
        model = self.controller.model
        index = model.session_index(root_id)
        return [
            model.index(row, 0, index).data(Qt.ItemDataRole.DisplayRole)
            for row in range(model.rowCount(index))
        ]

    async def stop(self) -> None:
        self.controller.request_quit()
        await asyncio.wait_for(self.task, 30)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".fxdesk" / "agents").mkdir(parents=True)
    (folder / ".fxdesk" / "agents" / "watcher.md").write_text(WATCHER)
    return folder


@pytest.fixture
async def fan_out(data_paths: DataPaths, project: Path) -> AsyncIterator[tuple[Desk, Session]]:
    """A root that started two background runs: a watcher that raised a warning and goes on
    watching, and a slow one; both keep running until cancelled."""
    root = Script(
        [
            delegate(
                ("watcher", "watch the error rate"), ("general", "slow task"), mode="background"
            ),
            Reply("Waiting for my sub-agents."),
            Reply("Noted."),
        ],
        when_done="repeat_last",
    )
    watcher = Script(
        [
            call(
                "emit_signal",
                key="err-rate",
                severity="warning",
                summary="error rate 7%",
                dedupe_key="svc-a:err",
            ),
            Stall(),
        ]
    )
    routes = {"watch the error rate": watcher, "slow task": Script([Stall()])}
    desk = await Desk(data_paths, root, routes).started()
    try:
        session = await desk.app.engine.create_session(
            project,
            name="Release check",
            permission_mode=PermissionMode.YOLO,
            first_message="Fan out",
        )
        desk.controller.window.select_session(session.id)
        yield desk, session
    finally:
        await desk.stop()


def running_children(desk: Desk, root_id: str) -> list[AgentRun]:
    runs = desk.agents.runs.get(root_id, [])
    return [
        r
        for r in runs
        if r.status is RunStatus.RUNNING
        and r.child_session_id
        and desk.run_of(r.child_session_id) == r
    ]


async def test_runs_show_under_their_caller_with_agent_mode_and_countdown(
    fan_out: tuple[Desk, Session],
) -> None:
    desk, session = fan_out
    runs = await until(
        lambda: len(running_children(desk, session.id)) == 2 and running_children(desk, session.id)
    )
    assert isinstance(runs, list)
    model = desk.controller.model
    names = desk.children(session.id)
    assert sorted(names) == ["general: slow task", "watcher: watch the error rate"]
    for run in runs:
        assert run.child_session_id is not None
        index = model.session_index(run.child_session_id)
        assert index.parent() == model.session_index(session.id)  # nested under the caller
        left = await until(lambda i=index: i.data(ROLE_RUN_LEFT))
        assert isinstance(left, int) and 0 < left <= 1800
        state = SessionState(index.data(ROLE_STATE))
        badges = [text for text, _role in SessionDelegate._badges(index, state)]
        assert badges[0].startswith("running · ")  # one state badge, with the countdown
        assert "bg" in badges
        assert sum(b.startswith(("running", "idle", "completed")) for b in badges) == 1
        tooltip = index.data(Qt.ItemDataRole.ToolTipRole)
        assert run.agent_id in tooltip and "background run" in tooltip and "Deadline in" in tooltip
    # The countdown ticks.
    watcher = next(r for r in runs if r.agent_id == "watcher")
    assert watcher.child_session_id is not None
    first = model.session_index(watcher.child_session_id).data(ROLE_RUN_LEFT)
    await until(
        lambda: model.session_index(watcher.child_session_id).data(ROLE_RUN_LEFT) != first, within=5
    )
    # The root's tooltip has its tree's totals.
    root_index = model.session_index(session.id)
    await until(lambda: isinstance(root_index.data(ROLE_TREE_USAGE), UsageTotals))
    assert "With its sub-agents:" in root_index.data(Qt.ItemDataRole.ToolTipRole)


async def test_runs_dock_lists_the_runs_and_cancels_one_and_the_inbox_shows_the_signal(
    fan_out: tuple[Desk, Session],
) -> None:
    desk, session = fan_out
    window = desk.controller.window
    await until(lambda: len(running_children(desk, session.id)) == 2)
    # Runs… from the keyboard: the dock shows with the keyboard in its table.
    window.activateWindow()
    await until(window.isActiveWindow)  # shortcuts reach the active window only
    QTest.keyClick(window, Qt.Key.Key_R, CTRL_SHIFT)
    dock = desk.agents.runs_dock
    await until(lambda: dock.isVisible() and dock.model.rowCount() == 2)
    model = dock.model
    rows = {model.index(r, COL_TASK).data(): r for r in range(2)}
    assert set(rows) == {"watch the error rate", "slow task"}
    watch_row = rows["watch the error rate"]
    assert model.index(watch_row, COL_AGENT).data() == "watcher · bg"
    assert model.index(watch_row, COL_STATUS).data() == "running"
    await until(lambda: model.index(watch_row, COL_SIGNALS).data() == "⚠ warning")
    assert dock.title.text() == "Runs of “Release check”"

    # The signal is in the Inbox dock (it opened by itself: the window has room).
    inbox = desk.agents.inbox_dock
    await until(lambda: inbox.isVisible() and inbox.model.rowCount() >= 1)
    signal_row = next(
        r
        for r in range(inbox.model.rowCount())
        if inbox.model.index(r, COL_WHAT).data() == "watcher: error rate 7%"
    )
    assert inbox.model.index(signal_row, COL_SEVERITY).data() == "⚠ warning"
    assert inbox.model.index(signal_row, COL_COUNT).data() == ""  # raised once
    assert inbox.model.index(signal_row, COL_LANE).data() == ""  # the queue lane
    view = await desk.app.engine.inbox(session.id)
    await until(lambda: inbox.meter.value() == view.counters.used() or inbox.meter.value() == 2)
    assert inbox.meter.maximum() == 32
    assert "reserved for running background runs" in inbox.meter.toolTip()
    assert inbox.meter.text().startswith(f"{inbox.meter.value()} of 32 slots · ")

    # Cancel the slow one from the dock (Up/Down in the table, Alt+C for Cancel run).
    dock.select(model.run(rows["slow task"]).id)
    assert dock.cancel_button.isEnabled()
    QTest.keyClick(dock.cancel_button, Qt.Key.Key_Space)
    await until(lambda: model.run(rows["slow task"]).status is RunStatus.CANCELLED)
    assert ("Cancel this run?", "Cancel run", "Keep running") in desk.confirmations
    slow_child = model.run(rows["slow task"]).child_session_id
    assert slow_child is not None
    await until(lambda: (r := desk.run_of(slow_child)) and r.status is RunStatus.CANCELLED)
    assert model.run(watch_row).status is RunStatus.RUNNING

    # Enter on a row opens its sub-agent's session in the tree.
    dock.select(model.run(watch_row).id)
    dock.view.setFocus()
    QTest.keyClick(dock.view, Qt.Key.Key_Return)
    watcher_child = model.run(watch_row).child_session_id
    await until(lambda: (s := window.selected_session()) and s.id == watcher_child)


@pytest.mark.qt_log_ignore("This plugin does not support grabbing the keyboard")
async def test_stop_all_agents_cancels_every_run_of_the_tree(
    fan_out: tuple[Desk, Session],
) -> None:
    desk, session = fan_out
    window = desk.controller.window
    await until(lambda: len(running_children(desk, session.id)) == 2)
    await until(lambda: desk.agents.stop_all_action.isEnabled())
    # In the Session menu and in the tree's context menu.
    session_menu = window.menuBar().actions()[0].menu()
    assert isinstance(session_menu, QMenu)
    assert desk.agents.stop_all_action in session_menu.actions()
    window.tree.customContextMenuRequested.emit(QPoint(5, 5))
    menu = await until(
        lambda: next((m for m in window.tree.findChildren(QMenu) if m.isVisible()), None)
    )
    assert isinstance(menu, QMenu)
    assert desk.agents.stop_all_action in menu.actions()
    assert desk.agents.show_runs_action in menu.actions()
    menu.close()

    desk.agents.stop_all_action.trigger()
    await until(
        lambda: all(r.status is RunStatus.CANCELLED for r in desk.agents.runs.get(session.id, []))
    )
    assert ("Stop all agents?", "Stop all agents", "Keep them running") in desk.confirmations
    runs = await desk.app.engine.runs(session.id)
    assert len(runs) == 2 and all(r.status is RunStatus.CANCELLED for r in runs)
    assert all(r.mode is RunMode.BACKGROUND for r in runs)
    for run in runs:
        assert run.child_session_id is not None
        await until(
            lambda c=run.child_session_id: (r := desk.run_of(c)) and r.status is RunStatus.CANCELLED
        )
        index = desk.controller.model.session_index(run.child_session_id)
        state = SessionState(index.data(ROLE_STATE))
        assert SessionDelegate._badges(index, state)[0][0] == "cancelled"
    await until(lambda: not desk.agents.stop_all_action.isEnabled())
    assert not QApplication.activePopupWidget()


SPAWN = {"agent": "explorer", "name": "parser map", "task": "map the parser"}


async def test_a_persistent_child_the_agent_spawned_is_marked_apart_from_a_hand_opened_one(
    data_paths: DataPaths, project: Path
) -> None:
    """Three children of one root: a persistent explorer its agent spawned, a run's child, and
    one the person opened. Only the first carries the agent's name and the persistent mark."""
    root = Script(
        [
            Reply(tool_calls=(ScriptedCall("spawn_agent", SPAWN),)),
            delegate(("general", "quick job")),
            Reply("Spawned one, delegated one."),
        ]
    )
    routes = {
        "parser map": Script([Reply("mapped")]),
        "quick job": Script([Reply("done quickly")]),
        "by hand": Script([Reply("hand answer")]),
    }
    desk = await Desk(data_paths, root, routes).started()
    try:
        engine = desk.app.engine
        session = await engine.create_session(
            project, name="Split", permission_mode=PermissionMode.YOLO, first_message="Go"
        )
        await asyncio.wait_for(engine.join(session.id), 30)
        by_hand = await engine.create_child(session.id, "hand task", name="by hand")
        model = desk.controller.model
        await until(lambda: len(desk.children(session.id)) == 3)
        catalog = await engine.catalog()
        ids = {s.name: s.id for s in catalog.sessions if s.parent_id == session.id}
        assert set(ids) == {"parser map", "general: quick job", "by hand"}
        assert ids["by hand"] == by_hand.id
        await until(lambda: desk.run_of(ids["general: quick job"]) is not None)

        def row(name: str) -> tuple[object, str, str, list[str]]:
            index = model.session_index(ids[name])
            assert index.parent() == model.session_index(session.id)
            state = SessionState(index.data(ROLE_STATE))
            return (
                index.data(ROLE_SPAWNED_AGENT),
                index.data(Qt.ItemDataRole.ToolTipRole),
                index.data(Qt.ItemDataRole.AccessibleDescriptionRole),
                [text for text, _role in SessionDelegate._badges(index, state)],
            )

        agent, tooltip, described, badges = row("parser map")
        assert agent == "explorer"
        assert "explorer · persistent" in badges
        assert "Persistent sub-agent (explorer), started by its parent's agent" in tooltip
        assert described.endswith(", persistent sub-agent explorer started by its parent's agent")
        for name in ("general: quick job", "by hand"):
            agent, tooltip, described, badges = row(name)
            assert agent is None
            assert not any("persistent" in b for b in badges)
            assert "Persistent" not in tooltip and "persistent" not in described
        assert "fg" in row("general: quick job")[3]  # a run's child keeps its own mark
        assert "fg" not in row("by hand")[3]
    finally:
        await desk.stop()


async def test_the_recovery_banner_counts_the_interrupted_sub_agent_runs(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 13 item 7: after a SIGKILL during a background run, the banner of the next start
    says the sub-agent run was interrupted; the tree shows it so; nothing re-ran."""
    from fxdesk.gui.window.banner import Banner
    from tests.engine.agents.test_restart import run_until_running

    project = tmp_path / "project"
    project.mkdir()
    root_id, run_id = await asyncio.to_thread(run_until_running, data_paths, project)
    model = Script([Reply("should never be called")])
    desk = await Desk(data_paths, model, {}).started()
    try:
        window = desk.controller.window
        banner = window.findChild(Banner, "recovery_banner")
        assert banner is not None and banner.isVisible()
        assert "1 sub-agent run was interrupted; nothing re-ran them" in banner.text()
        (run,) = await desk.app.engine.runs(root_id)
        assert run.id == run_id and run.status is RunStatus.INTERRUPTED
        assert run.child_session_id is not None
        await until(lambda: desk.run_of(run.child_session_id or "") is not None)
        shown = desk.run_of(run.child_session_id)
        assert shown is not None and shown.status is RunStatus.INTERRUPTED  # so in the tree
        assert model.requests == []
    finally:
        await desk.stop()
