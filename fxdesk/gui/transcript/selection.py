"""Selecting part of a message: the transcript paints its rows, so their text cannot be selected
where it is drawn. A double-click on a message (or "Select text" in its menu, or F2) lays a
read-only text box with the same rendered document exactly over it; there the person selects
with the mouse or the keyboard (Shift+arrows, Ctrl+A) and copies with Ctrl+C. Escape, a click
elsewhere or any change of the list puts the painted row back, and the keyboard with it.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt
from PySide6.QtGui import QKeyEvent, QTextDocument
from PySide6.QtWidgets import QFrame, QListView, QTextBrowser

from fxdesk.gui.theme import is_dark
from fxdesk.gui.transcript.delegate import TranscriptDelegate, shown_part
from fxdesk.gui.transcript.markdown import render
from fxdesk.gui.transcript.model import Row, RowKind, TranscriptModel

SELECTABLE = frozenset({RowKind.USER, RowKind.ASSISTANT})


class TextSelection(QObject):
    """The one selection box of a transcript view (``open``/``close``)."""

    def __init__(
        self, view: QListView, model: TranscriptModel, delegate: TranscriptDelegate
    ) -> None:
        super().__init__(view)
        self.view = view
        self.transcript = model
        self.delegate = delegate
        self.row_key: str | None = None
        self._document: QTextDocument | None = None
        self.box = QTextBrowser(view.viewport())
        self.box.setObjectName("transcriptSelection")
        self.box.setAccessibleName("Message text (select and copy)")
        self.box.setFrameShape(QFrame.Shape.NoFrame)
        self.box.setReadOnly(True)
        self.box.setOpenExternalLinks(True)
        self.box.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
            | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.box.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.box.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.box.viewport().setAutoFillBackground(False)
        self.box.setStyleSheet("QTextBrowser { background: transparent; }")
        self.box.hide()
        self.box.installEventFilter(self)
        for signal in (
            model.modelReset,
            model.rowsInserted,
            model.rowsRemoved,
            model.layoutChanged,
        ):
            signal.connect(self.close)
        view.verticalScrollBar().valueChanged.connect(self.close)

    @staticmethod
    def can_select(row: Row) -> bool:
        return row.kind in SELECTABLE and bool(row.text)

    def open(self, position: int) -> bool:
        """Lay the box over row ``position``; False when it has no text to select."""
        index = self.transcript.index(position, 0)
        row = self.transcript.row_at(position)
        if not self.can_select(row):
            return False
        layout = self.delegate.layout(row)
        if not layout.docs:
            return False
        rect = layout.docs[0][1]
        for _painted, area in layout.docs[1:]:  # a long message is painted in pieces
            rect = rect.united(area)
        item = self.view.visualRect(index)
        origin = item.topLeft() + QPoint(self.delegate.left(), 0)
        # The same rendering as the painted row (code colours included), its own document:
        # of a very long answer, the part the transcript shows.
        self._document = render(
            shown_part(row.text),
            rect.width(),
            dark=is_dark(self.view.palette()),
            font=self.view.font(),
        )
        self.box.setDocument(self._document)
        self.box.setGeometry(
            QRect(
                origin.x() + int(rect.left()),
                origin.y() + int(rect.top()),
                int(rect.width()) + 1,
                int(rect.height()) + 1,
            )
        )
        self.row_key = self.delegate.covered = row.key
        self.view.viewport().update()
        self.box.show()
        self.box.raise_()
        self.box.setFocus(Qt.FocusReason.OtherFocusReason)
        return True

    def close(self, *_args: object) -> None:
        if not self.box.isVisible():
            return
        had_focus = self.box.hasFocus()
        self._hide()
        if had_focus:
            self.view.setFocus(Qt.FocusReason.OtherFocusReason)

    def _hide(self) -> None:
        self.box.hide()
        self.row_key = self.delegate.covered = None
        self.view.viewport().update()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.box:
            if event.type() == QEvent.Type.FocusOut and self.box.isVisible():
                self._hide()
            elif (
                event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent)
                and event.key() == Qt.Key.Key_Escape
            ):
                self.close()
                return True
        return super().eventFilter(watched, event)
