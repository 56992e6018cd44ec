"""Paints a session row: name, a state badge, queued and approval counts, busy and unread marks."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from fxdesk.domain.agent_runs import AgentRun, RunStatus
from fxdesk.domain.model import SessionState
from fxdesk.gui.agents.text import (
    MODE_MARKS,
    STATUS_LABELS,
    countdown_text,
    external_mark,
    spawned_mark,
)
from fxdesk.gui.sessions.model import (
    KIND_SESSION,
    ROLE_AGENT_RUN,
    ROLE_APPROVALS,
    ROLE_BACKGROUND,
    ROLE_BUSY,
    ROLE_EXTERNAL_AGENT,
    ROLE_KIND,
    ROLE_LAST_FAILED,
    ROLE_QUEUED,
    ROLE_RUN_LEFT,
    ROLE_SPAWNED_AGENT,
    ROLE_STATE,
    ROLE_UNREAD,
    STATE_LABELS,
)
from fxdesk.gui.theme import Role, color

AnyIndex = QModelIndex | QPersistentModelIndex

BADGE_ROLES = {
    SessionState.IDLE: Role.STATE_IDLE,
    SessionState.QUEUED: Role.STATE_QUEUED,
    SessionState.RUNNING: Role.STATE_RUNNING,
    SessionState.AWAITING_APPROVAL: Role.STATE_AWAITING_APPROVAL,
    SessionState.INTERRUPTED: Role.STATE_INTERRUPTED,
    SessionState.COMPLETED: Role.STATE_COMPLETED,
    SessionState.FAILED: Role.STATE_FAILED,
    SessionState.CANCELLED: Role.STATE_CANCELLED,
    SessionState.ARCHIVED: Role.STATE_ARCHIVED,
}
RUN_BADGE_ROLES = {  # a finished run says how it ended, which its session's state may not
    RunStatus.COMPLETED: Role.STATE_COMPLETED,
    RunStatus.FAILED: Role.STATE_FAILED,
    RunStatus.TIMED_OUT: Role.STATE_FAILED,
    RunStatus.CANCELLED: Role.STATE_CANCELLED,
    RunStatus.INTERRUPTED: Role.STATE_INTERRUPTED,
}


MIN_NAME_PX = 90  # of a row's width kept for the session's name before badges are dropped


class SessionDelegate(QStyledItemDelegate):
    def sizeHint(self, option: QStyleOptionViewItem, index: AnyIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), max(size.height(), QFontMetrics(option.font).height() + 10))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: AnyIndex) -> None:
        if index.data(ROLE_KIND) != KIND_SESSION:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        state = SessionState(index.data(ROLE_STATE))
        badges = self._badges(index, state)
        small = QFont(opt.font)
        small.setPointSizeF(max(small.pointSizeF() * 0.85, 7))
        metrics = QFontMetrics(small)
        widths = [metrics.horizontalAdvance(text) + 12 for text, _ in badges]
        # The name keeps room to be read: the least important badges go first (the row's
        # tooltip still says everything), and what is left of the name elides in the middle.
        room = opt.rect.width() - 24 - MIN_NAME_PX
        while len(badges) > 1 and sum(widths) + 6 * len(widths) + 12 > room:
            badges, widths = badges[:-1], widths[:-1]
        reserved = sum(widths) + 6 * len(widths) + 12
        opt.text = QFontMetrics(opt.font).elidedText(
            opt.text, Qt.TextElideMode.ElideMiddle, max(opt.rect.width() - reserved - 24, 20)
        )
        self.last_name = opt.text  # as painted (tests read it)
        style = opt.widget.style() if opt.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(small)
        right = opt.rect.right() - 6
        height = metrics.height() + 4
        top = opt.rect.top() + (opt.rect.height() - height) / 2
        for (text, role), width in zip(reversed(badges), reversed(widths), strict=True):
            rect = QRectF(right - width, top, width, height)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(color(role))
            painter.drawRoundedRect(rect, height / 2, height / 2)
            painter.setPen(color(Role.BADGE_TEXT))
            painter.drawText(rect, int(Qt.AlignmentFlag.AlignCenter), text)
            right -= width + 6
        if index.data(ROLE_UNREAD):
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(opt.palette.color(QPalette.ColorRole.Highlight))
            painter.drawEllipse(QRectF(opt.rect.left() - 10, opt.rect.center().y() - 3, 6, 6))
        painter.restore()

    @staticmethod
    def _badges(index: AnyIndex, state: SessionState) -> list[tuple[str, Role]]:
        """The row's badges, most important first: one that says its state (waiting
        approvals say "awaiting approval" better than the state does), then the marks."""
        badges: list[tuple[str, Role]] = []
        approvals = int(index.data(ROLE_APPROVALS) or 0)
        background = int(index.data(ROLE_BACKGROUND) or 0)
        queued = int(index.data(ROLE_QUEUED) or 0)
        busy = bool(index.data(ROLE_BUSY))
        if approvals:
            badges.append((f"{approvals} to approve", Role.BADGE_APPROVALS))
        elif state == SessionState.IDLE and index.data(ROLE_LAST_FAILED):
            # A persistent session is idle again after a failure (spec §3.2); say it failed.
            badges.append(("last turn failed", BADGE_ROLES[SessionState.FAILED]))
        elif state != SessionState.IDLE or not (busy or background or queued):
            badges.append(_state_badge(index, state))
        external = index.data(ROLE_EXTERNAL_AGENT)
        if isinstance(external, str):  # an external agent (ACP) runs this session: what kind
            badges.append((external_mark(external), Role.STATE_ARCHIVED))
        run = index.data(ROLE_AGENT_RUN)
        if isinstance(run, AgentRun):  # a sub-agent's run: foreground or background
            badges.append((MODE_MARKS[run.mode], Role.STATE_ARCHIVED))
        spawned = index.data(ROLE_SPAWNED_AGENT)
        if isinstance(spawned, str):  # a persistent sub-agent its parent's agent started
            badges.append((spawned_mark(spawned), Role.STATE_ARCHIVED))
        if busy:
            badges.append(("in use elsewhere", Role.BADGE_BUSY))
        if background:  # a play sign and the count: its tooltip says it in words
            badges.append((f"▶ {background}", Role.STATE_RUNNING))
        if queued:
            badges.append((f"{queued} queued", Role.BADGE_QUEUED))
        return badges


def _state_badge(index: AnyIndex, state: SessionState) -> tuple[str, Role]:
    """The state, or for a sub-agent's run how it ended, or its deadline's countdown while it
    runs ("running · 4:32")."""
    run = index.data(ROLE_AGENT_RUN)
    if isinstance(run, AgentRun) and run.status in RUN_BADGE_ROLES:
        return STATUS_LABELS[run.status], RUN_BADGE_ROLES[run.status]
    left = index.data(ROLE_RUN_LEFT)
    if isinstance(run, AgentRun) and isinstance(left, int) and state != SessionState.IDLE:
        return f"{STATE_LABELS[state]} · {countdown_text(left)}", BADGE_ROLES[state]
    return STATE_LABELS[state], BADGE_ROLES[state]
