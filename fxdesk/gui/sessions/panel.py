"""The centre of the window for one session: header, transcript, queued messages, composer.

Signals:
    cancel_requested(): cancel the session's running and queued work.
    resume_requested(): resume interrupted work.
    remove_queued(str): take a queued message (work id) out of the queue.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from fxdesk.domain.model import Session, SessionState, WorkKind, WorkStatus
from fxdesk.domain.usage import UsageSummary, UsageTotals, money, tokens
from fxdesk.domain.work import WorkItem
from fxdesk.domain.worktrees import Worktree
from fxdesk.gui.sessions.composer import Composer
from fxdesk.gui.sessions.model import STATE_LABELS
from fxdesk.gui.theme import Role, css
from fxdesk.gui.transcript.delegate import MAX_WIDTH
from fxdesk.gui.transcript.model import TranscriptModel
from fxdesk.gui.transcript.view import TranscriptView

COLUMN_PX = MAX_WIDTH + 28  # the transcript's column and its margins
MIN_LABEL_PX = 40  # header labels' minimum width, whatever their text
RUNNING_STATES = (SessionState.RUNNING, SessionState.AWAITING_APPROVAL)


class SessionPanel(QWidget):
    cancel_requested = Signal()
    resume_requested = Signal()
    remove_queued = Signal(str)

    def __init__(self, model: TranscriptModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session: Session | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 0, 0, 6)
        header = QHBoxLayout()
        self.title = QLabel()
        self.title.setAccessibleName("Session")
        self.title.setTextFormat(Qt.TextFormat.RichText)
        # A long name or path never widens the window: the header is cut, the tooltip whole.
        self.title.setMinimumWidth(MIN_LABEL_PX)
        header.addWidget(self.title, 1)
        self.usage = QLabel()
        self.usage.setAccessibleName("Usage")
        self.usage.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.usage.setMinimumWidth(MIN_LABEL_PX)
        header.addWidget(self.usage)
        self.resume = QPushButton("Resume")
        self.resume.setToolTip("Continue interrupted work from its last saved step")
        self.resume.clicked.connect(self.resume_requested)
        header.addWidget(self.resume)
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Cancel the running and queued work (Esc)")
        self.cancel.clicked.connect(self.cancel_requested)
        header.addWidget(self.cancel)
        layout.addLayout(header)
        self.transcript = TranscriptView(model)
        layout.addWidget(self.transcript, 1)
        # Below the transcript, in the same readable column on a wide screen: the open
        # session's approval, the queue and the composer. The column takes the row up to its
        # maximum width; the stretches on either side take what is left (a static layout: no
        # margins recomputed on resize).
        self.foot = QWidget()
        self.foot.setMaximumWidth(COLUMN_PX)
        policy = self.foot.sizePolicy()
        policy.setHorizontalPolicy(QSizePolicy.Policy.Expanding)
        self.foot.setSizePolicy(policy)
        self.foot_layout = QVBoxLayout(self.foot)
        self.foot_layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.foot, 1000)
        row.addStretch(1)
        layout.addLayout(row)
        self.queue = QFrame()
        self.queue.setObjectName("queue")
        self.queue_layout = QVBoxLayout(self.queue)
        self.queue_layout.setContentsMargins(8, 4, 8, 4)
        self.queue.setStyleSheet("#queue { border-top: 1px solid palette(mid); }")
        self.foot_layout.addWidget(self.queue)
        self.composer = Composer()
        self.foot_layout.addWidget(self.composer)
        self.queued_items: list[WorkItem] = []
        self.show_session(None)

    def show_session(self, session: Session | None, workspace: str = "") -> None:
        self.session = session
        if session is None:
            self.title.setText("")
            self.show_usage(None)
            self.resume.setVisible(False)
            self.cancel.setVisible(False)
            return
        state = STATE_LABELS[session.state]
        quiet = css(Role.QUIET_TEXT)
        where = f" <span style='color: {quiet}'>· {_escape(workspace)}</span>" if workspace else ""
        tree = Worktree.from_config(session.config)
        branch = f" · <b>⎇ {_escape(tree.branch)}</b>" if tree is not None else ""
        self.title.setText(f"<b>{_escape(session.name)}</b> — {state}{branch}{where}")
        tip = f"{session.name} — {state}" + (f"\n{workspace}" if workspace else "")
        if tree is not None:
            tip += f"\nworktree: {tree.folder}\nbranch {tree.branch} from {tree.base[:12]}"
        self.title.setToolTip(tip)
        self.resume.setVisible(session.state == SessionState.INTERRUPTED)
        running = session.state in RUNNING_STATES or session.state == SessionState.QUEUED
        self.cancel.setVisible(running)
        self.composer.set_running(session.state in RUNNING_STATES)
        self.composer.set_mode(session.permission_mode)

    def set_inline_approval(self, widget: QWidget) -> None:
        """Put the open session's approval at the foot of its transcript, above the queue."""
        self.foot_layout.insertWidget(0, widget)

    def show_usage(self, summary: UsageSummary | None) -> None:
        """ "4.0k in / 600 out · $0.021 · tree $0.05 · today $1.20", the whole in its tooltip."""
        if summary is None or (summary.session.model_calls == 0 and summary.today.model_calls == 0):
            self.usage.setText("")
            self.usage.setToolTip("")
            return
        parts = [summary.session.text()] if summary.session.model_calls else []
        if summary.tree != summary.session:
            parts.append(f"tree {_short(summary.tree)}")
        if summary.today.model_calls:  # not "today none" for a session last used before
            parts.append(f"today {_short(summary.today)}")
        self.usage.setText(
            f"<span style='color: {css(Role.QUIET_TEXT)}'>{_escape(' · '.join(parts))}</span>"
        )
        self.usage.setToolTip(
            f"This session: {summary.session.text()}\n"
            f"This session and its sub-agents: {summary.tree.text()}\n"
            f"Every session today: {summary.today.text()}\n"
            "View → Usage shows the last 30 days."
        )

    def show_queue(self, items: list[WorkItem]) -> None:
        """The messages waiting behind the running turn, each removable."""
        pending = [i for i in items if i.status == WorkStatus.PENDING]
        self.queued_items = pending
        while self.queue_layout.count():
            child = self.queue_layout.takeAt(0)
            widget = child.widget() if child is not None else None
            if widget is not None:
                widget.deleteLater()
        for item in pending:
            row = QWidget()
            line = QHBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            kind = "Steers the turn at its next step" if item.kind == WorkKind.STEER else "Queued"
            text = " ".join(item.content.split())
            quiet = css(Role.QUIET_TEXT)
            label = QLabel(f"<span style='color: {quiet}'>{kind}:</span> {_escape(text[:160])}")
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setMinimumWidth(MIN_LABEL_PX)  # a long message must not widen the window
            label.setToolTip(text[:2000])
            line.addWidget(label, 1)
            remove = QPushButton("Remove")
            remove.setAccessibleName(f"Remove queued message {text[:40]}")
            remove.clicked.connect(
                lambda _=False, work_id=item.id: self.remove_queued.emit(work_id)
            )
            line.addWidget(remove)
            self.queue_layout.addWidget(row)
        self.queue.setVisible(bool(pending))


def _short(totals: UsageTotals) -> str:
    """A total in one word: its cost when priced, else its tokens."""
    if totals.reported == 0:
        return "unreported" if totals.model_calls else "none"
    if totals.reported > totals.unpriced:
        return money(totals.cost_usd)
    return f"{tokens(totals.input_tokens + totals.output_tokens)} tokens"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
