"""Session → Worktree: the open session's git worktree actions (docs/worktrees.md).

Status, Commit, Merge back (fast-forward or squash), Create a patch and Discard, each forwarded
to the engine; what git refused shows as a warning in the status bar (the controller's guard).
The menu is enabled for a session that runs in a worktree (or a sub-agent, whose root may).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu, QMessageBox

from fxdesk import messages
from fxdesk.domain.worktrees import Worktree, WorktreeStatus
from fxdesk.engine.facade import Engine
from fxdesk.gui.sessions.controller import SessionController
from fxdesk.gui.tasks import run_dialog
from fxdesk.gui.window.main_window import MainWindow

ACTIONS = (
    ("status", "Worktree &status…"),
    ("commit", "&Commit changes…"),
    ("merge_ff", "&Merge back (fast-forward)"),
    ("merge_squash", "Merge back as one s&quashed commit"),
    ("patch", "Create a &patch…"),
    ("discard", "&Discard worktree…"),
)


def status_text(status: WorktreeStatus) -> str:
    """The status as the person reads it (the dialog and its tests)."""
    tree = status.worktree
    lines = [
        f"Branch {tree.branch}, started from {tree.base[:12]}.",
        f"Folder: {tree.folder}" + ("" if status.exists else " (gone)"),
        f"Merges into {status.target or '(no branch)'} in {tree.repository}.",
    ]
    if status.exists:
        lines.append(f"{status.ahead} commit(s) since the base; {len(status.changed)} uncommitted.")
        lines += [f"    {line}" for line in status.changed[:20]]
    return "\n".join(lines)


class WorktreeActions(QObject):
    """The Session menu's Worktree submenu, acting through ``controller`` on its open session."""

    def __init__(self, window: MainWindow, engine: Engine, controller: SessionController) -> None:
        super().__init__(window)
        self.window = window
        self.engine = engine
        self.controller = controller
        self.menu = QMenu("Wor&ktree", window)
        self.actions: dict[str, QAction] = {}
        for key, label in ACTIONS:
            action = self.menu.addAction(label)
            action.triggered.connect(lambda _=False, k=key: self._on_action_triggered(k))
            self.actions[key] = action
        window.session_menu.insertMenu(window.quit_action, self.menu)
        window.session_menu.aboutToShow.connect(self._on_session_menu_about_to_show)
        self._on_session_menu_about_to_show()

    @Slot()
    def _on_session_menu_about_to_show(self) -> None:
        session = self.controller.session
        enabled = session is not None and (
            session.is_child or Worktree.from_config(session.config) is not None
        )
        self.menu.setEnabled(enabled)

    def _on_action_triggered(self, key: str) -> None:
        session = self.controller.session
        if session is None:
            return
        handlers = {
            "status": self.show_status,
            "commit": self.commit,
            "merge_ff": lambda sid: self.merge(sid, "fast-forward"),
            "merge_squash": lambda sid: self.merge(sid, "squash"),
            "patch": self.patch,
            "discard": self.discard,
        }
        self.controller._spawn(handlers[key](session.id), f"worktree {key}")

    async def show_status(self, session_id: str) -> None:
        status = await self.engine.worktree_status(session_id)
        box = QMessageBox(
            QMessageBox.Icon.Information, "Worktree", status_text(status), parent=self.window
        )
        try:
            await run_dialog(box)
        finally:
            box.deleteLater()

    async def commit(self, session_id: str) -> None:
        dialog = QInputDialog(self.window)
        dialog.setWindowTitle("Commit the worktree's changes")
        dialog.setLabelText("Commit message (every change in the worktree is committed):")
        try:
            if not await run_dialog(dialog) or not dialog.textValue().strip():
                return
            made = await self.engine.worktree_commit(session_id, dialog.textValue())
        finally:
            dialog.deleteLater()
        messages.info(f"Committed {made[:12]} on the session's branch.", key="worktree")

    async def merge(self, session_id: str, how: str) -> None:
        done = await self.engine.worktree_merge(session_id, how)
        messages.info(
            f"Merged {done.commits} commit(s) into {done.target} ({done.how}).", key="worktree"
        )

    async def patch(self, session_id: str) -> None:
        status = await self.engine.worktree_status(session_id)
        suggested = str(Path.home() / f"{status.worktree.branch.replace('/', '-')}.patch")
        target, _ = QFileDialog.getSaveFileName(
            self.window, "Save the worktree's changes as a patch", suggested, "Patches (*.patch)"
        )
        if not target:
            return
        await self.engine.worktree_patch(session_id, target)
        messages.info(f"Saved the patch to {target}.", key="worktree")

    async def discard(self, session_id: str) -> None:
        status = await self.engine.worktree_status(session_id)
        if not await self.controller.confirm(
            "Discard this worktree?",
            f"Remove the branch {status.worktree.branch} and its worktree? Its "
            f"{status.ahead} commit(s) not merged back and {len(status.changed)} uncommitted "
            "change(s) are lost, and the session is closed.",
            "Discard worktree and close",
            "Keep it",
        ):
            return
        said = await self.engine.worktree_discard(session_id)
        messages.info(said[:1].upper() + said[1:] + ".", key="worktree")  # a sentence
