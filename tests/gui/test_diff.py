"""The one diff colourer: the approval preview and an ``edit_file`` tool card colour a diff the
same way, with the theme's roles for a light or a dark window."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from PySide6.QtGui import QFont, QTextBlock, QTextCursor, QTextDocument, QTextFormat
from pytestqt.qtbot import QtBot

from fxdesk.gui.approvals.code_box import DiffView
from fxdesk.gui.diff import color_diff
from fxdesk.gui.theme import Role, color
from fxdesk.gui.transcript.model import Row, RowKind, TranscriptModel
from fxdesk.gui.transcript.view import TranscriptView
from tests.gui.approvals.test_approvals import DIFF

FOREGROUND = QTextFormat.Property.ForegroundBrush
BACKGROUND = QTextFormat.Property.BackgroundBrush


def blocks(document: QTextDocument) -> Iterator[QTextBlock]:
    block = document.begin()
    while block.isValid():
        yield block
        block = block.next()


def looks(document: QTextDocument) -> dict[str, tuple[str, str, bool]]:
    """Per diff line: (text colour or "", line background or "", bold)."""
    found = {}
    for block in blocks(document):
        text = block.text()
        if text[:1] not in ("+", "-", "@"):
            continue
        cursor = QTextCursor(block)
        cursor.setPosition(block.position() + 1)  # the format of the line's first character
        char = cursor.charFormat()
        line = block.blockFormat()
        found[text] = (
            char.foreground().color().name() if char.hasProperty(FOREGROUND) else "",
            line.background().color().name() if line.hasProperty(BACKGROUND) else "",
            char.fontWeight() == QFont.Weight.Bold,
        )
    return found


def test_color_diff_gives_lines_their_roles(qapp: object) -> None:
    for dark in (False, True):
        document = QTextDocument()
        document.setPlainText("note: not a diff line\n" + DIFF)
        color_diff(document, dark=dark)
        seen = looks(document)
        assert seen["+DEBUG = False"] == (
            color(Role.DIFF_ADDED, dark=dark).name(),
            color(Role.DIFF_ADDED_BACKGROUND, dark=dark).name(),
            False,
        )
        assert seen["-DEBUG = True"] == (
            color(Role.DIFF_REMOVED, dark=dark).name(),
            color(Role.DIFF_REMOVED_BACKGROUND, dark=dark).name(),
            False,
        )
        assert seen["@@ -1,3 +1,3 @@"] == (color(Role.DIFF_HUNK, dark=dark).name(), "", False)
        assert seen["+++ b/app.py"] == ("", "", True)
        assert seen["--- a/app.py"] == ("", "", True)
        first = document.begin()
        assert (
            first.text().startswith("note") and not first.blockFormat().background().style().value
        )


async def test_a_tool_card_and_the_approval_preview_colour_a_diff_alike(
    qtbot: QtBot, qapp: object
) -> None:
    async def no_history(*_args: object) -> list[Any]:
        return []

    view = TranscriptView(TranscriptModel(no_history))
    preview = DiffView("Proposed change")
    qtbot.addWidget(view)
    qtbot.addWidget(preview)
    card = Row("t", RowKind.TOOL, tool="edit_file", arguments="{}", output=DIFF, ok=True)
    document = view.delegate.layout(Row(**{**card.__dict__, "expanded": True})).docs[0][0]
    preview.set_diff(DIFF)
    in_card, in_preview = looks(document), looks(preview.document())
    assert in_card == in_preview and len(in_card) == 5
