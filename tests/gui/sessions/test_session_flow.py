"""The whole window driven the way a person drives it, against the scripted provider.

The real App (SQLite file, engine, bus) runs under the GUI controller on a qasync loop; only the
model provider is scripted. Assertions are on what the window renders: transcript rows, the queue
strip, header buttons, the recovery banner.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QInputDialog, QLabel, QMessageBox

from fxdesk.app import App
from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import PermissionMode, Session, SessionState, WorkStatus
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController, Outcome
from fxdesk.gui.sessions.model import (
    ROLE_APPROVALS,
    ROLE_BUSY,
    ROLE_ID,
    ROLE_LAST_FAILED,
    ROLE_SNAPSHOT,
)
from fxdesk.gui.sessions.new_session import NewSessionDialog
from fxdesk.gui.transcript.model import Row, RowKind, TranscriptModel
from fxdesk.gui.window.banner import Banner
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Fault, Reply, ScriptedCall, ScriptedProvider, Stall
from fxdesk.store.locks import InstanceLock, SessionLock
from tests.gui.waiting import until

ANSWER = "Here is the plan: **read** the parser, then write `tests`. " * 4

CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


class Window:
    """One run of the app with the window up; ``stop`` quits it the orderly way."""

    def __init__(self, paths: DataPaths, provider: ScriptedProvider) -> None:
        self.provider = provider
        self.app = App(paths, providers=FixedResolver(provider))
        self.controller = GuiController(self.app)
        self.task = asyncio.ensure_future(self.controller.main())
        self.confirmations: list[str] = []
        self.verbs: list[tuple[str, str]] = []

    async def started(self) -> Window:
        await until(lambda: self.controller.ready.is_set() or self.task.done())
        assert self.controller.sessions is not None

        async def confirm(title: str, _text: str, do: str, keep: str) -> bool:
            self.confirmations.append(title)
            self.verbs.append((do, keep))
            return True

        self.controller.sessions.confirm = confirm
        return self

    async def stop(self) -> int:
        self.controller.request_quit()
        return await asyncio.wait_for(self.task, 30)

    @property
    def panel(self):  # type: ignore[no-untyped-def]
        return self.controller.window.panel

    @property
    def transcript(self) -> TranscriptModel:
        return self.controller.transcript

    def rows(self, kind: RowKind) -> list[str]:
        model = self.transcript
        return [
            model.row_at(i).text for i in range(model.rowCount()) if model.row_at(i).kind == kind
        ]

    def type_and_send(self, text: str) -> None:
        edit = self.panel.composer.edit
        edit.setFocus()
        QTest.keyClicks(edit, text)
        QTest.keyClick(edit, Qt.Key.Key_Return)

    def state(self, session_id: str) -> SessionState | None:
        session = self.panel.session
        return session.state if session is not None and session.id == session_id else None


async def test_send_watch_it_stream_queue_a_second_message_and_cancel(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply(ANSWER, chunk=6, delay_s=0.02), Stall()], when_done="error")
    run = await Window(data_paths, provider).started()
    try:
        session = await run.app.sessions.create_root(
            project, name="Parser", permission_mode=PermissionMode.AUTO
        )
        await until(lambda: run.panel.session is not None)

        run.type_and_send("Plan the parser work")
        # The answer streams: a live row grows before the committed answer replaces it.
        partial = await until(
            lambda: next((t for t in run.rows(RowKind.LIVE) if t and len(t) < len(ANSWER)), None)
        )
        assert ANSWER.startswith(str(partial))
        await until(lambda: run.rows(RowKind.ASSISTANT) == [ANSWER])
        assert run.rows(RowKind.USER) == ["Plan the parser work"]
        assert run.rows(RowKind.LIVE) == []
        await until(lambda: run.rows(RowKind.TURN))  # usage footer under the turn

        # The second message starts a turn that never answers; a third waits in the queue.
        run.type_and_send("Now write the tests")
        await until(lambda: run.state(session.id) == SessionState.RUNNING)
        # The turn is running, but on a loaded machine it may not have asked the model yet.
        await until(lambda: provider.calls == 2)
        assert run.panel.cancel.isVisible()
        assert run.panel.composer.send.text() == "Queue"
        run.type_and_send("And update the docs")
        await until(lambda: run.panel.queue.isVisible())
        await until(
            lambda: any(
                "Queued" in w.text() and "And update the docs" in w.text()
                for w in run.panel.queue.findChildren(QLabel)
            )
        )
        assert "And update the docs" not in run.rows(RowKind.USER)

        # Esc cancels the running turn (after the confirmation), like the Cancel button.
        window = run.controller.window
        window.activateWindow()
        await until(lambda: QApplication.activeWindow() is window)
        QTest.keyClick(run.panel.composer.edit, Qt.Key.Key_Escape)
        await until(lambda: run.state(session.id) not in (SessionState.RUNNING, None))
        assert run.confirmations == ["Cancel the running work?"]
        assert run.verbs == [("Cancel work", "Keep working")]
        await until(lambda: not run.panel.queue.isVisible())
        notices = await until(lambda: run.rows(RowKind.NOTICE))
        assert len(notices) == 1  # the running turn; the queued message never ran
        assert provider.calls == 2  # the queued message was cancelled, not run
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_interrupted_work_is_offered_after_a_restart_and_resumes(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    first = await Window(data_paths, ScriptedProvider([Stall()])).started()
    session = await first.app.sessions.create_root(project, name="Long job")
    await until(lambda: first.panel.session is not None)
    first.type_and_send("Refactor everything")
    await until(lambda: first.provider.calls == 1)
    await until(lambda: first.state(session.id) == SessionState.RUNNING)
    assert (
        await first.stop() == Outcome.CLOSED
    )  # quitting mid-turn: the turn is interrupted, not lost

    provider = ScriptedProvider([Reply("Picked up where we left off.")])
    second = await Window(data_paths, provider).started()
    try:
        window = second.controller.window
        banner = window.findChild(Banner, "recovery_banner")
        assert banner is not None and banner.isVisible()
        assert "1 turn was interrupted" in banner.text()
        assert provider.calls == 0  # nothing re-ran by itself

        # The last session comes back selected, with the interruption explained in place,
        # and the keyboard in its message box (typed text went to the filter).
        await until(lambda: second.state(session.id) == SessionState.INTERRUPTED)
        window.activateWindow()
        await until(window.isActiveWindow)
        await until(second.panel.composer.edit.hasFocus)
        await until(lambda: second.rows(RowKind.USER) == ["Refactor everything"])
        notices = await until(lambda: second.rows(RowKind.NOTICE))
        assert len(notices) == 1
        assert second.panel.resume.isVisible()

        second.panel.resume.click()
        await until(lambda: "Picked up where we left off." in second.rows(RowKind.ASSISTANT))
        await until(lambda: not second.rows(RowKind.NOTICE))
        await until(lambda: second.state(session.id) == SessionState.IDLE)
        await until(lambda: not banner.isVisible())  # no stale word once it is resumed
        assert provider.calls == 1
        # The resumed call carried the original request, not a second copy of it.
        sent = [m.content for m in provider.requests[0].messages if m.role == "user"]
        assert sent.count("Refactor everything") == 1
    finally:
        assert await second.stop() == Outcome.CLOSED


async def test_a_failed_turn_is_explained_marked_in_the_tree_and_retried(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            Fault("rate_limited", "rate limited by the provider (HTTP 429): slow down"),
            Reply("Done on the second try."),
        ]
    )
    run = await Window(data_paths, provider).started()
    try:
        session = await run.app.sessions.create_root(project, name="Flaky")
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Upgrade the dependencies")
        notices = await until(lambda: run.rows(RowKind.NOTICE))
        assert notices == [
            "The provider is rate limiting requests. Wait a minute, then Retry.\n"
            "The provider said: rate limited by the provider (HTTP 429): slow down"
        ]
        tree = run.controller.model
        await until(lambda: tree.mark(session.id, ROLE_LAST_FAILED))
        assert await run.app.sessions.last_failed() == {session.id}

        # Retry, as the notice's button does.
        notice = next(
            run.transcript.row_at(i)
            for i in range(run.transcript.rowCount())
            if run.transcript.row_at(i).kind == RowKind.NOTICE
        )
        assert (notice.action, notice.action2) == ("retry", "")  # waiting mends it
        run.panel.transcript.action.emit("retry", notice.work_id)
        await until(lambda: "Done on the second try." in run.rows(RowKind.ASSISTANT))
        await until(lambda: not tree.mark(session.id, ROLE_LAST_FAILED))
        assert await run.app.sessions.last_failed() == set()
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_rename_add_a_sub_agent_and_close_from_the_keyboard(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply("Sub-task done.")])
    run = await Window(data_paths, provider).started()
    window = run.controller.window
    tree = run.controller.model
    try:
        session = await run.app.sessions.create_root(project, name="Draft")
        await until(lambda: run.panel.session is not None)
        window.activateWindow()
        await until(lambda: QApplication.activeWindow() is window)

        QTest.keyClick(window.tree, Qt.Key.Key_F2)
        rename = await until(lambda: _dialog(QInputDialog))
        assert isinstance(rename, QInputDialog) and rename.textValue() == "Draft"
        rename.setTextValue("Release notes")
        rename.accept()
        await until(lambda: "Release notes" in run.panel.title.text())

        window.activateWindow()
        await until(lambda: QApplication.activeWindow() is window)
        QTest.keyClick(window.tree, Qt.Key.Key_N, _CTRL | Qt.KeyboardModifier.ShiftModifier)
        task = await until(lambda: _dialog(QInputDialog))
        assert isinstance(task, QInputDialog)
        task.setTextValue("Collect the merged pull requests")
        task.accept()
        parent = tree.session_index(session.id)
        await until(lambda: tree.rowCount(tree.session_index(session.id)) == 1)
        child_index = tree.index(0, 0, tree.session_index(session.id))
        child_id = child_index.data(ROLE_ID)
        child = await until(lambda: _settled(run, child_id))
        assert isinstance(child, Session) and parent.isValid()
        assert child.parent_id == session.id and child.name.startswith("Collect the merged")
        assert provider.calls == 1

        window.select_session(session.id)
        await until(lambda: run.panel.session is not None and run.panel.session.id == session.id)
        window.activateWindow()
        await until(lambda: QApplication.activeWindow() is window)
        QTest.keyClick(window.tree, Qt.Key.Key_W, _CTRL)
        await until(lambda: "Close this session?" in run.confirmations)
        await until(
            lambda: window.proxy.mapFromSource(tree.session_index(session.id)).isValid() is False
        )
        archived = await run.app.sessions.get(session.id)
        assert archived is not None and archived.state == SessionState.ARCHIVED
        window.archived_action.setChecked(True)  # View → Show archived sessions
        assert window.proxy.mapFromSource(tree.session_index(session.id)).isValid()
    finally:
        assert await run.stop() == Outcome.CLOSED


_CTRL = Qt.KeyboardModifier.ControlModifier


def _dialog(kind: type) -> object:
    return next(
        (w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible()), None
    )


def _settled(run: Window, session_id: str) -> object:
    """The child's snapshot in the tree once its one-off task completed."""
    snapshot = run.controller.model.session_index(session_id).data(ROLE_SNAPSHOT)
    done = isinstance(snapshot, Session) and snapshot.state == SessionState.COMPLETED
    return snapshot if done else None


async def test_the_recovery_banner_names_sessions_busy_in_another_fxdesk(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    first = await Window(data_paths, ScriptedProvider([])).started()
    session = await first.app.sessions.create_root(project, name="Held elsewhere")
    await first.app.sessions.send(session.id, "Running in the other fxdesk")
    assert await first.stop() == Outcome.CLOSED
    # The other process admitted it and is running it now.
    with sqlite3.connect(data_paths.database) as db:
        db.execute("UPDATE work_item SET status = 'running' WHERE session_id = ?", (session.id,))

    # Another fxdesk process holds the session (flock: a second open file conflicts even in
    # one process, as it would across processes).
    other_instance = InstanceLock(data_paths.locks)
    other_instance.hold_shared()
    other = SessionLock(data_paths.locks, session.id)
    other.acquire()
    try:
        run = await Window(data_paths, ScriptedProvider([])).started()
        try:
            banner = run.controller.window.findChild(Banner, "recovery_banner")
            assert banner is not None and banner.isVisible()
            assert banner.text() == "In use by another fxdesk: “Held elsewhere”."
            (item,) = await run.app.sessions.items(session.id)
            assert item.status == WorkStatus.RUNNING  # the other process's work is left alone
            index = run.controller.model.session_index(session.id)
            assert index.data(ROLE_BUSY) is True
        finally:
            assert await run.stop() == Outcome.CLOSED
    finally:
        other.release()
        other_instance.release()


async def test_an_approval_shows_inline_in_the_dock_and_tree_and_key_1_from_the_composer_allows_it(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            Reply(
                "Writing the notes.",
                tool_calls=(ScriptedCall("write_file", {"path": "notes.md", "content": "# N"}),),
            ),
            Reply("Written."),
        ]
    )
    run = await Window(data_paths, provider).started()
    controller = run.controller
    try:
        assert controller.approvals_dock.isHidden()  # nothing waits: out of the way
        session = await run.app.sessions.create_root(
            project, name="Careful", permission_mode=PermissionMode.ASK
        )
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Write notes")
        # The open session's approval is in its transcript, where the keyboard is; the
        # dialog stays away (it is for other sessions' approvals).
        inline = controller.approvals.inline
        await until(lambda: inline.isVisible() and inline.approval is not None)
        assert inline.approval is not None
        assert inline.approval.label == str((project / "notes.md").resolve())
        assert inline.content.label_box.toPlainText() == inline.approval.label
        assert "ask mode asks before every write" in inline.content.reason.text()
        dialog = controller.approval_dialog
        assert not dialog.isVisible() and dialog.count == 1
        assert controller.approvals_dock.count == 1 and controller.approvals_dock.isVisible()
        tree = controller.model
        await until(lambda: tree.session_index(session.id).data(ROLE_APPROVALS) == 1)
        await until(lambda: run.state(session.id) == SessionState.AWAITING_APPROVAL)
        assert not (project / "notes.md").exists()

        edit = run.panel.composer.edit
        edit.setFocus()
        QTest.keyClick(edit, Qt.Key.Key_Return)  # a stray Enter approves nothing
        QTest.keyClicks(edit, "see 1")  # with text typed, a digit is text
        await asyncio.sleep(0.2)
        assert not (project / "notes.md").exists() and dialog.count == 1
        assert edit.toPlainText() == "see 1"
        edit.clear()

        QTest.keyClick(edit, Qt.Key.Key_1)  # the composer is empty: 1 allows once
        await until(lambda: "Written." in run.rows(RowKind.ASSISTANT))
        assert (project / "notes.md").read_text() == "# N"
        assert edit.toPlainText() == ""  # the key answered; it typed nothing
        # Who answered, how and when, stays with the call.
        card = await until(
            lambda: next(
                (
                    run.transcript.row_at(i)
                    for i in range(run.transcript.rowCount())
                    if run.transcript.row_at(i).kind == RowKind.TOOL
                    and run.transcript.row_at(i).answered
                ),
                None,
            )
        )
        assert card.answered.startswith("You allowed it once, from the window, at ")
        await until(lambda: dialog.count == 0 and not inline.isVisible())
        await until(lambda: controller.approvals_dock.count == 0)
        await until(lambda: controller.approvals_dock.isHidden())  # opened for it, closed after
        await until(lambda: tree.session_index(session.id).data(ROLE_APPROVALS) == 0)
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_ctrl_shift_a_takes_the_keyboard_from_the_composer_to_the_waiting_approval(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """The approval window appears without the keyboard (digits typed in the composer must
    not answer it); the status line's Ctrl+Shift+A must then reach it. It used to toggle the
    dock instead: with the dock open, it hid it and the keyboard stayed in the window."""
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            Reply(
                "Writing.",
                tool_calls=(ScriptedCall("write_file", {"path": "n.md", "content": "n"}),),
            ),
            Reply("Written."),
        ]
    )
    run = await Window(data_paths, provider).started()
    controller = run.controller
    try:
        await run.app.sessions.create_root(project, name="Keys", permission_mode=PermissionMode.ASK)
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Write it")
        dialog = controller.approval_dialog
        await until(lambda: dialog.count == 1 and controller.approvals.inline.isVisible())
        assert controller.approvals_dock.isVisible()
        controller.window.activateWindow()
        await until(controller.window.isActiveWindow)
        QTest.keyClick(controller.window, Qt.Key.Key_A, CTRL_SHIFT)
        await until(dialog.isActiveWindow)
        assert controller.approvals_dock.isVisible()  # not toggled away
        assert "approval waiting" in controller.window.statusBar().currentMessage()
        QTest.keyClick(QApplication.focusWidget() or dialog, Qt.Key.Key_1)  # allow once
        await until(lambda: "Written." in run.rows(RowKind.ASSISTANT))
        assert (project / "n.md").read_text() == "n"
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_after_ctrl_n_the_keyboard_is_in_the_new_session_s_composer(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """The person's path: Ctrl+N, type the folder, Enter, type the first message. The
    keyboard used to land in the tree's filter, so the message went into the filter."""
    project = tmp_path / "project"
    project.mkdir()
    run = await Window(data_paths, ScriptedProvider([Reply("Hi.")])).started()
    controller = run.controller
    try:
        window = controller.window
        window.activateWindow()
        await until(window.isActiveWindow)
        QTest.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        dialog = await until(
            lambda: next(
                (w for w in QApplication.topLevelWidgets() if isinstance(w, NewSessionDialog)),
                None,
            )
        )
        assert isinstance(dialog, NewSessionDialog)
        await until(lambda: dialog.folder_edit.hasFocus())
        QTest.keyClicks(dialog.folder_edit, str(project))
        QTest.keyClick(dialog.folder_edit, Qt.Key.Key_Return)
        await until(lambda: controller.model.session_count == 1)
        composer = window.panel.composer.edit
        # The window's keyboard goes there (offscreen, no window manager re-activates the
        # window after the dialog: activate it as the desktop would).
        await until(lambda: window.focusWidget() is composer)
        window.activateWindow()
        await until(composer.hasFocus)
        QTest.keyClicks(QApplication.focusWidget(), "hello")
        assert composer.toPlainText() == "hello"
        assert window.filter_edit.text() == ""
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_the_approvals_dock_the_person_opened_stays_open(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            Reply(
                "Writing.",
                tool_calls=(ScriptedCall("write_file", {"path": "a.md", "content": "a"}),),
            ),
            Reply("Done."),
        ]
    )
    run = await Window(data_paths, provider).started()
    controller = run.controller
    dock = controller.approvals_dock
    try:
        controller.window.approvals_action.trigger()  # View → Approvals
        assert dock.isVisible()
        await run.app.sessions.create_root(project, name="Mine", permission_mode=PermissionMode.ASK)
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Write it")
        await until(lambda: dock.count == 1)
        # The dock's own button: keys need the dialog to be the active window (tested above).
        dock.view.setCurrentIndex(dock.model.index(0, 0))
        dock.buttons[Choice.ONCE].click()
        await until(lambda: "Done." in run.rows(RowKind.ASSISTANT))
        await until(lambda: dock.count == 0)
        assert dock.isVisible()  # opened by the person: not closed behind their back
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_a_confirmation_names_what_its_buttons_do_and_keeping_is_the_default(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 14: confirmations said Yes/No; their buttons now say what they do, and Enter or Esc
    keeps things as they are."""
    project = tmp_path / "project"
    project.mkdir()
    run = Window(data_paths, ScriptedProvider([Stall()]))
    await until(lambda: run.controller.ready.is_set())
    try:
        session = await run.app.sessions.create_root(project, name="Parser")
        await until(lambda: run.panel.session is not None)
        sessions = run.controller.sessions
        assert sessions is not None
        asked = asyncio.ensure_future(sessions._close())
        box = await until(
            lambda: next(
                (w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)), None
            )
        )
        assert isinstance(box, QMessageBox)
        assert [b.text() for b in box.buttons()] == ["Close session", "Keep open"]
        assert box.defaultButton().text() == "Keep open"
        QTest.keyClick(box, Qt.Key.Key_Escape)
        await asyncio.wait_for(asked, 10)
        kept = await run.app.engine.session(session.id)
        assert kept is not None and kept.state != SessionState.ARCHIVED
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_another_session_s_approval_opens_the_dialog_and_never_replaces_the_inline_one(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    write = ScriptedCall("write_file", {"path": "a.md", "content": "a"})
    other = ScriptedCall("write_file", {"path": "b.md", "content": "b"})
    provider = ScriptedProvider(
        [
            Reply("A.", tool_calls=(write,)),
            Reply("B.", tool_calls=(other,)),
            Reply("ok"),
            Reply("ok"),
        ]
    )
    run = await Window(data_paths, provider).started()
    controller = run.controller
    try:
        elsewhere = await run.app.engine.create_session(
            project, name="Elsewhere", permission_mode=PermissionMode.ASK, start=False
        )
        shown = await run.app.sessions.create_root(
            project, name="Open one", permission_mode=PermissionMode.ASK
        )
        await until(lambda: run.panel.session is not None and run.panel.session.id == shown.id)
        run.type_and_send("Write a")
        inline = controller.approvals.inline
        await until(lambda: inline.approval is not None)
        first = inline.approval
        assert first is not None and first.label.endswith("a.md")

        # Another session asks (started from elsewhere, the CLI say): the dialog opens for it,
        # and the open session's inline approval stays the one under the person's cursor.
        await run.app.engine.send(elsewhere.id, "Write b")
        dialog = controller.approval_dialog
        await until(lambda: dialog.count == 2 and dialog.isVisible())
        assert run.panel.session is not None and run.panel.session.id == shown.id
        assert inline.approval is not None and inline.approval.id == first.id
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_a_refused_key_offers_edit_profile_beside_retry_and_it_opens_that_profile(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    from fxdesk.domain.model import KeySource, Profile
    from fxdesk.gui.settings.profile_dialog import ProfileDialog

    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Fault("auth", "Error code: 401 - invalid x-api-key")])
    run = await Window(data_paths, provider).started()
    try:
        await run.app.profiles.save(
            Profile("work", "scripted", key_source=KeySource.NONE), make_default=True
        )
        await run.app.sessions.create_root(project, name="Keys")
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Hello")
        (notice,) = await until(
            lambda: [
                run.transcript.row_at(i)
                for i in range(run.transcript.rowCount())
                if run.transcript.row_at(i).kind == RowKind.NOTICE
            ]
        )
        assert notice.text == (
            "The provider refused the API key. Check the profile's key in Settings, then "
            "Retry.\nThe provider said: Error code: 401 - invalid x-api-key"
        )
        assert (notice.action, notice.action2) == ("retry", "edit_profile")
        position = next(
            i for i in range(run.transcript.rowCount()) if run.transcript.row_at(i) == notice
        )
        labels = [label for label, _, _ in run.panel.transcript.row_actions(position)]
        assert labels == ["Retry", "Edit profile…", "Copy text"]
        run.panel.transcript.action.emit("edit_profile", notice.work_id)
        dialog = await until(
            lambda: (
                next(
                    (w for w in QApplication.topLevelWidgets() if isinstance(w, ProfileDialog)),
                    None,
                )
                or next(
                    (w for w in run.controller.window.findChildren(ProfileDialog) if w.isVisible()),
                    None,
                )
            )
        )
        assert dialog.isVisible()
        await until(lambda: dialog.form.name_edit.text() == "work")  # the session's profile
        dialog.reject()
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_a_cancelled_answer_stays_marked_and_the_next_one_is_not_glued_to_it(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 14: after a cancel the answer still said "streaming…", the next answer was glued
    onto the cancelled text, and switching away and back lost the partial answer."""
    from fxdesk.gui.transcript.delegate import PARTIAL_MARK

    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply(ANSWER, chunk=6, delay_s=0.03), Reply("Fresh answer.")])
    run = await Window(data_paths, provider).started()
    try:
        session = await run.app.sessions.create_root(
            project, name="Cut", permission_mode=PermissionMode.AUTO
        )
        other = await run.app.engine.create_session(project, name="Other", start=False)
        run.controller.window.select_session(session.id)
        await until(lambda: run.panel.session is not None and run.panel.session.id == session.id)
        run.type_and_send("Plan the parser work")
        await until(lambda: any(len(t) > 40 for t in run.rows(RowKind.LIVE)))
        await run.app.engine.cancel(session.id)
        partial = await until(lambda: run.rows(RowKind.ASSISTANT))
        assert run.rows(RowKind.LIVE) == []  # no "streaming…" left behind
        assert ANSWER.startswith(partial[0]) and partial[0] != ANSWER
        view = run.panel.transcript
        row = next(
            run.transcript.row_at(i)
            for i in range(run.transcript.rowCount())
            if run.transcript.row_at(i).kind == RowKind.ASSISTANT
        )
        assert view.delegate.layout(row).footer == PARTIAL_MARK

        # Away and back: it comes back from the history, still marked.
        run.controller.window.select_session(other.id)
        await until(lambda: run.panel.session is not None and run.panel.session.id == other.id)
        run.controller.window.select_session(session.id)
        await until(lambda: run.rows(RowKind.ASSISTANT) == partial)

        run.type_and_send("Go on")
        await until(lambda: run.rows(RowKind.ASSISTANT) == [partial[0], "Fresh answer."])
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_the_filter_finds_a_session_by_what_was_said_in_it(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 14 item 5: a few letters of something said in a session find it, as its name
    does; Enter opens it with the keyboard in its message box."""
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply("The tokenizer drops the final digit.")])
    run = await Window(data_paths, provider).started()
    window = run.controller.window
    try:
        talked = await run.app.sessions.create_root(
            project, name="Monday", permission_mode=PermissionMode.AUTO
        )
        await until(lambda: run.panel.session is not None)
        run.type_and_send("Why does parse('12') return 1?")
        await until(lambda: run.rows(RowKind.ASSISTANT))
        quiet = await run.app.engine.create_session(project, name="Tuesday", start=False)
        window.select_session(quiet.id)
        await until(lambda: run.panel.session is not None and run.panel.session.id == quiet.id)

        window.activateWindow()
        await until(window.isActiveWindow)
        QTest.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
        await until(window.filter_edit.hasFocus)
        QTest.keyClicks(window.filter_edit, "final digit")  # in the answer, not in a name
        await until(lambda: window.proxy.mentioning == frozenset({talked.id}))
        current = window.tree.currentIndex().data(ROLE_ID)
        assert current == talked.id  # the match is chosen, not yet opened
        assert run.panel.session is not None and run.panel.session.id == quiet.id
        QTest.keyClick(window.filter_edit, Qt.Key.Key_Return)
        await until(lambda: run.panel.session is not None and run.panel.session.id == talked.id)
        await until(run.panel.composer.edit.hasFocus)
        assert run.controller.sessions is not None
        assert run.controller.sessions.conversations.asked >= 1
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_a_stopped_and_a_not_run_tool_card_keep_their_state_after_a_restart(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 14: a call cancelled while it ran or while it waited for approval showed
    "running…" forever, even after a restart. A real App, shell and restart."""
    from fxdesk.gui.transcript.delegate import card_words
    from fxdesk.gui.transcript.model import ToolState, tool_state

    project = tmp_path / "project"
    project.mkdir()
    slow = ScriptedCall("run_command", {"command": "echo begun > begun.txt; sleep 60"})
    write = ScriptedCall("write_file", {"path": "n.md", "content": "n"})
    provider = ScriptedProvider(
        [Reply("Running.", tool_calls=(slow,)), Reply("Writing.", tool_calls=(write,))]
    )
    first = await Window(data_paths, provider).started()
    engine = first.app.engine
    try:
        ran = await engine.create_session(
            project, name="Slow", first_message="Run it", permission_mode=PermissionMode.YOLO
        )
        await until((project / "begun.txt").exists, within=30)
        await engine.cancel(ran.id)  # killed while it ran
        await asyncio.wait_for(engine.join(ran.id), 30)
        asked = await engine.create_session(
            project, name="Asks", first_message="Write it", permission_mode=PermissionMode.ASK
        )
        await until(lambda: first.controller.approvals_dock.count == 1)
        await engine.cancel(asked.id)  # cancelled while it waited for approval
        await asyncio.wait_for(engine.join(asked.id), 30)
    finally:
        assert await first.stop() == Outcome.CLOSED

    again = await Window(data_paths, ScriptedProvider([])).started()
    try:
        for session, state, words in (
            (ran, ToolState.STOPPED, "stopped after"),
            (asked, ToolState.NOT_RUN, "not run: cancelled"),
        ):
            again.controller.window.select_session(session.id)
            card = await until(lambda s=session.id: tool_card(again.transcript, s))
            assert tool_state(card) is state
            assert card_words(card).startswith(words)
        assert not (project / "n.md").exists()
    finally:
        assert await again.stop() == Outcome.CLOSED


def tool_card(model: TranscriptModel, session_id: str) -> Row | None:
    """The first tool card of the transcript, once it shows ``session_id``."""
    if model.session_id != session_id:
        return None
    rows = (model.row_at(i) for i in range(model.rowCount()))
    return next((row for row in rows if row.kind == RowKind.TOOL), None)


async def test_the_filter_lists_messages_and_one_opens_its_session_at_that_message(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 18 item 4: the filter box lists the messages that contain the words; a result
    opens its session scrolled to that message (pages older than the newest loaded as
    needed) and highlights it."""
    from fxdesk.domain.conversation import HistoryEntry
    from fxdesk.domain.model import EntryKind
    from fxdesk.gui.transcript.model import PAGE_SIZE
    from fxdesk.store import history

    project = tmp_path / "project"
    project.mkdir()
    run = await Window(data_paths, ScriptedProvider([])).started()
    try:
        window = run.controller.window
        old = await run.app.sessions.create_root(project, name="Old work")
        other = await run.app.sessions.create_root(project, name="Other")
        # The message to find, then more than a page of newer ones after it.
        lines = [(EntryKind.USER, "Where does the tokenizer lose the last digit?")]
        lines += [(EntryKind.ASSISTANT, f"Unrelated answer {n}.") for n in range(PAGE_SIZE + 50)]
        entries = [
            HistoryEntry(old.id, 0, kind, content=text, created_at_ms=1) for kind, text in lines
        ]
        await run.app.store.write(lambda: history.append_history(old.id, entries))
        window.select_session(other.id)
        await until(lambda: run.panel.session is not None and run.panel.session.id == other.id)

        window.filter_edit.setFocus()
        QTest.keyClicks(window.filter_edit, "tokeniz digit")
        results = run.controller.sessions.conversations.results  # type: ignore[union-attr]
        await until(results.isVisible)
        assert results.list.count() == 1
        assert "Old work" in results.list.item(0).text()
        assert "<b>tokenizer</b>" in results.list.item(0).text()
        assert "<b>digit</b>" in results.list.item(0).text()

        results.list.itemClicked.emit(results.list.item(0))
        view = run.panel.transcript
        await until(lambda: view.delegate.highlighted is not None)
        current = run.transcript.row_at(view.currentIndex().row())
        assert run.transcript.session_id == old.id
        assert current.text == "Where does the tokenizer lose the last digit?"
        assert view.delegate.highlighted == current.key
        assert not view.pinned  # the newest rows do not pull it away
        assert view.visualRect(view.currentIndex()).intersects(view.viewport().rect())
        await until(lambda: view.delegate.highlighted is None, within=10)  # for a moment
    finally:
        assert await run.stop() == Outcome.CLOSED


async def test_at_completes_a_workspace_file_and_its_text_goes_to_the_model(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Issue 18 item 6: typing @ and a few letters lists the workspace's files (fuzzy); Enter
    takes the first without sending; the message sent carries the file's text for the model."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "tokenizer.py").write_text("def tokenize(text):\n    return text.split()\n")
    (project / "README.md").write_text("readme\n")
    provider = ScriptedProvider([Reply("Read it.")])
    run = await Window(data_paths, provider).started()
    try:
        await run.app.sessions.create_root(project, name="Mentions")
        await until(lambda: run.panel.session is not None)
        window = run.controller.window
        window.activateWindow()
        await until(window.isActiveWindow)
        edit = run.panel.composer.edit
        edit.setFocus()
        QTest.keyClicks(edit, "Explain @tokpy")
        mentions = run.controller.sessions.mentions  # type: ignore[union-attr]
        await until(mentions.is_open)
        popup = mentions.completer.popup()
        assert popup.model().index(0, 0).data() == "src/tokenizer.py"
        QTest.keyClick(popup, Qt.Key.Key_Return)
        await until(lambda: edit.toPlainText() == "Explain @src/tokenizer.py ")
        assert provider.calls == 0  # Enter took the file; it did not send
        QTest.keyClick(edit, Qt.Key.Key_Return)
        await until(lambda: provider.calls == 1)
        (said,) = [m.content for m in provider.requests[0].messages if m.role == "user"]
        assert said.startswith("Explain @src/tokenizer.py")
        assert '<attached file="src/tokenizer.py">\ndef tokenize(text):' in said
    finally:
        assert await run.stop() == Outcome.CLOSED
