"""A background task's log, live: its tail, then what is appended, with colours and search.

Only the end of the file is ever read: opening a 200 MB log reads its last ``TAIL_BYTES`` (from
the first whole line), and following reads what was appended since, every ``POLL_MS``. Reads run
in a worker thread and are bounded; a burst bigger than ``JUMP_BYTES`` between two looks is
skipped to its tail (and the view says how much was skipped), so a chatty task never makes the
window read megabytes. Bytes are decoded as UTF-8 with replacement characters, NUL and other
control bytes are shown as symbols (``ansi.visible``), and at most ``MAX_LINES`` lines are kept.

Ctrl+F opens the search bar; Enter / F3 find the next match, Shift+Enter / Shift+F3 the previous
one, wrapping around; Escape closes the bar.
"""

from __future__ import annotations

import asyncio
import codecs
import os
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtGui import (
    QFont,
    QKeySequence,
    QShortcut,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from fxdesk.gui.processes.ansi import AnsiParser, Span, Style
from fxdesk.gui.tasks import WidgetTasks, alive
from fxdesk.gui.theme import ansi_color, is_dark
from fxdesk.gui.widgets import hint_label, monospace

TAIL_BYTES = 256 * 1024
JUMP_BYTES = 1024 * 1024
POLL_MS = 250
MAX_LINES = 20_000


@dataclass(frozen=True)
class Chunk:
    """Bytes read from a log: ``data`` ends at ``end``; ``skipped`` bytes before it were not
    read; ``size`` is the file's size at the read; ``restarted``: the file shrank (rewritten)."""

    data: bytes
    end: int
    skipped: int
    size: int
    restarted: bool = False


def read_chunk(path: Path, offset: int | None) -> Chunk:
    """What to show next of ``path``: its tail (``offset`` None, or the file shrank) or what
    follows ``offset``, never more than ``JUMP_BYTES`` (a longer stretch is skipped to its tail).

    Raises:
        OSError: the log cannot be read.
    """
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        restarted = offset is not None and size < offset
        if offset is None or restarted:
            start = max(0, size - TAIL_BYTES)
        elif size - offset > JUMP_BYTES:
            start = size - TAIL_BYTES
        else:
            start = offset
        skipped = start - (0 if offset is None or restarted else offset)
        file.seek(start)
        data = file.read(size - start)
    if start > 0 and skipped > 0:
        newline = data.find(b"\n")  # begin at a whole line (and a whole character)
        if 0 <= newline < len(data) - 1:
            skipped += newline + 1
            data = data[newline + 1 :]
    return Chunk(data, start + len(data) if not skipped else size, skipped, size, restarted)


def size_text(count: int) -> str:
    """A byte count briefly: "812 B", "14 KB", "3.2 MB", "1.4 GB"."""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1024
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"
    return f"{count} B"  # not reached


class LogView(QWidget):
    """Follows one log file; ``follow(path, title)`` switches to another, ``follow(None)`` stops."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tasks = WidgetTasks(self)
        self.path: Path | None = None
        self._offset: int | None = None
        self._reading = False
        self._problem = ""  # why the log cannot be read, once said
        self._generation = 0
        self._parser = AnsiParser()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._formats: dict[tuple[Style, bool], QTextCharFormat] = {}
        self.reads = 0  # chunks shown (tests wait on it)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.title = hint_label("No command selected")
        self.title.setAccessibleName("Log of")
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A long command or path must not widen the window: the label is cut, its tooltip whole.
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.title)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setAccessibleName("Command output")
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setMaximumBlockCount(MAX_LINES)
        self.text.setFont(monospace())
        self.text.setUndoRedoEnabled(False)
        self.text.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        layout.addWidget(self.text, 1)
        layout.addWidget(self._build_search())
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._on_timer_timeout)

    def _build_search(self) -> QWidget:
        self.search_bar = QWidget()
        row = QHBoxLayout(self.search_bar)
        row.setContentsMargins(0, 0, 0, 0)
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText("Find in log (Enter: next, Shift+Enter: previous)")
        self.search_edit.setAccessibleName("Find in log")
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.returnPressed.connect(self.find_next)
        self.search_edit.textChanged.connect(self._on_search_edit_text_changed)
        row.addWidget(self.search_edit, 1)
        self.prev_button = QPushButton("Previous")
        self.prev_button.setAutoDefault(False)
        self.prev_button.clicked.connect(self.find_previous)
        self.next_button = QPushButton("Next")
        self.next_button.setAutoDefault(False)
        self.next_button.clicked.connect(self.find_next)
        self.search_status = hint_label("")
        row.addWidget(self.prev_button)
        row.addWidget(self.next_button)
        row.addWidget(self.search_status)
        self.search_bar.hide()
        for keys, slot in (
            (QKeySequence.StandardKey.Find, self.open_search),
            (QKeySequence.StandardKey.FindNext, self.find_next),
            (QKeySequence.StandardKey.FindPrevious, self.find_previous),
            (QKeySequence("Shift+Return"), self.find_previous),
            (QKeySequence("Shift+Enter"), self.find_previous),
            (QKeySequence(Qt.Key.Key_Escape), self.close_search),
        ):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
        return self.search_bar

    # --- following -----------------------------------------------------------------------

    def follow(self, path: Path | None, title: str = "") -> None:
        """Show the tail of ``path`` and follow it (None: show nothing, follow nothing)."""
        if path == self.path and path is not None:
            self.title.setText(title)
            self.title.setToolTip(title)
            return
        self._generation += 1
        self.path = path
        self._offset = None
        self._problem = ""
        self._parser.reset()
        self._decoder.reset()
        self.text.clear()
        self.title.setText(title or "No command selected")
        self.title.setToolTip(title)
        if path is None:
            self._timer.stop()
            return
        self._timer.start()
        self._read()

    def stop(self) -> None:
        self._timer.stop()

    @Slot()
    def _on_timer_timeout(self) -> None:
        if self.isVisible() or self._offset is None:
            self._read()

    def _read(self) -> None:
        if self._reading or self.path is None:
            return
        self._reading = True
        self.tasks.spawn(self._read_next(self.path, self._offset, self._generation), "log-read")

    async def _read_next(self, path: Path, offset: int | None, generation: int) -> None:
        try:
            chunk = await asyncio.to_thread(read_chunk, path, offset)
        except OSError as exc:
            said = f"The log cannot be read: {exc.strerror or exc}."
            if alive(self) and generation == self._generation and said != self._problem:
                self._problem = said  # said once; it is looked for again at each poll
                self._show_note(said)
            return
        finally:
            if alive(self):
                self._reading = False
        if not alive(self) or generation != self._generation:
            return
        self._problem = ""
        self._show(chunk)

    def _show(self, chunk: Chunk) -> None:
        if chunk.restarted:
            self.text.clear()
            self._parser.reset()
            self._decoder.reset()
        if chunk.skipped:
            self._parser.reset()
            self._decoder.reset()
            before = "earlier output" if self._offset is None else "output"
            self._show_note(f"… {size_text(chunk.skipped)} of {before} not shown …")
        self._offset = chunk.end
        if chunk.data:
            self.append(self._decoder.decode(chunk.data))
        self.reads += 1

    def append(self, text: str) -> None:
        """Add decoded ``text`` (with its colour codes) at the end, following it if the view
        was at the end."""
        self._insert(self._parser.feed(text))

    def _show_note(self, text: str) -> None:
        self._insert([Span(text + "\n", Style(colour=8))])

    def _insert(self, spans: list[Span]) -> None:
        if not spans:
            return
        bar = self.text.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 2
        cursor = QTextCursor(self.text.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.beginEditBlock()
        for span in spans:
            cursor.insertText(span.text, self._format(span.style))
        cursor.endEditBlock()
        if at_end:
            bar.setValue(bar.maximum())

    def _format(self, style: Style) -> QTextCharFormat:
        dark = is_dark(self.text.palette())
        key = (style, dark)
        found = self._formats.get(key)
        if found is None:
            found = QTextCharFormat()
            if style.colour is not None:
                found.setForeground(ansi_color(style.colour, dark=dark))
            if style.bold:
                found.setFontWeight(QFont.Weight.Bold)
            self._formats[key] = found
        return found

    # --- search --------------------------------------------------------------------------

    @Slot()
    def open_search(self) -> None:
        self.search_bar.show()
        self.search_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_edit.selectAll()

    @Slot()
    def close_search(self) -> None:
        if not self.search_bar.isHidden():
            self.search_bar.hide()
            self.text.setFocus(Qt.FocusReason.ShortcutFocusReason)

    @Slot()
    def find_next(self) -> bool:
        return self._find(backward=False)

    @Slot()
    def find_previous(self) -> bool:
        return self._find(backward=True)

    def _find(self, *, backward: bool) -> bool:
        needle = self.search_edit.text()
        if not needle:
            self.open_search()
            return False
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        found = self.text.find(needle, flags)
        if not found:  # wrap around
            cursor = self.text.textCursor()
            end = QTextCursor.MoveOperation.End if backward else QTextCursor.MoveOperation.Start
            cursor.movePosition(end)
            self.text.setTextCursor(cursor)
            found = self.text.find(needle, flags)
        self.search_status.setText("" if found else "Not found")
        return found

    @Slot(str)
    def _on_search_edit_text_changed(self, _text: str) -> None:
        self.search_status.setText("")
