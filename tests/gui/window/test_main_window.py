"""The main window on its own: empty state, selection, shortcuts, and close asking to quit."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QApplication, QMessageBox, QSplitter, QWidget

from fxdesk import __version__
from fxdesk.domain.model import SessionState
from fxdesk.gui.sessions.model import ROLE_SNAPSHOT, SessionTreeModel
from fxdesk.gui.window.main_window import SESSION_SHORTCUTS, MainWindow
from tests.gui.sessions.test_session_model import populated, session, workspace


def focus_chain(window: QWidget) -> list[QWidget]:
    """The widgets Tab visits in ``window``, in order."""
    chain: list[QWidget] = []
    widget = window.nextInFocusChain()
    while widget is not window and widget not in chain:
        if widget.focusPolicy() & Qt.FocusPolicy.TabFocus and widget.isVisible():
            chain.append(widget)
        widget = widget.nextInFocusChain()
    return chain


def make_window(qtbot: Any, model: SessionTreeModel | None = None) -> MainWindow:
    window = MainWindow(model or SessionTreeModel())
    window.allow_close = True  # let the fixture's cleanup close it
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def test_empty_state_offers_a_new_session(qtbot: Any) -> None:
    window = make_window(qtbot)
    assert window.centre.currentWidget() is window.empty_state
    assert window.tree_stack.currentWidget() is window.tree_empty
    assert window.empty_state.button.text() == "New session…"
    with qtbot.waitSignal(window.new_session_requested, timeout=5000):
        qtbot.mouseClick(window.empty_state.button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.new_session_requested, timeout=5000):
        qtbot.mouseClick(window.new_button, Qt.MouseButton.LeftButton)


def test_session_menu_actions_are_enabled_only_for_a_session_they_can_act_on(qtbot: Any) -> None:
    """Issue 14: the Session menu's actions were enabled with no session open."""
    model = SessionTreeModel()
    window = make_window(qtbot, model)
    enabled = lambda: {k for k, a in window.session_actions.items() if a.isEnabled()}  # noqa: E731
    assert enabled() == set() and not window.cancel_action.isEnabled()
    model.load([workspace(1, "alpha")], [])
    model.upsert_session(session("r1", name="Busy", state=SessionState.RUNNING))
    window.select_session("r1")
    assert enabled() == {"new_child", "rename", "close"} and window.cancel_action.isEnabled()
    stopped = session("r1", name="Busy", state=SessionState.INTERRUPTED)
    model.upsert_session(stopped)
    window.show_session(stopped)  # as the controller does when the open session changes
    assert enabled() == {"new_child", "rename", "resume", "close"}
    assert not window.cancel_action.isEnabled()


def test_sessions_replace_the_empty_state_and_can_be_selected(qtbot: Any) -> None:
    model = SessionTreeModel()
    window = make_window(qtbot, model)
    model.load([workspace(1, "alpha")], [])
    assert window.centre.currentWidget() is window.empty_state  # a workspace is not a session
    model.upsert_session(session("r1", name="Fix the parser", state=SessionState.RUNNING))
    assert window.centre.currentIndex() == window.PAGE_SELECT
    assert window.tree_stack.currentWidget() is window.tree
    with qtbot.waitSignal(window.session_selected, timeout=5000) as selected:
        window.select_session("r1")
    assert selected.args == ["r1"]
    assert window.centre.currentIndex() == window.PAGE_SESSION
    assert "Fix the parser" in window.panel.title.text()
    assert "running" in window.panel.title.text()
    assert window.selected_session() is not None


def test_closing_the_window_asks_for_an_orderly_quit(qtbot: Any) -> None:
    window = make_window(qtbot)
    window.allow_close = False
    with qtbot.waitSignal(window.quit_requested, timeout=5000):
        window.close()
    assert window.isVisible()  # the controller closes it after shutdown
    window.allow_close = True


def test_keyboard_shortcuts(qtbot: Any) -> None:
    window = make_window(qtbot, populated())
    assert window.quit_action.shortcut() == QKeySequence("Ctrl+Q")
    assert window.new_action.shortcut() == QKeySequence("Ctrl+N")
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=5000)
    with qtbot.waitSignal(window.quit_requested, timeout=5000):
        qtbot.keyClick(window.tree, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(window.new_session_requested, timeout=5000):
        qtbot.keyClick(window.tree, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    window.tree.setFocus()
    qtbot.keyClick(window.tree, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(window.filter_edit.hasFocus, timeout=5000)


def test_what_is_set_from_text_is_set(qtbot: Any) -> None:
    """The window sets its shortcuts and enum properties from text (before the first frame,
    without Qt's Python enums): each reads back as the value it names."""
    window = make_window(qtbot)
    shortcuts = {
        window.new_action: "Ctrl+N",
        window.quit_action: "Ctrl+Q",
        window.filter_action: "Ctrl+K",
        window.settings_action: "Ctrl+,",
        window.cancel_action: "Esc",
        window.sidebar_action: "Ctrl+B",
        **{window.session_actions[a]: k for a, k in SESSION_SHORTCUTS.items()},
    }
    for action, keys in shortcuts.items():
        assert action.shortcut() == QKeySequence(keys), action.text()
    assert window.cancel_action.shortcut() == QKeySequence(Qt.Key.Key_Escape)
    assert window.quit_action.shortcutContext() == Qt.ShortcutContext.ApplicationShortcut
    assert window.cancel_action.shortcutContext() == Qt.ShortcutContext.WindowShortcut
    assert window.tree.contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu
    assert window.tree_empty.alignment() == Qt.AlignmentFlag.AlignCenter
    splitter = window.sessions_panel.parentWidget()
    assert isinstance(splitter, QSplitter)
    assert splitter.orientation() == Qt.Orientation.Horizontal


def test_filter_box_filters_the_tree(qtbot: Any) -> None:
    window = make_window(qtbot, populated())
    qtbot.keyClicks(window.filter_edit, "r2")
    assert window.proxy.rowCount() == 1
    assert window.proxy.index(0, 0).data() == "zeta"


def test_controls_have_accessible_names(qtbot: Any) -> None:
    window = make_window(qtbot)
    for widget in (window.filter_edit, window.new_button, window.tree, window.empty_state.button):
        assert widget.accessibleName(), widget


def test_the_application_icon_ships_with_the_package(qapp: QApplication) -> None:
    from fxdesk.gui.application import app_icon

    icon = app_icon()
    assert not icon.isNull()
    assert not icon.pixmap(32, 32).isNull()


def test_tab_goes_from_the_sessions_to_the_transcript_to_the_composer(qtbot: Any) -> None:
    window = make_window(qtbot, populated())
    window.select_session("r1")
    qtbot.waitUntil(lambda: window.panel.session is not None, timeout=5000)
    panel = window.panel
    expected = [
        window.filter_edit,
        window.new_button,
        window.tree,
        panel.transcript,
        panel.composer.edit,
        panel.composer.profile,
        panel.composer.mode,
        panel.composer.send,
    ]
    chain = [w for w in focus_chain(window) if w in expected]
    assert chain == expected
    for widget in expected:
        assert widget.accessibleName(), widget


def test_settings_has_its_own_menu_and_help_says_what_this_is(qtbot: Any) -> None:
    """Issue 14: Settings sat under "Session", and there was no Help or About."""
    window = make_window(qtbot)
    menus = {a.text(): a.menu() for a in window.menuBar().actions()}
    assert list(menus) == ["&Session", "&View", "Se&ttings", "&Help"]
    assert window.settings_action in menus["Se&ttings"].actions()
    assert window.settings_action not in menus["&Session"].actions()
    assert window.about_action in menus["&Help"].actions()
    window.status_info.setText("Data in /home/me/.local/share/fxdesk")
    window.status_info.setToolTip("Database: /home/me/.local/share/fxdesk/fxdesk.sqlite3")
    window.about_action.trigger()
    box = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox))
    qtbot.waitExposed(box)
    assert f"fxdesk {__version__}" in box.text()
    assert "PySide6" in box.informativeText() and "/home/me/.local/share/fxdesk" in (
        box.informativeText()
    )
    box.close()


def _opened(window: MainWindow) -> list[str]:
    """Record the sessions the window opens (``session_selected``), in order."""
    opened: list[str] = []
    window.session_selected.connect(opened.append)
    return opened


def test_typing_in_the_filter_never_changes_the_open_session(qtbot: Any) -> None:
    """Issue 14: the filter changed the open session while typing, and left a blank
    transcript under a stale header when the open one was filtered out."""
    window = make_window(qtbot, populated())
    window.select_session("c2")
    opened = _opened(window)
    qtbot.keyClicks(window.filter_edit, "r")  # c2 is filtered out; r1, r2 remain
    qtbot.keyClicks(window.filter_edit, "2")
    assert opened == []
    assert window.centre.currentIndex() == window.PAGE_SESSION
    assert window.panel.session is not None and window.panel.session.id == "c2"
    window.filter_edit.clear()
    assert opened == []
    assert window.selected_session() is not None
    assert window.selected_session().id == "c2"  # selected again once it shows


def test_filter_enter_opens_the_first_match_with_the_keyboard_in_its_composer(
    qtbot: Any,
) -> None:
    window = make_window(qtbot, populated())
    window.select_session("r2")
    opened = _opened(window)
    window.filter_edit.setFocus()
    qtbot.keyClicks(window.filter_edit, "c")  # c1, c2 (and g1 under c1? no: "g1")
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Down)  # the second match
    assert opened == []  # choosing is not opening
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Return)
    assert opened == ["c2"]
    qtbot.waitUntil(window.panel.composer.edit.hasFocus, timeout=5000)
    assert window.filter_edit.text() == ""  # done: the whole tree again, c2 selected
    assert window.selected_session().id == "c2"

    window.filter_edit.setFocus()
    qtbot.keyClicks(window.filter_edit, "g")
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Return)  # no arrow: the first match
    assert opened == ["c2", "g1"]


def test_filter_enter_opens_a_session_when_none_was_open(qtbot: Any) -> None:
    """Found walking the window under openbox: with no session open, the chosen row was
    already selected (quietly), so selecting it again opened nothing."""
    window = make_window(qtbot, populated())
    opened = _opened(window)
    window.filter_edit.setFocus()
    qtbot.keyClicks(window.filter_edit, "2")  # c2 (under alpha), r2 (under zeta)
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Down)
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Return)
    assert opened == ["r2"]
    assert window.centre.currentIndex() == window.PAGE_SESSION
    qtbot.waitUntil(window.panel.composer.edit.hasFocus, timeout=5000)


def test_down_in_the_empty_filter_goes_on_into_the_tree(qtbot: Any) -> None:
    """Found walking the window under openbox: Ctrl+K then Down did nothing, so the keyboard
    could not reach the first session without Tab."""
    window = make_window(qtbot, populated())
    opened = _opened(window)
    window.show()
    window.filter_edit.setFocus()
    qtbot.waitUntil(window.filter_edit.hasFocus, timeout=5000)
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Down)
    qtbot.waitUntil(window.tree.hasFocus, timeout=5000)
    top = window.proxy.index(0, 0)  # the first workspace
    first = window.proxy.index(0, 0, top).data(ROLE_SNAPSHOT).id
    assert window.selected_session().id == first
    assert opened == [first]


def test_a_filter_that_matches_nothing_says_so(qtbot: Any) -> None:
    window = make_window(qtbot, populated())
    qtbot.keyClicks(window.filter_edit, "nothing like this")
    assert window.tree_stack.currentWidget() is window.tree_empty
    assert window.tree_empty.text() == "No sessions match “nothing like this”"
    qtbot.keyClick(window.filter_edit, Qt.Key.Key_Return)  # nothing to open: nothing happens
    window.filter_edit.clear()
    assert window.tree_stack.currentWidget() is window.tree


def test_clearing_the_filter_keeps_what_the_person_folded_and_unfolded(qtbot: Any) -> None:
    """Issue 14: clearing the filter folded every workspace."""
    window = make_window(qtbot, populated())
    alpha = window.proxy.mapFromSource(window.model.workspace_index(1))
    r1 = window.proxy.mapFromSource(window.model.session_index("r1"))
    window.tree.collapse(r1)  # the person folds r1's sub-agents
    qtbot.keyClicks(window.filter_edit, "g1")
    window.filter_edit.clear()
    alpha = window.proxy.mapFromSource(window.model.workspace_index(1))
    zeta = window.proxy.mapFromSource(window.model.workspace_index(2))
    r1 = window.proxy.mapFromSource(window.model.session_index("r1"))
    assert window.tree.isExpanded(alpha) and window.tree.isExpanded(zeta)
    assert not window.tree.isExpanded(r1)


def test_a_click_or_enter_opens_a_session_to_type_to_and_arrows_stay_in_the_tree(
    qtbot: Any,
) -> None:
    """Focus rules (docs/window.md): choosing a session with the mouse or Enter puts the
    keyboard in its message box; walking the tree with the arrow keys opens each session in
    turn but leaves the keyboard in the tree, so the next arrow keeps walking."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    window = make_window(qtbot, populated())
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    window.select_session("r1")
    tree = window.tree
    tree.setFocus()
    qtbot.waitUntil(tree.hasFocus, timeout=5000)
    opened = _opened(window)
    QTest.keyClick(tree, Qt.Key.Key_Down)
    assert opened and tree.hasFocus()  # the next session opened; the keyboard stayed
    QTest.keyClick(tree, Qt.Key.Key_Return)
    qtbot.waitUntil(window.panel.composer.edit.hasFocus, timeout=5000)
    tree.setFocus()
    qtbot.waitUntil(tree.hasFocus, timeout=5000)
    target = tree.currentIndex()
    rect = tree.visualRect(target)
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(window.panel.composer.edit.hasFocus, timeout=5000)


def test_a_dialog_gives_the_keyboard_back_where_it_was(qtbot: Any) -> None:
    """Focus rules: About (any dialog) closed with Esc returns the keyboard to the composer
    the person was typing in."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    window = make_window(qtbot, populated())
    window.select_session("r1")
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    edit = window.panel.composer.edit
    edit.setFocus()
    qtbot.waitUntil(edit.hasFocus, timeout=5000)
    box = window.show_about()
    qtbot.waitUntil(lambda: box.isVisible() and box.isActiveWindow(), timeout=5000)
    QTest.keyClick(box, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not box.isVisible(), timeout=5000)
    window.activateWindow()  # the window manager's part (offscreen has none)
    qtbot.waitUntil(lambda: window.isActiveWindow() and edit.hasFocus(), timeout=5000)
