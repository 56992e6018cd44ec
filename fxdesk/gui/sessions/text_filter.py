"""The filter box also finds sessions by what was said in them (issue 14 item 5), and lists the
messages themselves (issue 18 item 4).

Names match as the person types (the tree's own filter); once they pause for a moment, the
engine's full-text index is asked which sessions' messages or answers contain the words (those
match too) and which messages do: they are listed under the tree (``SearchResults``), and one
opens its session at that message. Only the latest text counts: an answer for text the box no
longer holds is dropped.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtWidgets import QBoxLayout

from fxdesk.engine.facade import Engine, StoreError
from fxdesk.gui.sessions.search_results import SHOWN, SearchResults
from fxdesk.gui.tasks import TaskGroup
from fxdesk.gui.window.main_window import MainWindow

PAUSE_MS = 250


class ConversationFilter(QObject):
    def __init__(self, window: MainWindow, engine: Engine, tasks: TaskGroup) -> None:
        super().__init__(window)
        self.window = window
        self.engine = engine
        self.tasks = tasks
        self.asked = 0  # searches sent to the engine (tests read it)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PAUSE_MS)
        self._timer.timeout.connect(self._on_timer_timeout)
        window.filter_edit.textChanged.connect(self._on_filter_text_changed)
        self.results = SearchResults()
        layout = window.sessions_panel.layout()
        if isinstance(layout, QBoxLayout):
            layout.addWidget(self.results, 1)  # under the tree, sharing its height

    @Slot(str)
    def _on_filter_text_changed(self, text: str) -> None:
        if len(text.strip()) >= 2:
            self._timer.start()
        else:
            self._timer.stop()
            self.results.clear()

    @Slot()
    def _on_timer_timeout(self) -> None:
        text = self.window.filter_edit.text().strip()
        self.tasks.spawn(self._search(text), "filter-conversations")

    async def _search(self, text: str) -> None:
        self.asked += 1
        try:
            found = await self.engine.sessions_mentioning(text)
            hits = await self.engine.search(text, SHOWN + 1)
        except StoreError:
            return  # the names still match; the status line tells of store trouble elsewhere
        if self.window.filter_edit.text().strip() != text:
            return  # the person typed on meanwhile
        self.window.set_filter_mentioning(text, frozenset(found))
        self.results.show_hits(text, hits)
