"""What is worth a desktop notification, coalesced, and what the tray should show.

``NotificationCenter`` watches session snapshots (``EngineBridge.session_changed``) and the
pending approvals the controller loads. It raises three kinds of event:

- an approval is waiting ("Clean build wants to run `rm -rf build`");
- a session's work failed or was interrupted (an active state → ``failed``/``interrupted``, or
  → ``idle`` when its newest work item failed, as persistent sessions do);
- a session's work finished (an active state → ``idle``/``completed``).

Cancelling and archiving are the person's own doing and are never announced. Nothing is announced
while the person looks at fxdesk (its main window, or one of its dialogs, is the active window):
the window already shows it. That holds for approvals too; an approval that arrives while the
person is looking is still shown by the (non-activating) approval dialog and keeps the tray in
"attention" until it is answered. Events that arrive within ``COALESCE_MS`` of the first become
one notification ("3 sessions finished" / "Finished: A, B, C"), so several agents finishing
together make one popup. The window is fixed from the first event, so a steady trickle cannot
postpone a notification forever.

Signals:
    status_changed(object): the new ``TrayStatus`` (running, approvals, unseen failures).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from fxdesk.domain.approvals import Approval
from fxdesk.domain.model import Session, SessionState
from fxdesk.gui.desktop.notifiers import Notifier
from fxdesk.gui.desktop.tray import TrayStatus

COALESCE_MS = 1500
MAX_LINES = 3  # approvals listed by name in one notification; the rest are counted

ACTIVE = frozenset({SessionState.RUNNING, SessionState.QUEUED, SessionState.AWAITING_APPROVAL})
FINISHED = frozenset({SessionState.IDLE, SessionState.COMPLETED})
FAILED = frozenset({SessionState.FAILED, SessionState.INTERRUPTED})


class Kind(enum.Enum):
    """In order of urgency: the first kind present picks the session a click opens."""

    APPROVAL = "approval"
    FAILED = "failed"
    FINISHED = "finished"


@dataclass(frozen=True)
class Event:
    kind: Kind
    session_id: str
    name: str  # the session's name
    text: str  # the event alone, in words: "Parser failed"
    key: str  # events with the same key in one window are told once


@dataclass(frozen=True)
class Notification:
    title: str
    body: str
    session_id: str | None


class CoalesceTimer(Protocol):
    """The part of ``QTimer`` the centre uses; tests pass a fake they fire by hand."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def isActive(self) -> bool: ...  # QTimer's name


def approval_text(name: str, approval: Approval) -> str:
    """ "Clean build wants to run “rm -rf build”" (a balloon shows no markup)."""
    label = approval.label
    if approval.tool == "start_background":
        what = f"start “{label}” in the background"
    elif approval.runs_command:
        what = f"run “{label}”"
    elif approval.tool == "edit_file":
        what = f"edit {label}"
    elif approval.tool == "write_file":
        what = f"write {label}"
    else:
        what = f"use {approval.tool}" + (f" on {label}" if label else "")
    return f"{name} wants to {what}"


def compose(events: Sequence[Event]) -> Notification:
    """One notification for a window's events: a title per kind, the names in the body."""
    unique = list({event.key: event for event in events}.values())
    by_kind = {kind: [e for e in unique if e.kind is kind] for kind in Kind}
    titles: list[str] = []
    lines: list[str] = []
    approvals = by_kind[Kind.APPROVAL]
    if approvals:
        titles.append(
            "Approval needed" if len(approvals) == 1 else f"{len(approvals)} approvals waiting"
        )
        lines.extend(e.text for e in approvals[:MAX_LINES])
        if len(approvals) > MAX_LINES:
            lines.append(f"…and {len(approvals) - MAX_LINES} more")
    for kind, plural in ((Kind.FAILED, "failed"), (Kind.FINISHED, "finished")):
        found = by_kind[kind]
        if len(found) == 1:
            titles.append(found[0].text)
        elif found:
            titles.append(f"{len(found)} sessions {plural}")
            lines.append(f"{plural.capitalize()}: {', '.join(e.name for e in found)}")
    if not lines:
        only = unique[0].kind if unique else Kind.FINISHED
        lines.append(
            "Open it to see what went wrong." if only is Kind.FAILED else "Ready for what's next."
        )
    first = next((by_kind[kind][0] for kind in Kind if by_kind[kind]), None)
    return Notification(" · ".join(titles), "\n".join(lines), first.session_id if first else None)


class NotificationCenter(QObject):
    """Turns session and approval changes into coalesced notifications and a tray status.

    Args:
        notifier: where notifications go.
        is_looking: True while the person looks at fxdesk (then nothing is announced).
        last_failed: whether a session's newest work item failed (the tree model knows).
        name_of: a session's name, for sessions no snapshot has been seen of yet.
        window_ms: the coalescing window.
        make_timer: builds the coalescing timer around a callback (tests pass a fake).
    """

    status_changed = Signal(object)

    def __init__(
        self,
        notifier: Notifier,
        *,
        is_looking: Callable[[], bool],
        last_failed: Callable[[str], bool] = lambda _session_id: False,
        name_of: Callable[[str], str] = lambda session_id: session_id,
        window_ms: int = COALESCE_MS,
        make_timer: Callable[[Callable[[], None]], CoalesceTimer] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.notifier = notifier
        self.enabled = True
        self._is_looking = is_looking
        self._last_failed = last_failed
        self._name_of = name_of
        self._window_ms = window_ms
        self._timer = (make_timer or self._qt_timer)(self._on_timer_timeout)
        self._states: dict[str, SessionState] = {}
        self._names: dict[str, str] = {}
        self._unseen_failures: set[str] = set()
        self._approvals: dict[str, Approval] = {}
        self._pending: list[Event] = []
        self.status = TrayStatus()
        self._background = 0

    def _qt_timer(self, callback: Callable[[], None]) -> CoalesceTimer:
        timer = QTimer(self)
        timer.setSingleShot(True)
        timer.setInterval(self._window_ms)
        timer.timeout.connect(callback)
        return timer

    # --- input ---------------------------------------------------------------------------

    def seed(self, sessions: Iterable[Session]) -> None:
        """The sessions as they are at start-up: a baseline, nothing is announced."""
        for session in sessions:
            self._states[session.id] = session.state
            self._names[session.id] = session.name
        self._update_status()

    def session_changed(self, session: Session) -> None:
        before = self._states.get(session.id)
        state = self._states[session.id] = session.state
        name = self._names[session.id] = session.name
        if state in ACTIVE or state in (SessionState.CANCELLED, SessionState.ARCHIVED):
            self._unseen_failures.discard(session.id)
        if before in ACTIVE and state not in ACTIVE:
            failed = state in FAILED or (state in FINISHED and self._last_failed(session.id))
            if failed:
                self._unseen_failures.add(session.id)
                verb = "was interrupted" if state == SessionState.INTERRUPTED else "failed"
                self._add(Event(Kind.FAILED, session.id, name, f"{name} {verb}", session.id))
            elif state in FINISHED:
                self._add(Event(Kind.FINISHED, session.id, name, f"{name} finished", session.id))
        self._update_status()

    def approvals_loaded(self, pending: Sequence[Approval], *, announce: bool = True) -> None:
        """The pending approvals now; new ones are announced unless ``announce`` is False."""
        fresh = [a for a in pending if a.id not in self._approvals]
        self._approvals = {a.id: a for a in pending}
        if announce:
            for approval in fresh:
                name = self.session_name(approval.session_id)
                text = approval_text(name, approval)
                self._add(Event(Kind.APPROVAL, approval.session_id, name, text, approval.id))
        self._update_status()

    def session_seen(self, session_id: str) -> None:
        """The person looked at ``session_id``: its failure no longer needs attention."""
        if session_id in self._unseen_failures:
            self._unseen_failures.discard(session_id)
            self._update_status()

    def set_enabled(self, enabled: bool) -> None:
        """Notifications on or off (Settings); the tray keeps counting either way."""
        self.enabled = enabled
        if not enabled:
            self._timer.stop()
            self._pending.clear()

    def session_name(self, session_id: str) -> str:
        return self._names.get(session_id) or self._name_of(session_id)

    # --- output --------------------------------------------------------------------------

    @property
    def waiting(self) -> bool:
        """True while events wait for the coalescing window to close."""
        return bool(self._pending) or self._timer.isActive()

    def _add(self, event: Event) -> None:
        if not self.enabled or self._is_looking():
            return
        self._pending.append(event)
        if not self._timer.isActive():
            self._timer.start()

    def _on_timer_timeout(self) -> None:
        self.flush()

    def flush(self) -> Notification | None:
        """Send what the window collected as one notification (the timer calls this)."""
        self._timer.stop()
        events, self._pending = self._pending, []
        # The person may have come back to the window meanwhile: then they see it there.
        if not events or not self.enabled or self._is_looking():
            return None
        notification = compose(events)
        self.notifier.notify(notification.title, notification.body, notification.session_id)
        return notification

    def set_background_running(self, count: int) -> None:
        """How many background commands run now (the tray's tooltip counts them)."""
        self._background = count
        self._update_status()

    def stop(self) -> None:
        """Quitting: drop what is waiting (work interrupted by the quit is not news)."""
        self.set_enabled(False)

    def _update_status(self) -> None:
        status = TrayStatus(
            running=sum(1 for state in self._states.values() if state in ACTIVE),
            approvals=len(self._approvals),
            failures=len(self._unseen_failures),
            background=self._background,
        )
        if status != self.status:
            self.status = status
            self.status_changed.emit(status)
