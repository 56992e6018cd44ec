"""The pending approvals of every session, and the one way the window answers them.

``ApprovalsPresenter`` owns the queue the approval dialog and the Approvals dock both show: which
approvals are pending (in the order they arrived), which one is current (the one the dialog
shows), and a reload from the engine whenever an ``ApprovalChanged`` may have changed them.
``answer`` is the single answering routine behind every button and key of both views: it asks
for the "always" rules when needed, resolves the approval, and drops it from the queue at once,
so both views update together.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QWidget

from fxdesk import messages
from fxdesk.domain.approvals import Approval, ApprovalNotPending, Choice, ChoiceNotOffered
from fxdesk.domain.permissions import PermissionRule
from fxdesk.engine.facade import RegistryClosed, StoreError
from fxdesk.gui.approvals.always_allow import choose_rules
from fxdesk.gui.tasks import TaskGroup, alive

Answer = Callable[[Approval, Choice, str, list[PermissionRule] | None], Awaitable[None]]
"""Resolves an approval: (approval, choice, deny reason, edited rules or None); raises
``ApprovalNotPending`` when it was answered elsewhere or its work stopped."""
Describe = Callable[[Approval], tuple[str, str]]
"""(session name, workspace path) of an approval, for display."""
Load = Callable[[], Awaitable[list[Approval]]]
"""Every pending approval, oldest first."""

SHUTTING_DOWN = "fxdesk is shutting down; this approval will be asked again at the next start."
NOT_PENDING = "This approval is no longer pending: it was answered elsewhere or its work stopped."


@dataclass(frozen=True)
class ChoiceLabel:
    """How a choice is offered: its button text, the dock's shorter one, its key and tooltip."""

    choice: Choice
    text: str  # "Always allow…" (an ellipsis when it asks something more first)
    short: str  # the dock is narrow: "For this session"
    key: str  # the digit that answers with it in the approval dialog ('' for none)
    tip: str

    @property
    def name(self) -> str:
        """The accessible name: the text without an ellipsis."""
        return self.text.rstrip("…")


# Not in CHOICES: the dialog offers it apart, warning-styled, with no key of its own, and only
# for a command that would run in the sandbox (``Approval.offers_outside``).
OUTSIDE = ChoiceLabel(
    Choice.ONCE_UNSANDBOXED,
    "⚠ Run outside the sandbox, once",
    "Outside the sandbox",
    "",
    "Run this one command without the sandbox: nothing then keeps it from your keys, your "
    "files or the network. The next command asks again.",
)

CHOICES = (
    ChoiceLabel(
        Choice.ONCE,
        "Allow once",
        "Allow once",
        "1",
        "Allow this one action; the next one like it asks again",
    ),
    ChoiceLabel(
        Choice.SESSION,
        "Allow for this session",
        "For this session",
        "2",
        "Allow exactly this until the session ends",
    ),
    ChoiceLabel(
        Choice.ALWAYS,
        "Always allow…",
        "Always allow…",
        "3",
        "Store a rule (you can edit it first) so this is never asked again",
    ),
    ChoiceLabel(
        Choice.DENY,
        "Deny",
        "Deny",
        "4",
        "Refuse; the agent is told, with your reason if you give one",
    ),
)


class Outcome(enum.Enum):
    """How an attempt to answer ended."""

    ANSWERED = "answered"
    CANCELLED = "cancelled"  # the person closed the "Always allow…" editor: nothing was sent
    NOT_PENDING = "not_pending"  # answered elsewhere, or its work stopped
    FAILED = "failed"  # it could not be stored; ``notice`` says why


@dataclass(frozen=True)
class Answered:
    """What ``ApprovalsPresenter.answer`` did, and what to tell the person ("" for nothing)."""

    outcome: Outcome
    notice: str = ""


class ApprovalsPresenter(QObject):
    """The pending approvals, the current one, and answering them. See the module docstring.

    Args:
        answer: resolves an approval (the engine's ``PermissionService.resolve``).
        describe: (session name, workspace path) of an approval.
        load: reads every pending approval; needed only by ``reload``.
        tasks: where reloads run; needed only by ``request_reload``.
        parent: the owning QObject.

    Signals:
        changed(): approvals were added to or removed from the queue.
        current_changed(): another approval (or none) is current.
        arrived(str): a reload found approvals not seen before; the id of the first.
        loaded(object): a reload finished: the list of every pending ``Approval``.
    """

    changed = Signal()
    current_changed = Signal()
    arrived = Signal(str)
    loaded = Signal(object)

    def __init__(
        self,
        answer: Answer,
        describe: Describe,
        *,
        load: Load | None = None,
        tasks: TaskGroup | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._answer = answer
        self.describe = describe
        self._load = load
        self._tasks = tasks or TaskGroup()
        self._queue: list[Approval] = []
        self._index = 0
        self._reload: asyncio.Task[None] | None = None
        self._again = False

    # --- the queue -----------------------------------------------------------------------

    @property
    def count(self) -> int:
        """How many approvals are pending."""
        return len(self._queue)

    @property
    def index(self) -> int:
        """The position of the current approval (0 when none is pending)."""
        return self._index

    @property
    def current(self) -> Approval | None:
        """The approval the dialog shows."""
        return self._queue[self._index] if self._queue else None

    def approvals(self) -> list[Approval]:
        """Every pending approval, in the order they arrived."""
        return list(self._queue)

    def is_pending(self, approval_id: str) -> bool:
        return any(a.id == approval_id for a in self._queue)

    def first_of_session(self, session_id: str) -> Approval | None:
        """The oldest approval waiting in ``session_id``."""
        return next((a for a in self._queue if a.session_id == session_id), None)

    def add(self, approval: Approval) -> bool:
        """Queue ``approval`` after the others; False when its id is queued already."""
        if self.is_pending(approval.id):
            return False
        self._queue.append(approval)
        self.changed.emit()
        if len(self._queue) == 1:
            self._index = 0
            self.current_changed.emit()
        return True

    def remove(self, approval_id: str) -> bool:
        """Drop an approval that was answered or cancelled; the next one becomes current when it
        was. False when it was not queued."""
        position = next((i for i, a in enumerate(self._queue) if a.id == approval_id), None)
        if position is None:
            return False
        was_current = position == self._index
        del self._queue[position]
        if position < self._index:
            self._index -= 1
        self._index = min(self._index, max(0, len(self._queue) - 1))
        self.changed.emit()
        if was_current:
            self.current_changed.emit()
        return True

    def set_pending(self, approvals: list[Approval]) -> list[Approval]:
        """Make the queue ``approvals``: the ones gone are removed, new ones queued after the
        others. Returns the new ones."""
        wanted = {a.id for a in approvals}
        for queued in self.approvals():
            if queued.id not in wanted:
                self.remove(queued.id)
        return [a for a in approvals if self.add(a)]

    def select(self, approval_id: str) -> bool:
        """Make ``approval_id`` current; False when it is not queued."""
        position = next((i for i, a in enumerate(self._queue) if a.id == approval_id), None)
        if position is None:
            return False
        self.select_index(position)
        return True

    def select_index(self, index: int) -> None:
        """Make the approval at ``index`` (0-based) current; out of range does nothing."""
        if 0 <= index < len(self._queue) and index != self._index:
            self._index = index
            self.current_changed.emit()

    # --- answering -----------------------------------------------------------------------

    async def answer(
        self, approval: Approval, choice: Choice, *, reason: str = "", parent: QWidget
    ) -> Answered:
        """Answer ``approval`` with ``choice``: the one routine of the dialog and the dock.

        "Always allow…" first lets the person edit the rules in a window-modal editor over
        ``parent``. An approval answered (or found no longer pending) leaves the queue at once.

        Args:
            approval: the approval to answer.
            choice: the person's answer.
            reason: told to the agent with a deny; ignored otherwise.
            parent: the view asking (the rule editor opens over it).

        Returns:
            What happened, and the notice to show (empty when there is nothing to say).
        """
        rules: list[PermissionRule] | None = None
        if choice == Choice.ALWAYS:
            _, workspace = self.describe(approval)
            rules = await choose_rules(parent, approval, workspace)
            if rules is None or not alive(parent):
                return Answered(Outcome.CANCELLED)  # back to the approval
            if not self.is_pending(approval.id):
                return Answered(Outcome.NOT_PENDING, NOT_PENDING)  # answered meanwhile
        try:
            await self._answer(approval, choice, reason if choice == Choice.DENY else "", rules)
        except ApprovalNotPending:
            self.remove(approval.id)
            return Answered(Outcome.NOT_PENDING, NOT_PENDING)
        except ChoiceNotOffered as exc:  # an answer this approval does not have
            return Answered(Outcome.FAILED, str(exc))
        except StoreError as exc:
            return Answered(Outcome.FAILED, exc.user_message)
        except RegistryClosed:  # answered in the moment fxdesk quits: the next start settles it
            return Answered(Outcome.FAILED, SHUTTING_DOWN)
        self.remove(approval.id)
        return Answered(Outcome.ANSWERED)

    # --- reloading -----------------------------------------------------------------------

    @Slot()
    def request_reload(self) -> None:
        """Pending approvals may have changed: reload them (once more after a reload running
        now, however many times this is called meanwhile)."""
        if self._reload is not None and not self._reload.done():
            self._again = True
            return
        self._reload = self._tasks.spawn(self.reload(), "approvals")

    async def reload(self) -> None:
        """Read the pending approvals and make them the queue; ``arrived`` names a new one."""
        assert self._load is not None, "reload needs a load function"
        while True:
            self._again = False
            pending = await self._load()
            fresh = self.set_pending(pending)
            self.loaded.emit(pending)
            if not pending:
                messages.withdraw("approvals")  # answered (here, in the terminal, or gone)
            if fresh:
                self.arrived.emit(fresh[0].id)
                count = len(pending)
                messages.warning(
                    f"{count} approval{'s' if count != 1 else ''} waiting for you "
                    "(Ctrl+Shift+A to answer).",
                    key="approvals",
                )
            if not self._again:
                return
