"""The Processes dock's table: one row per background task, from immutable snapshots.

``ProcessesModel`` keeps ``BackgroundTask`` snapshots in start order and the last usage sample
(CPU and memory per stable id). ``upsert`` / ``remove`` turn each ``BackgroundChanged`` into one
row change, insertion or removal. ``StateDelegate`` paints the state as a coloured badge with its
word in it (the word carries the meaning; the colour only repeats it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRectF,
    QSize,
    Qt,
)
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from fxdesk.domain.background import LaunchPolicy, Origin, TaskState
from fxdesk.engine.facade import BackgroundTask, TaskUsage
from fxdesk.gui.processes.log_view import size_text
from fxdesk.gui.theme import Role, color

AnyIndex = QModelIndex | QPersistentModelIndex

(
    COL_NUMBER,
    COL_STATE,
    COL_COMMAND,
    COL_FOLDER,
    COL_EXIT,
    COL_UPTIME,
    COL_CPU,
    COL_MEMORY,
    COL_URL,
    COL_ORIGIN,
) = range(10)
HEADERS = ("#", "State", "Command", "Folder", "Exit", "Up", "CPU", "Memory", "URL", "Started by")
ROLE_TASK = Qt.ItemDataRole.UserRole + 1  # the frozen BackgroundTask
ROLE_KEY = Qt.ItemDataRole.UserRole + 2  # (session id, stable id)
ROLE_STATE_ROLE = Qt.ItemDataRole.UserRole + 3  # the theme Role of its badge

STATE_ROLES = {
    TaskState.RUNNING: Role.STATE_RUNNING,
    TaskState.EXITED: Role.STATE_COMPLETED,
    TaskState.FAILED: Role.STATE_FAILED,
    TaskState.DEAD: Role.STATE_INTERRUPTED,
    TaskState.STOPPED: Role.STATE_CANCELLED,
    TaskState.STALE: Role.STATE_AWAITING_APPROVAL,
}
STATE_TIPS = {
    TaskState.RUNNING: "Running",
    TaskState.EXITED: "Ended by itself with exit code 0",
    TaskState.FAILED: "Ended by itself with a non-zero exit code",
    TaskState.DEAD: "Gone without an exit code (killed from outside, or the machine restarted)",
    TaskState.STOPPED: "Stopped from fxdesk",
    TaskState.STALE: "Found gone, or cannot be checked: its URL may belong to another program now",
}
NO_VALUE = "—"


def uptime_text(ms: int) -> str:
    """A running time briefly: "12 s", "4 min", "2 h 5 min", "3 d 4 h"."""
    seconds = max(0, ms) // 1000
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def folder_text(task: BackgroundTask) -> str:
    """Where it runs, relative to its workspace ("." for the workspace itself)."""
    try:
        relative = os.path.relpath(task.cwd, task.workspace)
    except ValueError:
        return task.cwd
    return task.cwd if relative.startswith("..") else relative


def origin_text(task: BackgroundTask, session_name: str) -> str:
    """Who started it and what is special about it: "agent · Refactor · read-only"."""
    who = "you" if task.origin is Origin.PERSON else "agent"
    parts = [who, session_name or task.session_id[:8]]
    if task.read_only:
        parts.append("read-only")
    if task.policy is LaunchPolicy.PROCESS_LOCAL:
        parts.append("stops at quit")
    if task.persistence_warning:
        parts.append("⚠ not saved")
    return " · ".join(parts)


def url_openable(task: BackgroundTask) -> bool:
    """Only a running task's URL is opened: once it stopped, the port may serve another app."""
    return task.url is not None and task.state is TaskState.RUNNING


class ProcessesModel(QAbstractTableModel):
    """Background tasks as rows of snapshots, oldest first."""

    def __init__(
        self,
        now_ms: Callable[[], int],
        session_name: Callable[[str], str],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._now_ms = now_ms
        self._session_name = session_name
        self._rows: list[BackgroundTask] = []
        self._usage: dict[str, TaskUsage] = {}

    # --- changes -------------------------------------------------------------------------

    def set_tasks(self, tasks: list[BackgroundTask]) -> None:
        self.beginResetModel()
        self._rows = sorted(tasks, key=lambda t: (t.started_at_ms, t.number))
        self.endResetModel()

    def upsert(self, task: BackgroundTask) -> None:
        row = self.row_of(task.session_id, task.stable_id)
        if row is not None:
            self._rows[row] = task
            self.dataChanged.emit(self.index(row, 0), self.index(row, len(HEADERS) - 1))
            return
        row = len(self._rows)
        while row > 0 and self._rows[row - 1].started_at_ms > task.started_at_ms:
            row -= 1
        self.beginInsertRows(QModelIndex(), row, row)
        self._rows.insert(row, task)
        self.endInsertRows()

    def remove(self, session_id: str, stable_id: str) -> None:
        row = self.row_of(session_id, stable_id)
        if row is not None:
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._rows[row]
            self.endRemoveRows()

    def set_usage(self, usage: dict[str, TaskUsage]) -> None:
        """A new usage sample; repaints the time and usage columns."""
        self._usage = usage
        if self._rows:
            top, bottom = self.index(0, COL_UPTIME), self.index(len(self._rows) - 1, COL_MEMORY)
            self.dataChanged.emit(top, bottom, [Qt.ItemDataRole.DisplayRole])

    # --- lookups -------------------------------------------------------------------------

    def tasks(self) -> list[BackgroundTask]:
        return list(self._rows)

    def task(self, row: int) -> BackgroundTask:
        return self._rows[row]

    def row_of(self, session_id: str, stable_id: str) -> int | None:
        for row, task in enumerate(self._rows):
            if task.stable_id == stable_id and task.session_id == session_id:
                return row
        return None

    def usage(self, stable_id: str) -> TaskUsage | None:
        return self._usage.get(stable_id)

    # --- Qt ------------------------------------------------------------------------------

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal and 0 <= section < len(HEADERS):
            if role == Qt.ItemDataRole.DisplayRole:
                return HEADERS[section]
            if role == Qt.ItemDataRole.ToolTipRole and section in (COL_CPU, COL_MEMORY):
                return "Of the whole process group, sampled once a second"
        return None

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return (
            Qt.ItemFlag.ItemIsEnabled
            | Qt.ItemFlag.ItemIsSelectable
            | Qt.ItemFlag.ItemNeverHasChildren
        )

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        task = self._rows[index.row()]
        column = index.column()
        if role == ROLE_TASK:
            return task
        if role == ROLE_KEY:
            return (task.session_id, task.stable_id)
        if role == ROLE_STATE_ROLE:
            return STATE_ROLES[task.state]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(task, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(task, column)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in (
            COL_EXIT,
            COL_UPTIME,
            COL_CPU,
            COL_MEMORY,
        ):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and column == COL_URL and task.url:
            font = QFont()
            font.setUnderline(url_openable(task))
            font.setStrikeOut(not url_openable(task))
            return font
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_URL and url_openable(task):
            return QPalette().brush(QPalette.ColorRole.Link)
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_ORIGIN:
            return color(Role.WARNING) if task.persistence_warning else None
        if role == Qt.ItemDataRole.AccessibleTextRole and column == COL_STATE:
            return f"state {task.state.value}"
        return None

    def _display(self, task: BackgroundTask, column: int) -> str | None:
        if column == COL_NUMBER:
            return task.ref
        if column == COL_STATE:
            return task.state.value
        if column == COL_COMMAND:
            return " ".join(task.command.split())
        if column == COL_FOLDER:
            return folder_text(task)
        if column == COL_EXIT:
            return NO_VALUE if task.exit_code is None else str(task.exit_code)
        running = task.state.running
        if column == COL_UPTIME:
            return uptime_text(self._now_ms() - task.started_at_ms) if running else NO_VALUE
        usage = self._usage.get(task.stable_id) if running else None
        if column == COL_CPU:
            return f"{usage.cpu_percent:.0f} %" if usage is not None else NO_VALUE
        if column == COL_MEMORY:
            return size_text(usage.memory_bytes) if usage is not None else NO_VALUE
        if column == COL_URL:
            if task.url:
                return task.url
            if task.expect_url and running:
                return "waiting for URL…"
            return task.url_note or NO_VALUE
        if column == COL_ORIGIN:
            return origin_text(task, self._session_name(task.session_id))
        return None

    def _tooltip(self, task: BackgroundTask, column: int) -> str | None:
        if column == COL_STATE:
            return STATE_TIPS[task.state]
        if column == COL_COMMAND:
            return f"{task.command}\nin {task.cwd}\nPID {task.pid} · log {task.log_path}"
        if column == COL_URL and task.url:
            if url_openable(task):
                return f"Open {task.url} in the browser"
            return "Not opened: the command is not running, the port may serve another program"
        if column in (COL_CPU, COL_MEMORY):
            usage = self._usage.get(task.stable_id)
            if usage is not None and task.state.running:
                return f"{usage.processes} process{'es' if usage.processes != 1 else ''}"
        if column == COL_ORIGIN:
            lines = [
                "Started by you" if task.origin is Origin.PERSON else "Started by the agent",
                f"in session {self._session_name(task.session_id) or task.session_id}",
            ]
            if task.read_only:
                lines.append("Another fxdesk owns it: listed and stoppable, never rewritten")
            if task.policy is LaunchPolicy.PROCESS_LOCAL:
                lines.append("Stopped when fxdesk quits")
            else:
                lines.append("Keeps running when fxdesk quits")
            if task.persistence_warning:
                lines.append(f"⚠ {task.persistence_warning}")
            return "\n".join(lines)
        return None


class StateDelegate(QStyledItemDelegate):
    """Paints the state column as a rounded badge: the state's word on its colour."""

    def sizeHint(self, option: QStyleOptionViewItem, index: AnyIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width() + 16, max(size.height(), QFontMetrics(option.font).height() + 6))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: AnyIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text, opt.text = opt.text, ""
        style = opt.widget.style() if opt.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        role = index.data(ROLE_STATE_ROLE)
        if not isinstance(role, Role):
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        small = QFont(opt.font)
        small.setPointSizeF(max(small.pointSizeF() * 0.9, 7))
        metrics = QFontMetrics(small)
        width = metrics.horizontalAdvance(text) + 14
        height = metrics.height() + 4
        top = opt.rect.top() + (opt.rect.height() - height) / 2
        rect = QRectF(opt.rect.left() + 4, top, width, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(color(role))
        painter.drawRoundedRect(rect, height / 2, height / 2)
        painter.setFont(small)
        painter.setPen(color(Role.BADGE_TEXT))
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignCenter), text)
        painter.restore()
