"""The tray (states, tooltip, menu), the notification centre (what is told, coalesced, when the
person is not looking), the setting, and a real window finishing a turn. The notifier chain is
tested in ``test_notifiers.py``.

Every fake records what it was asked: ``Recorder`` the notifications, ``FakeTimer`` its starts.
The coalescing window is closed by hand with the fake timer, or waited on as a condition with the
real one; no test asserts on how long anything took.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from fxdesk.app import App
from fxdesk.domain.approvals import Approval
from fxdesk.domain.model import PermissionMode, Session, SessionState
from fxdesk.engine.profiles import ProfileService
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController, Outcome, app_icon
from fxdesk.gui.desktop.notifications import NotificationCenter, approval_text
from fxdesk.gui.desktop.tray import Tray, TrayState, TrayStatus, state_icon
from fxdesk.gui.sessions.model import ROLE_SNAPSHOT
from fxdesk.gui.settings.dialog import SettingsDialog
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider
from tests.gui.sessions.test_session_model import session
from tests.gui.settings.test_settings import eventually, profile_service, shown
from tests.gui.waiting import until


@dataclass
class Recorder:
    """A ``Notifier`` that records every notification it is asked to show."""

    calls: list[tuple[str, str, str | None]] = field(default_factory=list)

    def notify(self, title: str, body: str, session_id: str | None) -> None:
        self.calls.append((title, body, session_id))

    @property
    def titles(self) -> list[str]:
        return [title for title, _body, _sid in self.calls]


class FakeTimer:
    """Stands in for the coalescing ``QTimer``: records starts; ``fire`` closes the window."""

    def __init__(self, callback: object) -> None:
        self.callback = callback
        self.active = False
        self.starts = 0

    def start(self) -> None:
        self.active = True
        self.starts += 1

    def stop(self) -> None:
        self.active = False

    def isActive(self) -> bool:  # QTimer's name
        return self.active

    def fire(self) -> None:
        assert self.active, "nothing was waiting"
        self.active = False
        self.callback()  # type: ignore[operator]


@dataclass
class Looking:
    """Whether the person looks at the window; tests flip it."""

    now: bool = False

    def __call__(self) -> bool:
        return self.now


class Centre:
    """A ``NotificationCenter`` wired to fakes."""

    def __init__(self, failed: set[str] | None = None) -> None:
        self.recorder = Recorder()
        self.looking = Looking()
        self.timers: list[FakeTimer] = []
        self.failed = failed or set()

        def make_timer(callback: object) -> FakeTimer:
            self.timers.append(FakeTimer(callback))
            return self.timers[-1]

        self.centre = NotificationCenter(
            self.recorder,
            is_looking=self.looking,
            last_failed=lambda sid: sid in self.failed,
            make_timer=make_timer,
        )

    @property
    def timer(self) -> FakeTimer:
        return self.timers[0]

    def go(self, sid: str, *states: SessionState, name: str | None = None) -> None:
        for state in states:
            self.centre.session_changed(session(sid, name=name or sid, state=state))


def approval(n: int, sid: str = "s1", *, tool: str = "run_command", label: str = "") -> Approval:
    return Approval(
        id=f"approval-{n}",
        session_id=sid,
        root_id=sid,
        work_id=f"work-{n}",
        call_id=f"call-{n}",
        fingerprint=f"fp-{n}",
        tool=tool,
        label=label or f"rm -rf build{n}",
    )


RUN, IDLE, DONE = SessionState.RUNNING, SessionState.IDLE, SessionState.COMPLETED


# --- tray status ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "state", "tooltip"),
    [
        (TrayStatus(), TrayState.IDLE, "fxdesk — idle"),
        (TrayStatus(running=2), TrayState.WORKING, "fxdesk — 2 running"),
        (
            TrayStatus(running=2, approvals=1),
            TrayState.ATTENTION,
            "fxdesk — 2 running, 1 approval waiting",
        ),
        (TrayStatus(approvals=3), TrayState.ATTENTION, "fxdesk — 3 approvals waiting"),
        (TrayStatus(failures=1), TrayState.ATTENTION, "fxdesk — 1 session failed"),
    ],
)
def test_tray_status_in_words(status: TrayStatus, state: TrayState, tooltip: str) -> None:
    assert status.state is state
    assert status.tooltip == tooltip


def test_each_state_has_its_own_icon(qapp: QApplication) -> None:
    base = app_icon()
    images = {state: state_icon(base, state).pixmap(22, 22).toImage() for state in TrayState}
    assert not images[TrayState.IDLE].isNull()
    assert len({bytes(image.constBits()) for image in images.values()}) == 3


def test_without_a_tray_nothing_is_shown_and_nothing_breaks(qtbot: QtBot) -> None:
    tray = Tray(QIcon(), None)  # offscreen: no tray
    assert not tray.available
    assert tray.icon is None
    tray.start()
    tray.set_status(TrayStatus(running=1, approvals=3))
    assert tray.approvals_action.text() == "Approvals (3)…"
    assert not tray.show_message("title", "body", "s1")
    tray.stop()


def test_the_tray_menu_asks_for_the_window_the_approvals_and_quit(qtbot: QtBot) -> None:
    tray = Tray(QIcon(), None, available=False)
    asked: list[str] = []
    for name in ("show_requested", "approvals_requested", "quit_requested"):
        getattr(tray, name).connect(lambda name=name: asked.append(name))
    for action in (tray.show_action, tray.approvals_action, tray.quit_action):
        action.trigger()
    assert asked == ["show_requested", "approvals_requested", "quit_requested"]
    tray.stop()


# --- what is told, and coalescing -------------------------------------------------------------


def test_several_sessions_finishing_together_make_one_notification(qtbot: QtBot) -> None:
    fx = Centre()
    for sid in ("A", "B", "C"):
        fx.go(sid, RUN)
    assert fx.centre.status == TrayStatus(running=3)
    fx.go("A", IDLE)
    fx.go("B", DONE)
    fx.go("C", IDLE)
    assert fx.recorder.calls == []
    assert fx.timer.starts == 1  # one window for all three
    fx.timer.fire()
    assert fx.recorder.calls == [("3 sessions finished", "Finished: A, B, C", "A")]
    assert fx.centre.status == TrayStatus()

    # A later finish opens a new window and makes its own notification.
    fx.go("B", RUN, IDLE, name="Docs")
    fx.timer.fire()
    assert fx.recorder.titles == ["3 sessions finished", "Docs finished"]
    assert fx.recorder.calls[1] == ("Docs finished", "Ready for what's next.", "B")


async def test_the_real_timer_coalesces_a_burst(qtbot: QtBot) -> None:
    recorder = Recorder()
    centre = NotificationCenter(recorder, is_looking=lambda: False, window_ms=50)
    for sid in ("A", "B"):
        centre.session_changed(session(sid, state=RUN))
    for sid in ("A", "B"):
        centre.session_changed(session(sid, state=IDLE))
    await until(lambda: recorder.calls and not centre.waiting)
    assert recorder.calls == [("2 sessions finished", "Finished: A, B", "A")]


def test_failures_are_told_and_keep_the_tray_in_attention_until_seen(qtbot: QtBot) -> None:
    fx = Centre(failed={"P"})
    statuses: list[TrayStatus] = []
    fx.centre.status_changed.connect(statuses.append)
    fx.go("F", RUN, SessionState.FAILED, name="Parser")
    fx.go("I", RUN, SessionState.INTERRUPTED, name="Build")
    fx.go("P", RUN, IDLE, name="Lint")  # a persistent session whose newest item failed
    fx.go("X", RUN, SessionState.CANCELLED)  # the person cancelled it: not news
    fx.timer.fire()
    assert fx.recorder.calls == [("3 sessions failed", "Failed: Parser, Build, Lint", "F")]
    assert fx.centre.status == TrayStatus(failures=3)
    assert statuses[-1].state is TrayState.ATTENTION
    fx.centre.session_seen("F")
    fx.go("I", SessionState.QUEUED)  # resumed
    assert fx.centre.status == TrayStatus(running=1, failures=1)
    fx.centre.session_seen("P")
    fx.go("I", RUN, IDLE)
    assert fx.centre.status.state is TrayState.IDLE
    fx.timer.fire()
    assert fx.recorder.calls[-1] == ("I finished", "Ready for what's next.", "I")


def test_one_failure_says_which_session(qtbot: QtBot) -> None:
    fx = Centre()
    fx.go("s1", RUN, SessionState.INTERRUPTED, name="Build")
    fx.timer.fire()
    assert fx.recorder.calls == [("Build was interrupted", "Open it to see what went wrong.", "s1")]


def test_states_seen_only_once_or_without_work_are_not_news(qtbot: QtBot) -> None:
    fx = Centre()
    fx.centre.seed([session("old", state=SessionState.FAILED), session("r", state=RUN)])
    assert fx.centre.status == TrayStatus(running=1)
    fx.go("new", IDLE)  # first sight: no transition
    fx.go("new", SessionState.ARCHIVED)
    fx.go("old", SessionState.ARCHIVED)
    assert fx.timer.starts == 0
    fx.go("r", IDLE)  # seeded as running: its finish is news
    fx.timer.fire()
    assert fx.recorder.titles == ["r finished"]


def test_nothing_is_told_while_the_person_looks(qtbot: QtBot) -> None:
    fx = Centre()
    fx.looking.now = True
    fx.go("A", RUN, IDLE)
    fx.centre.approvals_loaded([approval(1)])
    assert fx.timer.starts == 0
    # Events collected while away are dropped if the person is back when the window closes.
    fx.looking.now = False
    fx.go("B", RUN, IDLE)
    fx.looking.now = True
    fx.timer.fire()
    assert fx.recorder.calls == []
    # Away again: told.
    fx.looking.now = False
    fx.go("C", RUN, IDLE)
    fx.timer.fire()
    assert fx.recorder.titles == ["C finished"]


def test_new_approvals_are_told_once_with_the_command(qtbot: QtBot) -> None:
    fx = Centre()
    fx.centre.seed([session("s1", name="Clean build"), session("s2", name="Docs")])
    fx.centre.approvals_loaded([approval(1, label="rm -rf build")])
    assert fx.centre.status == TrayStatus(approvals=1)
    fx.timer.fire()
    assert fx.recorder.calls == [
        ("Approval needed", "Clean build wants to run “rm -rf build”", "s1")
    ]
    two = [
        approval(1, label="rm -rf build"),
        approval(2, "s2", tool="edit_file", label="README.md"),
        approval(3, "s2", tool="write_file", label="notes.txt"),
    ]
    fx.centre.approvals_loaded(two)
    fx.centre.approvals_loaded(two)  # reloaded: nothing new
    fx.timer.fire()
    assert fx.recorder.calls[1] == (
        "2 approvals waiting",
        "Docs wants to edit README.md\nDocs wants to write notes.txt",
        "s2",
    )
    assert fx.centre.status == TrayStatus(approvals=3)
    fx.centre.approvals_loaded([])
    assert fx.centre.status == TrayStatus()


def test_approvals_at_start_up_are_a_baseline(qtbot: QtBot) -> None:
    fx = Centre()
    fx.centre.approvals_loaded([approval(1)], announce=False)
    assert fx.timer.starts == 0
    assert fx.centre.status.approvals == 1


def test_mixed_events_make_one_notification_led_by_the_most_urgent(qtbot: QtBot) -> None:
    fx = Centre()
    fx.go("A", RUN, IDLE, name="Alpha")
    fx.go("B", RUN, IDLE, name="Beta")
    fx.go("F", RUN, SessionState.FAILED, name="Parser")
    fx.centre.approvals_loaded([approval(n, "C", label=f"make {n}") for n in range(1, 6)])
    fx.timer.fire()
    [(title, body, sid)] = fx.recorder.calls
    assert title == "5 approvals waiting · Parser failed · 2 sessions finished"
    assert body.splitlines() == [
        "C wants to run “make 1”",
        "C wants to run “make 2”",
        "C wants to run “make 3”",
        "…and 2 more",
        "Finished: Alpha, Beta",
    ]
    assert sid == "C"


def test_turned_off_nothing_is_told_but_the_tray_still_counts(qtbot: QtBot) -> None:
    fx = Centre()
    fx.centre.enabled = False
    fx.go("A", RUN)
    fx.centre.approvals_loaded([approval(1)])
    fx.go("A", SessionState.FAILED)
    assert fx.timer.starts == 0
    assert fx.centre.status == TrayStatus(approvals=1, failures=1)


def test_other_tools_are_named_in_approvals() -> None:
    assert approval_text("S", approval(1, tool="delegate", label="reviewer")) == (
        "S wants to use delegate on reviewer"
    )


# --- the real window --------------------------------------------------------------------------


async def test_a_finished_turn_is_told_once_while_the_window_is_inactive(
    data_paths: DataPaths, tmp_path: Path, qapp: QApplication
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply("Done."), Reply("Done again.")], when_done="error")
    recorder = Recorder()
    app = App(data_paths, providers=FixedResolver(provider))
    controller = GuiController(app, notifier=recorder)
    task = asyncio.ensure_future(controller.main())
    elsewhere = QWidget()  # the person is in another window
    elsewhere.setWindowTitle("another program")
    try:
        await until(lambda: controller.ready.is_set() or task.done())
        centre = controller.notifications
        created = await app.sessions.create_root(
            project, name="Parser", permission_mode=PermissionMode.AUTO
        )
        elsewhere.show()
        elsewhere.activateWindow()
        await until(lambda: QApplication.activeWindow() is elsewhere)
        assert not controller.window.is_looked_at()

        await app.sessions.send(created.id, "Plan the parser work")
        app.owner.start(created.id)
        await until(lambda: recorder.calls and not centre.waiting)
        assert recorder.calls == [("Parser finished", "Ready for what's next.", created.id)]
        assert controller.tray.status == TrayStatus()

        # Clicking the notification brings the window, at that session.
        controller.tray.message_clicked.emit(created.id)
        await until(lambda: QApplication.activeWindow() is controller.window)
        selected = controller.window.selected_session()
        assert selected is not None and selected.id == created.id

        # Looking at the window, the next finished turn is not told.
        await app.sessions.send(created.id, "And again")
        app.owner.start(created.id)
        await until(lambda: provider.calls == 2 and _state(controller, created.id) == IDLE)
        await until(lambda: not centre.waiting)
        assert len(recorder.calls) == 1
    finally:
        elsewhere.close()
        elsewhere.deleteLater()
        controller.request_quit()
        assert await asyncio.wait_for(task, 30) == Outcome.CLOSED


def _state(controller: GuiController, session_id: str) -> SessionState | None:
    snapshot = controller.model.session_index(session_id).data(ROLE_SNAPSHOT)
    return snapshot.state if isinstance(snapshot, Session) else None


# --- the setting ------------------------------------------------------------------------------


async def test_notifications_can_be_turned_off_in_settings_and_stay_off(
    tmp_path: Path, qapp: QApplication
) -> None:
    async with profile_service(tmp_path) as service:
        assert await service.notifications_enabled()  # on by default
        dialog = SettingsDialog(service, tmp_path / "data")
        changed: list[bool] = []
        dialog.notifications_changed.connect(changed.append)
        with shown(dialog):
            await dialog.load()
            assert dialog.notifications_check.isChecked()
            assert changed == []  # loading is not a change
            dialog.notifications_check.click()
            await eventually(lambda: _notifications_are(service, False))
            assert changed == [False]
        again = SettingsDialog(service, tmp_path / "data")
        with shown(again):
            await again.load()
            assert not again.notifications_check.isChecked()


async def _notifications_are(service: ProfileService, enabled: bool) -> bool:
    return await service.notifications_enabled() == enabled


async def test_the_window_reads_the_setting_and_follows_changes(data_paths: DataPaths) -> None:
    app = App(data_paths)
    controller = GuiController(app, notifier=Recorder())
    task = asyncio.ensure_future(controller.main())
    try:
        await until(lambda: controller.ready.is_set() or task.done())
        assert controller.notifications.enabled
        controller._on_window_settings_requested()
        settings = controller.settings
        assert settings is not None
        await until(lambda: settings.notifications_check.isChecked())
        settings.notifications_check.click()
        await until(lambda: not controller.notifications.enabled)
        await eventually(lambda: _notifications_are(app.profiles, False))
        settings.close()
    finally:
        controller.request_quit()
        assert await asyncio.wait_for(task, 30) == Outcome.CLOSED
    # The next start reads it.
    app = App(data_paths)
    controller = GuiController(app, notifier=Recorder())
    task = asyncio.ensure_future(controller.main())
    try:
        await until(lambda: controller.ready.is_set() or task.done())
        assert not controller.notifications.enabled
    finally:
        controller.request_quit()
        assert await asyncio.wait_for(task, 30) == Outcome.CLOSED


async def test_the_tray_menu_opens_the_approvals_dock_and_quits(data_paths: DataPaths) -> None:
    app = App(data_paths)
    controller = GuiController(app, notifier=Recorder())
    task = asyncio.ensure_future(controller.main())
    await until(lambda: controller.ready.is_set() or task.done())
    assert not controller.tray.available  # offscreen: an inert tray, no warning
    controller.approvals_dock.hide()
    controller.tray.approvals_action.trigger()
    await until(lambda: controller.approvals_dock.isVisible())
    assert not controller.approval_dialog.isVisible()  # nothing is waiting
    controller.tray.quit_action.trigger()
    assert await asyncio.wait_for(task, 30) == Outcome.CLOSED
