"""Turns engine events into Qt model updates and signals.

The engine's bus publishes on the asyncio loop thread, which under qasync is the Qt GUI thread, so
handlers update models directly. Streaming text will be coalesced here to at most one repaint per
view per frame.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from fxdesk.engine.bus import EventBus
from fxdesk.engine.events import SessionAdded, SessionChanged, WorkspaceAdded
from fxdesk.gui.session_model import SessionTreeModel


class EngineBridge(QObject):
    """Feeds the session tree from the bus.

    Signals:
        session_added(str): a session id, after its row exists in the model.
    """

    session_added = Signal(str)

    def __init__(
        self, bus: EventBus, tree: SessionTreeModel, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._tree = tree
        self._unsubscribe: list[Callable[[], None]] = [
            bus.subscribe(WorkspaceAdded, self._on_workspace_added),
            bus.subscribe(SessionAdded, self._on_session_added),
            bus.subscribe(SessionChanged, self._on_session_changed),
        ]

    def close(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()

    def _on_workspace_added(self, event: WorkspaceAdded) -> None:
        self._tree.add_workspace(event.workspace)

    def _on_session_added(self, event: SessionAdded) -> None:
        self._tree.upsert_session(event.session)
        self.session_added.emit(event.session.id)

    def _on_session_changed(self, event: SessionChanged) -> None:
        self._tree.upsert_session(event.session)
