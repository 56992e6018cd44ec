"""The session tree: workspaces → root sessions → child sessions at any depth.

``SessionTreeModel`` holds immutable snapshots (``Workspace``, ``Session``) in a node tree and maps
engine events to precise ``begin/end`` row operations and single-row ``dataChanged``; it never
resets on a change. ``SessionFilterModel`` adds the filter box and "show archived".
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QFont

from fxdesk.domain.model import Session, SessionState, Workspace
from fxdesk.gui.agents.marks import external_agent, spawned_agent

AnyIndex = QModelIndex | QPersistentModelIndex

ROLE_KIND = Qt.ItemDataRole.UserRole + 1  # "workspace" | "session"
ROLE_ID = Qt.ItemDataRole.UserRole + 2  # workspace id (int) or session id (str)
ROLE_STATE = Qt.ItemDataRole.UserRole + 3  # SessionState value, sessions only
ROLE_SNAPSHOT = Qt.ItemDataRole.UserRole + 4  # the frozen Workspace / Session
ROLE_QUEUED = Qt.ItemDataRole.UserRole + 5  # queued messages (int)
ROLE_APPROVALS = Qt.ItemDataRole.UserRole + 6  # pending approvals (int)
ROLE_BUSY = Qt.ItemDataRole.UserRole + 7  # held by another fxdesk process (bool)
ROLE_UNREAD = Qt.ItemDataRole.UserRole + 8  # new output not yet seen (bool)
ROLE_LAST_FAILED = Qt.ItemDataRole.UserRole + 9  # its newest work item failed (bool)
ROLE_BACKGROUND = Qt.ItemDataRole.UserRole + 10  # background commands running (int)
ROLE_AGENT_RUN = Qt.ItemDataRole.UserRole + 11  # the AgentRun a one-off child executes (or None)
ROLE_RUN_LEFT = Qt.ItemDataRole.UserRole + 12  # seconds to its run's deadline (int, or None)
ROLE_TREE_USAGE = Qt.ItemDataRole.UserRole + 13  # a root's UsageTotals with its sub-agents
# The agent a persistent child was spawned as by its parent's agent ("explorer", "sub-agent"),
# or None (opened by the person, a run's child).
ROLE_SPAWNED_AGENT = Qt.ItemDataRole.UserRole + 14
ROLE_EXTERNAL_AGENT = Qt.ItemDataRole.UserRole + 15  # the external (ACP) agent it runs, or None

_BOLD = QFont()
_BOLD.setBold(True)

KIND_WORKSPACE = "workspace"
KIND_SESSION = "session"

STATE_LABELS = {
    SessionState.IDLE: "idle",
    SessionState.QUEUED: "queued",
    SessionState.RUNNING: "running",
    SessionState.AWAITING_APPROVAL: "awaiting approval",
    SessionState.INTERRUPTED: "interrupted",
    SessionState.COMPLETED: "completed",
    SessionState.FAILED: "failed",
    SessionState.CANCELLED: "cancelled",
    SessionState.ARCHIVED: "archived",
}


def background_text(running: int, joiner: str = "") -> str:
    """ "2 background commands running" ('' for none), after ``joiner``."""
    if not running:
        return ""
    noun = "command" if running == 1 else "commands"
    return f"{joiner}{running} background {noun} running"


def wall_ms() -> int:
    """The wall clock in milliseconds (the engine's clock replaces it: ``now_ms``)."""
    return time.time_ns() // 1_000_000


@dataclass(eq=False)
class _Node:
    uid: int
    kind: str
    key: Any
    parent: _Node | None
    snapshot: Workspace | Session | None
    children: list[_Node] = field(default_factory=list)
    row: int = 0


class SessionTreeModel(QAbstractItemModel):
    """Workspaces and sessions as a tree of snapshots. One column."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._uids = itertools.count(1)
        self._root = _Node(0, "root", None, None, None)
        self._by_uid: dict[int, _Node] = {0: self._root}
        self._workspaces: dict[int, _Node] = {}
        self._sessions: dict[str, _Node] = {}
        self._marks: dict[str, dict[int, Any]] = {}  # per session: role -> value
        self.now_ms: Callable[[], int] = wall_ms  # what run deadlines are read against

    # --- feeding --------------------------------------------------------------------------

    def load(self, workspaces: list[Workspace], sessions: list[Session]) -> None:
        """Replace everything (the first load only; later changes come as events)."""
        self.beginResetModel()
        self._root.children.clear()
        self._by_uid = {0: self._root}
        self._workspaces.clear()
        self._sessions.clear()
        for workspace in sorted(workspaces, key=lambda w: (w.name.lower(), w.id)):
            self._attach(self._new_node(KIND_WORKSPACE, workspace.id, self._root, workspace))
        pending = list(sessions)
        wait = True
        while pending:  # parents before children, whatever order they came in
            left = []
            for session in pending:
                parent = self._parent_node(session, wait_for_parent=wait)
                if parent is None:
                    left.append(session)
                else:
                    self._attach(self._new_node(KIND_SESSION, session.id, parent, session))
            if len(left) == len(pending):
                if not wait:
                    break  # unknown workspace: cannot be shown
                wait = False  # parents that never come: hang the children under the workspace
            pending = left
        order = {session.id: position for position, session in enumerate(sessions)}
        for node in self._by_uid.values():  # siblings keep the order they were given in
            if node is not self._root and node.children:
                node.children.sort(key=lambda child: order.get(child.key, 0))
                for row, child in enumerate(node.children):
                    child.row = row
        self.endResetModel()

    def add_workspace(self, workspace: Workspace) -> QModelIndex:
        if workspace.id in self._workspaces:
            return self.update_workspace(workspace)
        row = self._sorted_row(workspace)
        node = self._new_node(KIND_WORKSPACE, workspace.id, self._root, workspace)
        self.beginInsertRows(QModelIndex(), row, row)
        self._attach(node, row)
        self.endInsertRows()
        return self.createIndex(node.row, 0, node.uid)

    def update_workspace(self, workspace: Workspace) -> QModelIndex:
        node = self._workspaces[workspace.id]
        node.snapshot = workspace
        index = self.createIndex(node.row, 0, node.uid)
        self.dataChanged.emit(index, index)
        return index

    def upsert_session(self, session: Session) -> QModelIndex:
        """Insert a new session, or replace its snapshot (moving it if its parent changed)."""
        node = self._sessions.get(session.id)
        parent = self._parent_node(session)
        if parent is None:
            raise KeyError(
                f"workspace {session.workspace_id} of session {session.id} is not in the tree"
            )
        if node is None:
            row = len(parent.children)
            self.beginInsertRows(self._index_of(parent), row, row)
            node = self._new_node(KIND_SESSION, session.id, parent, session)
            self._attach(node, row)
            self.endInsertRows()
        elif node.parent is not parent:
            assert node.parent is not None
            old_parent, old_row, new_row = node.parent, node.row, len(parent.children)
            self.beginMoveRows(
                self._index_of(old_parent), old_row, old_row, self._index_of(parent), new_row
            )
            self._detach(node)
            node.parent = parent
            node.snapshot = session
            self._attach(node, len(parent.children))
            self.endMoveRows()
        else:
            node.snapshot = session
            index = self.createIndex(node.row, 0, node.uid)
            self.dataChanged.emit(index, index)
        return self.createIndex(node.row, 0, node.uid)

    def remove_session(self, session_id: str) -> None:
        node = self._sessions.get(session_id)
        if node is None or node.parent is None:
            return
        self.beginRemoveRows(self._index_of(node.parent), node.row, node.row)
        self._detach(node)
        self._forget(node)
        self.endRemoveRows()

    def set_mark(self, session_id: str, role: int, value: Any) -> None:
        """Set a badge value (queued, approvals, busy, unread) and repaint only that row."""
        marks = self._marks.setdefault(session_id, {})
        if marks.get(role) == value:
            return
        marks[role] = value
        node = self._sessions.get(session_id)
        if node is not None:
            index = self.createIndex(node.row, 0, node.uid)
            self.dataChanged.emit(index, index, [role])

    def mark(self, session_id: str, role: int) -> Any:
        return self._marks.get(session_id, {}).get(role)

    # --- lookups --------------------------------------------------------------------------

    def session_index(self, session_id: str) -> QModelIndex:
        node = self._sessions.get(session_id)
        return self._index_of(node) if node is not None else QModelIndex()

    def workspace_index(self, workspace_id: int) -> QModelIndex:
        node = self._workspaces.get(workspace_id)
        return self._index_of(node) if node is not None else QModelIndex()

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    def session_name(self, session_id: str) -> str:
        """A session's name; its id when the tree does not hold it."""
        session = self.session_index(session_id).data(ROLE_SNAPSHOT)
        return session.name if isinstance(session, Session) else session_id

    def where(self, session_id: str) -> tuple[str, str]:
        """(session name, workspace folder) of a session; (its id, "") when the tree does not
        hold it."""
        session = self.session_index(session_id).data(ROLE_SNAPSHOT)
        if not isinstance(session, Session):
            return session_id, ""
        workspace = self.workspace_index(session.workspace_id).data(ROLE_SNAPSHOT)
        return session.name, getattr(workspace, "path", "")

    def workspace_folders(self) -> dict[str, str]:
        """Workspace id (as permission rules store it) -> folder, for every workspace."""
        folders = {}
        for row in range(self.rowCount()):
            workspace = self.index(row, 0).data(ROLE_SNAPSHOT)
            if isinstance(workspace, Workspace):
                folders[str(workspace.id)] = workspace.path
        return folders

    # --- QAbstractItemModel ---------------------------------------------------------------

    def index(self, row: int, column: int, parent: AnyIndex = QModelIndex()) -> QModelIndex:
        node = self._node(parent)
        if column != 0 or not 0 <= row < len(node.children):
            return QModelIndex()
        return self.createIndex(row, 0, node.children[row].uid)

    def parent(self, child: AnyIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not child.isValid():
            return QModelIndex()
        node = self._by_uid.get(child.internalId())
        if node is None or node.parent is None or node.parent is self._root:
            return QModelIndex()
        return self.createIndex(node.parent.row, 0, node.parent.uid)

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self._node(parent).children)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 1

    def hasChildren(self, parent: AnyIndex = QModelIndex()) -> bool:
        return self.rowCount(parent) > 0

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        node = self._by_uid.get(index.internalId())
        if node is None:
            return None
        snap = node.snapshot
        if role == Qt.ItemDataRole.DisplayRole:
            return snap.name if snap is not None else ""
        if role == ROLE_KIND:
            return node.kind
        if role == ROLE_ID:
            return node.key
        if role == ROLE_SNAPSHOT:
            return snap
        if isinstance(snap, Session):
            if role in (ROLE_QUEUED, ROLE_APPROVALS, ROLE_BACKGROUND):
                return int(self._marks.get(snap.id, {}).get(role) or 0)
            if role in (ROLE_BUSY, ROLE_UNREAD, ROLE_LAST_FAILED):
                return bool(self._marks.get(snap.id, {}).get(role))
            if role in (ROLE_AGENT_RUN, ROLE_RUN_LEFT, ROLE_TREE_USAGE):
                return self._marks.get(snap.id, {}).get(role)
            if role == ROLE_SPAWNED_AGENT:
                return spawned_agent(snap)
            if role == ROLE_EXTERNAL_AGENT:
                return external_agent(snap)
            if role == ROLE_STATE:
                return snap.state.value
            if role == Qt.ItemDataRole.ToolTipRole:
                return self._tooltip(snap)
            if role == Qt.ItemDataRole.AccessibleDescriptionRole:
                failed = ", last turn failed" if self.mark(snap.id, ROLE_LAST_FAILED) else ""
                failed += background_text(int(self.mark(snap.id, ROLE_BACKGROUND) or 0), ", ")
                agent = spawned_agent(snap)
                if agent is not None:
                    failed += f", persistent sub-agent {agent} started by its parent's agent"
                external = external_agent(snap)
                if external is not None:
                    failed += f", run by the external agent {external}"
                return f"session, {STATE_LABELS[snap.state]}{failed}"
        elif isinstance(snap, Workspace):
            if role == Qt.ItemDataRole.FontRole:
                return _BOLD
            if role == Qt.ItemDataRole.ToolTipRole:
                return snap.path
            if role == Qt.ItemDataRole.AccessibleDescriptionRole:
                return f"workspace {snap.path}"
        return None

    def _tooltip(self, snap: Session) -> str:
        # Imported here: the runs' domain and texts cost ~15 ms before the window's first frame.
        from fxdesk.domain.agent_runs import AgentRun
        from fxdesk.domain.usage import UsageTotals
        from fxdesk.gui.agents.text import run_tooltip, spawned_tooltip

        failed = " · its last turn failed" if self.mark(snap.id, ROLE_LAST_FAILED) else ""
        failed += background_text(int(self.mark(snap.id, ROLE_BACKGROUND) or 0), " · ")
        text = f"{snap.name} · {STATE_LABELS[snap.state]}{failed} · {snap.id}"
        run = self.mark(snap.id, ROLE_AGENT_RUN)
        if isinstance(run, AgentRun):
            text += "\n\n" + run_tooltip(run, self.now_ms())
        agent = spawned_agent(snap)
        if agent is not None:
            text += "\n\n" + spawned_tooltip(agent)
        external = external_agent(snap)
        if external is not None:
            text += f"\n\nRun by an external agent over ACP: {external}"
        tree = self.mark(snap.id, ROLE_TREE_USAGE)
        if isinstance(tree, UsageTotals) and not snap.is_child:
            text += f"\nWith its sub-agents: {tree.text()} ({tree.model_calls} model calls)"
        return text

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and section == 0
            and role == Qt.ItemDataRole.DisplayRole
        ):
            return "Sessions"
        return None

    # --- internals ------------------------------------------------------------------------

    def _node(self, index: AnyIndex) -> _Node:
        if not index.isValid():
            return self._root
        return self._by_uid.get(index.internalId(), self._root)

    def _index_of(self, node: _Node) -> QModelIndex:
        if node is self._root:
            return QModelIndex()
        return self.createIndex(node.row, 0, node.uid)

    def _new_node(self, kind: str, key: Any, parent: _Node, snapshot: Workspace | Session) -> _Node:
        node = _Node(next(self._uids), kind, key, parent, snapshot)
        self._by_uid[node.uid] = node
        if kind == KIND_WORKSPACE:
            self._workspaces[key] = node
        else:
            self._sessions[key] = node
        return node

    def _parent_node(self, session: Session, *, wait_for_parent: bool = False) -> _Node | None:
        """The node a session hangs under. A child whose parent is unknown hangs under its
        workspace, unless ``wait_for_parent`` (while loading, the parent may come later)."""
        if session.parent_id is not None:
            parent = self._sessions.get(session.parent_id)
            if parent is not None:
                return parent
            if wait_for_parent:
                return None
        return self._workspaces.get(session.workspace_id)

    def _sorted_row(self, workspace: Workspace) -> int:
        key = (workspace.name.lower(), workspace.id)
        for row, node in enumerate(self._root.children):
            other = node.snapshot
            assert isinstance(other, Workspace)
            if (other.name.lower(), other.id) > key:
                return row
        return len(self._root.children)

    @staticmethod
    def _attach(node: _Node, row: int | None = None) -> None:
        assert node.parent is not None
        siblings = node.parent.children
        row = len(siblings) if row is None else row
        siblings.insert(row, node)
        for position in range(row, len(siblings)):
            siblings[position].row = position

    @staticmethod
    def _detach(node: _Node) -> None:
        assert node.parent is not None
        siblings = node.parent.children
        del siblings[node.row]
        for position in range(node.row, len(siblings)):
            siblings[position].row = position

    def _forget(self, node: _Node) -> None:
        for child in node.children:
            self._forget(child)
        self._by_uid.pop(node.uid, None)
        if node.kind == KIND_SESSION:
            self._sessions.pop(node.key, None)
        else:
            self._workspaces.pop(node.key, None)


class SessionFilterModel(QSortFilterProxyModel):
    """The filter box (matches names, keeping ancestors) and "show archived"."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self._show_archived = False
        self._mentioning: frozenset[str] = frozenset()  # sessions whose text matches too

    @property
    def show_archived(self) -> bool:
        return self._show_archived

    def set_show_archived(self, show: bool) -> None:
        if show != self._show_archived:
            self.beginFilterChange()
            self._show_archived = show
            self.endFilterChange()

    @property
    def mentioning(self) -> frozenset[str]:
        return self._mentioning

    def set_mentioning(self, session_ids: frozenset[str]) -> None:
        """Sessions whose conversation contains the filter's text: they match too."""
        if session_ids != self._mentioning:
            self.beginFilterChange()
            self._mentioning = session_ids
            self.endFilterChange()

    def filterAcceptsRow(self, source_row: int, source_parent: AnyIndex) -> bool:
        model = self.sourceModel()
        index = model.index(source_row, 0, source_parent)
        if not self._show_archived and _archived_or_under_archived(index):
            return False  # a closed session hides with its whole subtree
        pattern = self.filterRegularExpression().pattern()
        if not pattern:
            return True
        if index.data(ROLE_ID) in self._mentioning:
            return True
        return super().filterAcceptsRow(source_row, source_parent)


def _archived_or_under_archived(index: QModelIndex) -> bool:
    while index.isValid():
        snapshot = index.data(ROLE_SNAPSHOT)
        if isinstance(snapshot, Session) and snapshot.state == SessionState.ARCHIVED:
            return True
        index = index.parent()
    return False
