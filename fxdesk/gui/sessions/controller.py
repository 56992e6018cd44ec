"""Connects the selected session's panel (transcript, queue, composer) to the engine."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QInputDialog, QMessageBox

from fxdesk import messages
from fxdesk.domain import reasons
from fxdesk.domain.images import ImageAttachment
from fxdesk.domain.model import PermissionMode, Session, SessionState, WorkStatus
from fxdesk.domain.work import WorkItem
from fxdesk.engine.facade import Engine, SessionError, StoreError, WorktreeDirty
from fxdesk.gui.bridge import EngineBridge
from fxdesk.gui.sessions.image_support import ImageSupportWatch
from fxdesk.gui.sessions.mention_completer import MentionCompleter
from fxdesk.gui.sessions.model import ROLE_SNAPSHOT, ROLE_UNREAD
from fxdesk.gui.sessions.text_filter import ConversationFilter
from fxdesk.gui.tasks import TaskGroup, alive, run_dialog
from fxdesk.gui.transcript.full_text import FullTextWindow
from fxdesk.gui.transcript.images import Thumbnails
from fxdesk.gui.transcript.model import Row, RowKind, answers_by_call
from fxdesk.gui.window.main_window import MainWindow
from fxdesk.gui.window.usage_view import DAYS, UsageDialog

log = logging.getLogger(__name__)

Confirm = Callable[[str, str, str, str], Awaitable[bool]]  # title, text, do, keep


class SessionController(QObject):
    """What the person does with the selected session, forwarded to the engine.

    Signals:
        edit_profile_requested(str): open a profile's settings (a failure it can mend).
    """

    edit_profile_requested = Signal(str)

    def __init__(
        self,
        window: MainWindow,
        bridge: EngineBridge,
        engine: Engine,
        tasks: TaskGroup,
    ) -> None:
        super().__init__(window)
        self.window = window
        self.bridge = bridge
        self.engine = engine
        self.profiles = engine.profiles
        self.tasks = tasks
        self.confirm: Confirm = self._confirm
        panel = window.panel
        window.session_selected.connect(self._on_window_session_selected)
        window.session_action.connect(self._on_window_session_action)
        bridge.session_changed.connect(self._on_bridge_session_changed)
        bridge.queue_changed.connect(self._on_bridge_queue_changed)
        bridge.approvals_changed.connect(self._on_bridge_approvals_changed)
        panel.composer.submitted.connect(self._on_composer_submitted)
        panel.composer.profile_chosen.connect(self._on_composer_profile_chosen)
        panel.composer.mode_chosen.connect(self._on_composer_mode_chosen)
        panel.cancel_requested.connect(lambda: self._spawn(self.cancel(), "cancel"))
        panel.resume_requested.connect(lambda: self._spawn(self.resume(), "resume"))
        panel.remove_queued.connect(self._on_panel_remove_queued)
        panel.transcript.action.connect(self._on_transcript_action)
        panel.transcript.older_requested.append(
            lambda: self._spawn(self._load_older(), "load-older")
        )
        self.conversations = ConversationFilter(window, engine, tasks)
        edit = window.panel.composer.edit
        edit.history_source = self.sent_messages
        self.mentions = MentionCompleter(edit, engine.workspace_files, tasks)
        edit.completing = self.mentions.is_open
        self.image_support = ImageSupportWatch(panel.composer, engine, lambda: self.session)
        viewport = panel.transcript.viewport()

        def repaint() -> None:
            if alive(viewport):
                viewport.update()

        panel.transcript.delegate.thumbnails = Thumbnails(engine.images, tasks, repaint)
        panel.composer.images_changed.connect(
            lambda: self._spawn(self.image_support.check(), "image-support")
        )
        self._reveal: tuple[str, int] | None = None  # a message a search result asked to show
        self.conversations.results.open_requested.connect(self.open_at)
        self.usage_action = QAction("&Usage…", window)
        self.usage_action.triggered.connect(lambda: self._spawn(self.show_usage(), "usage"))
        window.view_menu.addAction(self.usage_action)

    @property
    def session(self) -> Session | None:
        return self.window.panel.session

    def _spawn(self, coro: Coroutine[object, object, object], name: str) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a signal after the loop ended (the window closing): nothing to do
            coro.close()
            return
        task = self.tasks.spawn(self._guarded(coro), name)
        # A task cancelled before it first ran (at shutdown) never awaits ``coro``; close it so
        # Python does not warn about a coroutine that was never awaited.
        task.add_done_callback(lambda _task: coro.close())

    async def _guarded(self, coro: Awaitable[object]) -> None:
        try:
            await coro
        except StoreError as exc:
            messages.error(exc.user_message, key="store")
        except SessionError as exc:
            messages.warning(str(exc), key="session")

    # --- selection -------------------------------------------------------------------------

    @Slot(str)
    def _on_window_session_selected(self, session_id: str) -> None:
        if session_id:
            self._spawn(self.open(session_id), "open-session")
        else:
            self.window.transcript_model.clear()

    def sent_messages(self) -> list[str]:
        """What the person said in the open session (as loaded), oldest first: the composer's
        Up/Down history."""
        model = self.window.transcript_model
        rows = (model.row_at(i) for i in range(model.rowCount()))
        return [row.text for row in rows if row.kind == RowKind.USER]

    def open_at(self, session_id: str, seq: int) -> None:
        """Open ``session_id`` at its message ``seq`` (a search result): scrolled to it and
        highlighted once the transcript has it."""
        self._reveal = (session_id, seq)
        if self.window.transcript_model.session_id == session_id:
            self._spawn(self._reveal_message(), "reveal-message")
        self.window.open_session(session_id)

    async def _reveal_message(self) -> None:
        if self._reveal is None:
            return
        session_id, seq = self._reveal
        model = self.window.transcript_model
        if model.session_id != session_id:
            return
        self._reveal = None
        position = await model.reveal(seq)
        if position is not None and model.session_id == session_id:
            self.window.panel.transcript.show_row(position)

    async def open(self, session_id: str) -> None:
        model = self.window.transcript_model
        self.mentions.follow(session_id)
        session = self.window.model.session_index(session_id).data(ROLE_SNAPSHOT)
        if isinstance(session, Session):
            place = self.window.model.workspace_index(session.workspace_id).data(ROLE_SNAPSHOT)
            path = getattr(place, "path", None)
            self.window.panel.composer.edit.workspace = Path(path) if path else None
        self._spawn(self.profiles.set_last_session(session_id), "remember-session")
        self.window.model.set_mark(session_id, ROLE_UNREAD, False)
        delegate = self.window.panel.transcript.delegate
        await model.load_latest(session_id, warm=self._warm, prepare=delegate.warm)
        if model.session_id != session_id:
            return
        queue = await self.engine.queue(session_id)
        if model.session_id != session_id:
            return
        model.apply_items(queue)
        self.window.panel.show_queue([item for item, _ in queue])
        live = self.bridge.live_text(session_id)
        if live and self.engine.is_running(session_id):
            model.set_live_text(live)
        if self._reveal is not None and self._reveal[0] == session_id:
            await self._reveal_message()
        if self.session is not None and self.session.id == session_id:
            await self.refresh_profiles()
            await self.image_support.check()
            await self.refresh_usage(session_id)
            await self.refresh_answers(session_id)

    async def refresh_answers(self, session_id: str) -> None:
        """Who answered each of the session's approvals, how and when, shown with its call."""
        answered = answers_by_call(await self.engine.approvals_of(session_id))
        model = self.window.transcript_model
        if model.session_id == session_id:
            model.set_answers(answered)

    async def refresh_usage(self, session_id: str) -> None:
        """The header's usage: this session, its tree and today."""
        summary = await self.engine.usage_summary(session_id)
        if self.session is not None and self.session.id == session_id:
            self.window.panel.show_usage(summary)

    async def show_usage(self) -> UsageDialog:
        """View → Usage: the last 30 days, per day and per session."""
        days = await self.engine.usage_by_day(DAYS)
        sessions = await self.engine.usage_by_session(DAYS)
        dialog = UsageDialog(days, sessions, self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    async def refresh_profiles(self) -> None:
        """Offer the stored profiles in the composer, the session's own one chosen, and the
        modes (unrestricted only once turned on)."""
        names = [p.name for p in await self.profiles.list()]
        default = await self.profiles.default_name()
        unrestricted = await self.profiles.unrestricted_enabled()
        composer = self.window.panel.composer
        composer.set_unrestricted(unrestricted)
        session = self.session
        if session is not None:
            composer.set_profiles(names, session.profile, default)
            composer.set_mode(session.permission_mode)

    async def _load_older(self) -> None:
        await self.window.transcript_model.load_older(warm=self._warm)

    async def _warm(self, rows: list[Row]) -> None:
        """Lay rows out between frames before they are inserted above the ones shown."""
        view = self.window.panel.transcript
        await view.delegate.warm(rows)
        view.keep_place_for_prepend(len(rows))  # right before they are inserted

    @Slot(object)
    def _on_bridge_session_changed(self, session: Session) -> None:
        if self.session is not None and session.id == self.session.id:
            self.window.show_session(session)
            if session.state not in (SessionState.RUNNING, SessionState.AWAITING_APPROVAL):
                self._spawn(self.refresh_usage(session.id), "usage")

    @Slot()
    def _on_bridge_approvals_changed(self) -> None:
        if self.session is not None:
            self._spawn(self.refresh_answers(self.session.id), "approval-answers")

    @Slot(str, object)
    def _on_bridge_queue_changed(self, session_id: str, items: list[WorkItem]) -> None:
        if self.session is not None and session_id == self.session.id:
            self.window.panel.show_queue(items)

    # --- composer --------------------------------------------------------------------------

    @Slot(str, bool, object)
    def _on_composer_submitted(
        self, text: str, steer: bool, images: tuple[ImageAttachment, ...] = ()
    ) -> None:
        session = self.session
        if session is not None:
            self._spawn(self.submit(session.id, text, steer, images), "send")

    async def submit(
        self,
        session_id: str,
        text: str,
        steer: bool = False,
        images: tuple[ImageAttachment, ...] = (),
    ) -> None:
        said = text
        if text:
            text = await self.engine.with_attachments(session_id, text)  # @path mentions
        try:
            if steer:
                await self.engine.steer(session_id, text, images=images)
            else:
                await self.engine.send(session_id, text, images=images)
        except SessionError as exc:
            if not images:
                raise
            # Refused with its images (the model takes none, an image it cannot use): the
            # message comes back to the composer with why, never sent without them.
            self.window.panel.composer.restore(said, images, str(exc))

    @Slot(str)
    def _on_composer_profile_chosen(self, name: str) -> None:
        if self.session is not None:
            self._spawn(self._configure_profile(self.session.id, name), "configure")

    async def _configure_profile(self, session_id: str, name: str) -> None:
        await self.engine.configure(session_id, profile=name)
        await self.image_support.check()  # the new model may take images, or not

    @Slot(str)
    def _on_composer_mode_chosen(self, mode: str) -> None:
        if self.session is not None:
            self._spawn(
                self.engine.configure(self.session.id, permission_mode=PermissionMode(mode)),
                "configure",
            )

    @Slot(str)
    def _on_panel_remove_queued(self, work_id: str) -> None:
        if self.session is not None:
            self._spawn(self.engine.remove_queued(self.session.id, work_id), "remove-queued")

    # --- actions ---------------------------------------------------------------------------

    async def cancel(self) -> None:
        session = self.session
        if session is None:
            return
        if not await self.confirm(
            "Cancel the running work?",
            f"Cancel what “{session.name}” is doing and everything queued behind it?",
            "Cancel work",
            "Keep working",
        ):
            return
        count = await self.engine.cancel(session.id, reasons.CANCELLED_BY_PERSON)
        messages.info(
            f"Cancelled the work of “{session.name}”"
            + (f" ({count} message{'s' if count != 1 else ''})." if count else ".")
        )

    async def resume(self, session_id: str | None = None) -> None:
        target = session_id or (self.session.id if self.session else None)
        if target is not None:
            self.engine.resume(target)

    @Slot(str, object)
    def _on_transcript_action(self, action: str, payload: object) -> None:
        if action == "resume":
            self._spawn(self.resume(), "resume")
        elif action == "retry" and isinstance(payload, str):
            self._spawn(self._retry(payload), "retry")
        elif action == "full_output" and isinstance(payload, Row):
            self._show_full_output(payload)
        elif action == "edit_profile":
            self._spawn(self._edit_profile(), "edit-profile")

    async def _edit_profile(self) -> None:
        """A provider failure the profile can mend: its settings, in the Settings window."""
        session = self.session
        name = session.profile if session is not None else None
        self.edit_profile_requested.emit(name or await self.profiles.default_name() or "")

    async def _retry(self, work_id: str) -> None:
        session = self.session
        if session is None:
            return
        items = await self.engine.items(session.id)
        failed = next((i for i in items if i.id == work_id), None)
        if failed is not None and failed.status == WorkStatus.FAILED:
            images = tuple(await self.engine.work_images(work_id))  # never retried without them
            await self.submit(session.id, failed.content, images=images)

    def _show_full_output(self, row: Row) -> None:
        """A command's whole output, or the whole of an answer too long for the transcript."""
        if row.tool:
            text = row.full_output or row.output
            title, wrap = f"{row.tool} output", False
            summary = f"Full output of {row.tool}: {len(text.splitlines()):,} lines"
        else:
            text, title, wrap = row.text, "The whole answer", True
            summary = f"{len(text):,} characters"
        window = FullTextWindow(title, summary, text, wrap=wrap, parent=self.window)
        window.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        window.show()

    @Slot(str, str)
    def _on_window_session_action(self, action: str, session_id: str) -> None:
        handlers = {
            "cancel": self.cancel,
            "resume": self.resume,
            "rename": self._rename,
            "close": self._close,
            "new_child": self._new_child,
        }
        handler = handlers.get(action)
        if handler is not None:
            self._spawn(handler(), action)

    async def _rename(self) -> None:
        session = self.session
        if session is None:
            return
        dialog = QInputDialog(self.window)
        dialog.setWindowTitle("Rename session")
        dialog.setLabelText("New name:")
        dialog.setTextValue(session.name)
        if await run_dialog(dialog) and dialog.textValue().strip():
            await self.engine.rename(session.id, dialog.textValue())
        dialog.deleteLater()

    async def _close(self) -> None:
        session = self.session
        if session is None:
            return
        if await self.confirm(
            "Close this session?",
            f"Archive “{session.name}”? Its queued work is cancelled. It stays in the database "
            "and can be shown again with View → Show archived sessions.",
            "Close session",
            "Keep open",
        ):
            await self.close_asking(session.id)

    async def close_asking(self, session_id: str) -> None:
        """Close the session; when its worktree holds uncommitted work, ask first whether to
        throw it away."""
        try:
            said = await self.engine.close(session_id)
        except WorktreeDirty as exc:
            if not await self.confirm(
                "Uncommitted work in the worktree",
                _sentence(str(exc)),
                "Discard changes and close",
                "Keep open",
            ):
                return
            said = await self.engine.close(session_id, force=True)
        if said:
            messages.info(_sentence(said), key="worktree")

    async def _new_child(self) -> None:
        parent = self.session
        if parent is None:
            return
        dialog = QInputDialog(self.window)
        dialog.setWindowTitle("New sub-agent")
        dialog.setLabelText(f"Task for a sub-agent of “{parent.name}”:")
        if await run_dialog(dialog) and dialog.textValue().strip():
            task = dialog.textValue().strip()
            await self.engine.create_child(parent.id, task, permission_mode=parent.permission_mode)
        dialog.deleteLater()

    async def _confirm(self, title: str, text: str, do: str, keep: str) -> bool:
        """Ask with buttons that say what they do (``do``, and ``keep`` as the default and
        Esc), never Yes/No."""
        box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=self.window)
        yes = box.addButton(do, QMessageBox.ButtonRole.AcceptRole)
        no = box.addButton(keep, QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(no)
        box.setEscapeButton(no)
        try:
            await run_dialog(box)
            return box.clickedButton() is yes
        finally:
            box.deleteLater()


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a full stop."""
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")
