"""The whole-text window ("Show full output…", "Show the whole answer…"): a long text goes in
a piece a frame, so the window behind it keeps painting, and arrives whole."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QPlainTextEdit

from fxdesk.gui.transcript.full_text import PIECE_CHARS, FullTextWindow
from tests.gui.waiting import until


def make(qtbot: Any, text: str, *, wrap: bool = False) -> FullTextWindow:
    window = FullTextWindow("search output", "Full output of search", text, wrap=wrap)
    qtbot.addWidget(window)
    window.show()
    return window


async def test_a_long_output_arrives_whole_a_piece_at_a_time(qtbot: Any) -> None:
    text = "".join(f"src/module{n}.py:{n}: def handler_{n}(request):\n" for n in range(50_000))
    window = make(qtbot, text)
    assert not window.complete  # the first piece only, the rest between frames
    first = window.text.toPlainText()
    assert 0 < len(first) <= PIECE_CHARS and text.startswith(first) and first.endswith("\n")
    assert window.summary.text() == "Full output of search · loading…"
    window.copy_button.click()  # Copy takes the whole, loaded or not
    assert QGuiApplication.clipboard().text() == text
    await until(lambda: window.complete, within=60)
    assert window.text.toPlainText() == text
    assert window.summary.text() == "Full output of search"
    assert window.text.textCursor().position() == 0  # read from the top
    assert window.text.verticalScrollBar().value() == 0
    assert window.text.lineWrapMode() == QPlainTextEdit.LineWrapMode.NoWrap


async def test_one_huge_line_is_cut_into_pieces_all_the_same(qtbot: Any) -> None:
    text = "x" * (3 * PIECE_CHARS + 5)
    window = make(qtbot, text, wrap=True)
    assert len(window.text.toPlainText()) == PIECE_CHARS
    await until(lambda: window.complete, within=60)
    assert window.text.toPlainText() == text


def test_a_short_text_is_whole_at_once(qtbot: Any) -> None:
    window = make(qtbot, "ok\n")
    assert window.complete and window.summary.text() == "Full output of search"
    assert window.focusWidget() is window.text  # the keys scroll the text
    assert window.text.accessibleName() == "search output"
