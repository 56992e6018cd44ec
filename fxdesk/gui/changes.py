"""The Changes dock (issue 18 item 1): what the open session changed in its workspace.

A list of files (the session's own first, marked; in git, also what else changed since the last
commit), each with its state and +/− counts; below, the selected file's diff in colour. Actions:
Revert… (git: back to the last commit; asks, with verbs, and the engine logs it), Revert hunk…
(the hunk under the cursor only), Side by side (old and new text in two columns), Open (the
person's ``$VISUAL`` editor, else the desktop's), Copy patch (every diff, ``git apply``-able),
Refresh. View → Changes (Ctrl+Shift+G); it follows the open session and refreshes when it is
shown and whenever a turn of that session ends.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QProcess, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDockWidget,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMainWindow,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.model import Session, SessionState
from fxdesk.engine.changes import Changes, ChangesError, FileChange, hunks, side_by_side
from fxdesk.engine.facade import Engine, StoreError
from fxdesk.gui.approvals.code_box import DiffView
from fxdesk.gui.bridge import EngineBridge
from fxdesk.gui.tasks import TaskGroup, alive
from fxdesk.gui.widgets import hint_label, push_button

CHANGES_SHORTCUT = "Ctrl+Shift+G"
HEADERS = ("File", "State", "+/−", "By")
Confirm = Callable[[str, str, str, str], Awaitable[bool]]


class ChangesDock(QDockWidget):
    """The list, the diff and the actions; ``ChangesController`` fills it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Changes", parent)
        self.setObjectName("changes-dock")
        body = QWidget()
        column = QVBoxLayout(body)
        column.setContentsMargins(4, 4, 4, 4)
        row = QHBoxLayout()
        self.summary = QLabel("Open a session to see what it changed.")
        self.summary.setAccessibleName("Changes summary")
        row.addWidget(self.summary, 1)
        self.refresh_button = push_button("Re&fresh", "Refresh the changes", lambda: None)
        self.revert_button = push_button("&Revert…", "Revert the selected file", lambda: None)
        self.open_button = push_button("&Open", "Open the selected file", lambda: None)
        self.patch_button = push_button("Copy &patch", "Copy every change as a patch", lambda: None)
        self.hunk_button = push_button(
            "Revert &hunk…", "Revert the hunk under the cursor in the diff", lambda: None
        )
        self.side_button = QPushButton("&Side by side")
        self.side_button.setAccessibleName("Show the diff side by side")
        self.side_button.setCheckable(True)
        self.side_button.setAutoDefault(False)
        self.side_button.toggled.connect(lambda _on: self._update())
        self.tree_check = QCheckBox("&Whole tree")
        self.tree_check.setToolTip("Also what the session's sub-agents (and its root) changed")
        for button in (self.refresh_button, self.revert_button, self.hunk_button):
            row.addWidget(button)
        for button in (self.open_button, self.patch_button, self.side_button):
            row.addWidget(button)
        row.addWidget(self.tree_check)
        column.addLayout(row)
        self.note = hint_label("", wrap=True)
        self.note.hide()
        column.addWidget(self.note)
        self.files = QTreeWidget()
        self.files.setAccessibleName("Changed files")
        self.files.setHeaderLabels(list(HEADERS))
        self.files.setRootIsDecorated(False)
        self.files.setUniformRowHeights(True)
        self.files.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.files.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # keep the file's name
        self.files.setMinimumWidth(260)
        header = self.files.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.diff = DiffView("Diff of the selected file", max_lines=10_000)
        self.diff.setMinimumHeight(80)
        # Side by side: the old text on the left, the new on the right, scrolled together.
        self.old_side = DiffView("The file before", max_lines=10_000)
        self.new_side = DiffView("The file after", max_lines=10_000)
        pair = QSplitter(Qt.Orientation.Horizontal)
        pair.addWidget(self.old_side)
        pair.addWidget(self.new_side)
        for one, other in ((self.old_side, self.new_side), (self.new_side, self.old_side)):
            bar, twin = one.verticalScrollBar(), other.verticalScrollBar()
            if bar is not None and twin is not None:
                bar.valueChanged.connect(twin.setValue)
        self.views = QStackedWidget()
        self.views.addWidget(self.diff)
        self.views.addWidget(pair)
        self.pair = pair
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.files)
        split.addWidget(self.views)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([400, 600])  # the diff's hint is its whole text: share by these
        column.addWidget(split, 1)
        self.setWidget(body)
        self.changes: Changes | None = None

    def show_changes(self, found: Changes | None, words: str = "") -> None:
        """Show ``found`` (None: nothing to show, with ``words`` saying why)."""
        chosen = self.selected()
        self.changes = found
        self.files.clear()
        self.diff.set_diff("")
        if found is None:
            self.summary.setText(words or "Open a session to see what it changed.")
            self.note.hide()
            self._update()
            return
        own = sum(1 for c in found.files if c.by_session)
        whose = "its tree" if self.tree_check.isChecked() else "this session"
        self.summary.setText(
            f"{len(found.files)} changed file{'s' if len(found.files) != 1 else ''}, "
            f"{own} by {whose}"
            if found.files
            else "No changes."
        )
        self.note.setText(found.note)
        self.note.setVisible(bool(found.note))
        for change in found.files:
            item = QTreeWidgetItem(
                [
                    change.path,
                    change.status,
                    f"+{change.added} −{change.removed}",
                    whose if change.by_session else "—",
                ]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, change.path)
            item.setToolTip(0, change.path)
            self.files.addTopLevelItem(item)
            if chosen is not None and change.path == chosen.path:
                self.files.setCurrentItem(item)
        first = self.files.topLevelItem(0)
        if self.files.currentItem() is None and first is not None:
            self.files.setCurrentItem(first)
        self._update()

    def hunk_at_cursor(self) -> int:
        """Which hunk of the selected file's diff the cursor is in (0 before the first)."""
        view = self.old_side if self.side_button.isChecked() else self.diff
        line = view.textCursor().blockNumber()
        text = view.toPlainText().splitlines()[: line + 1]
        return max(0, sum(1 for row in text if row.startswith("@@")) - 1)

    def selected(self) -> FileChange | None:
        item = self.files.currentItem()
        if item is None or self.changes is None:
            return None
        path = item.data(0, Qt.ItemDataRole.UserRole)
        return next((c for c in self.changes.files if c.path == path), None)

    def _update(self) -> None:
        change = self.selected()
        text = change.diff if change is not None else ""
        name = change.path if change is not None else ""
        side = self.side_button.isChecked()
        self.views.setCurrentWidget(self.pair if side else self.diff)
        if side:
            old, new = side_by_side(text)
            self.old_side.set_diff("\n".join(old), name)
            self.new_side.set_diff("\n".join(new), name)
        else:
            self.diff.set_diff(text, name)
        git = self.changes is not None and self.changes.git
        self.revert_button.setEnabled(change is not None and git)
        self.hunk_button.setEnabled(change is not None and git and bool(hunks(text)[1]))
        self.open_button.setEnabled(change is not None and change.status != "deleted")
        self.patch_button.setEnabled(self.changes is not None and bool(self.changes.patch()))


class ChangesController(QObject):
    """Feeds the dock for the open session and carries out its actions."""

    def __init__(
        self,
        engine: Engine,
        bridge: EngineBridge,
        window: QMainWindow,
        tasks: TaskGroup,
        confirm: Confirm,
        session_of: Callable[[], Session | None],
    ) -> None:
        super().__init__(window)
        self.engine = engine
        self.tasks = tasks
        self.confirm = confirm
        self.session_of = session_of
        self.dock = ChangesDock(window)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()  # until the person asks (View → Changes)
        toggle = self.dock.toggleViewAction()
        toggle.setText("&Changes")
        toggle.setShortcut(QKeySequence(CHANGES_SHORTCUT))
        self.toggle_action = toggle
        self.dock.visibilityChanged.connect(self._on_dock_visibility_changed)
        self.dock.files.currentItemChanged.connect(lambda *_: self.dock._update())
        self.dock.refresh_button.clicked.connect(self.refresh)
        self.dock.revert_button.clicked.connect(self._on_revert_clicked)
        self.dock.open_button.clicked.connect(self._on_open_clicked)
        self.dock.patch_button.clicked.connect(self._on_patch_clicked)
        self.dock.hunk_button.clicked.connect(self._on_hunk_clicked)
        self.dock.tree_check.toggled.connect(lambda _on: self.refresh())
        bridge.session_changed.connect(self._on_bridge_session_changed)
        self._last_state: dict[str, SessionState] = {}

    @Slot()
    def refresh(self) -> None:
        if self.dock.isVisible():
            self.tasks.spawn(self.load(), "changes")

    async def load(self) -> None:
        session = self.session_of()
        if session is None:
            self.dock.show_changes(None)
            return
        try:
            found = await self.engine.changes(
                session.id, whole_tree=self.dock.tree_check.isChecked()
            )
        except (ChangesError, StoreError) as exc:
            if alive(self.dock):
                self.dock.show_changes(None, f"The changes cannot be read: {exc}")
            return
        current = self.session_of()
        if alive(self.dock) and current is not None and current.id == session.id:
            self.dock.show_changes(found)

    def follow(self, _session_id: str) -> None:
        self.refresh()

    @Slot(bool)
    def _on_dock_visibility_changed(self, visible: bool) -> None:
        if visible:
            self.refresh()

    @Slot(object)
    def _on_bridge_session_changed(self, session: Session) -> None:
        before = self._last_state.get(session.id)
        self._last_state[session.id] = session.state
        current = self.session_of()
        ended = before in (SessionState.RUNNING, SessionState.AWAITING_APPROVAL) and (
            session.state not in (SessionState.RUNNING, SessionState.AWAITING_APPROVAL)
        )
        if ended and current is not None and current.id == session.id:
            self.refresh()

    def _on_revert_clicked(self) -> None:
        change, session = self.dock.selected(), self.session_of()
        if change is not None and session is not None:
            self.tasks.spawn(self._revert(session.id, change), "revert-change")

    async def _revert(self, session_id: str, change: FileChange) -> None:
        undo = "removed" if change.status == "added" else "put back as the last commit has it"
        text = f"{change.path} will be {undo}. Its current changes are lost."
        await self._after_asking(
            "Revert this file?",
            text,
            "Revert file",
            self.engine.revert_change(session_id, change.path),
        )

    async def _after_asking(
        self, title: str, text: str, verb: str, action: Coroutine[Any, Any, str]
    ) -> None:
        """Ask (``verb`` / "Keep it"), then do ``action`` and say what it did, or why not."""
        if not await self.confirm(title, text, verb, "Keep it"):
            action.close()
            return
        try:
            done = await action
        except ChangesError as exc:
            done = f"Not reverted: {exc}"
        if alive(self.dock):
            self.dock.note.setText(done[:1].upper() + done[1:] + ".")
            self.dock.note.show()
        await self.load()

    def _on_hunk_clicked(self) -> None:
        change, session = self.dock.selected(), self.session_of()
        if change is not None and session is not None:
            index = self.dock.hunk_at_cursor()
            self.tasks.spawn(self._revert_hunk(session.id, change, index), "revert-hunk")

    async def _revert_hunk(self, session_id: str, change: FileChange, index: int) -> None:
        count = len(hunks(change.diff)[1])
        text = (
            f"Hunk {index + 1} of {count} in {change.path} will be undone; the rest of the file "
            "stays as it is."
        )
        action = self.engine.revert_hunk(session_id, change.path, index)
        await self._after_asking("Revert this hunk?", text, "Revert hunk", action)

    def _on_open_clicked(self) -> None:
        change = self.dock.selected()
        if change is None or self.dock.changes is None:
            return
        open_in_editor(Path(self.dock.changes.folder) / change.path)

    def _on_patch_clicked(self) -> None:
        if self.dock.changes is not None:
            QGuiApplication.clipboard().setText(self.dock.changes.patch())
            self.dock.note.setText("The patch of every change is on the clipboard.")
            self.dock.note.show()


def open_in_editor(path: Path) -> bool:
    """Open ``path`` in the person's ``$VISUAL`` editor if set, else with the desktop's
    application for it (xdg-open)."""
    visual = os.environ.get("VISUAL", "").strip()
    if visual:
        argv = shlex.split(visual)
        ok, _pid = QProcess.startDetached(argv[0], [*argv[1:], str(path)])
        if ok:
            return True
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))
