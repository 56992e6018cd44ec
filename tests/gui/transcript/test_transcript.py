"""The transcript: its list model, the delegate that paints it, paging through long histories."""

from __future__ import annotations

import asyncio
import gc
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QEvent, QModelIndex, QObject, QPoint, QRect, Qt
from PySide6.QtGui import (
    QCursor,
    QFontMetrics,
    QGuiApplication,
    QImage,
    QPainter,
    QPaintEvent,
    QTextCursor,
    QTextFormat,
)
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QListView, QScrollBar, QStyle, QStyleOptionViewItem, QWidget

from fxdesk.app import App
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import EntryKind, WorkKind, WorkStatus
from fxdesk.domain.work import WorkItem
from fxdesk.gui.transcript.delegate import (
    GAP,
    LAYOUT_CACHE,
    LAYOUT_CACHE_CHARS,
    LIVE_PART_CHARS,
    PAINT_CODE_LINES,
    STATUS_MARK,
    card_words,
)
from fxdesk.gui.transcript.markdown import (
    has_plain_code,
    highlight_code,
    render,
    stream_segments,
)
from fxdesk.gui.transcript.model import (
    FIRST_SHOWN,
    PAGE_SIZE,
    ROLE_ROW,
    Row,
    RowKind,
    ToolState,
    TranscriptModel,
    build_rows,
    tool_state,
)
from fxdesk.gui.transcript.view import IN_VIEW_ROWS, TranscriptView
from fxdesk.paths import DataPaths
from fxdesk.store.schema import HistoryEntryRow
from tests.gui.waiting import until

CODE_ANSWER = "Run this:\n\n```python\nprint('hello')\n```\n\nThen **check** the output."


class FakeHistory:
    """History pages from a list, newest last; records every page it was asked for."""

    def __init__(self, entries: list[HistoryEntry]) -> None:
        self.entries = entries
        self.asked: list[tuple[str, int | None, int]] = []

    async def __call__(self, session_id: str, before: int | None, limit: int) -> list[HistoryEntry]:
        self.asked.append((session_id, before, limit))
        older = [e for e in self.entries if before is None or e.seq < before]
        return older[-limit:]


def entry(seq: int, kind: EntryKind, content: str = "", **fields: Any) -> HistoryEntry:
    return HistoryEntry("s1", seq, kind, content=content, id=seq, **fields)


def one_turn(start: int = 1, work: str = "w1") -> list[HistoryEntry]:
    return [
        entry(start, EntryKind.USER, "Show me", work_id=work),
        entry(start + 1, EntryKind.ASSISTANT, CODE_ANSWER, work_id=work),
        entry(
            start + 2,
            EntryKind.TOOL_CALL,
            '{"path": "a.py"}',
            work_id=work,
            call_id="c1",
            tool_name="edit_file",
        ),
        entry(
            start + 3,
            EntryKind.TOOL_RESULT,
            "--- a.py\n+++ a.py\n-old\n+new",
            work_id=work,
            call_id="c1",
            tool_name="edit_file",
            data={"ok": True, "duration_ms": 12},
        ),
        entry(
            start + 4,
            EntryKind.TURN_END,
            work_id=work,
            data={"usage": [1234, 15], "model_calls": 2, "cost_usd": 0.0123},
        ),
    ]


def kinds(model: TranscriptModel) -> list[RowKind]:
    return [model.row_at(i).kind for i in range(model.rowCount())]


def item(work_id: str, status: WorkStatus) -> WorkItem:
    return WorkItem(
        id=work_id,
        session_id="s1",
        position=1,
        source_id="person",
        kind=WorkKind.PROMPT,
        content="Show me",
        status=status,
        reason=None,
        created_at_ms=1,
        updated_at_ms=1,
    )


class Changes:
    """Which rows a model said changed."""

    def __init__(self, model: TranscriptModel) -> None:
        self.inserted: list[tuple[int, int]] = []
        self.removed: list[tuple[int, int]] = []
        self.changed: list[tuple[int, int]] = []
        self.resets = 0
        model.rowsInserted.connect(lambda _p, a, b: self.inserted.append((a, b)))
        model.rowsRemoved.connect(lambda _p, a, b: self.removed.append((a, b)))
        model.dataChanged.connect(lambda a, b, *_: self.changed.append((a.row(), b.row())))
        model.modelReset.connect(self._reset)

    def _reset(self) -> None:
        self.resets += 1


async def test_model_with_every_kind_of_row_passes_modeltester(qtmodeltester: Any) -> None:
    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    model.set_live_text("streaming…")
    model.apply_items([(item("w1", WorkStatus.FAILED), "the provider was unreachable")])
    assert kinds(model) == [
        RowKind.USER,
        RowKind.ASSISTANT,
        RowKind.TOOL,
        RowKind.TURN,
        RowKind.NOTICE,
        RowKind.LIVE,
    ]
    qtmodeltester.check(model, force_py=True)
    assert model.index(0, 0).data(Qt.ItemDataRole.AccessibleTextRole) == "You: Show me"


async def test_a_call_and_its_result_make_one_tool_card() -> None:
    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    card = model.row_at(2)
    assert (card.tool, card.arguments, card.ok, card.duration_ms) == (
        "edit_file",
        '{"path": "a.py"}',
        True,
        12,
    )
    assert "+new" in card.output


async def test_live_updates_touch_exactly_the_rows_that_changed() -> None:
    history = one_turn()
    model = TranscriptModel(FakeHistory(history))
    await model.load_latest("s1")
    changes = Changes(model)

    model.set_live_text("Hel")
    assert changes.inserted == [(4, 4)]
    model.set_live_text("Hello")
    assert changes.changed == [(4, 4)]
    model.set_live_text("Hello")  # nothing new: no signal
    assert changes.changed == [(4, 4)]

    # A tool call commits before the live row, then its result updates that one card.
    call = entry(6, EntryKind.TOOL_CALL, "{}", work_id="w2", call_id="c9", tool_name="run_command")
    model.append_entries((call,))
    assert changes.inserted[-1] == (4, 4) and model.row_at(5).kind == RowKind.LIVE
    result = entry(
        7,
        EntryKind.TOOL_RESULT,
        "ok",
        work_id="w2",
        call_id="c9",
        tool_name="run_command",
        data={"ok": True},
    )
    model.append_entries((result,))
    assert changes.changed[-1] == (4, 4) and model.row_at(4).ok is True

    # The committed answer replaces the live row.
    model.append_entries((entry(8, EntryKind.ASSISTANT, "Hello there", work_id="w2"),))
    assert changes.removed == [(5, 5)]
    assert model.row_at(model.rowCount() - 1).text == "Hello there"
    assert RowKind.LIVE not in kinds(model)
    assert changes.resets == 0


async def test_notices_follow_the_work_they_explain_and_go_when_it_recovers() -> None:
    model = TranscriptModel(FakeHistory(one_turn()[:2]))  # a turn that never finished
    await model.load_latest("s1")
    model.apply_items([(item("w1", WorkStatus.INTERRUPTED), None)])
    notice = model.row_at(2)
    assert (notice.kind, notice.level, notice.action, notice.work_id) == (
        RowKind.NOTICE,
        "interrupted",
        "resume",
        "w1",
    )
    model.apply_items([(item("w1", WorkStatus.FAILED), "rate limited; try again in a minute")])
    assert model.rowCount() == 3
    assert (model.row_at(2).level, model.row_at(2).action) == ("failed", "retry")
    assert "rate limited" in model.row_at(2).text
    model.apply_items([(item("w1", WorkStatus.COMPLETED), None)])
    assert RowKind.NOTICE not in kinds(model)
    # Work with nothing in the transcript (a queued message never run) gets no notice.
    model.apply_items([(item("other", WorkStatus.CANCELLED), None)])
    assert RowKind.NOTICE not in kinds(model)


async def test_a_tool_result_on_the_newer_page_joins_its_call_on_the_older_page() -> None:
    filler = [entry(seq, EntryKind.USER, f"m{seq}") for seq in range(1, PAGE_SIZE)]
    call = entry(
        PAGE_SIZE, EntryKind.TOOL_CALL, '{"q": 1}', work_id="w", call_id="c", tool_name="grep"
    )
    result = entry(
        PAGE_SIZE + 1,
        EntryKind.TOOL_RESULT,
        "3 matches",
        work_id="w",
        call_id="c",
        tool_name="grep",
        data={"ok": True},
    )
    later = [
        entry(seq, EntryKind.USER, f"m{seq}") for seq in range(PAGE_SIZE + 2, 2 * PAGE_SIZE + 1)
    ]
    model = TranscriptModel(FakeHistory([*filler, call, result, *later]))
    await model.load_latest("s1")
    assert model.row_at(0).output == "3 matches" and model.row_at(0).arguments == ""
    await model.load_older()
    rows = [model.row_at(i) for i in range(model.rowCount())]
    cards = [row for row in rows if row.kind == RowKind.TOOL]
    assert len(cards) == 1
    assert (cards[0].arguments, cards[0].output) == ('{"q": 1}', "3 matches")


async def test_the_view_lays_out_and_paints_every_kind_of_row(
    qtbot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    model.set_live_text("still **typing**")
    model.apply_items([(item("w1", WorkStatus.FAILED), "the provider was unreachable")])
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show()
    await asyncio.sleep(0.05)
    with caplog.at_level(logging.ERROR):
        image = view.grab()
    assert not image.isNull()
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    for position in range(model.rowCount()):
        assert view.visualRect(model.index(position, 0)).height() > 10

    # The tool card opens on a click on its header, showing the diff.
    tool = model.index(2, 0)
    closed = view.visualRect(tool)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=closed.center())
    assert model.row_at(2).expanded
    await until(lambda: view.visualRect(model.index(2, 0)).height() > closed.height() + 40)
    card = view.delegate.layout(model.row_at(2))
    assert "+new" in card.docs[0][0].toPlainText()

    # The turn footer gives calls, tokens and cost.
    footer = view.delegate.layout(model.row_at(3)).footer
    assert footer == "2 model calls · 1,234 in / 15 out · $0.012"

    # The code block's Copy button puts exactly the code on the clipboard.
    answer = model.index(1, 0)
    row = answer.data(ROLE_ROW)
    assert isinstance(row, Row)
    hotspots = [h for h in view.delegate.layout(row).hotspots if h[1] == "copy"]
    assert len(hotspots) == 1
    rect, _, code = hotspots[0]
    click = view.visualRect(answer).topLeft() + QPoint(8, 0) + rect.center()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=click)
    assert QGuiApplication.clipboard().text() == code == "print('hello')"

    # The failure notice's Retry button asks for a retry of that work item.
    asked: list[tuple[str, object]] = []
    view.action.connect(lambda action, payload: asked.append((action, payload)))
    notice_index = model.index(kinds(model).index(RowKind.NOTICE), 0)
    notice = notice_index.data(ROLE_ROW)
    (retry,) = [h for h in view.delegate.layout(notice).hotspots if h[1] == "retry"]
    click = view.visualRect(notice_index).topLeft() + QPoint(8, 0) + retry[0].center()
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=click)
    assert asked == [("retry", "w1")]


async def shown_at_the_bottom(
    qtbot: Any, history: list[HistoryEntry], size: tuple[int, int] = (600, 400)
) -> tuple[TranscriptModel, TranscriptView, QScrollBar]:
    """A shown view of ``history``, loaded and scrolled to its newest rows."""
    model = TranscriptModel(FakeHistory(history))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    await model.load_latest("s1")
    bar = view.verticalScrollBar()
    await until(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())
    return model, view, bar


async def test_the_view_stays_pinned_to_the_bottom_unless_the_person_scrolled_up(
    qtbot: Any,
) -> None:
    history = [entry(seq, EntryKind.USER, f"message {seq}") for seq in range(1, 61)]
    model, view, bar = await shown_at_the_bottom(qtbot, history)

    before = bar.maximum()
    model.set_live_text("new text\n\nmore lines\n\nand more")
    await until(lambda: bar.maximum() > before and bar.value() == bar.maximum())
    assert view.pinned

    bar.setValue(bar.maximum() // 2)
    assert not view.pinned
    held = bar.value()
    model.set_live_text("new text\n\nmore lines\n\nand more\n\neven more\n\nand again")
    model.append_entries((entry(61, EntryKind.USER, "another"),))
    await asyncio.sleep(0.1)
    assert bar.value() == held


class Paints(QObject):
    """The rectangles of the paint events a widget gets."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        self.rects: list[QRect] = []
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if isinstance(event, QPaintEvent):
            self.rects.append(event.rect())
        return False


def on_screen(view: TranscriptView) -> QImage:
    """What the window shows of the viewport (its backing store), not a fresh paint."""
    viewport = view.viewport()
    screen = view.screen()
    top_left = viewport.mapTo(view.window(), QPoint(0, 0))
    return (
        screen.grabWindow(
            view.window().winId(),
            top_left.x(),
            top_left.y(),
            viewport.width(),
            viewport.height(),
        )
        .toImage()
        .convertToFormat(QImage.Format.Format_RGB32)
    )


async def test_a_push_that_grows_the_live_answer_scrolls_and_paints_only_its_new_lines(
    qtbot: Any,
) -> None:
    """Issue 17: a push of the streaming answer, pinned to the bottom, keeps the view at the
    bottom without laying out and painting the whole viewport: one layout pass, the view
    scrolled by the growth, a paint of the bottom part only; what shows is what a full
    paint shows."""
    history = [entry(seq, EntryKind.USER, f"message {seq}") for seq in range(1, 61)]
    model, view, bar = await shown_at_the_bottom(qtbot, history)
    text = "The answer starts here.\n\n" + "A paragraph of the answer, long enough. " * 6
    model.set_live_text(text)
    await until(lambda: bar.value() == bar.maximum() and view.delegate.live_layout() is not None)
    # Not over the view: a scroll repaints the row the pointer is over (Qt's hover).
    QCursor.setPos(view.mapToGlobal(QPoint(view.width() + 200, view.height() + 200)))
    await asyncio.sleep(0.05)
    text += " Then a few more words."  # (the first scroll after the row came may repaint more)
    model.set_live_text(text)
    await asyncio.sleep(0.05)
    paints = Paints(view.viewport())
    for more in (
        " And more words, at least one more line of the answer." * 3,
        " Still more words in the newest paragraph, another line." * 3,
        "\n\nThen a new paragraph.",
    ):
        before, laid_out = bar.maximum(), view.items_laid_out
        paints.rects.clear()
        text += more
        model.set_live_text(text)
        assert view.items_laid_out == laid_out + 1
        assert bar.maximum() > before and bar.value() == bar.maximum() and view.pinned
        await until(lambda: bool(paints.rects))
        await asyncio.sleep(0.05)
        assert all(rect.height() < view.viewport().height() // 2 for rect in paints.rects)
        live = view.visualRect(model.index(model.rowCount() - 1, 0))
        assert live.bottom() <= view.viewport().height()
    assert on_screen(view) == view.viewport().grab().toImage().convertToFormat(
        QImage.Format.Format_RGB32
    )


async def test_a_push_that_grows_the_live_answer_leaves_a_view_scrolled_up_where_it_is(
    qtbot: Any,
) -> None:
    history = [entry(seq, EntryKind.USER, f"message {seq}") for seq in range(1, 61)]
    model, view, bar = await shown_at_the_bottom(qtbot, history)
    text = "The answer starts here.\n\n" + "A paragraph of the answer. " * 6
    model.set_live_text(text)
    await until(lambda: bar.value() == bar.maximum() and view.delegate.live_layout() is not None)
    bar.setValue(bar.maximum() // 2)
    assert not view.pinned
    held, before = bar.value(), bar.maximum()
    model.set_live_text(text + " More words.\n\nAnd another paragraph.")
    assert bar.maximum() > before
    await asyncio.sleep(0.1)
    assert bar.value() == held and not view.pinned
    assert on_screen(view) == view.viewport().grab().toImage().convertToFormat(
        QImage.Format.Format_RGB32
    )


async def test_tab_into_the_transcript_keeps_the_view_on_the_newest_rows(qtbot: Any) -> None:
    """Found walking the window under openbox: Tab from the tree made the first loaded row
    current and scrolled a long way up to it, away from the newest messages."""
    history = [entry(seq, EntryKind.USER, f"message {seq}") for seq in range(1, 61)]
    model, view, bar = await shown_at_the_bottom(qtbot, history)
    view.activateWindow()
    view.setFocus(Qt.FocusReason.TabFocusReason)
    await until(view.hasFocus)
    assert bar.value() == bar.maximum()
    assert view.currentIndex().row() == model.rowCount() - 1  # the newest row, in view
    QTest.keyClick(view, Qt.Key.Key_Up)
    assert view.currentIndex().row() == model.rowCount() - 2


MESSAGES = 10_000


async def test_a_10000_message_session_opens_and_scrolls_without_loading_it_all(
    qtbot: Any, data_paths: DataPaths, tmp_path: Path
) -> None:
    app = App(data_paths)
    await app.start()
    try:
        (tmp_path / "p").mkdir()
        session = await app.sessions.create_root(tmp_path / "p", name="long")

        def seed() -> None:
            rows = [
                {
                    "session": session.id,
                    "seq": seq,
                    "kind": "user" if seq % 2 else "assistant",
                    "content": f"message {seq} " + "lorem ipsum " * (seq % 7),
                    "created_at_ms": seq,
                }
                for seq in range(1, MESSAGES + 1)
            ]
            for start in range(0, len(rows), 500):
                HistoryEntryRow.insert_many(rows[start : start + 500]).execute()

        await app.store.write(seed, label="seed")
        model = TranscriptModel(app.sessions.history_page)
        view = TranscriptView(model)
        view.older_requested.append(lambda: asyncio.ensure_future(_load_older(view, model)))
        qtbot.addWidget(view)
        view.resize(800, 600)
        view.show()

        await model.load_latest(session.id)
        assert model.fetched == PAGE_SIZE
        assert model.rowCount() == PAGE_SIZE
        last = model.row_at(model.rowCount() - 1)
        assert last.text.startswith(f"message {MESSAGES} ")
        bar = view.verticalScrollBar()
        await until(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())

        # Scrolling to the top fetches one more page, and the view keeps its place.
        built_at_insert: list[int] = []
        model.rowsInserted.connect(lambda *_: built_at_insert.append(view.delegate.layouts_built))
        for pages in (2, 3, 4):
            anchor = model.row_at(0)
            bar.setValue(bar.minimum())
            await until(lambda pages=pages: model.fetched == pages * PAGE_SIZE)
            await until(lambda: bar.value() > bar.minimum())
            # The page was laid out before it was inserted (the delegate warmed it between
            # frames); the view lays the rows out a batch a frame, then goes back to one pass.
            await until(lambda: view.layoutMode() == QListView.LayoutMode.SinglePass)
            assert view.delegate.layouts_built - built_at_insert[-1] <= 10
            top = view.indexAt(QPoint(10, 10))
            assert top.data(ROLE_ROW) is not None
            assert model.row_at(PAGE_SIZE) == anchor  # the old first row, one page down
            shown = view.indexAt(QPoint(10, 10)).row()
            assert PAGE_SIZE - 5 <= shown <= PAGE_SIZE + 5
        assert model.fetched == 4 * PAGE_SIZE < MESSAGES
        assert view.delegate.layouts_built <= model.rowCount() * 2
        assert (
            model.index(0, 0)
            .data(ROLE_ROW)
            .text.startswith(f"message {MESSAGES - 4 * PAGE_SIZE + 1} ")
        )
        assert model.index(0, 0) != QModelIndex()
    finally:
        await app.stop()


async def _load_older(view: TranscriptView, model: TranscriptModel) -> None:
    async def warm(rows: list[Row]) -> None:
        await view.delegate.warm(rows)
        view.keep_place_for_prepend()

    await model.load_older(warm=warm)


async def test_every_row_action_is_reachable_by_keyboard(qtbot: Any) -> None:
    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    model.apply_items([(item("w1", WorkStatus.FAILED), "the provider was unreachable")])
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show()
    view.setFocus()
    asked: list[tuple[str, object]] = []
    view.action.connect(lambda action, payload: asked.append((action, payload)))

    # Arrow keys walk the rows; Enter opens the tool card under the cursor.
    view.setCurrentIndex(model.index(0, 0))
    QTest.keyClick(view, Qt.Key.Key_Down)
    QTest.keyClick(view, Qt.Key.Key_Down)
    assert view.currentIndex().row() == 2
    QTest.keyClick(view, Qt.Key.Key_Return)
    assert model.row_at(2).expanded
    QTest.keyClick(view, Qt.Key.Key_Space)
    assert not model.row_at(2).expanded

    # Ctrl+C copies the current row's text.
    QTest.keyClick(view, Qt.Key.Key_Up)
    QTest.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == CODE_ANSWER

    # The context menu (Menu key) lists everything the mouse can do.
    labels = [label for label, _, _ in view.row_actions(1)]
    assert labels == ["Copy text", "Select text (F2)", "Copy code block 1"]
    assert [label for label, _, _ in view.row_actions(2)] == [
        "Expand",
        "Show arguments",
        "Copy output",
        "Show full output…",
    ]
    notice = kinds(model).index(RowKind.NOTICE)
    menu = view.context_menu(notice)
    assert [a.text() for a in menu.actions()] == ["Retry", "Copy text"]  # nothing to select
    menu.actions()[0].trigger()
    assert asked == [("retry", "w1")]
    menu.close()


async def test_part_of_a_message_can_be_selected_and_copied(qtbot: Any) -> None:
    """Issue 14: part of a message could not be selected (rows are painted). F2, "Select text"
    or a double-click lays the same text over the row to select from; Escape puts it back."""
    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show()
    view.activateWindow()
    await until(view.isActiveWindow)
    view.setFocus()
    box = view.selection.box
    view.setCurrentIndex(model.index(1, 0))  # the answer
    QTest.keyClick(view, Qt.Key.Key_F2)
    assert box.isVisible() and box.hasFocus()
    assert box.toPlainText().startswith("Run this:") and "print('hello')" in box.toPlainText()
    row = view.visualRect(model.index(1, 0))
    assert row.contains(box.geometry().topLeft()) and box.height() <= row.height()
    # The keyboard selects part of it: the first word, then Ctrl+C.
    cursor = box.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.Start)
    box.setTextCursor(cursor)
    QTest.keyClick(box, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(box, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(box, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClick(box, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == "Run"
    QTest.keyClick(box, Qt.Key.Key_Escape)
    assert not box.isVisible() and view.hasFocus()

    # A double-click on a word opens it with that word selected.
    first_line = box.document().firstBlock()
    assert first_line.text() == "Run this:"
    QTest.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=row.topLeft() + QPoint(
        view.delegate.left() + 4, 8))  # fmt: skip
    assert box.isVisible()
    assert box.textCursor().selectedText() == "Run"
    # The user's message too; a tool card has no text to select here.
    assert view.selection.open(0) and box.toPlainText() == "Show me"
    assert not view.selection.open(2)
    view.verticalScrollBar().setValue(view.verticalScrollBar().maximum())
    model.apply_items([(item("w1", WorkStatus.FAILED), "boom")])  # any change puts it back
    assert not box.isVisible()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["para one two three", "", "```python", "```", "- item", "x" * 40]),
        max_size=80,
    ),
    st.integers(min_value=0, max_value=4000),
    st.integers(min_value=10, max_value=200),
)
def test_streaming_segments_are_stable_as_text_grows(lines: list[str], cut: int, size: int) -> None:
    text = "\n".join(lines)
    prefix = text[: min(cut, len(text))]
    whole = stream_segments(text, size)
    early = stream_segments(prefix, size)
    assert "".join(whole) == text and "".join(early) == prefix
    # Every closed piece of the shorter text is a piece of the longer one, unchanged.
    assert whole[: len(early) - 1] == early[:-1]
    # Cuts fall only on blank lines outside code fences.
    for piece in whole[:-1]:
        assert piece.endswith("\n") and not piece.splitlines()[-1].strip()
        assert piece.count("```") % 2 == 0


async def test_a_long_streaming_answer_renders_only_its_newest_piece(qtbot: Any) -> None:
    model = TranscriptModel(FakeHistory([]))
    await model.load_latest("s1")
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 600)
    view.show()
    paragraph = "A sentence about the parser, long enough to matter. " * 6 + "\n\n"
    text = ""
    for _ in range(60):  # about 20,000 characters, in 60 frames
        text += paragraph
        model.set_live_text(text)
        view.delegate.layout(model.row_at(0))
    segments = stream_segments(text)
    pieces = len(segments)
    assert pieces > 10
    # Each frame renders the newest paragraph, plus each closed piece once.
    assert view.delegate.segments_rendered <= 60 + pieces
    layout = view.delegate.layout(model.row_at(0))
    # The closed pieces, then the growing piece's paragraphs.
    parts = stream_segments(segments[-1], LIVE_PART_CHARS)
    assert len(layout.docs) == pieces - 1 + len(parts)
    assert [doc.toPlainText() for doc, _ in layout.docs[pieces - 1 :]] == [
        render(part, 600, dark=False).toPlainText() for part in parts
    ]
    assert "".join(doc.toPlainText() for doc, _ in layout.docs).count("parser") == 360


MIXED_ANSWER = "".join(
    f"## Step {n}\n\nThe parser reads **one line** at a time and keeps `offsets`.\n\n"
    f"- read the header\n- then the body\n\n```python\nvalue_{n} = parse(lines)\n```\n\n"
    for n in range(40)
)


async def test_each_frame_of_a_streaming_answer_renders_only_its_newest_paragraph(
    qtbot: Any,
) -> None:
    """Issue 17: each frame rendered the whole growing piece (up to ~1,500 characters of
    Markdown) again; the paragraphs before the newest one are now kept as they were."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 600)
    model.clear("s1")
    text = MIXED_ANSWER[:1000]  # inside the first piece, past a few paragraphs
    model.set_live_text(text)
    before = view.delegate.layout(model.row_at(0)).docs
    rendered = view.delegate.segments_rendered
    model.set_live_text(text + "more wor")  # a delta in the newest paragraph
    after = view.delegate.layout(model.row_at(0)).docs
    assert len(stream_segments(text)) == 1 and len(before) == len(after) > 2
    assert view.delegate.segments_rendered == rendered + 1
    assert [doc for doc, _ in after[:-1]] == [doc for doc, _ in before[:-1]]
    assert after[-1][0].toPlainText().endswith("more wor")


async def test_a_streaming_answer_is_as_tall_as_its_text_in_one_document(qtbot: Any) -> None:
    """Its pieces and parts are spaced as the paragraphs of one document are, so a part or a
    piece closing (the text cut somewhere else) moves none of the text above it."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 600)
    model.clear("s1")
    font = view.font()
    small = QFontMetrics(font).height()
    for end in (300, 700, 1600, 2500, 4000):
        text = MIXED_ANSWER[:end]
        model.set_live_text(text)
        layout = view.delegate.layout(model.row_at(0))
        assert len(layout.docs) > 1
        whole = render(text, layout.docs[0][1].width(), dark=False, font=font)
        assert layout.height == int(whole.size().height()) + GAP + small + 6


def _call(seq: int, call_id: str, work: str = "w1") -> HistoryEntry:
    return entry(
        seq, EntryKind.TOOL_CALL, '{"command": "make"}', work_id=work, call_id=call_id,
        tool_name="run_command",
    )  # fmt: skip


def _result(seq: int, call_id: str, **data: Any) -> HistoryEntry:
    return entry(
        seq, EntryKind.TOOL_RESULT, "out", work_id="w1", call_id=call_id,
        tool_name="run_command", data=data,
    )  # fmt: skip


async def test_every_tool_card_ends_in_a_state_of_its_own() -> None:
    """Issue 14: a denied and a failed call looked the same, and a call cancelled while it ran
    or waited for approval showed "running…" forever (after a restart too)."""
    history = [
        _call(1, "ok"), _result(2, "ok", ok=True, duration_ms=5),
        _call(3, "bad"), _result(4, "bad", ok=False),
        _call(5, "no"), _result(6, "no", ok=False, denied=True),
        _call(7, "stop"), _result(8, "stop", ok=False, cancelled=True, duration_ms=1500),
        _call(9, "ask"), _result(10, "ask", ok=False, cancelled=True, not_run=True),
        _call(11, "lost"), _result(12, "lost", ok=False, interrupted=True),
        _call(13, "open"),  # no result yet
    ]  # fmt: skip
    model = TranscriptModel(FakeHistory(history))
    await model.load_latest("s1")
    cards = {model.row_at(i).key.split(":")[-1]: model.row_at(i) for i in range(model.rowCount())}
    states = {key: tool_state(row) for key, row in cards.items()}
    assert states == {
        "ok": ToolState.SUCCEEDED,
        "bad": ToolState.FAILED,
        "no": ToolState.DENIED,
        "stop": ToolState.STOPPED,
        "ask": ToolState.NOT_RUN,
        "lost": ToolState.INTERRUPTED,
        "open": ToolState.RUNNING,
    }
    assert card_words(cards["stop"]) == "stopped after 1.5 s"
    assert card_words(cards["ask"]) == "not run: cancelled"
    assert card_words(cards["no"]) == "denied"
    assert len({STATUS_MARK[s] for s in states.values()}) == len(states)  # each looks its own

    # The open call's work waits for approval, then is cancelled with no result recorded
    # (a history from before cancels were recorded): never "running…" forever.
    model.apply_items([(item("w1", WorkStatus.AWAITING_APPROVAL), None)])
    assert card_words(_card(model, "open")) == "waiting for approval"
    model.apply_items([(item("w1", WorkStatus.RUNNING), None)])
    assert card_words(_card(model, "open")) == "running…"
    model.apply_items([(item("w1", WorkStatus.CANCELLED), None)])
    assert tool_state(_card(model, "open")) == ToolState.STOPPED
    model.apply_items([(item("w1", WorkStatus.FAILED), None)])
    assert tool_state(_card(model, "open")) == ToolState.INTERRUPTED


def _card(model: TranscriptModel, call_id: str) -> Row:
    return next(
        model.row_at(i) for i in range(model.rowCount()) if model.row_at(i).key.endswith(call_id)
    )


def test_a_turn_whose_server_reported_no_usage_says_so_not_zero_tokens_for_free() -> None:
    from fxdesk.gui.transcript.delegate import _turn_summary

    quiet = Row(
        "t", RowKind.TURN, data={"model_calls": 1, "usage": [0, 0], "usage_reported": False}
    )
    assert _turn_summary(quiet) == "1 model call · usage not reported"
    told = Row("t", RowKind.TURN, data={"model_calls": 2, "usage": [1234, 15], "cost_usd": 0.0123})
    assert _turn_summary(told) == "2 model calls · 1,234 in / 15 out · $0.012"
    agent = Row(
        "t3", RowKind.TURN, data={"model_calls": 1, "usage_reported": False, "cost_usd": 0.25}
    )
    assert _turn_summary(agent) == "1 model call · tokens not reported · $0.25"


def test_a_command_card_reads_as_a_prompt_and_its_output_with_arguments_on_request() -> None:
    from fxdesk.gui.transcript.delegate import _summary, _tool_body

    command = Row(
        "c",
        RowKind.TOOL,
        tool="run_command",
        arguments='{"command": "npm test", "timeout_s": 300}',
        output="12 passed\n[exit code 0]",
        ok=True,
        expanded=True,
    )
    assert _summary(command) == "$ npm test"
    assert _tool_body(command) == "$ npm test\n\n12 passed\n[exit code 0]"  # no JSON
    shown = _tool_body(replace(command, arguments_shown=True))
    assert shown.startswith('{\n  "command": "npm test",\n  "timeout_s": 300\n}')
    assert shown.endswith("$ npm test\n\n12 passed\n[exit code 0]")
    edit = Row(
        "e",
        RowKind.TOOL,
        tool="edit_file",
        arguments='{"path": "a.py", "old_text": "x", "new_text": "y"}',
        output="--- a/a.py\n+++ b/a.py\n-x\n+y",
        ok=True,
        expanded=True,
    )
    assert _tool_body(edit) == edit.output  # the diff, not the arguments it came from
    stop = Row("s", RowKind.TOOL, tool="stop_background", arguments='{"task": 2}', ok=True)
    assert _summary(stop) == "#2"


async def test_show_arguments_on_a_card_opens_it_with_its_raw_arguments(qtbot: Any) -> None:
    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show()
    card = next(i for i in range(model.rowCount()) if model.row_at(i).kind == RowKind.TOOL)
    assert not model.row_at(card).expanded
    view.trigger(card, "arguments", None)  # the row menu's "Show arguments"
    row = model.row_at(card)
    assert row.expanded and row.arguments_shown
    shown = view.delegate.layout(row).docs[0][0].toPlainText()
    assert shown.startswith('{\n  "path": "a.py"\n}') and "+new" in shown
    links = [h for h in view.delegate.layout(row).hotspots if h[1] == "arguments"]
    assert len(links) == 1  # the card's own link, painted "Hide arguments" now
    view.trigger(card, "arguments", None)
    assert not model.row_at(card).arguments_shown
    assert '"path"' not in view.delegate.layout(model.row_at(card)).docs[0][0].toPlainText()


async def test_a_running_command_shows_its_lines_and_time_until_its_result_replaces_them(
    qtbot: Any,
) -> None:
    import time as clock

    from fxdesk.gui.transcript.delegate import _tool_body

    started = int(clock.time() * 1000) - 75_000
    call = entry(
        1,
        EntryKind.TOOL_CALL,
        '{"command": "npm test"}',
        work_id="w1",
        call_id="c9",
        tool_name="run_command",
        created_at_ms=started,
    )
    model = TranscriptModel(FakeHistory([call]))
    await model.load_latest("s1")
    assert model.running_tools() and model.running_tools(0, 1)
    assert not model.running_tools(1)  # the view asks about the rows in view only
    card = model.row_at(0)
    assert card_words(card) == "running 1 min 15 s"

    model.append_tool_output("c9", "PASS a.test.js\n")
    model.append_tool_output("c9", "PASS b.test.js\n")
    card = model.row_at(0)
    assert card.live_output == "PASS a.test.js\nPASS b.test.js\n"
    assert _tool_body(card) == "$ npm test\n\nPASS a.test.js\nPASS b.test.js"
    model.append_tool_output("other", "not this card\n")
    assert model.row_at(0).live_output == card.live_output

    # The result replaces what was printed live; the card stops counting.
    result = entry(
        2,
        EntryKind.TOOL_RESULT,
        "PASS a.test.js\nPASS b.test.js\n[exit code 0]",
        work_id="w1",
        call_id="c9",
        tool_name="run_command",
        data={"ok": True, "duration_ms": 75_000},
    )
    model.append_entries((result,))
    done = model.row_at(0)
    assert (done.ok, done.live_output) == (True, "")
    assert card_words(done) == "75.0 s"
    assert not model.running_tools()
    model.append_tool_output("c9", "late line\n")  # a line after the result changes nothing
    assert model.row_at(0).live_output == ""


def test_who_answered_an_approval_how_and_when_reads_as_a_sentence() -> None:
    import time as clock

    from fxdesk.domain.approvals import Approval, ApprovalStatus
    from fxdesk.gui.transcript.model import answer_text, answers_by_call

    at = 1_780_000_000_000
    hhmm = clock.strftime("%H:%M", clock.localtime(at / 1000))

    def approval(call: str, status: ApprovalStatus, created: int, **resolution: Any) -> Approval:
        return Approval(
            f"a-{call}-{created}",
            "s1",
            "s1",
            "w1",
            call,
            "fp",
            "run_command",
            "rm -rf build",
            status=status,
            resolution=resolution,
            created_at_ms=created,
            resolved_at_ms=at,
        )

    denied = approval("c1", ApprovalStatus.DENIED, 1, by="the command line", reason="not now")
    assert answer_text(denied) == f"You denied it, from the command line, at {hhmm}: “not now”"
    outside = approval("c2", ApprovalStatus.ALLOWED_ONCE, 2, by="the window", unsandboxed=True)
    assert answer_text(outside) == (
        f"You allowed it once, outside the sandbox, from the window, at {hhmm}"
    )
    assert answer_text(approval("c3", ApprovalStatus.PENDING, 3)) == ""
    # The same call asked twice (a restart asked again): the latest answer is the one shown.
    again = approval("c1", ApprovalStatus.ALLOWED_SESSION, 5, by="the window")
    assert answers_by_call([again, denied, outside])["c1"].startswith(
        "You allowed it for this session, from the window"
    )


def test_a_parent_s_card_says_which_sub_agent_was_given_what() -> None:
    """Issue 14: the parent's transcript never mentioned the sub-agent's task."""
    from fxdesk.gui.transcript.delegate import TOOL_TITLES, _summary

    delegate = Row(
        "d",
        RowKind.TOOL,
        tool="delegate",
        arguments=(
            '{"requests": [{"agent": "explorer", "task": "find the  parser"},'
            ' {"agent": "general", "task": "write tests"}], "mode": "background"}'
        ),
    )
    assert TOOL_TITLES["delegate"] == "Hand work to sub-agents"
    assert _summary(delegate) == (
        "explorer: find the parser · general: write tests (in the background)"
    )
    spawn = Row(
        "s",
        RowKind.TOOL,
        tool="spawn_agent",
        arguments='{"name": "Reviewer", "agent": "general", "task": "review the diff"}',
    )
    assert (TOOL_TITLES["spawn_agent"], _summary(spawn)) == (
        "Start a sub-agent",
        "Reviewer: review the diff",
    )
    signal = Row(
        "g",
        RowKind.TOOL,
        tool="emit_signal",
        arguments='{"severity": "warning", "summary": "CI red"}',
    )
    assert _summary(signal) == "warning CI red"


async def test_on_a_wide_screen_the_transcript_keeps_a_readable_centred_column(
    qtbot: Any,
) -> None:
    from fxdesk.gui.transcript.delegate import MAX_WIDTH

    model = TranscriptModel(FakeHistory(one_turn()))
    await model.load_latest("s1")
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(2400, 900)
    view.show()
    await until(lambda: view.viewport().width() > MAX_WIDTH + 200, within=5)
    assert view.delegate._width() == MAX_WIDTH
    assert view.delegate.left() == (view.viewport().width() - MAX_WIDTH) // 2
    view.resize(700, 900)
    await until(lambda: view.viewport().width() <= 700)
    bar = 0 if view.verticalScrollBar().isVisible() else view.style().pixelMetric(BAR_EXTENT)
    assert view.delegate._width() == view.viewport().width() - 28 - bar  # the margins only


BAR_EXTENT = QStyle.PixelMetric.PM_ScrollBarExtent


async def test_the_scroll_bar_appearing_lays_nothing_out_again(qtbot: Any) -> None:
    """Rows are laid out as wide as the view with its scroll bar, so the bar coming (a long
    session opened after a short one) does not lay every row out again: a session opening on
    a long answer rendered it twice."""
    model = TranscriptModel(FakeHistory([entry(1, EntryKind.ASSISTANT, "short")]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 400)
    view.show()
    await model.load_latest("s1")
    await until(lambda: view.delegate.layouts_built > 0)
    assert not view.verticalScrollBar().isVisible()
    width, built = view.delegate._width(), view.delegate.layouts_built
    model.append_entries(tuple(entry(n, EntryKind.USER, f"message {n}") for n in range(2, 60)))
    await until(view.verticalScrollBar().isVisible)
    await asyncio.sleep(0.1)
    assert view.delegate._width() == width
    first = model.row_at(0)
    assert view.delegate.layout(first) is not None and view.delegate.layouts_built == built + 58


def test_messages_and_turn_footers_say_when() -> None:
    """Issue 18 item 6: per-message timestamps in the transcript."""
    from datetime import datetime

    from fxdesk.gui.transcript.delegate import _turn_summary, clock_text

    now = datetime(2026, 12, 2, 15, 30).timestamp() * 1000
    assert clock_text(int(datetime(2026, 12, 2, 9, 5).timestamp() * 1000), int(now)) == "09:05"
    assert clock_text(int(datetime(2026, 11, 3, 14, 2).timestamp() * 1000), int(now)) == (
        "3 Nov 14:02"
    )
    assert clock_text(int(datetime(2025, 11, 3, 14, 2).timestamp() * 1000), int(now)) == (
        "3 Nov 2025 14:02"
    )
    at = int(datetime.now().replace(hour=14, minute=2).timestamp() * 1000)
    turn = Row("t", RowKind.TURN, data={"model_calls": 1, "usage": [10, 2]}, at_ms=at)
    assert _turn_summary(turn) == "14:02 · 1 model call · 10 in / 2 out"
    rows = build_rows(
        [entry(1, EntryKind.USER, "Hi", work_id="w1", created_at_ms=at)]
    )  # from the history as stored
    assert rows[0].at_ms == at


async def test_the_person_s_message_header_shows_its_time(qtbot: Any) -> None:
    from datetime import datetime

    at = int(datetime.now().replace(hour=8, minute=41).timestamp() * 1000)
    model = TranscriptModel(FakeHistory([entry(1, EntryKind.USER, "Hi", created_at_ms=at)]))
    await model.load_latest("s1")
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(600, 300)
    assert view.delegate.layout(model.row_at(0)).header == "You · 08:41"


def test_code_is_coloured_when_painted_and_a_measured_row_keeps_its_height(qtbot: Any) -> None:
    """Rows are built for their height without colouring their code (issue 17: pygments was
    half the cost of a page of older rows); painting colours it, and the height stays."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(500, 600)
    text = "Here:\n\n```python\ndef parse(lines):  # a comment\n    return lines\n```\n"
    row = Row(key="a1", kind=RowKind.ASSISTANT, seq=1, text=text)
    measured = view.delegate.height(row)
    doc = view.delegate.layout(row).docs[0][0]
    assert has_plain_code(doc)  # measured only: not coloured yet

    image = QImage(600, 800, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    option = QStyleOptionViewItem()
    option.rect = QRect(0, 0, 500, measured)
    option.palette = view.palette()
    view.delegate._paint(painter, option, row)
    painter.end()

    assert not has_plain_code(doc)
    block = doc.begin()
    while not block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
        block = block.next()
    colours = {r.format.foreground().color().name() for r in block.layout().formats()}
    assert len(colours) > 1  # keyword, name, comment... in their colours
    assert view.delegate.height(row) == measured == view.delegate.layout(row).height
    plain_doc = render("no code here", 400, dark=False, highlight=True)
    assert not has_plain_code(plain_doc) and getattr(plain_doc, "_highlighter", None) is None


def test_code_is_coloured_a_few_lines_a_call_when_asked(qtbot: Any) -> None:
    """Issue 17: a piece's code coloured in one go held the Qt thread 25-45 ms (pygments:
    ~1 ms a line); a paint colours a few lines and the next goes on where it stopped."""
    text = "".join(
        f"Step {n}:\n\n```python\nvalue_{n} = parse(lines)  # {n}\n```\n\n" for n in range(9)
    )

    def coloured_lines(doc: Any) -> list[int]:
        found, block, number = [], doc.begin(), 0
        while block.isValid():
            if block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
                if block.layout().formats():
                    found.append(number)
                number += 1
            block = block.next()
        return found

    doc = render(text, 500, dark=False, highlight=False)
    highlight_code(doc, False, 4)
    assert coloured_lines(doc) == [0, 1, 2, 3] and has_plain_code(doc)
    highlight_code(doc, False, 4)
    assert coloured_lines(doc) == list(range(8)) and has_plain_code(doc)
    highlight_code(doc, False, 4)
    assert coloured_lines(doc) == list(range(9)) and not has_plain_code(doc)
    whole = render(text, 500, dark=False, highlight=True)
    assert coloured_lines(whole) == list(range(9))


def test_row_sizes_are_cached_without_an_object_per_row(qtbot: Any) -> None:
    """Issue 17: the view asks every loaded row's size after each page of older rows, and the
    garbage collector walks whatever the size caches hold (a tuple and a QSize per row made a
    full collection of 10,000 rows ~4 times longer). Sizes are kept, a row's changed text is
    measured again, and so is every row at a new width."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(500, 600)
    delegate = view.delegate
    rows = [Row(key=f"a{n}", kind=RowKind.ASSISTANT, seq=n, text=f"answer {n}") for n in range(300)]
    for row in rows:
        delegate.layout(row)  # the layouts (a few rows' worth are kept for painting) first
    gc.collect()
    before = len(gc.get_objects())
    heights = [delegate._quick_size(row).height() for row in rows]
    gc.collect()
    assert len(gc.get_objects()) - before < 30  # was 3 a row: a key, a tuple and a QSize
    sizes = [delegate._quick_size(row) for row in rows]
    assert [size.height() for size in sizes] == heights
    longer = replace(rows[0], text="a longer answer " * 80)
    assert delegate._quick_size(longer).height() > sizes[0].height()
    view.show()
    view.resize(300, 600)
    built = delegate.layouts_built
    narrow = delegate._quick_size(rows[1])
    assert narrow.width() < sizes[1].width() and delegate.layouts_built == built + 1


def test_laid_out_rows_kept_for_painting_are_bounded_by_their_text(qtbot: Any) -> None:
    """Issue 17: a laid-out Markdown answer holds ~80 bytes of native memory a character, and
    every loaded row is laid out for its height, so 400 kept rows of 4 KB answers were ~135 MB
    (the streaming soak's RSS grew with the shown session's rows). The rows kept are bounded
    by their characters too; a row let go keeps its height and is laid out again when
    painted."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(500, 600)
    delegate = view.delegate
    paragraph = "Some **words** of an answer, `code` and a [link](https://example.com).\n\n"
    text = paragraph * (4000 // len(paragraph))
    count = 2 * LAYOUT_CACHE_CHARS // len(text)
    rows = [Row(key=f"a{n}", kind=RowKind.ASSISTANT, seq=n, text=text) for n in range(count)]
    heights = [delegate.height(row) for row in rows]
    kept = sum(layout.chars for layout in delegate._cache.values())
    assert kept == delegate._cache_chars <= LAYOUT_CACHE_CHARS
    assert len(delegate._cache) <= count // 2 < LAYOUT_CACHE
    built = delegate.layouts_built
    assert [delegate.height(row) for row in rows] == heights  # kept, not laid out again
    delegate.layout(rows[-1])
    assert delegate.layouts_built == built
    assert delegate.layout(rows[0]).height == heights[0]  # let go: laid out again to paint
    assert delegate.layouts_built == built + 1


def test_a_page_of_older_rows_is_laid_out_in_batches_sized_to_a_time_budget(qtbot: Any) -> None:
    """Issue 17: the first batch after an insert at the top holds the new rows and the ones in
    view; later ones are sized to take about LAYOUT_BUDGET_S (a fixed 1,000 rows took 12–60
    ms a frame)."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.keep_place_for_prepend(150)
    assert view.layoutMode() == QListView.LayoutMode.Batched
    assert view.batchSize() == 150 + IN_VIEW_ROWS


def test_the_top_reached_while_rows_are_laid_out_asks_for_older_rows_once_they_are(
    qtbot: Any,
) -> None:
    """The next page is read in a worker thread, whose Python held up the layout's batches
    (the GIL): it is asked for once the rows before it are laid out, if the top is still
    in view."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    asked: list[int] = []
    view.older_requested.append(lambda: asked.append(1))
    view.keep_place_for_prepend(10)
    view._on_scrollbar_value_changed(view.verticalScrollBar().minimum())
    assert asked == []
    view._on_batches_timeout()  # every row is laid out
    assert view.layoutMode() == QListView.LayoutMode.SinglePass
    assert asked == [1]
    view._on_scrollbar_value_changed(view.verticalScrollBar().minimum())
    assert asked == [1, 1]  # at once when no layout is going on


async def test_an_external_agents_thoughts_and_plan_are_rows_and_a_later_plan_replaces_it(
    qtbot: Any,
) -> None:
    plan = [{"content": "Read a.txt", "status": "pending", "priority": "medium"}]
    done = [{"content": "Read a.txt", "status": "completed", "priority": "medium"}]
    entries = [
        entry(1, EntryKind.USER, "think", work_id="w1"),
        entry(2, EntryKind.ASSISTANT, "", work_id="w1", data={"thought": "Let me see."}),
        entry(3, EntryKind.ASSISTANT, "", work_id="w1", data={"plan": plan}),
    ]
    model = TranscriptModel(FakeHistory(entries))
    await model.load_latest("s1")
    texts = [model.row_at(i).text for i in range(model.rowCount())]
    assert texts == ["think", "> *Thinking*\n>\n> Let me see.", "**Plan**\n\n- ○ Read a.txt"]
    model.append_entries(
        (
            entry(4, EntryKind.ASSISTANT, "", work_id="w1", data={"plan": done}),
            entry(5, EntryKind.ASSISTANT, "Done.", work_id="w1"),
        )
    )
    texts = [model.row_at(i).text for i in range(model.rowCount())]
    assert texts[2:] == ["**Plan**\n\n- ✓ Read a.txt", "Done."]  # in place, not a second plan


async def test_a_long_session_opens_on_its_newest_rows_then_fills_in_above_them(
    qtbot: Any,
) -> None:
    entries = [
        entry(seq, EntryKind.USER if seq % 2 else EntryKind.ASSISTANT, f"message {seq} " * 20)
        for seq in range(1, 501)
    ]
    model = TranscriptModel(FakeHistory(entries))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 500)
    view.show()
    shown_first: list[int] = []

    async def warm(rows: list[Row]) -> None:
        shown_first.append(model.rowCount())
        await view.delegate.warm(rows)
        view.keep_place_for_prepend()

    await model.load_latest("s1", warm=warm)
    # The newest rows were in the model (and so painted) before the rest of the page was laid
    # out; then the whole page is there, and the view is still at the newest message.
    assert shown_first == [FIRST_SHOWN]
    assert model.rowCount() == PAGE_SIZE
    assert model.row_at(PAGE_SIZE - 1).text.startswith("message 500 ")
    bar = view.verticalScrollBar()
    await until(lambda: view.layoutMode() == QListView.LayoutMode.SinglePass)
    await until(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())
    bottom = view.indexAt(QPoint(view.viewport().width() // 2, view.viewport().height() - 5))
    assert bottom.row() == PAGE_SIZE - 1
    assert not model.complete and model.oldest_seq == 501 - PAGE_SIZE


def test_a_very_long_answer_shows_its_start_and_the_whole_in_a_window(qtbot: Any) -> None:
    """Issue 17: a 2 MB answer froze the window while Qt read its Markdown (~5 ms a KB). The
    transcript renders its first ANSWER_SHOWN characters, to a paragraph break, and offers the
    whole of it; code is coloured in a single pass (colouring block by block relaid the rest
    of the document each time: a minute for 400 KB)."""
    from fxdesk.gui.transcript.delegate import ANSWER_SHOWN

    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 2400)  # a few pieces in view
    view.show()
    paragraph = "A line of the plan {n}.\n\n```python\nx = parse(lines)  # {n}\n```\n\n"
    count = 2 * ANSWER_SHOWN // len(paragraph)
    long_text = "".join(paragraph.format(n=n) for n in range(count)) + "The very end."
    asked: list[tuple[str, object]] = []
    view.action.connect(lambda action, payload: asked.append((action, payload)))
    model.clear("s1")
    model.append_entries((entry(1, EntryKind.ASSISTANT, long_text),))
    model.append_entries((entry(2, EntryKind.ASSISTANT, CODE_ANSWER),))

    cut = view.delegate.layout(model.row_at(0))
    assert len(cut.docs) > 10  # in pieces, each its own document
    shown = "\n".join(doc.toPlainText() for doc, _area in cut.docs)
    assert "The very end." not in shown
    assert re.search(r"(A line of the plan \d+\.|x = parse\(lines\)  # \d+)$", shown.rstrip())
    assert len(shown) < ANSWER_SHOWN < len(long_text)
    labels = [label for label, _, _ in view.row_actions(0)]
    assert "Show the whole answer…" in labels
    whole = next(a for a in view.row_actions(0) if a[0] == "Show the whole answer…")
    view.trigger(0, whole[1], whole[2])
    assert asked == [("full_output", model.row_at(0))]
    assert "Show the whole answer…" not in [label for label, _, _ in view.row_actions(1)]

    image = QImage(800, 1200, QImage.Format.Format_ARGB32)  # painting colours what it shows
    option = QStyleOptionViewItem()
    option.rect = QRect(0, 0, 700, cut.height)
    option.palette = view.palette()

    def paint() -> None:
        painter = QPainter(image)
        view.delegate._paint(painter, option, model.row_at(0))
        painter.end()

    def coloured(doc: Any) -> int:
        block, found = doc.begin(), 0
        while block.isValid():
            if block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
                formats = block.layout().formats()
                found += len({r.format.foreground().color().name() for r in formats}) > 1
            block = block.next()
        return found

    in_view = [doc for doc, area in cut.docs if area.top() < view.viewport().height()]
    below = [doc for doc, area in cut.docs if area.top() > view.viewport().height()]
    assert len(in_view) > 1 and below
    paint()
    # A few code lines a paint, of one piece
    assert [coloured(doc) for doc in in_view] == [PAINT_CODE_LINES] + [0] * (len(in_view) - 1)
    paints = 1
    while view.delegate._colour_more.isActive():  # and another paint asked for until all are
        view.delegate._colour_more.stop()
        paint()
        paints += 1
        assert paints < 100
    assert paints > len(in_view)
    assert all(coloured(doc) > 0 for doc in in_view)  # every code block the person sees
    assert not view.delegate._colour_more.isActive()
    assert sum(coloured(doc) for doc in below) == 0  # the rest when it comes into view


def test_the_growing_piece_of_a_streaming_answer_is_coloured_once_it_is_closed(
    qtbot: Any,
) -> None:
    """Issue 17: colouring the live answer's growing last piece at every frame was a third of
    streaming's CPU; its code is coloured once more text closes the piece."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 600)
    piece = (
        "Some words about the parser.\n\n```python\ndef parse(lines):  # it\n    return 1\n```\n\n"
    )
    model.clear("s1")
    model.set_live_text(piece)
    ((growing, _),) = view.delegate.layout(model.row_at(0)).docs
    assert not has_plain_code(growing)  # nothing left to colour: it is left plain for now
    model.set_live_text(piece * 40)
    docs = [doc for doc, _ in view.delegate.layout(model.row_at(0)).docs]
    assert len(docs) > 1
    closed = docs[0]
    assert has_plain_code(closed) and not has_plain_code(docs[-1])  # closed: coloured...
    image = QImage(800, 1200, QImage.Format.Format_ARGB32)
    option = QStyleOptionViewItem()
    option.rect = QRect(0, 0, 700, 1000)
    option.palette = view.palette()
    for _ in range(10):  # ...when painted, a few lines a paint
        painter = QPainter(image)
        view.delegate._paint(painter, option, model.row_at(0))
        painter.end()
    block = closed.begin()
    while not block.blockFormat().hasProperty(QTextFormat.Property.BlockCodeFence):
        block = block.next()
    colours = {r.format.foreground().color().name() for r in block.layout().formats()}
    assert len(colours) > 1
    block = docs[-1].begin()
    while block.isValid() and not block.blockFormat().hasProperty(
        QTextFormat.Property.BlockCodeFence
    ):
        block = block.next()
    assert not block.isValid() or not block.layout().formats()  # still growing: plain


def numbered_answer(count: int) -> str:
    return "".join(
        f"Step {n} of the plan.\n\n```python\nvalue_{n} = parse(lines)\n```\n\n"
        for n in range(count)
    )


async def test_a_long_answer_is_laid_out_a_piece_at_a_time_between_frames(qtbot: Any) -> None:
    """Issue 17: a 64 KB answer's Markdown took ~250 ms of one frame when its session opened.
    Its pieces are rendered a few a frame (the loop runs between them), and the row's layout
    is then built from them without rendering anything again."""
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 600)
    row = build_rows([entry(1, EntryKind.ASSISTANT, numbered_answer(1200))])[0]
    turns = 0
    warming = True

    async def count_turns() -> None:
        nonlocal turns
        while warming:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.ensure_future(count_turns())
    await view.delegate.warm([row], budget_s=0.0)
    warming = False
    await counter
    pieces = view.delegate.pieces_rendered
    assert pieces > 20
    assert turns >= pieces - 1  # the loop ran between the pieces
    layout = view.delegate.layout(row)
    assert len(layout.docs) == pieces and view.delegate.pieces_rendered == pieces
    tops = [area.top() for _doc, area in layout.docs]
    assert tops == sorted(tops) and layout.height > tops[-1]  # stacked, in order


async def test_an_answer_that_finished_streaming_reuses_its_rendered_pieces(qtbot: Any) -> None:
    model = TranscriptModel(FakeHistory([]))
    view = TranscriptView(model)
    qtbot.addWidget(view)
    view.resize(700, 600)
    text = numbered_answer(300)
    model.clear("s1")
    model.set_live_text(text)
    streamed = view.delegate.layout(model.row_at(0)).docs
    model.append_entries((entry(1, EntryKind.ASSISTANT, text),))
    finished = view.delegate.layout(model.row_at(0))
    assert model.row_at(0).kind == RowKind.ASSISTANT
    closed = len(stream_segments(text)) - 1
    assert closed > 5 and len(finished.docs) == closed + 1
    # The closed pieces are the documents rendered while it streamed.
    assert [doc for doc, _ in finished.docs[:closed]] == [doc for doc, _ in streamed[:closed]]
    assert view.delegate.pieces_rendered == 1  # only the piece that was still growing


async def test_the_rows_shown_first_are_laid_out_before_they_are_inserted(qtbot: Any) -> None:
    """A session opening on a very long answer: its newest rows are prepared between frames,
    then inserted, so the first paint does not lay the answer out in one frame."""
    history = [entry(1, EntryKind.USER, "Write it out."), entry(2, EntryKind.ASSISTANT, "x" * 9000)]
    model = TranscriptModel(FakeHistory(history))
    prepared: list[tuple[int, int]] = []

    async def prepare(rows: list[Row]) -> None:
        prepared.append((len(rows), model.rowCount()))

    await model.load_latest("s1", prepare=prepare)
    assert prepared == [(2, 0)]  # both rows, before any was in the model
    assert model.rowCount() == 2


async def test_page_up_scrolls_a_long_answer_a_page_at_a_time(qtbot: Any) -> None:
    """Found walking a 2 MB answer under openbox: PageUp moved the current row, so from the
    answer it jumped to the question above it. It scrolls a page, as in a document, and the
    row at the top becomes current."""
    history = [
        entry(1, EntryKind.USER, "Write it all out."),
        entry(2, EntryKind.ASSISTANT, numbered_answer(150)),
    ]
    _model, view, bar = await shown_at_the_bottom(qtbot, history, (700, 500))
    assert bar.maximum() > 3 * bar.pageStep()
    view.setFocus(Qt.FocusReason.TabFocusReason)
    await until(view.hasFocus)
    assert view.currentIndex().row() == 1  # the answer, in view
    bottom = bar.value()
    QTest.keyClick(view, Qt.Key.Key_PageUp)
    assert bar.value() == bottom - bar.pageStep()  # one page up, still inside the answer
    assert view.currentIndex().row() == 1
    QTest.keyClick(view, Qt.Key.Key_PageDown)
    assert bar.value() == bottom
    bar.setValue(bar.pageStep() // 2)
    QTest.keyClick(view, Qt.Key.Key_PageUp)  # the top: the question is current
    assert bar.value() == 0 and view.currentIndex().row() == 0
