"""The main window: session tree on the left, transcript in the centre, status bar below.

The window renders state and forwards intent through its signals; it holds no engine or store
reference. ``GuiController`` (``application.py``) connects it to the engine.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import PySide6
from PySide6.QtCore import (
    QByteArray,
    QEvent,
    QItemSelection,
    QModelIndex,
    QObject,
    QPoint,
    Signal,
    Slot,
)
from PySide6.QtGui import QAction, QCloseEvent, QFont, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from fxdesk import APP_NAME, __version__

# Qt's namespace (`Qt.*`) is imported where it is used, and what the window sets as it is built
# is set from text (`_set_property`): the first `Qt.*` makes PySide6 create the Python enums of
# the whole namespace (105 of them, 14-28 ms), and the first frame does not wait for them.
# The session page (transcript and composer), the tree's delegate and the tree's model (with
# the domain's session types) are imported where they are used: the first frame shows the
# window before any session is loaded, so it does not wait for them (launch.first_frame
# attaches the tree's model just after it: docs/performance.md).
if TYPE_CHECKING:
    from PySide6.QtWidgets import QDockWidget, QMessageBox

    from fxdesk.domain.conversation import HistoryEntry
    from fxdesk.domain.model import Session
    from fxdesk.gui.sessions.model import SessionFilterModel, SessionTreeModel
    from fxdesk.gui.sessions.panel import SessionPanel
    from fxdesk.gui.transcript.model import TranscriptModel
    from fxdesk.gui.window.banner import Banner

ANSWER_SHORTCUT = "Ctrl+Shift+A"  # View → Answer approvals
WINDOW_STATE_VERSION = 1  # of the docks' layout: a layout saved by another version is not used


class EmptyState(QWidget):
    """What the centre shows before the first session: one clear call to action."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.addStretch(2)
        title = QLabel("No sessions yet")
        font = QFont(title.font())
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        title.setFont(font)
        _set_property(title, "alignment", "AlignCenter")
        layout.addWidget(title)
        text = QLabel(
            "Point fxdesk at a project folder and start an agent session there.\n"
            "You will watch it work, answer its permission requests here, and never "
            "lose a session."
        )
        _set_property(text, "alignment", "AlignCenter")
        text.setWordWrap(True)
        text.setForegroundRole(text.foregroundRole())
        layout.addWidget(text)
        row = QHBoxLayout()
        row.addStretch(1)
        self.button = QPushButton("New session…")
        self.button.setAccessibleName("New session")
        self.button.setMinimumWidth(180)
        self.button.setMinimumHeight(36)
        row.addWidget(self.button)
        row.addStretch(1)
        layout.addSpacing(12)
        layout.addLayout(row)
        hint = QLabel("or press Ctrl+N")
        _set_property(hint, "alignment", "AlignCenter")
        hint.setEnabled(False)
        layout.addWidget(hint)
        layout.addStretch(3)


class MainWindow(QMainWindow):
    """fxdesk's main window.

    Signals:
        new_session_requested(): the person asked for a new session.
        quit_requested(): the person asked to quit (Ctrl+Q or closing the window).
        session_selected(str): a session was selected in the tree ("" for none).
    """

    new_session_requested = Signal()
    quit_requested = Signal()
    session_selected = Signal(str)
    session_action = Signal(str, str)  # (action, session id): see SESSION_ACTIONS
    settings_requested = Signal()

    PAGE_EMPTY, PAGE_SELECT, PAGE_SESSION = range(3)

    model: SessionTreeModel  # the tree's model and its filter: set by attach_sessions
    proxy: SessionFilterModel

    def __init__(
        self,
        model: SessionTreeModel | None = None,
        transcript: TranscriptModel | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """Without ``model`` the window shows no sessions until ``attach_sessions``."""
        super().__init__(parent)
        self._transcript = transcript
        self._panel: SessionPanel | None = None  # the session page, built when first needed
        self.setWindowTitle(APP_NAME)
        self.resize(1200, 760)
        self.allow_close = False
        self._type_into = ""  # a session just made: the keyboard goes to its composer
        self._open_id = ""  # the session shown, even while the filter hides its row
        self._quiet = False  # the tree's selection moves without opening anything
        self._folded: set[object] = set()  # rows the person folded (workspace or session ids)
        self._folding = False
        self._build_actions()
        self._build_central()
        self.status_info = QLabel("")
        self.status_info.setAccessibleName("Data folder")
        self.statusBar().addPermanentWidget(self.status_info)
        self.statusBar().setSizeGripEnabled(False)
        self.tree_stack.setCurrentWidget(self.tree_empty)
        self.centre.setCurrentIndex(self.PAGE_EMPTY)
        if model is not None:
            self.attach_sessions(model)

    def attach_sessions(self, model: SessionTreeModel) -> None:
        """Show ``model``'s workspaces and sessions in the tree (once)."""
        from fxdesk.gui.sessions.model import SessionFilterModel

        assert not hasattr(self, "model"), "the window already shows a session tree"
        self.model = model
        self.proxy = SessionFilterModel(self)
        self.proxy.setSourceModel(model)
        self.archived_action.toggled.connect(self.proxy.set_show_archived)
        self.tree.setModel(self.proxy)
        self.tree.selectionModel().selectionChanged.connect(self._on_tree_selection_changed)
        # Typing into the filter (and Down into the tree) needs the tree's model.
        self.filter_edit.textChanged.connect(self._on_filter_edit_text_changed)
        self.filter_edit.installEventFilter(self)
        for signal in (model.rowsInserted, model.rowsRemoved, model.modelReset):
            signal.connect(self._update_pages)
        self._update_pages()

    # --- construction ---------------------------------------------------------------------

    def _build_actions(self) -> None:
        self.new_action = QAction("&New session…", self)
        _set_property(self.new_action, "shortcut", "Ctrl+N")
        self.new_action.triggered.connect(self.new_session_requested)
        self.quit_action = QAction("&Quit", self)
        # StandardKey.Quit is empty on some themes
        _set_property(self.quit_action, "shortcut", "Ctrl+Q")
        _set_property(self.quit_action, "shortcutContext", "ApplicationShortcut")
        self.quit_action.triggered.connect(self.quit_requested)
        self.filter_action = QAction("&Filter sessions", self)
        _set_property(self.filter_action, "shortcut", "Ctrl+K")
        self.filter_action.triggered.connect(self._on_filter_action_triggered)
        self.archived_action = QAction("Show &archived sessions", self, checkable=True)
        self.settings_action = QAction("&Settings…", self)
        _set_property(self.settings_action, "shortcut", "Ctrl+,")
        self.settings_action.triggered.connect(self.settings_requested)
        self.cancel_action = QAction("&Cancel running work…", self)
        _set_property(self.cancel_action, "shortcut", "Esc")  # in this window (QAction's default)
        self.cancel_action.triggered.connect(lambda: self._emit_action("cancel"))
        self.session_actions: dict[str, QAction] = {}
        for action, label in SESSION_ACTIONS:
            item = QAction(label, self)
            _set_property(item, "shortcut", SESSION_SHORTCUTS[action])
            item.triggered.connect(lambda _=False, a=action: self._emit_action(a))
            self.session_actions[action] = item
        self.session_menu = session_menu = self.menuBar().addMenu("&Session")
        session_menu.addAction(self.new_action)
        for action, _label in SESSION_ACTIONS:
            session_menu.addAction(self.session_actions[action])
        session_menu.addAction(self.cancel_action)
        self._update_session_actions(None)  # nothing open yet: nothing to act on
        session_menu.addSeparator()
        session_menu.addAction(self.quit_action)
        view_menu = self.menuBar().addMenu("&View")
        self.sidebar_action = QAction("Sessions &sidebar", self, checkable=True, checked=True)
        _set_property(self.sidebar_action, "shortcut", "Ctrl+B")
        self.sidebar_action.toggled.connect(self._on_sidebar_action_toggled)
        view_menu.addAction(self.sidebar_action)
        view_menu.addAction(self.filter_action)
        view_menu.addAction(self.archived_action)
        self.view_menu = view_menu
        self.settings_menu = self.menuBar().addMenu("Se&ttings")
        self.settings_menu.addAction(self.settings_action)
        self.about_action = QAction(f"&About {APP_NAME}", self)
        self.about_action.triggered.connect(self.show_about)
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(self.about_action)
        self.addAction(self.cancel_action)

    def add_approvals_dock(self, dock: QDockWidget) -> None:
        """The approvals inbox, docked on the right: View → Approvals toggles it, and
        View → Answer approvals (Ctrl+Shift+A) brings what waits forward with the keyboard in
        it (the approval window appears without taking the keyboard, so digits typed in the
        composer never answer it; this is the way to it)."""
        from PySide6.QtCore import Qt

        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        toggle = dock.toggleViewAction()
        toggle.setText("&Approvals")
        self.answer_action = QAction("A&nswer approvals", self)
        _set_property(self.answer_action, "shortcut", ANSWER_SHORTCUT)
        self.view_menu.addSeparator()
        self.view_menu.addAction(toggle)
        self.view_menu.addAction(self.answer_action)
        self.approvals_action = toggle

    def show_about(self) -> QMessageBox:
        """Help → About: what this is, its version and what it runs on."""
        import platform  # here: ~6 ms of imports the first frame does not need

        from PySide6.QtCore import Qt, qVersion
        from PySide6.QtWidgets import QMessageBox

        box = QMessageBox(self)
        box.setWindowTitle(f"About {APP_NAME}")
        box.setIconPixmap(self.windowIcon().pixmap(64, 64))
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setText(
            f"<h3>{APP_NAME} {__version__}</h3>"
            "<p>A desktop control room for AI coding agents: sessions that survive a crash, "
            "approvals in one place, the agents' commands in a sandbox.</p>"
        )
        box.setInformativeText(
            f"Qt {qVersion()} · PySide6 {PySide6.__version__} · Python {platform.python_version()}"
            f"<br>{self.status_info.text()}<br>"
            f"{self.status_info.toolTip().replace(chr(10), '<br>')}"
        )
        box.setStandardButtons(QMessageBox.StandardButton.Close)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        return box

    def saved_state(self) -> dict[str, str]:
        """The window's place, size, maximized or full-screen state and its docks, to give
        back to ``restore_state`` at the next start."""
        return {
            "geometry": _text(self.saveGeometry()),
            "docks": _text(self.saveState(WINDOW_STATE_VERSION)),
            "sidebar": "hidden" if self.sessions_panel.isHidden() else "shown",
        }

    def restore_state(self, state: dict[str, str]) -> None:
        """Put the window back as ``saved_state`` described it; what is missing or damaged
        leaves the window as it is."""
        geometry, docks = _bytes(state.get("geometry", "")), _bytes(state.get("docks", ""))
        if docks:
            self.restoreState(docks, WINDOW_STATE_VERSION)
        if geometry:  # after the docks: hiding a dock would shrink the restored window
            self.restoreGeometry(geometry)
        if state.get("sidebar") == "hidden":
            self.sidebar_action.setChecked(False)

    def _build_central(self) -> None:
        central = QWidget(self)
        outer = QVBoxLayout(central)
        outer.setContentsMargins(6, 6, 6, 0)
        self.banner_area = QVBoxLayout()
        outer.addLayout(self.banner_area)
        # Side by side, its default orientation; the parent by keyword (a positional argument
        # is first tried as a Qt.Orientation, which makes the Python enums of Qt's namespace).
        splitter = QSplitter(parent=central)
        splitter.setChildrenCollapsible(False)
        self.sessions_panel = self._build_sessions_panel()  # the sidebar (Ctrl+B hides it)
        splitter.addWidget(self.sessions_panel)
        splitter.addWidget(self._build_centre())
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([340, 900])
        outer.addWidget(splitter, 1)
        self.setCentralWidget(central)

    def _build_sessions_panel(self) -> QWidget:
        panel = QWidget()
        layout = QVBoxLayout(panel)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter sessions (Ctrl+K)")
        self.filter_edit.setAccessibleName("Filter sessions")
        top.addWidget(self.filter_edit, 1)
        self.new_button = QPushButton("New")
        self.new_button.setToolTip("New session (Ctrl+N)")
        self.new_button.setAccessibleName("New session")
        self.new_button.clicked.connect(self.new_session_requested)
        top.addWidget(self.new_button)
        layout.addLayout(top)
        self.tree_stack = QStackedWidget()
        self.tree = QTreeView()
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setAccessibleName("Sessions")
        self.tree.setStyleSheet("QTreeView::item { padding: 3px 0; }")
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        _set_property(self.tree, "contextMenuPolicy", "CustomContextMenu")
        self.tree.customContextMenuRequested.connect(self._on_tree_context_menu_requested)
        # A click or Enter on a session opens it to be typed to; arrow keys only move through
        # the tree (the open session follows) and leave the keyboard there.
        self.tree.clicked.connect(self._on_tree_chosen)
        self.tree.activated.connect(self._on_tree_chosen)
        self.tree.collapsed.connect(self._on_tree_collapsed)
        self.tree.expanded.connect(self._on_tree_expanded)
        self.tree_stack.addWidget(self.tree)
        self.tree_empty = QLabel("No sessions yet")
        _set_property(self.tree_empty, "alignment", "AlignCenter")
        self.tree_empty.setEnabled(False)
        self.tree_stack.addWidget(self.tree_empty)
        layout.addWidget(self.tree_stack, 1)
        return panel

    def _build_centre(self) -> QWidget:
        self.centre = QStackedWidget()
        self.empty_state = EmptyState()
        self.empty_state.button.clicked.connect(self.new_session_requested)
        self.centre.addWidget(self.empty_state)
        select = QLabel("Select a session to see its transcript")
        _set_property(select, "alignment", "AlignCenter")
        select.setEnabled(False)
        self.centre.addWidget(select)
        return self.centre

    @property
    def transcript_model(self) -> TranscriptModel:
        """The shown session's transcript (one with no history if none was given)."""
        if self._transcript is None:
            from fxdesk.gui.transcript.model import TranscriptModel

            self._transcript = TranscriptModel(_no_history, self)
        return self._transcript

    def use_transcript(self, transcript: TranscriptModel) -> None:
        """Show ``transcript`` in the session page (before the page is built)."""
        assert self._panel is None, "the session page already shows another transcript"
        self._transcript = transcript

    @property
    def panel(self) -> SessionPanel:
        """The centre's session page: header, transcript and composer."""
        return self._panel if self._panel is not None else self.finish()

    def finish(self) -> SessionPanel:
        """Build what the first frame does not show, if not built yet: the session page (the
        first frame shows no session), the tree's delegate (it paints rows; the tree has none
        yet) and the filter box's clear button (its icon comes from the icon theme: 8–20 ms
        under X11). ``GuiController`` calls it after the first frame, before the sessions are
        loaded; the ``panel`` property, when asked first. Returns the session page."""
        if self._panel is None:
            from fxdesk.gui.sessions.delegate import SessionDelegate
            from fxdesk.gui.sessions.panel import SessionPanel

            self.tree.setItemDelegate(SessionDelegate(self.tree))
            self.filter_edit.setClearButtonEnabled(True)
            self._panel = SessionPanel(self.transcript_model)
            self.centre.insertWidget(self.PAGE_SESSION, self._panel)
        return self._panel

    # --- state ----------------------------------------------------------------------------

    def add_banner(self, text: str, *, kind: str = "info") -> Banner:
        from fxdesk.gui.window.banner import Banner  # here: the theme, ~7 ms before the first frame

        banner = Banner(text, self, kind=kind)
        self.banner_area.addWidget(banner)
        return banner

    def bring_to_front(self) -> None:
        """Show, raise and activate the window (from the tray or a notification)."""
        if self.isMinimized():
            self.showNormal()
        self.show()
        self.raise_()
        self.activateWindow()

    def toggle_from_tray(self) -> None:
        """A click on the tray icon: tuck the window away if it is in front, else bring it."""
        if self.isActiveWindow() and not self.isMinimized():
            # Minimized rather than hidden: a hidden window is lost if the tray goes away.
            self.showMinimized()
        else:
            self.bring_to_front()

    def is_looked_at(self) -> bool:
        """True while this window, or a dialog of it, is the active window."""
        widget = QApplication.activeWindow()
        while widget is not None:
            if widget is self:
                return True
            widget = widget.parentWidget()
        return False

    def select_session(self, session_id: str) -> None:
        source = self.model.session_index(session_id)
        index = self.proxy.mapFromSource(source)
        if index.isValid():
            self.tree.setCurrentIndex(index)
            self.tree.scrollTo(index)

    def selected_session(self) -> Session | None:
        return _session_at(self.tree.currentIndex())

    @Slot()
    def _update_pages(self) -> None:
        has_sessions = self.model.session_count > 0
        text = self.filter_edit.text().strip()
        self.tree_empty.setText(
            f"No sessions match “{text}”" if text and has_sessions else "No sessions yet"
        )
        self.tree_stack.setCurrentWidget(self.tree if self.proxy.rowCount() else self.tree_empty)
        if not has_sessions:
            self.centre.setCurrentIndex(self.PAGE_EMPTY)
        elif self.selected_session() is None and not self._open_is_shown():
            self.centre.setCurrentIndex(self.PAGE_SELECT)
        self._apply_folds()

    def _open_is_shown(self) -> bool:
        """The open session still exists and its transcript is what the centre shows (its row
        may be hidden by the filter)."""
        return (
            bool(self._open_id)
            and self.model.session_index(self._open_id).isValid()
            and self.centre.currentIndex() == self.PAGE_SESSION
        )

    @Slot(QItemSelection, QItemSelection)
    def _on_tree_selection_changed(
        self, selected: QItemSelection, deselected: QItemSelection
    ) -> None:
        if self._quiet:
            return  # the filter hid the row, or the person is choosing among matches
        indexes = selected.indexes()
        index: QModelIndex = indexes[0] if indexes else QModelIndex()
        snapshot = _session_at(index)
        if snapshot is not None:
            self._open(snapshot)
        else:
            self._open_id = ""
            self._update_pages()
            self.session_selected.emit("")

    @Slot(QModelIndex)
    def _on_tree_chosen(self, index: QModelIndex) -> None:
        from PySide6.QtCore import Qt

        if _session_at(index) is not None:
            self.panel.composer.edit.setFocus(Qt.FocusReason.OtherFocusReason)

    def _open(self, session: Session) -> None:
        self.show_session(session)
        self.centre.setCurrentIndex(self.PAGE_SESSION)
        if session.id != self._open_id:
            self._open_id = session.id
            self.session_selected.emit(session.id)

    # --- the filter ----------------------------------------------------------------------------
    # Typing filters the tree and never opens anything: the first match is highlighted, Up and
    # Down choose among the matches, Enter opens the chosen one with the keyboard in its composer
    # and clears the filter. The open session stays open while the filter hides its row, and is
    # selected again when the filter is cleared.

    @Slot(str)
    def _on_filter_edit_text_changed(self, text: str) -> None:
        with self._quietly():
            self.proxy.set_mentioning(frozenset())  # until the engine says who mentions it
            self.proxy.setFilterFixedString(text)
            matches = self._matches()
            if text.strip() and matches:
                self.tree.setCurrentIndex(matches[0])
            elif not text.strip() and self._open_id:
                self._select_quietly(self._open_id)
        self._update_pages()

    def set_filter_mentioning(self, text: str, session_ids: frozenset[str]) -> None:
        """Sessions whose conversation contains ``text`` match the filter too (read from the
        engine after the person paused typing); ignored once the filter says something else."""
        if self.filter_edit.text().strip() != text:
            return
        with self._quietly():
            self.proxy.set_mentioning(session_ids)
            matches = self._matches()
            current = self.tree.currentIndex()
            if matches and current not in matches:
                self.tree.setCurrentIndex(matches[0])
        self._update_pages()

    def _matches(self) -> list[QModelIndex]:
        """The sessions whose own name (or conversation) matches the filter, in the tree's
        order (their ancestors show too, for context, but are not matches)."""
        text = self.filter_edit.text().strip().casefold()
        mentioning = self.proxy.mentioning
        found: list[QModelIndex] = []

        def walk(parent: QModelIndex) -> None:
            for row in range(self.proxy.rowCount(parent)):
                index = self.proxy.index(row, 0, parent)
                snapshot = _session_at(index)
                if snapshot is not None and (
                    text in snapshot.name.casefold() or snapshot.id in mentioning
                ):
                    found.append(index)
                walk(index)

        walk(QModelIndex())
        return found

    def _choose(self, step: int) -> None:
        matches = self._matches()
        if not matches:
            return
        current = self.tree.currentIndex()
        at = matches.index(current) if current in matches else -1
        with self._quietly():
            self.tree.setCurrentIndex(matches[max(0, min(len(matches) - 1, at + step))])

    def open_session(self, session_id: str) -> None:
        """Open ``session_id`` now, even while the filter is choosing (a search result asked
        for it); the filter keeps its text, so the other results stay."""
        snapshot = _session_at(self.model.session_index(session_id))
        if snapshot is None:
            return
        with self._quietly():
            self._select_quietly(session_id)
        self._open(snapshot)

    def _open_chosen(self) -> None:
        current = self.tree.currentIndex()
        matches = self._matches()
        chosen = current if current in matches else (matches[0] if matches else None)
        if chosen is None:
            return
        snapshot = _session_at(chosen)
        assert snapshot is not None
        self.filter_edit.clear()
        with self._quietly():
            self._select_quietly(snapshot.id)
        self.type_into(snapshot.id)
        self._open(snapshot)  # its row may have been selected (chosen) already: open it here

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.filter_edit and event.type() == QEvent.Type.KeyPress:
            from PySide6.QtCore import Qt

            assert isinstance(event, QKeyEvent)
            key = event.key()
            if self.filter_edit.text().strip():
                if key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                    self._choose(1 if key == Qt.Key.Key_Down else -1)
                    return True
                if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                    self._open_chosen()
                    return True
            elif key == Qt.Key.Key_Down:
                self._enter_tree()
                return True
        return super().eventFilter(watched, event)

    def _enter_tree(self) -> None:
        """Down in the empty filter box: on into the tree, at its current session or its
        first one (as in a file dialog's location box)."""
        from PySide6.QtCore import Qt

        if not self.tree.currentIndex().isValid():
            matches = self._matches()
            if matches:
                self.tree.setCurrentIndex(matches[0])
        self.tree.setFocus(Qt.FocusReason.TabFocusReason)

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        quiet, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = quiet

    def _select_quietly(self, session_id: str) -> None:
        index = self.proxy.mapFromSource(self.model.session_index(session_id))
        if index.isValid():
            self.tree.setCurrentIndex(index)
            self.tree.scrollTo(index)

    # --- folding -------------------------------------------------------------------------------

    def _apply_folds(self) -> None:
        """Everything unfolded but what the person folded; while filtering, everything (a
        match inside a folded row would not show)."""
        self._folding = True
        try:
            self.tree.expandAll()
            if self.filter_edit.text().strip():
                return
            for key in self._folded:
                source = (
                    self.model.workspace_index(key)
                    if isinstance(key, int)
                    else self.model.session_index(str(key))
                )
                index = self.proxy.mapFromSource(source)
                if index.isValid():
                    self.tree.collapse(index)
        finally:
            self._folding = False

    @Slot(QModelIndex)
    def _on_tree_collapsed(self, index: QModelIndex) -> None:
        if not self._folding and not self.filter_edit.text().strip():
            self._folded.add(_row_id(index))

    @Slot(QModelIndex)
    def _on_tree_expanded(self, index: QModelIndex) -> None:
        # While filtering the tree unfolds what it must to show the matches: not the person's.
        if not self._folding and not self.filter_edit.text().strip():
            self._folded.discard(_row_id(index))

    def show_session(self, session: Session) -> None:
        """Refresh the header for ``session`` (selected or changed)."""
        workspace = _snapshot_at(self.model.workspace_index(session.workspace_id))
        self.panel.show_session(session, workspace.path if workspace is not None else "")
        self._update_session_actions(session)
        if session.id == self._type_into and self.selected_session() is not None:
            from PySide6.QtCore import Qt

            self._type_into = ""
            self.panel.composer.edit.setFocus(Qt.FocusReason.OtherFocusReason)

    def type_into(self, session_id: str) -> None:
        """Put the keyboard in ``session_id``'s composer once it is selected and shown: the
        person who just made a session types to it next (focus went back to the tree's filter,
        the first field of the window, when the New session dialog closed)."""
        self._type_into = session_id
        shown = self.selected_session()
        if shown is not None and shown.id == session_id:
            self.show_session(shown)

    def _update_session_actions(self, session: Session | None) -> None:
        if session is None:  # nothing open (the first frame too: before the domain's types)
            for item in self.session_actions.values():
                item.setEnabled(False)
            self.cancel_action.setEnabled(False)
            return
        from fxdesk.domain.model import SessionState

        active = session.state in (
            SessionState.RUNNING,
            SessionState.AWAITING_APPROVAL,
            SessionState.QUEUED,
        )
        enabled = {
            "new_child": session.state != SessionState.ARCHIVED,
            "rename": True,
            "resume": session.state == SessionState.INTERRUPTED,
            "close": session.state != SessionState.ARCHIVED,
        }
        for action, item in self.session_actions.items():
            item.setEnabled(enabled.get(action, False))
        self.cancel_action.setEnabled(active)

    def _emit_action(self, action: str) -> None:
        session = self.selected_session()
        if session is not None:
            self.session_action.emit(action, session.id)

    @Slot(QPoint)
    def _on_tree_context_menu_requested(self, position: QPoint) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QMenu

        menu = QMenu(self.tree)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # one per right click: none pile up
        menu.addAction(self.new_action)
        if self.selected_session() is not None:
            menu.addSeparator()
            for action, _label in SESSION_ACTIONS:
                menu.addAction(self.session_actions[action])
            menu.addAction(self.cancel_action)
        menu.addSeparator()
        menu.addAction(self.archived_action)
        menu.popup(self.tree.viewport().mapToGlobal(position))

    @Slot()
    def _on_sidebar_action_toggled(self, shown: bool) -> None:
        """Ctrl+B: the session tree out of the way (the transcript takes its room), or back;
        the keyboard never stays in a hidden tree."""
        focused = QApplication.focusWidget()
        had_focus = focused is not None and self.sessions_panel.isAncestorOf(focused)
        self.sessions_panel.setVisible(shown)
        if not shown and had_focus:
            self.panel.composer.edit.setFocus()

    def _on_filter_action_triggered(self) -> None:
        from PySide6.QtCore import Qt

        self.sidebar_action.setChecked(True)  # the filter is in the sidebar
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Closing asks for an orderly quit; the controller closes for real when done."""
        if self.allow_close:
            event.accept()
            return
        event.ignore()
        self.quit_requested.emit()


SESSION_ACTIONS = [
    ("new_child", "New sub-agent…"),
    ("rename", "Rename…"),
    ("resume", "Resume"),
    ("close", "Close (archive)…"),
]
SESSION_SHORTCUTS = {
    "new_child": "Ctrl+Shift+N",
    "rename": "F2",
    "resume": "Ctrl+R",
    "close": "Ctrl+W",
}


def _snapshot_at(index: QModelIndex) -> Any:
    """The frozen Workspace or Session a tree row shows; None for no row."""
    from fxdesk.gui.sessions.model import ROLE_SNAPSHOT

    return index.data(ROLE_SNAPSHOT) if index.isValid() else None


def _session_at(index: QModelIndex) -> Session | None:
    from fxdesk.domain.model import Session

    snapshot = _snapshot_at(index)
    return snapshot if isinstance(snapshot, Session) else None


def _row_id(index: QModelIndex) -> object:
    """A workspace's id (int) or a session's id (str): what folding remembers."""
    from fxdesk.gui.sessions.model import ROLE_ID

    return index.data(ROLE_ID)


def _set_property(target: QObject, name: str, text: str) -> None:
    """Set the Qt property ``name`` of ``target`` from its text, which Qt converts: an enum's key
    (``"AlignCenter"`` for ``Qt.AlignmentFlag.AlignCenter``) or a key sequence (``"Ctrl+N"``).
    PySide6's setters would make the Python enums of the ``Qt`` namespace, the enum's own or to
    choose among their overloads (``QAction.setShortcut``); the first frame does not need them."""
    if not target.setProperty(name, text):
        raise ValueError(f"{type(target).__name__}.{name} cannot be {text!r}")


def _text(data: QByteArray) -> str:
    return bytes(data.toBase64().data()).decode("ascii")


def _bytes(text: str) -> QByteArray:
    try:
        return QByteArray(base64.b64decode(text.encode("ascii"), validate=True))
    except (ValueError, UnicodeEncodeError):
        return QByteArray()


async def _no_history(session_id: str, before: int | None, limit: int) -> list[HistoryEntry]:
    return []
