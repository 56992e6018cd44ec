"""The Tools page of Settings: MCP tool servers, their state and tools, trust, and their logs.

It reads through an ``McpBook`` (the engine's ``McpService``): ``statuses`` for the list, the
``McpServersChanged`` event to follow it live, ``trust`` for a workspace's configuration (the
person's yes to the programs it starts), ``reload`` to read the files again, and ``log_text`` for
a server's stderr. With no book (a process that runs no servers) the page says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from fxdesk import messages
from fxdesk.domain.mcp import McpConfig, ServerState, ServerStatus, Transport
from fxdesk.engine.events import McpServersChanged
from fxdesk.engine.mcp import ConfigChanged
from fxdesk.gui.tasks import WidgetTasks, alive
from fxdesk.gui.widgets import fit_columns, hint_label, monospace, push_button

COL_NAME, COL_WHERE, COL_STATE, COL_TARGET = range(4)
ROLE_SERVER = Qt.ItemDataRole.UserRole + 1  # the item's ServerStatus (server rows only)
STATE_TEXT = {
    ServerState.UNTRUSTED: "not trusted: nothing started",
    ServerState.STARTING: "starting…",
    ServerState.RUNNING: "running",
    ServerState.RESTARTING: "restarting",
    ServerState.FAILED: "failed",
    ServerState.STOPPED: "stopped",
}
INTRO = (
    "MCP servers give agents more tools, named mcp__server__tool, asked about and allowed like "
    "any other tool. Your own servers are in mcp.json in the config folder; a workspace's in "
    ".fxdesk/mcp.json or .mcp.json, started only once you trust that configuration."
)
NO_SERVICE = "This fxdesk process runs no MCP servers."


class McpBook(Protocol):
    """What the page reads and asks: the engine's MCP service."""

    def statuses(self) -> list[ServerStatus]: ...

    async def trust(self, workspace: Path, seen: str | None = None) -> McpConfig: ...

    async def reload(self, workspace: Path, workspace_id: int | None = None) -> McpConfig: ...

    async def log_text(self, status: ServerStatus) -> str: ...


class ToolsPage(QWidget):
    """Servers (with their tools as children), what the selected one is doing, its log.

    Args:
        book: The MCP service (None: none runs here).
        subscribe: The engine's ``subscribe`` for ``McpServersChanged`` (None: no live updates).
    """

    def __init__(
        self,
        book: McpBook | None,
        subscribe: Callable[..., Callable[[], None]] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.book = book
        self.tasks = WidgetTasks(self)
        layout = QVBoxLayout(self)
        layout.addWidget(hint_label(INTRO, wrap=True))
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("MCP servers")
        self.tree.setHeaderLabels(["Server / tool", "Where", "State", "Runs"])
        self.tree.setRootIsDecorated(True)
        self.tree.itemSelectionChanged.connect(self._on_tree_selection_changed)
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.log_view = QPlainTextEdit()
        self.log_view.setReadOnly(True)
        self.log_view.setFont(monospace())
        self.log_view.setAccessibleName("Server log")
        self.log_view.setPlaceholderText("Choose a server and Show log to read its output.")
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.tree)
        split.addWidget(self.log_view)
        split.setSizes([260, 120])
        layout.addWidget(split, 1)
        layout.addWidget(self.detail)
        row = QHBoxLayout()
        self.trust_button = push_button("&Trust this workspace's servers", "Trust", self._trust)
        self.reload_button = push_button("Re&load configuration", "Reload", self._reload)
        self.log_button = push_button("Show &log", "Show log", self._show_log)
        for button in (self.trust_button, self.reload_button, self.log_button):
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        self._unsubscribe: Callable[[], None] | None = None
        if book is None:
            self.detail.setText(NO_SERVICE)
        elif subscribe is not None:
            self._unsubscribe = subscribe(McpServersChanged, self._on_engine_servers_changed)
            self.destroyed.connect(self._unsubscribe)
        self.refresh()

    # --- rendering -----------------------------------------------------------------------------

    def refresh(self, statuses: list[ServerStatus] | None = None) -> None:
        """List the servers again (as of ``statuses``, else asked now), keeping the selection."""
        if statuses is None:
            statuses = self.book.statuses() if self.book is not None else []
        chosen = self.selected()
        key = (chosen.workspace, chosen.name) if chosen else None
        self.tree.clear()
        for status in statuses:
            where = status.workspace or "your own (global)"
            state = STATE_TEXT[status.state]
            if status.state is ServerState.RUNNING:
                state += f", {len(status.tools)} tools"
                if status.transport is Transport.STDIO and not status.sandboxed:
                    state += " (outside the sandbox)"
            if status.restarts:
                state += f", restarted {status.restarts}×"
            item = QTreeWidgetItem([status.name, where, state, status.target])
            item.setData(COL_NAME, ROLE_SERVER, status)
            item.setToolTip(COL_STATE, status.detail or state)
            item.setToolTip(COL_TARGET, status.target)
            for tool in status.tools:
                child = QTreeWidgetItem([tool.qualified, "", "", tool.description.split("\n")[0]])
                child.setToolTip(COL_TARGET, tool.description)
                item.addChild(child)
            self.tree.addTopLevelItem(item)
            if key == (status.workspace, status.name):
                item.setSelected(True)
                self.tree.setCurrentItem(item)
        self.tree.expandAll()
        fit_columns(self.tree, {COL_NAME: 220, COL_WHERE: 220, COL_STATE: 200})
        if not statuses and self.book is not None:
            self.detail.setText("No MCP servers are configured.")
        self._update_buttons()

    def selected(self) -> ServerStatus | None:
        item = self.tree.currentItem()
        while item is not None and item.parent() is not None:
            item = item.parent()
        if item is None:
            return None
        status = item.data(COL_NAME, ROLE_SERVER)
        return status if isinstance(status, ServerStatus) else None

    def _update_buttons(self) -> None:
        status = self.selected()
        busy = self.book is None
        self.trust_button.setEnabled(
            not busy and status is not None and status.state is ServerState.UNTRUSTED
        )
        self.reload_button.setEnabled(not busy and status is not None and bool(status.workspace))
        self.log_button.setEnabled(not busy and status is not None and bool(status.log_path))
        if status is not None:
            self.detail.setText(status.detail or f"{status.name}: {STATE_TEXT[status.state]}")

    # --- actions -------------------------------------------------------------------------------

    def _trust(self) -> None:
        status = self.selected()
        if self.book is not None and status is not None and status.workspace:
            # Trust what was shown: a file changed since is refused (ConfigChanged) and shown anew.
            work = self._trust_seen(Path(status.workspace), status.config_hash)
            self.tasks.spawn(self._run(work), "mcp-trust")

    async def _trust_seen(self, workspace: Path, seen: str) -> None:
        assert self.book is not None
        try:
            await self.book.trust(workspace, seen or None)
        except ConfigChanged as exc:
            messages.warning(str(exc), key=f"mcp-changed:{workspace}")

    def _reload(self) -> None:
        status = self.selected()
        if self.book is not None and status is not None and status.workspace:
            self.tasks.spawn(self._run(self.book.reload(Path(status.workspace))), "mcp-reload")

    def _show_log(self) -> None:
        status = self.selected()
        if self.book is not None and status is not None:
            self.tasks.spawn(self._load_log(status), "mcp-log")

    async def _run(self, work: Awaitable[object]) -> None:
        buttons = (self.trust_button, self.reload_button)
        for button in buttons:
            button.setEnabled(False)
        try:
            await work
        finally:
            if alive(self):
                self.refresh()

    async def _load_log(self, status: ServerStatus) -> None:
        assert self.book is not None
        text = await self.book.log_text(status)
        if alive(self):
            self.log_view.setPlainText(text or "(nothing logged yet)")
            bar = self.log_view.verticalScrollBar()
            bar.setValue(bar.maximum())

    # --- slots ---------------------------------------------------------------------------------

    def _on_engine_servers_changed(self, event: McpServersChanged) -> None:
        if alive(self):
            self.refresh(list(event.servers))

    @Slot()
    def _on_tree_selection_changed(self) -> None:
        self._update_buttons()
