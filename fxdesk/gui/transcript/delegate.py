"""Paints the transcript's rows: user messages, Markdown answers, tool cards, notices and turn
footers.

Each row is laid out once per width and light/dark into documents and hotspots (the buttons a
click can hit); layouts of the rows in view and heights of every row are cached. The streaming
answer is rendered in closed pieces plus a growing tail (``markdown.stream_segments``), and the
growing piece in closed paragraphs plus the newest one: each frame renders only that one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    QTimer,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QMouseEvent,
    QPainter,
    QPalette,
    QRegion,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
)

from fxdesk.domain.usage import money
from fxdesk.gui.diff import color_diff
from fxdesk.gui.theme import Role, color, is_dark
from fxdesk.gui.transcript import images
from fxdesk.gui.transcript.markdown import (
    SEGMENT_CHARS,
    CodeBlock,
    code_blocks,
    has_plain_code,
    highlight_code,
    plain,
    render,
    skip_colouring,
    stream_segments,
)
from fxdesk.gui.transcript.model import (
    ROLE_ROW,
    Row,
    RowKind,
    ToolState,
    TranscriptModel,
    tool_state,
)
from fxdesk.gui.widgets import monospace

log = logging.getLogger(__name__)

Trigger = Callable[[int, str, object], None]
"""Does a row's action: (row, action, payload)."""

AnyIndex = QModelIndex | QPersistentModelIndex
MARGIN, PAD, GAP = 14, 8, 6
MAX_WIDTH = 980  # a column people can read on a wide screen; it stays centred in the view
PREVIEW_LINES = 40
# Of a longer answer the transcript renders this much (to a paragraph break) and offers the
# whole text in a window: Qt's Markdown reader and layout take ~5 ms a KB on the Qt thread, so a
# 2 MB answer would freeze the window for ~15 s when shown (issue 17, bench.transcript_big).
ANSWER_SHOWN = 64 * 1024
# A message longer than this is rendered as a stack of pieces (``markdown.stream_segments``,
# as the streaming answer is), each its own document: ``warm`` renders them a few a frame
# before the row is shown, so a 64 KB answer (~250 ms of Markdown and layout) never holds the
# Qt thread for one frame; an answer that just finished streaming reuses its closed pieces.
PIECED_FROM = 4 * SEGMENT_CHARS
PIECE_CACHE = 256  # rendered pieces of long messages (a 64 KB answer has ~45)
LAYOUT_CACHE = 400  # laid-out rows kept for painting
# ... and no more than this many characters of the documents they alone hold: a laid-out
# Markdown document takes ~80 bytes a character of native memory (Qt keeps each block's shaped
# glyphs; a 4 KB answer ~350 KB), so 400 rows of 4 KB answers held ~135 MB (issue 17: the
# streaming soak's RSS grew with the shown session's loaded rows). ~13 MB of Markdown, many
# screens full; a row evicted keeps its cached height and is rendered again when painted.
LAYOUT_CACHE_CHARS = 160_000
HEIGHT_CACHE = 50_000  # row heights kept for layout passes (at one width)
HEIGHT_WIDTHS = 4  # widths whose row heights are kept (a window resized back and forth)
SEGMENT_CACHE = 64  # rendered pieces of the streaming answer
# The streaming answer's growing piece (up to ~SEGMENT_CHARS) is itself cut, at paragraph
# breaks, into parts of about this size: a closed part is rendered once, and each frame renders
# only the newest part, not the whole growing piece (issue 17: the growing piece's Markdown and
# layout were most of the Qt thread's work per frame while 20 sessions streamed).
LIVE_PART_CHARS = 240
# Code lines coloured by one paint (pygments: ~1 ms a line on the Qt thread); the next paint,
# asked for at once, goes on. A closed piece of a streaming answer coloured whole when it
# closed held the Qt thread for 25-45 ms while 20 sessions streamed (issue 17).
PAINT_CODE_LINES = 6

# A rendered piece of the streaming answer is closed (more text never changes it: its code is
# coloured), or a part of the growing piece (plain: the newest part, rendered anew each frame,
# is the same document once more text closes it).
_CLOSED, _PLAIN = "closed", "plain"

STATUS_MARK = {
    ToolState.RUNNING: "◌",
    ToolState.WAITING: "…",
    ToolState.SUCCEEDED: "✓",
    ToolState.FAILED: "✗",
    ToolState.DENIED: "⊘",
    ToolState.STOPPED: "■",
    ToolState.NOT_RUN: "–",
    ToolState.INTERRUPTED: "?",
}
STATUS_ROLE = {
    ToolState.RUNNING: Role.TOOL_RUNNING,
    ToolState.WAITING: Role.NOTICE_INTERRUPTED,
    ToolState.SUCCEEDED: Role.TOOL_OK,
    ToolState.FAILED: Role.TOOL_FAILED,
    ToolState.DENIED: Role.QUIET_TEXT,
    ToolState.STOPPED: Role.QUIET_TEXT,
    ToolState.NOT_RUN: Role.QUIET_TEXT,
    ToolState.INTERRUPTED: Role.NOTICE_INTERRUPTED,
}
NOTICE_ROLES = {  # notice level -> (the bar on its left edge, its background)
    "failed": (Role.NOTICE_FAILED, Role.NOTICE_FAILED_BACKGROUND),
    "interrupted": (Role.NOTICE_INTERRUPTED, Role.NOTICE_INTERRUPTED_BACKGROUND),
    "": (Role.NOTICE_OTHER, Role.NOTICE_OTHER_BACKGROUND),
}


@dataclass
class _Layout:
    height: int
    docs: list[tuple[QTextDocument, QRectF]] = field(default_factory=list)
    hotspots: list[tuple[QRect, str, object]] = field(default_factory=list)
    header: str = ""
    footer: str = ""
    thumbs: list[tuple[QRect, dict[str, Any]]] = field(default_factory=list)  # images.py
    chars: int = 0  # characters of the documents only this layout holds (LAYOUT_CACHE_CHARS)


@dataclass(frozen=True)
class _Piece:
    """A rendered piece of a message, with what stacking it and its Copy buttons need."""

    doc: QTextDocument
    top: float  # where its first block starts in it
    top_margin: float  # that block's top margin
    bottom: float  # where its last block ends
    bottom_margin: float  # that block's bottom margin
    code: list[CodeBlock]


def _piece(doc: QTextDocument) -> _Piece:
    layout = doc.documentLayout()
    first, last = doc.begin(), doc.lastBlock()
    return _Piece(
        doc,
        layout.blockBoundingRect(first).top(),
        first.blockFormat().topMargin(),
        layout.blockBoundingRect(last).bottom(),
        last.blockFormat().bottomMargin(),
        code_blocks(doc),
    )


def first_change(before: _Layout, after: _Layout) -> int:
    """Where (the top, in the row) ``after`` starts to differ from ``before``: the top of the
    first document that is not the same one at the same place, else the end of the last."""
    for (old, old_area), (new, new_area) in zip(before.docs, after.docs, strict=False):
        if old is not new or old_area != new_area:
            return int(min(old_area.top(), new_area.top()))
    shared = min(len(before.docs), len(after.docs))
    if shared == 0:
        return 0
    return int(after.docs[shared - 1][1].bottom())


def stack(pieces: Sequence[_Piece], left: float, top: float, width: float) -> list[QRectF]:
    """Where each piece goes, one under another from ``top``, spaced as their paragraphs are in
    one document: the margins of the blocks either side of a cut collapse to the larger one.
    So a text laid out in pieces is as tall as in one document, and cutting it somewhere else
    (a streaming answer's part joining its piece) moves nothing."""
    rects: list[QRectF] = []
    y = top
    for number, piece in enumerate(pieces):
        if number:
            before = pieces[number - 1]
            spacing = max(before.bottom_margin, piece.top_margin)
            y += before.bottom + spacing - piece.top
        rects.append(QRectF(left, y, width, piece.doc.size().height()))
    return rects


class TranscriptDelegate(QStyledItemDelegate):
    """Paints user messages, Markdown answers, tool cards, notices and turn footers.

    Args:
        view: the list it paints for (its width, font and palette).
        trigger: what a click on a row's button does: ``(row, action, payload)``.
    """

    def __init__(self, view: QListView, trigger: Trigger) -> None:
        super().__init__(view)
        self._view = view
        self._trigger = trigger
        # Laid-out documents for painting (rows in view); heights for every row the view lays
        # out, which it does for all loaded rows whenever rows are inserted: by width, then by
        # the row. No object per row (a (row, width) key or a (row, size) tuple each): with
        # 10,000 rows those were ~22,000 more objects for each garbage collection to walk.
        self._cache: OrderedDict[tuple[object, ...], _Layout] = OrderedDict()
        self._cache_chars = 0  # the sum of the cached layouts' ``chars``
        self._heights: OrderedDict[int, OrderedDict[Row, int]] = OrderedDict()
        # The same heights by the row object itself: the view asks for every loaded row's size
        # on each insert (10,000 rows: 10,000 calls), and hashing a row costs more than this.
        # The row is kept in ``_by_id`` so that its id is not reused while its height is here.
        self._by_id: dict[int, Row] = {}
        self._height_by_id: dict[int, int] = {}
        self._by_id_width: int | None = None  # the width of the heights in _height_by_id
        self._width_now: int | None = None  # the viewport's, until the next resize
        self.layouts_built = 0
        # The streaming row changes every frame: one slot for its layout, and its closed
        # segments rendered once each (see markdown.stream_segments).
        self._live: tuple[tuple[object, ...], _Layout] | None = None
        self._segments: OrderedDict[tuple[object, ...], _Piece] = OrderedDict()
        self._pieces: OrderedDict[tuple[object, ...], _Piece] = OrderedDict()
        self.covered: str | None = None  # the row whose text the selection box shows instead
        self.exposed: QRegion | None = None  # the viewport's part being painted (a paint event)
        self.highlighted: str | None = None  # a message a search opened (for a moment)
        self.segments_rendered = 0
        self.pieces_rendered = 0
        self.thumbnails: images.Thumbnails | None = None  # attached images' (the controller's)
        self._colour_more = QTimer(self)  # a paint left code in view uncoloured: paint again
        self._colour_more.setSingleShot(True)
        self._colour_more.setInterval(0)
        self._colour_more.timeout.connect(self._on_colour_more_timeout)

    def _on_colour_more_timeout(self) -> None:
        self._view.viewport().update()

    def clear(self) -> None:
        self._cache.clear()
        self._cache_chars = 0
        self._heights.clear()
        self._by_id.clear()
        self._height_by_id.clear()
        self._width_now = None
        self._live = None
        self._segments.clear()
        self._pieces.clear()

    def height(self, row: Row, width: int | None = None) -> int:
        """The row's height at the view's width (``width``, if the caller has it already: the
        view asks for every loaded row's size whenever rows are inserted)."""
        if row.kind == RowKind.LIVE:
            return self.layout(row).height
        if width is None:
            width = self._width()
        heights = self._heights.get(width)
        if heights is None:
            heights = self._heights[width] = OrderedDict()
            while len(self._heights) > HEIGHT_WIDTHS:
                self._heights.popitem(last=False)
        height = heights.get(row)
        if height is None:
            height = heights[row] = self.layout(row).height
            while len(heights) > HEIGHT_CACHE:
                heights.popitem(last=False)
        return height

    def _width(self) -> int:
        if self._width_now is None:
            viewport = self._view.viewport().width()
            if not self._view.verticalScrollBar().isVisible():
                # As wide as with the scroll bar: rows are not laid out again when it appears
                # (a session opening on a long answer rendered it twice, ~200 ms each).
                style = self._view.style()
                viewport -= style.pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
            self._width_now = min(max(viewport - 2 * MARGIN, 120), MAX_WIDTH)
        return self._width_now

    def forget_width(self) -> bool:
        """The viewport changed size: rows are laid out at the new width from now on. True
        when that width is another one (what was laid out must be laid out again)."""
        before, self._width_now = self._width_now, None
        return before is None or self._width() != before

    def _quick_size(self, row: Row) -> QSize:
        width = self._width()
        if width != self._by_id_width:
            self._by_id.clear()
            self._height_by_id.clear()
            self._by_id_width = width
        ident = id(row)
        if self._by_id.get(ident) is row:
            return QSize(width, self._height_by_id[ident])
        height = self.height(row, width)
        if row.kind != RowKind.LIVE:
            self._by_id[ident] = row
            self._height_by_id[ident] = height
            if len(self._by_id) > HEIGHT_CACHE:
                oldest = next(iter(self._by_id))
                del self._by_id[oldest], self._height_by_id[oldest]
        return QSize(width, height)

    async def warm(self, rows: Sequence[Row], budget_s: float = 0.008) -> None:
        """Lay out rows about to be inserted, a few between frames, so that inserting them
        costs the view only their cached heights (a page of 150 answers takes ~150 ms to lay
        out: in one go, that is a visible stall)."""
        width = self._width()
        began = time.perf_counter()
        for row in rows:
            for piece in self._pieces_of(row):  # a long message: its pieces a few a frame
                self._piece_doc(piece, self._inner(row, width))
                if time.perf_counter() - began > budget_s:
                    await asyncio.sleep(0)
                    width = self._width()
                    began = time.perf_counter()
            self.height(row, width)
            if time.perf_counter() - began > budget_s:
                await asyncio.sleep(0)  # the Qt loop paints and takes input meanwhile
                width = self._width()
                began = time.perf_counter()

    @staticmethod
    def _pieces_of(row: Row) -> list[str]:
        """A long message's shown text in pieces; [] for any other row."""
        if row.kind not in (RowKind.USER, RowKind.ASSISTANT) or len(row.text) <= PIECED_FROM:
            return []
        return stream_segments(shown_part(row.text))

    @staticmethod
    def _inner(row: Row, width: int) -> int:
        return width - (2 * PAD if row.kind == RowKind.USER else 0)

    def _piece_doc(self, piece: str, width: int) -> _Piece:
        """One piece of a long message, rendered once (uncoloured: ``_paint`` colours the
        pieces it draws), or the same piece already rendered while it streamed."""
        dark = is_dark(self._view.palette())
        streamed = self._segments.get((piece, width, dark, _CLOSED))
        if streamed is not None:
            return streamed
        key = (piece, width, dark)
        found = self._pieces.get(key)
        if found is not None:
            self._pieces.move_to_end(key)
            return found
        found = self._pieces[key] = _piece(
            render(piece, width, dark=dark, font=self._view.font(), highlight=False)
        )
        self.pieces_rendered += 1
        while len(self._pieces) > PIECE_CACHE:
            self._pieces.popitem(last=False)
        return found

    def left(self) -> int:
        """Where rows start: the margin, or more to centre the column on a wide screen."""
        return max(MARGIN, (self._view.viewport().width() - self._width()) // 2)

    def layout(self, row: Row) -> _Layout:
        width = self._width()
        dark = is_dark(self._view.palette())
        key = (row, width, dark)
        if row.kind == RowKind.LIVE:
            if self._live is None or self._live[0] != key:
                self._live = (key, self._build_live(row, width, dark))
                self.layouts_built += 1
            return self._live[1]
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        built = self._build(row, width, dark)
        self.layouts_built += 1
        self._cache[key] = built
        self._cache_chars += built.chars
        while len(self._cache) > 1 and (
            len(self._cache) > LAYOUT_CACHE or self._cache_chars > LAYOUT_CACHE_CHARS
        ):
            self._cache_chars -= self._cache.popitem(last=False)[1].chars
        return built

    def live_layout(self) -> _Layout | None:
        """The streaming row's layout as last built (before the model's newest text)."""
        return self._live[1] if self._live is not None else None

    def _build_live(self, row: Row, width: int, dark: bool) -> _Layout:
        """The streaming answer as a stack of documents: its closed pieces (``stream_segments``),
        then the growing piece's closed parts and its newest part. Only the newest part is
        rendered anew each frame, and a part or piece once, when it closes."""
        font = self._view.font()
        small = QFontMetrics(font).height()
        layout = _Layout(0, footer="streaming…")
        segments = stream_segments(row.text or " ")
        parts = stream_segments(segments[-1], LIVE_PART_CHARS)
        wanted = [(segment, _CLOSED) for segment in segments[:-1]]
        wanted += [(part, _PLAIN) for part in parts]
        pieces = []
        for text, state in wanted:
            key = (text, width, dark, state)
            found = self._segments.get(key)
            if found is None:
                # A closed piece's code is coloured when painted, a few lines a paint; the
                # growing piece's shows plain until the piece is closed (pygments on it each
                # frame was a third of streaming's cost).
                doc = render(text, width, dark=dark, font=font, highlight=False)
                if state != _CLOSED:
                    skip_colouring(doc)
                self.segments_rendered += 1
                found = self._segments[key] = _piece(doc)
                while len(self._segments) > SEGMENT_CACHE:
                    self._segments.popitem(last=False)
            else:
                self._segments.move_to_end(key)
            pieces.append(found)
        rects = stack(pieces, 0, 0, width)
        for piece, rect in zip(pieces, rects, strict=True):
            layout.docs.append((piece.doc, rect))
            for block in piece.code:
                button = QRect(
                    int(block.rect.right()) - 52,
                    int(rect.top() + block.rect.top()) + 2,
                    48,
                    small + 2,
                )
                layout.hotspots.append((button, "copy", block.text))
        layout.height = int(rects[-1].bottom()) + GAP + small + 6
        return layout

    def _build(self, row: Row, width: int, dark: bool) -> _Layout:
        font = self._view.font()
        small = QFontMetrics(font).height()
        if row.kind in (RowKind.USER, RowKind.ASSISTANT):
            inner = self._inner(row, width)
            shown = shown_part(row.text)
            pieces = self._pieces_of(row)
            # Uncoloured: most rows are built only for their height; _paint colours them.
            rendered = (
                [self._piece_doc(piece, inner) for piece in pieces]
                if pieces
                else [_piece(render(shown or " ", inner, dark=dark, font=font, highlight=False))]
            )
            top = small + 4 if row.kind == RowKind.USER else 0
            left = PAD if row.kind == RowKind.USER else 0
            y = float(top + (PAD if row.kind == RowKind.USER else 0))
            areas = stack(rendered, left, y, inner)
            placed = [(piece.doc, area) for piece, area in zip(rendered, areas, strict=True)]
            rect = QRectF(left, areas[0].top(), inner, areas[-1].bottom() - areas[0].top())
            layout = _Layout(
                int(rect.bottom() + (PAD if row.kind == RowKind.USER else 0)) + GAP,
                placed,
                chars=0 if pieces else len(shown),  # the pieces are PIECE_CACHE's
            )
            below = int(rect.bottom())
            layout.thumbs = images.thumb_rects(row.data, PAD, below + GAP, inner)
            layout.height += images.strip_height(layout.thumbs, below)
            said = f" · {clock_text(row.at_ms)}" if row.at_ms else ""
            layout.header = (
                ("You (steering the running turn)" if row.steer else "You") + said
                if (row.kind == RowKind.USER)
                else ""
            )
            for piece, area in zip(rendered, areas, strict=True):
                for block in piece.code:
                    button = QRect(
                        int(area.left() + block.rect.right()) - 52,
                        int(area.top() + block.rect.top()) + 2,
                        48,
                        small + 2,
                    )
                    layout.hotspots.append((button, "copy", block.text))
            if len(shown) < len(row.text):  # the rest behind a link, right under the text
                link = QRect(0, layout.height - GAP, 200, small + 4)
                layout.hotspots.append((link, "full_output", row))
                layout.height += small + 6
            if row.kind == RowKind.ASSISTANT and row.data.get("partial"):
                layout.footer = PARTIAL_MARK  # the answer was cut off where it stops
                layout.height += small + 4
            return layout
        if row.kind == RowKind.TOOL:
            return self._tool(row, width, small, dark)
        if row.kind == RowKind.NOTICE:
            doc = plain(f"{row.level.capitalize()}: {row.text}", width - 120, font=font)
            height = int(doc.size().height()) + 2 * PAD
            layout = _Layout(
                height + GAP,
                [(doc, QRectF(PAD + 4, PAD, width - 120, doc.size().height()))],
                chars=len(row.text),
            )
            if row.action:
                layout.hotspots.append(
                    (QRect(width - 100, PAD, 96, small + 8), row.action, row.work_id)
                )
            if row.action2:  # under the first: the notice's text keeps its width
                layout.hotspots.append(
                    (QRect(width - 100, PAD + small + 14, 96, small + 8), row.action2, row.work_id)
                )
                layout.height = max(layout.height, PAD + 2 * (small + 14) + GAP)
            return layout
        return _Layout(small + GAP, footer=_turn_summary(row))

    def _tool(self, row: Row, width: int, small: int, dark: bool) -> _Layout:
        header_h = small + 2 * PAD
        layout = _Layout(header_h + GAP)
        layout.hotspots.append((QRect(0, 0, width, header_h), "toggle", None))
        if not row.expanded:
            return layout
        mono = monospace()
        body = _tool_body(row)
        lines = body.splitlines()
        shown = "\n".join(lines[:PREVIEW_LINES])
        doc = plain(shown, width - 2 * PAD, font=mono)
        if (row.tool == "edit_file" and row.ok) or row.data.get("diff"):  # an agent's edit too
            color_diff(doc, dark=dark)
        rect = QRectF(PAD, header_h, width - 2 * PAD, doc.size().height())
        layout.docs.append((doc, rect))
        layout.chars = len(shown)
        bottom = int(rect.bottom()) + PAD
        more = len(lines) > PREVIEW_LINES or bool(row.full_output)
        links = QRect(PAD, bottom, 150, small + 4)
        layout.hotspots.append((links, "arguments", None))
        if more:
            layout.hotspots.append(
                (links.translated(160, 0).adjusted(0, 0, 50, 0), "full_output", row)
            )
        bottom += small + 6
        layout.height = bottom + GAP
        return layout

    # --- Qt --------------------------------------------------------------------------------

    # An exception escaping a Python override called from C++ takes the whole process down
    # with PySide6 6.11, so the two hot overrides log and fall back instead of raising.

    def sizeHint(self, option: QStyleOptionViewItem, index: AnyIndex) -> QSize:
        model = self._view.model()
        row = model.row_at(index.row()) if isinstance(model, TranscriptModel) else None
        if row is None:
            return QSize(0, 0)
        try:
            return self._quick_size(row)
        except Exception:
            log.exception("could not lay out transcript row %s", row.key)
            return QSize(self._width(), QFontMetrics(self._view.font()).height() + GAP)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: AnyIndex) -> None:
        row = index.data(ROLE_ROW)
        if not isinstance(row, Row):
            return
        try:
            self._paint(painter, option, row)
        except Exception:
            log.exception("could not paint transcript row %s", row.key)

    def _paint(self, painter: QPainter, option: QStyleOptionViewItem, row: Row) -> None:
        layout = self.layout(row)
        palette = option.palette
        dark = is_dark(palette)
        origin = option.rect.topLeft() + QPoint(self.left(), 0)
        width = self._width()
        painter.save()
        painter.translate(origin)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        card = QRectF(0, 0, width, layout.height - GAP)
        text_color = palette.color(QPalette.ColorRole.Text)
        muted = palette.color(QPalette.ColorRole.PlaceholderText)
        if row.kind == RowKind.USER:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color(Role.USER_MESSAGE_BACKGROUND, dark=dark))
            painter.drawRoundedRect(card, 8, 8)
            painter.setPen(muted)
            bold = QFont(option.font)
            bold.setBold(True)
            painter.setFont(bold)
            painter.drawText(QRectF(PAD, 4, width - 2 * PAD, 20), layout.header)
        elif row.kind == RowKind.TOOL:
            self._paint_tool(painter, row, card, palette, dark)
        elif row.kind == RowKind.NOTICE:
            accent, background = NOTICE_ROLES.get(row.level, NOTICE_ROLES[""])
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color(background, dark=dark))
            painter.drawRoundedRect(card, 6, 6)
            painter.setBrush(color(accent, dark=dark))
            painter.drawRect(QRectF(0, 0, 4, card.height()))
        elif row.kind == RowKind.TURN:
            painter.setPen(muted)
            painter.drawText(
                card,
                int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
                layout.footer,
            )
        if row.key == self.highlighted:
            highlight = QColor(palette.color(QPalette.ColorRole.Highlight))
            painter.setPen(highlight)
            highlight.setAlpha(40)
            painter.setBrush(highlight)
            painter.drawRoundedRect(card.adjusted(-4, -3, 4, 3), 6, 6)
            painter.setBrush(Qt.BrushStyle.NoBrush)
        covered = row.key == self.covered  # its text is in the selection box above it
        # Only what the viewport shows of each document is drawn: a long answer's whole
        # document took ~230 ms a frame while it was scrolled (issue 17, bench.transcript_big).
        # And of that, the part being painted: a push of the live answer repaints its newest
        # lines, not every document in view.
        viewport = QRectF(self._view.viewport().rect())
        exposed = self.exposed
        partial = exposed is not None and not exposed.contains(viewport.toAlignedRect())
        coloured = False
        for doc, area in [] if covered else layout.docs:
            placed = area.translated(QPointF(origin))  # the document, in the viewport
            visible = viewport & placed
            if exposed is not None and not visible.isEmpty():
                visible &= QRectF(exposed.intersected(visible.toAlignedRect()).boundingRect())
            if visible.isEmpty():
                continue
            painter.save()
            painter.translate(area.topLeft())
            # Code is coloured when it first comes into view, not when laid out, and a few
            # lines a paint (pygments: ~1 ms a code line): the rest a frame later each. Lines
            # coloured outside the part painted are painted by the frame after, too.
            if has_plain_code(doc):
                if not coloured:
                    highlight_code(doc, dark, PAINT_CODE_LINES)
                    coloured = True
                if partial or has_plain_code(doc):
                    self._colour_more.start()
            doc.drawContents(painter, visible.translated(-placed.topLeft()))
            painter.restore()
        images.paint_thumbs(painter, layout.thumbs, self.thumbnails, palette)
        if option.state & QStyle.StateFlag.State_HasFocus and self._view.hasFocus():
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(card.adjusted(-2, -2, 2, 2), 6, 6)
        if row.kind in (RowKind.LIVE, RowKind.ASSISTANT) and layout.footer:
            painter.setPen(muted)
            painter.drawText(QRectF(0, layout.height - GAP - 18, width, 18), layout.footer)
        for rect, action, _payload in [] if covered else layout.hotspots:
            label = {
                "copy": "Copy",
                "retry": "Retry",
                "resume": "Resume",
                "edit_profile": "Edit profile…",
                "full_output": "Show full output…" if row.tool else "Show the whole answer…",
                "arguments": "Hide arguments" if row.arguments_shown else "Show arguments",
            }.get(action)
            if label is None:
                continue
            painter.setPen(palette.color(QPalette.ColorRole.Link))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            if action in ("retry", "resume", "edit_profile"):
                painter.setPen(text_color)
                painter.setBrush(palette.color(QPalette.ColorRole.Button))
                painter.drawRoundedRect(QRectF(rect), 4, 4)
            links = action in ("arguments", "full_output")  # text links line up with the text
            align = Qt.AlignmentFlag.AlignLeft if links else Qt.AlignmentFlag.AlignHCenter
            painter.drawText(QRectF(rect), int(align | Qt.AlignmentFlag.AlignVCenter), label)
        painter.restore()

    def _paint_tool(
        self, painter: QPainter, row: Row, card: QRectF, palette: QPalette, dark: bool
    ) -> None:
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(color(Role.TOOL_CARD_BACKGROUND, dark=dark))
        painter.drawRoundedRect(card, 6, 6)
        metrics = QFontMetrics(painter.font())
        height = metrics.height() + 2 * PAD
        state = tool_state(row)
        mark = STATUS_MARK[state]
        painter.setPen(color(STATUS_ROLE[state], dark=dark))
        painter.drawText(QRectF(PAD, 0, 20, height), int(Qt.AlignmentFlag.AlignVCenter), mark)
        painter.setPen(palette.color(QPalette.ColorRole.Text))
        bold = QFont(painter.font())
        bold.setBold(True)
        painter.setFont(bold)
        arrow = "▾" if row.expanded else "▸"
        name = f"{arrow} {TOOL_TITLES.get(row.tool, row.tool)}"
        painter.drawText(QRectF(PAD + 20, 0, 200, height), int(Qt.AlignmentFlag.AlignVCenter), name)
        name_width = QFontMetrics(bold).horizontalAdvance(name) + 12
        painter.setFont(QFont(painter.font().family(), painter.font().pointSize()))
        right = card_words(row)
        right_width = metrics.horizontalAdvance(right) + PAD
        summary = metrics.elidedText(
            _summary(row),
            Qt.TextElideMode.ElideRight,
            int(card.width() - PAD - 20 - name_width - right_width - 8),
        )
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(
            QRectF(PAD + 20 + name_width, 0, card.width(), height),
            int(Qt.AlignmentFlag.AlignVCenter),
            summary,
        )
        painter.drawText(
            QRectF(0, 0, card.width() - PAD, height),
            int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight),
            right,
        )

    def editorEvent(
        self, event: QEvent, model: object, option: QStyleOptionViewItem, index: AnyIndex
    ) -> bool:
        if event.type() != QEvent.Type.MouseButtonRelease or not isinstance(event, QMouseEvent):
            return False
        row = index.data(ROLE_ROW)
        if not isinstance(row, Row):
            return False
        local = event.position().toPoint() - option.rect.topLeft() - QPoint(self.left(), 0)
        for rect, action, payload in self.layout(row).hotspots:
            if rect.contains(local):
                self._trigger(index.row(), action, payload)
                return True
        return False


# What a card's header says a call did, in a word; its target follows (``_summary``).
TOOL_TITLES = {
    "run_command": "Run",
    "start_background": "Start in background",
    "list_background": "Background tasks",
    "read_background_log": "Read background log",
    "stop_background": "Stop background task",
    "edit_file": "Edit",
    "write_file": "Write",
    "read_file": "Read",
    "list_dir": "List",
    "glob": "Find files",
    "grep": "Search",
    "echo": "Echo",
    "delegate": "Hand work to sub-agents",
    "spawn_agent": "Start a sub-agent",
    "send_to_agent": "Message a sub-agent",
    "wait_for_agent": "Wait for a sub-agent",
    "close_agent": "Close a sub-agent",
    "list_agents": "Sub-agents",
    "emit_signal": "Signal",
    "list_runs": "Sub-agent runs",
    "cancel_run": "Cancel a sub-agent run",
}
COMMAND_TOOLS = ("run_command", "start_background")
LIVE_LINES = 40  # of a running command's output, in its open card
PARTIAL_MARK = "■ Cut off here: the turn was cancelled while this answer was arriving"


def shown_part(text: str) -> str:
    """What the transcript renders of a message: all of it, or of a longer one than
    ``ANSWER_SHOWN`` its start up to a paragraph break."""
    if len(text) <= ANSWER_SHOWN:
        return text
    head = text[:ANSWER_SHOWN]
    cut = head.rfind("\n\n")
    return head[:cut] if cut > ANSWER_SHOWN // 2 else head


def _tool_body(row: Row) -> str:
    """An open card: a command as typed at a prompt (``$ npm test``) then its output; an edit
    as its diff; other calls their result. The raw arguments only when asked for."""
    values = _arguments(row)
    parts = []
    if row.arguments_shown:
        try:
            parts.append(
                json.dumps(json.loads(row.arguments or "{}"), indent=2, ensure_ascii=False)
            )
        except json.JSONDecodeError:
            parts.append(row.arguments)
    if row.tool in COMMAND_TOOLS and isinstance(values, dict) and "command" in values:
        parts.append(f"$ {values['command']}")
    state = tool_state(row)
    if state in (ToolState.RUNNING, ToolState.WAITING, ToolState.STOPPED) and row.ok is None:
        if row.live_output:  # the last lines it printed so far
            lines = row.live_output.splitlines()[-LIVE_LINES:]
            parts.append("\n".join(lines))
        if state is not ToolState.RUNNING:  # a running card says so (and for how long) above
            parts.append(f"({card_words(row)})")
    elif row.output:
        parts.append(row.output)
    if row.answered:  # who answered its approval, how and when
        parts.append(f"— {row.answered}")
    return "\n\n".join(parts)


def _arguments(row: Row) -> object:
    try:
        return json.loads(row.arguments or "{}")
    except json.JSONDecodeError:
        return row.arguments


def _summary(row: Row) -> str:
    """The call's target after its title: ``$ npm test``, a path, a pattern; for sub-agents
    who was given what (``explorer: find the parser · general: write tests``)."""
    values = _arguments(row)
    if isinstance(values, dict) and isinstance(values.get("requests"), list):
        asked = [
            f"{r.get('agent', '?')}: {' '.join(str(r.get('task', '')).split())}"
            for r in values["requests"]
            if isinstance(r, dict)
        ]
        mode = " (in the background)" if values.get("mode") == "background" else ""
        return " · ".join(asked) + mode
    if isinstance(values, dict) and row.tool == "spawn_agent":
        who = values.get("name") or values.get("agent") or "a sub-agent"
        task = " ".join(str(values.get("task", "")).split())
        return f"{who}: {task}" if task else str(who)
    if isinstance(values, dict) and row.tool == "emit_signal":
        return f"{values.get('severity', '')} {values.get('summary', '')}".strip()
    if isinstance(values, dict):
        for key in ("command", "path", "pattern", "task", "text"):
            if key in values:
                said = " ".join(str(values[key]).split())
                if key == "command":
                    return f"$ {said}"
                return f"#{said}" if key == "task" and str(values[key]).isdigit() else said
        return ", ".join(f"{k}={v}" for k, v in values.items())
    return str(values)


def card_words(row: Row) -> str:
    """The right-hand words of a card: how long it took, or how it ended when that says more."""
    state = tool_state(row)
    took = ""
    if row.duration_ms is not None:
        took = (
            f"{row.duration_ms / 1000:.1f} s" if row.duration_ms >= 100 else f"{row.duration_ms} ms"
        )
    running = "running…"
    if row.started_ms:
        running = f"running {_elapsed(time.time() * 1000 - row.started_ms)}"
    words = {
        ToolState.RUNNING: running,
        ToolState.WAITING: "waiting for approval",
        ToolState.DENIED: "denied",
        ToolState.STOPPED: f"stopped after {took}" if took else "stopped",
        ToolState.NOT_RUN: "not run: cancelled",
        ToolState.INTERRUPTED: "outcome unknown",
    }
    return words.get(state, took)


def _elapsed(ms: float) -> str:
    """ "4 s", "2 min 05 s": how long a call has been running."""
    seconds = max(0, int(ms / 1000))
    if seconds < 60:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60:02d} s"


def _turn_summary(row: Row) -> str:
    """ "2 model calls · 1,234 in / 56 out · $0.0123" (whatever the turn_end row recorded)."""
    parts = []
    calls = row.data.get("model_calls")
    if isinstance(calls, int):
        parts.append(f"{calls} model call{'' if calls == 1 else 's'}")
    used = row.data.get("usage")
    cost = row.data.get("cost_usd")
    if row.data.get("usage_reported") is False:  # not "0 in / 0 out · $0.0000"
        # An external agent may report its cost but not its tokens.
        parts.append(
            "tokens not reported" if isinstance(cost, int | float) else "usage not reported"
        )
    elif (
        isinstance(used, list | tuple) and len(used) == 2 and all(isinstance(n, int) for n in used)
    ):
        parts.append(f"{used[0]:,} in / {used[1]:,} out")
    if isinstance(cost, int | float):
        parts.append(money(cost))
    if row.at_ms:
        parts.insert(0, clock_text(row.at_ms))
    return " · ".join(parts) or "Turn finished"


def clock_text(at_ms: int, now_ms: int | None = None) -> str:
    """When something was said, as a clock shows it: "14:02" today, "3 Nov 14:02" this year,
    "3 Nov 2025 14:02" before (local time)."""
    at = datetime.fromtimestamp(at_ms / 1000)
    now = datetime.fromtimestamp((now_ms if now_ms is not None else time.time() * 1000) / 1000)
    clock = f"{at.hour:02d}:{at.minute:02d}"
    if at.date() == now.date():
        return clock
    day = f"{at.day} {at.strftime('%b')}"
    return f"{day} {clock}" if at.year == now.year else f"{day} {at.year} {clock}"
