"""Messages found by the filter box (issue 18 item 4), under the session tree while it filters.

Each result is the session's name, who said it, and the words around the match with the matches
in bold. A click, or Enter once the list has the keyboard, asks to open that session at that
message (``open_requested``), where the transcript scrolls to it and highlights it.

Signals:
    open_requested(str, int): the session id and the message's sequence number.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt, Signal, Slot
from PySide6.QtGui import QAbstractTextDocumentLayout, QPainter, QPalette, QTextDocument
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.search import SearchHit

AnyIndex = QModelIndex | QPersistentModelIndex
ROLE_HIT = Qt.ItemDataRole.UserRole + 1
WHO = {"user": "You", "assistant": "Agent"}
SHOWN = 30  # results listed (the newest first)


def hit_html(hit: SearchHit) -> str:
    """Two lines: the session and who spoke, then the snippet with the matches in bold."""
    snippet = html.escape(" ".join(hit.snippet.split()))
    snippet = snippet.replace("\x02", "<b>").replace("\x03", "</b>")
    closed = " (closed)" if hit.archived else ""
    name = html.escape(hit.session_name)
    return f"<small>{name}{closed} · {WHO.get(hit.kind, hit.kind)}</small><br>{snippet}"


class _HitDelegate(QStyledItemDelegate):
    """Paints a result's rich text, wrapped to the list's width (at most three lines)."""

    def _document(self, option: QStyleOptionViewItem, index: AnyIndex) -> QTextDocument:
        doc = QTextDocument()
        doc.setDefaultFont(option.font)
        doc.setDocumentMargin(4)
        doc.setHtml(str(index.data(Qt.ItemDataRole.DisplayRole) or ""))
        doc.setTextWidth(max(60, option.rect.width()))
        return doc

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: AnyIndex) -> None:
        self.initStyleOption(option, index)
        style = option.widget.style() if option.widget is not None else None
        text = option.text
        option.text = ""
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, option, painter, option.widget)
        option.text = text
        doc = self._document(option, index)
        context = QAbstractTextDocumentLayout.PaintContext()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        context.palette.setColor(QPalette.ColorRole.Text, option.palette.color(role))
        painter.save()
        painter.translate(option.rect.topLeft())
        painter.setClipRect(QRectF(0, 0, option.rect.width(), option.rect.height()))
        doc.documentLayout().draw(painter, context)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: AnyIndex) -> QSize:
        self.initStyleOption(option, index)
        doc = self._document(option, index)
        line = option.fontMetrics.lineSpacing()
        return QSize(int(doc.idealWidth()), min(int(doc.size().height()), 3 * line + 8))


class SearchResults(QWidget):
    """The "Found in messages" list (hidden while there is nothing to show)."""

    open_requested = Signal(str, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 4, 0, 0)
        self.title = QLabel()
        self.title.setAccessibleName("Messages found")
        column.addWidget(self.title)
        self.list = QListWidget()
        self.list.setAccessibleName("Messages found by the filter")
        self.list.setItemDelegate(_HitDelegate(self.list))
        self.list.setWordWrap(True)
        self.list.setUniformItemSizes(False)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.itemActivated.connect(self._on_list_item_activated)
        self.list.itemClicked.connect(self._on_list_item_activated)
        column.addWidget(self.list, 1)
        self.text = ""
        self.hits: list[SearchHit] = []
        self.hide()

    def show_hits(self, text: str, hits: list[SearchHit]) -> None:
        """What ``text`` found (the newest first); hidden when nothing was."""
        self.text, self.hits = text, hits[:SHOWN]
        self.list.clear()
        for hit in self.hits:
            item = QListWidgetItem(hit_html(hit))
            item.setData(ROLE_HIT, hit)
            item.setToolTip(" ".join(hit.plain_snippet().split()))
            self.list.addItem(item)
        more = "+" if len(hits) > SHOWN else ""
        count = f"{len(self.hits)}{more}"
        self.title.setText(
            f"Found in {count} message{'s' if len(self.hits) != 1 else ''} (newest first)"
        )
        self.setVisible(bool(self.hits))

    def clear(self) -> None:
        self.show_hits("", [])

    @Slot(QListWidgetItem)
    def _on_list_item_activated(self, item: QListWidgetItem) -> None:
        hit = item.data(ROLE_HIT)
        if isinstance(hit, SearchHit):
            self.open_requested.emit(hit.session_id, hit.seq)
