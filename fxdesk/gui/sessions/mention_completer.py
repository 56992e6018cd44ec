"""``@`` completes workspace files in the message box (issue 18 item 6).

Typing ``@`` and a few letters of a path lists the open session's workspace files that match
(fuzzy: the letters in order anywhere in the path, ``domain/mentions.fuzzy_rank``); Up/Down
choose, Enter or Tab takes one (``@src/app.py `` replaces what was typed), Escape closes the
list. A range can follow by hand (``@src/app.py:10-40``). When the message is sent the engine
attaches the mentioned files' text for the model (``Engine.with_attachments``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QObject, QStringListModel, Qt, Slot
from PySide6.QtWidgets import QAbstractItemView, QCompleter, QPlainTextEdit

from fxdesk.domain.mentions import fuzzy_rank
from fxdesk.gui.tasks import TaskGroup

_TYPED = re.compile(r"(?:^|(?<=[\s(\[]))@([\w./\-+~]*)$")
SHOWN = 12


class MentionCompleter(QObject):
    """Completes ``@`` in ``edit`` with the files ``files(session_id)`` gives (read once per
    session, then ranked as the person types)."""

    def __init__(
        self,
        edit: QPlainTextEdit,
        files: Callable[[str], Awaitable[list[str]]],
        tasks: TaskGroup,
    ) -> None:
        super().__init__(edit)
        self.edit = edit
        self.files = files
        self.tasks = tasks
        self.session_id: str | None = None
        self._paths: dict[str, list[str]] = {}
        self._model = QStringListModel(self)
        self.completer = QCompleter(self._model, edit)
        self.completer.setWidget(edit)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setMaxVisibleItems(SHOWN)
        self._popup().setAccessibleName("Workspace files")
        self.completer.activated.connect(self._on_completer_activated)
        edit.textChanged.connect(self._on_edit_changed)

    def follow(self, session_id: str | None) -> None:
        """Complete with ``session_id``'s workspace from now on (its files read afresh)."""
        self.session_id = session_id
        if session_id is not None:
            self._paths.pop(session_id, None)
        self._popup().hide()
        self._on_edit_changed()  # an @ typed while the session was opening

    def _popup(self) -> QAbstractItemView:
        popup = self.completer.popup()
        assert popup is not None  # QCompleter always has one
        return popup

    def is_open(self) -> bool:
        return self._popup().isVisible()

    def typed(self) -> str | None:
        """The path being typed after an ``@`` just before the cursor, or None."""
        cursor = self.edit.textCursor()
        before = cursor.block().text()[: cursor.positionInBlock()]
        match = _TYPED.search(before)
        return match.group(1) if match else None

    @Slot()
    def _on_edit_changed(self) -> None:
        query = self.typed()
        session_id = self.session_id
        if query is None or session_id is None:
            self._popup().hide()
            return
        paths = self._paths.get(session_id)
        if paths is None:
            self.tasks.spawn(self._load(session_id), "mention-files")
            return
        self._show(query, paths)

    async def _load(self, session_id: str) -> None:
        try:
            paths = await self.files(session_id)
        except Exception:  # a folder that cannot be listed: no completion, nothing else
            paths = []
        self._paths[session_id] = paths
        query = self.typed()
        if query is not None and session_id == self.session_id:
            self._show(query, paths)

    def _show(self, query: str, paths: list[str]) -> None:
        ranked = fuzzy_rank(query, paths, limit=200)
        if not ranked:
            self._popup().hide()
            return
        self._model.setStringList(ranked)
        rect = self.edit.cursorRect()
        rect.setWidth(max(320, self._popup().sizeHintForColumn(0) + 24))
        self.completer.complete(rect)
        self._popup().setCurrentIndex(self._model.index(0, 0))

    @Slot(str)
    def _on_completer_activated(self, path: str) -> None:
        query = self.typed()
        if query is None:
            return
        cursor = self.edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.Left, cursor.MoveMode.KeepAnchor, len(query))
        cursor.insertText(f"{path} ")
        self.edit.setTextCursor(cursor)
        self._popup().hide()
