"""Approvals on the main window: the presenter, the approval dialog and the Approvals dock, built
and connected to each other and to the engine.

Approvals that arrive open the dialog without taking the keyboard (digits typed into the
composer must not answer them) and open the dock; the tray and a clicked notification ask for
them with ``show_all`` and ``show_session``.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.permissions import PermissionRule
from fxdesk.engine.facade import Engine
from fxdesk.gui.approvals.dialog import ApprovalDialog
from fxdesk.gui.approvals.dock import ApprovalsDock
from fxdesk.gui.approvals.inline import InlineApproval
from fxdesk.gui.approvals.presenter import ApprovalsPresenter, Describe
from fxdesk.gui.tasks import TaskGroup
from fxdesk.gui.window.main_window import MainWindow


class ApprovalsInbox(QObject):
    """The approvals of every session in the window: one queue, two views.

    Args:
        engine: the engine (its approvals).
        describe: (session name, workspace folder) of an approval.
        window: the main window; the dock docks on its right, the dialog floats over it.
        tasks: where reloads run (cancelled at shutdown).

    Call ``presenter.request_reload`` whenever pending approvals may have changed, and await
    ``presenter.reload()`` once at start-up.
    """

    def __init__(
        self,
        engine: Engine,
        describe: Describe,
        window: MainWindow,
        tasks: TaskGroup,
    ) -> None:
        super().__init__(window)
        self.engine = engine
        self.window = window
        self.presenter = ApprovalsPresenter(
            self._answer, describe, load=engine.pending_approvals, tasks=tasks, parent=self
        )
        self.dialog = ApprovalDialog(self.presenter, window)
        self.dock = ApprovalsDock(self.presenter, window, now_ms=engine.now_ms)
        window.add_approvals_dock(self.dock)
        self.dock.hide()  # out of the way until something waits
        self.dock.open_requested.connect(self.dialog.present)
        window.answer_action.triggered.connect(self.show_all)
        self.presenter.arrived.connect(self._on_presenter_arrived)
        self.inline = InlineApproval(self.presenter, tasks, window.panel)
        window.panel.set_inline_approval(self.inline)
        self.inline.watch_keys(window.panel.composer.edit, window.panel.transcript)
        window.session_selected.connect(self.inline.show_session)

    async def _answer(
        self, approval: Approval, choice: Choice, reason: str, rules: list[PermissionRule] | None
    ) -> None:
        await self.engine.answer_approval(
            approval.id, choice, reason=reason, rules=rules, by="the window"
        )

    def show_all(self) -> None:
        """The dock, raised, and the dialog when something waits (the tray's "Approvals…")."""
        self.dock.show()
        self.dock.raise_()
        if self.presenter.count:
            self.dialog.present()

    def show_session(self, session_id: str) -> None:
        """The dialog at the oldest approval of ``session_id``, if one waits."""
        waiting = self.presenter.first_of_session(session_id)
        if waiting is not None:
            self.dialog.present(waiting.id)

    @Slot(str)
    def _on_presenter_arrived(self, approval_id: str) -> None:
        # The open session's approval is shown in its transcript; another session's opens the
        # dialog, without taking the keyboard: digits typed into the composer must not
        # answer it.
        arrived = next((a for a in self.presenter.approvals() if a.id == approval_id), None)
        if arrived is not None and arrived.session_id == self.inline.session_id:
            return
        self.dialog.present(approval_id, activate=False)
