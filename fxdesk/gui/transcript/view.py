"""The transcript view: a virtualised list whose delegate (``delegate.TranscriptDelegate``)
paints each row.

Only rows in view are painted; each keeps a laid-out document in a small cache. Older pages load
when the person scrolls to the top (the view keeps its place); the view stays pinned to the
bottom while new rows arrive unless the person scrolled up.

Signals:
    action(str, object): ``("retry"|"resume", work_id)``, ``("full_output", Row)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    Qt,
    QTimer,
    QTimerEvent,
    Signal,
)
from PySide6.QtGui import (
    QAccessible,
    QContextMenuEvent,
    QFocusEvent,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPaintEvent,
    QResizeEvent,
    QTextCursor,
)
from PySide6.QtWidgets import QAbstractItemView, QListView, QMenu, QWidget

from fxdesk.gui.transcript.delegate import TranscriptDelegate, first_change
from fxdesk.gui.transcript.model import RowKind, TranscriptModel
from fxdesk.gui.transcript.selection import TextSelection

HIGHLIGHT_MS = 2500  # how long a message a search opened stays highlighted
# After older rows are inserted at the top, the view lays every loaded row out again. With
# 10,000 rows that is ~100 ms of sizes in one go, so it does it a batch per turn of the event
# loop (their heights are known: the delegate warmed them before they came). The first batch
# holds the new rows and the ones in view (IN_VIEW_ROWS more); each later one is sized from
# the time the last one took, to take about LAYOUT_BUDGET_S (a fixed 1,000 rows took 12–20 ms,
# and 60 ms when the machine was busy). Rows added at the bottom are laid out in one pass: a
# batched pass would leave the newest rows unpainted for a few frames.
PREPEND_BATCH = 1000  # rows of the first batch when the caller does not say how many come
IN_VIEW_ROWS = 200
LAYOUT_BUDGET_S = 0.005
BATCH_MIN, BATCH_MAX = 100, 5000


class TranscriptView(QListView):
    """The transcript list. See the module docstring for its signal."""

    action = Signal(str, object)

    def __init__(self, model: TranscriptModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.items_laid_out = 0  # layout passes of all rows (tests count them)
        self.setModel(model)
        self.transcript = model
        self.delegate = TranscriptDelegate(self, self.trigger)
        self.setItemDelegate(self.delegate)
        self.selection = TextSelection(self, model, self.delegate)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.setUniformItemSizes(False)
        self.setMouseTracking(False)
        self.setFrameShape(QListView.Shape.NoFrame)
        self.setAccessibleName("Transcript")
        self.setSpacing(0)
        self.pinned = True
        self._anchor: tuple[str, int] | None = None  # (row key, its top) kept over a prepend
        self._older_waiting = False  # the top was reached while rows were being laid out
        # Back to one-pass layout once a batched one has reached the last row.
        self._batches = QTimer(self)
        self._batches.setInterval(16)
        self._batches.timeout.connect(self._on_batches_timeout)
        self.verticalScrollBar().valueChanged.connect(self._on_scrollbar_value_changed)
        self.verticalScrollBar().rangeChanged.connect(self._on_scrollbar_range_changed)
        model.rowsInserted.connect(self._on_model_changed)
        model.dataChanged.connect(self._on_model_changed)
        model.modelReset.connect(self._on_model_reset)
        self.older_requested: list[Callable[[], None]] = []  # called at the top of the list
        # One deferred scroll per burst of changes, dropped with the view if it goes first.
        self._pin_timer = QTimer(self)
        self._pin_timer.setSingleShot(True)
        self._pin_timer.setInterval(0)
        self._pin_timer.timeout.connect(self.scrollToBottom)
        # A message a search opened stays highlighted for a moment.
        self._unhighlight = QTimer(self)
        self._unhighlight.setSingleShot(True)
        self._unhighlight.setInterval(HIGHLIGHT_MS)
        self._unhighlight.timeout.connect(self._on_unhighlight_timeout)
        # Running tool cards count their seconds: a repaint each second while any runs.
        self.clock = QTimer(self)
        self.clock.setInterval(1000)
        self.clock.timeout.connect(self._on_clock)
        self.clock.start()

    def _on_clock(self) -> None:
        if not self.isVisible():
            return
        viewport = self.viewport()
        first = self.indexAt(QPoint(viewport.width() // 2, 0))
        last = self.indexAt(QPoint(viewport.width() // 2, viewport.height() - 1))
        # The rows in view only: all 10,000 loaded rows each second was an O(n) pass.
        start = first.row() if first.isValid() else 0
        end = last.row() + 1 if last.isValid() else self.transcript.rowCount()
        if self.transcript.running_tools(start, end):
            viewport.update()

    # --- keyboard and context menu -----------------------------------------------------------
    # Arrow keys move a current row (outlined while the view has focus); Enter or Space opens
    # a tool card; the Menu key (or a right click) lists every action of the row.

    def row_actions(self, position: int) -> list[tuple[str, str, object]]:
        """(label, action, payload) for what can be done with one row."""
        row = self.transcript.row_at(position)
        found: list[tuple[str, str, object]] = []
        if row.kind == RowKind.TOOL:
            found.append(("Collapse" if row.expanded else "Expand", "toggle", None))
            label = "Hide arguments" if row.arguments_shown else "Show arguments"
            found.append((label, "arguments", None))
            if row.ok is not None:
                found.append(("Copy output", "copy", row.full_output or row.output))
                found.append(("Show full output…", "full_output", row))
            return found
        if row.kind == RowKind.NOTICE and row.action:
            found.append((row.action.capitalize(), row.action, row.work_id))
        if row.kind == RowKind.NOTICE and row.action2 == "edit_profile":
            found.append(("Edit profile…", row.action2, row.work_id))
        if row.text:
            found.append(("Copy text", "copy", row.text))
        if TextSelection.can_select(row):
            found.append(("Select text (F2)", "select", None))
        if any(action == "full_output" for _r, action, _p in self.delegate.layout(row).hotspots):
            found.append(("Show the whole answer…", "full_output", row))  # a long one, cut
        for number, (_rect, action, code) in enumerate(
            (h for h in self.delegate.layout(row).hotspots if h[1] == "copy"), start=1
        ):
            found.append((f"Copy code block {number}", action, code))
        return found

    def keyPressEvent(self, event: QKeyEvent) -> None:
        pages = {Qt.Key.Key_PageUp: -1, Qt.Key.Key_PageDown: 1}
        if event.key() in pages and event.modifiers() == Qt.KeyboardModifier.NoModifier:
            self._page(pages[Qt.Key(event.key())])
            return
        index = self.currentIndex()
        if event.key() == Qt.Key.Key_F2 and index.isValid() and self.selection.open(index.row()):
            return
        opens = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space)
        if opens and index.isValid() and self.transcript.row_at(index.row()).kind == RowKind.TOOL:
            self.trigger(index.row(), "toggle", None)
            return
        if index.isValid() and event.matches(QKeySequence.StandardKey.Copy):
            actions = [a for a in self.row_actions(index.row()) if a[1] == "copy"]
            if actions:
                self.trigger(index.row(), "copy", actions[0][2])
                return
        super().keyPressEvent(event)

    def _page(self, direction: int) -> None:
        """PageUp/PageDown scroll a page, as in a document, and the row at the top (or the
        bottom) becomes current: Qt moved a row at a time, so from a long answer PageUp
        jumped to the message above it."""
        bar = self.verticalScrollBar()
        before = bar.value()
        bar.setValue(before + direction * bar.pageStep())
        if bar.value() == before:  # already at the edge: at the top, older pages still load
            self._on_scrollbar_value_changed(before)
        viewport = self.viewport()
        edge = 0 if direction < 0 else viewport.height() - 1
        index = self.indexAt(QPoint(viewport.width() // 2, edge))
        if index.isValid():
            self.setAutoScroll(False)
            try:
                self.setCurrentIndex(index)
            finally:
                self.setAutoScroll(True)

    def focusInEvent(self, event: QFocusEvent) -> None:
        """Tab into the transcript: the current row is the newest one in view, and the view
        stays where it is (Qt would make the first loaded row current and scroll up to it)."""
        if not self.currentIndex().isValid() and self.transcript.rowCount():
            viewport = self.viewport()
            index = self.indexAt(QPoint(viewport.width() // 2, viewport.height() - 1))
            if not index.isValid():  # the rows end above the bottom of the view
                index = self.transcript.index(self.transcript.rowCount() - 1, 0)
            self.setAutoScroll(False)
            try:
                self.setCurrentIndex(index)
            finally:
                self.setAutoScroll(True)
        super().focusInEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        """A double-click on a message lays its text out to select (with the word under the
        pointer selected, as a double-click does in any text)."""
        index = self.indexAt(event.position().toPoint())
        if index.isValid() and self.selection.open(index.row()):
            box = self.selection.box
            local = box.mapFrom(self.viewport(), event.position().toPoint())
            cursor = box.cursorForPosition(local)
            cursor.select(QTextCursor.SelectionType.WordUnderCursor)
            box.setTextCursor(cursor)
            return
        super().mouseDoubleClickEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        if event.reason() == QContextMenuEvent.Reason.Mouse:
            index = self.indexAt(event.pos())
        else:
            index = self.currentIndex()
        if not index.isValid():
            return
        position = index.row()
        menu = self.context_menu(position)
        if menu.isEmpty():
            return
        where = event.globalPos()
        if event.reason() != QContextMenuEvent.Reason.Mouse:
            where = self.viewport().mapToGlobal(self.visualRect(index).topLeft())
        menu.popup(where)

    def context_menu(self, position: int) -> QMenu:
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        for label, action, payload in self.row_actions(position):
            item = menu.addAction(label)
            item.triggered.connect(
                lambda _checked=False, a=action, p=payload: self.trigger(position, a, p)
            )
        return menu

    def trigger(self, row: int, action: str, payload: object) -> None:
        if action == "toggle":
            self.transcript.toggle(row)
        elif action == "arguments":
            self.transcript.toggle_arguments(row)
        elif action == "copy":
            QGuiApplication.clipboard().setText(str(payload))
        elif action == "select":
            self.selection.open(row)
        else:
            self.action.emit(action, payload)

    def show_row(self, position: int) -> None:
        """Scroll to row ``position`` (a message a search found), make it the current row and
        highlight it for a moment; the view stops following the newest rows."""
        index = self.transcript.index(position, 0)
        self.pinned = False
        self._pin_timer.stop()
        self._anchor = None  # the place kept over a prepend gives way to this one
        self.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
        self.setCurrentIndex(index)
        self.delegate.highlighted = self.transcript.row_at(position).key
        self._unhighlight.start()
        self.viewport().update()

    def _on_unhighlight_timeout(self) -> None:
        self.delegate.highlighted = None
        self.viewport().update()

    def keep_place_for_prepend(self, count: int | None = None) -> None:
        """Call right before ``count`` older rows (at most) are inserted at the top: the row at
        the top of the view stays where it is, and the rows are laid out a batch a frame."""
        top = self.indexAt(QPoint(self.viewport().width() // 2, 0))
        if not top.isValid() and self.transcript.rowCount():
            top = self.transcript.index(0, 0)  # not placed yet: older rows come above it
        if top.isValid():
            rect = self.visualRect(top)
            self._anchor = (
                self.transcript.row_at(top.row()).key,
                rect.top() if rect.height() else 0,
            )
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(PREPEND_BATCH if count is None else count + IN_VIEW_ROWS)
        self._batches.start()

    def timerEvent(self, event: QTimerEvent) -> None:
        """A batch of a batched layout runs in a timer event of the view: the next batch is
        sized to take about ``LAYOUT_BUDGET_S``, as the last one went."""
        if self.layoutMode() != QListView.LayoutMode.Batched:
            super().timerEvent(event)
            return
        began = time.perf_counter()
        super().timerEvent(event)
        took = time.perf_counter() - began
        if took > LAYOUT_BUDGET_S / 10:  # a batch (other timers of the view take ~nothing)
            size = int(self.batchSize() * LAYOUT_BUDGET_S / took)
            self.setBatchSize(min(max(size, BATCH_MIN), BATCH_MAX))
        self._restore_anchor()  # its row may be placed now, whether or not the range changed

    def _on_batches_timeout(self) -> None:
        count = self.transcript.rowCount()
        last = self.visualRect(self.transcript.index(count - 1, 0)) if count else None
        if last is None or last.height() > 0:
            self.setLayoutMode(QListView.LayoutMode.SinglePass)
            self._batches.stop()
            self._restore_anchor(final=True)
            self._anchor = None
            bar = self.verticalScrollBar()
            if self._older_waiting and bar.value() <= bar.minimum():
                self._ask_older()
            self._older_waiting = False

    def _on_scrollbar_range_changed(self, _low: int, high: int) -> None:
        bar = self.verticalScrollBar()
        if self._anchor is not None:
            self._restore_anchor()
        elif self.pinned:
            bar.setValue(high)

    def _restore_anchor(self, final: bool = False) -> None:
        if self._anchor is None:
            return
        key, top = self._anchor
        position = self.transcript.position_of(key)
        if position is None:
            self._anchor = None
            return
        rect = self.visualRect(self.transcript.index(position, 0))
        if rect.height() <= 0:
            return  # not laid out yet: the next batch's range change comes back here
        bar = self.verticalScrollBar()
        value = bar.value() + rect.top() - top
        if value > bar.maximum() and not final:
            return  # the range grows first: its change comes back here
        self._anchor = None
        bar.setValue(value)

    def _on_scrollbar_value_changed(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self.pinned = value >= bar.maximum() - 4
        if value <= bar.minimum() and not self.transcript.complete:
            self._ask_older()

    def _ask_older(self) -> None:
        # Not while the last page's rows are still being laid out: the page is read in a worker
        # thread whose Python, holding the GIL, made each batch of the layout wait for it.
        if self.layoutMode() == QListView.LayoutMode.Batched:
            self._older_waiting = True
            return
        for callback in self.older_requested:
            callback()

    # --- a push of the live answer --------------------------------------------------------
    # Each push of the streaming answer changes the live row, the last one. Qt's answer to a
    # changed row is a layout pass and a repaint of the whole viewport, every document in view
    # drawn again ~30 times a second (issue 17: the transcript's paint was most of what 20
    # streaming sessions cost beyond the engine). When only the live row grew, the rows are
    # laid out with the viewport's updates held, the view scrolls by the growth (the pixels
    # move, when pinned to the bottom) and only the part of the row that changed is painted.

    def dataChanged(
        self,
        top_left: QModelIndex | QPersistentModelIndex,
        bottom_right: QModelIndex | QPersistentModelIndex,
        roles: Sequence[int] = (),
    ) -> None:
        if not self._grow_live(top_left, bottom_right):
            super().dataChanged(top_left, bottom_right, roles)

    def doItemsLayout(self) -> None:
        self.items_laid_out += 1
        super().doItemsLayout()

    def paintEvent(self, event: QPaintEvent) -> None:
        self.delegate.exposed = event.region()
        try:
            super().paintEvent(event)
        finally:
            self.delegate.exposed = None

    def _grow_live(
        self,
        top_left: QModelIndex | QPersistentModelIndex,
        bottom_right: QModelIndex | QPersistentModelIndex,
    ) -> bool:
        """Lay out and paint for a live row that only grew (see above); False when the change
        is another one, for Qt's own handling."""
        position = top_left.row()
        count = self.transcript.rowCount()
        viewport = self.viewport()
        if (
            top_left != bottom_right
            or position != count - 1
            or self.transcript.row_at(position).kind != RowKind.LIVE
            or not self.isVisible()
            or not viewport.updatesEnabled()
            or self.layoutMode() != QListView.LayoutMode.SinglePass
            or self._anchor is not None
            or self.delegate.covered is not None
            or QAccessible.isActive()  # Qt's way tells assistive tools the row changed
        ):
            return False
        laid_out = self.items_laid_out
        self.executeDelayedItemsLayout()  # rows inserted or resized meanwhile: all of it now
        if self.items_laid_out != laid_out:
            return True  # that pass measured the new text too and repaints the viewport
        before = self.delegate.live_layout()  # the text of the last pass (Qt's height then)
        if before is None:
            return False
        after = self.delegate.layout(self.transcript.row_at(position))
        if after.height < before.height:
            return False  # the range may shrink and the scroll bar move: Qt's way
        changed = first_change(before, after)
        bar = self.verticalScrollBar()
        # The pass without its repaint of the viewport, nor a scroll of it meanwhile: the scroll
        # bar's range grows (its value stays), and its signal comes once the rows are placed.
        bar.blockSignals(True)
        viewport.setAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled, True)
        try:
            self.doItemsLayout()
        finally:
            viewport.setAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled, False)
            bar.blockSignals(False)
        bar.rangeChanged.emit(bar.minimum(), bar.maximum())  # pinned: scrolls to the bottom
        rect = self.visualRect(top_left)
        viewport.update(
            QRect(0, rect.top() + changed, viewport.width(), max(rect.height() - changed, 1))
        )
        return True

    def _on_model_changed(self, *args: object) -> None:
        if self.pinned:
            self._pin_timer.start()

    def _on_model_reset(self) -> None:
        self.delegate.clear()
        self.pinned = True

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.delegate.forget_width():  # not when only the scroll bar came or went
            self.delegate.clear()
        self.scheduleDelayedItemsLayout()
