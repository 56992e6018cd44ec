"""One presenter behind the approval dialog and the Approvals dock: answering in either view goes
through its one routine and both views follow; reloads queue new approvals and name the first.

The ``answer`` and ``load`` callbacks are recording fakes; the views are driven with clicks."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QMainWindow
from pytestqt.qtbot import QtBot

from fxdesk import messages
from fxdesk.domain.approvals import Approval, Choice
from fxdesk.gui.approvals.always_allow import AlwaysAllowDialog
from fxdesk.gui.approvals.dialog import ApprovalDialog
from fxdesk.gui.approvals.dock import ApprovalsDock
from fxdesk.gui.approvals.presenter import (
    CHOICES,
    NOT_PENDING,
    ApprovalsPresenter,
    Outcome,
)
from fxdesk.gui.tasks import TaskGroup
from fxdesk.gui.window.messages import MessagePresenter
from tests.gui.approvals.test_approvals import (  # noqa: F401 (keep_running, no_bugs: autouse)
    NOW_MS,
    Answers,
    approval,
    child_dialog,
    describe,
    keep_running,
    no_bugs,
    shown,
)
from tests.gui.waiting import until


def views(answers: Answers) -> tuple[ApprovalsPresenter, ApprovalDialog, ApprovalsDock]:
    presenter = ApprovalsPresenter(answers, describe)
    return presenter, ApprovalDialog(presenter), ApprovalsDock(presenter, now_ms=lambda: NOW_MS)


def ids(items: list[Approval]) -> list[str]:
    return [item.id for item in items]


def dock_ids(dock: ApprovalsDock) -> list[str]:
    return [dock.model.approval(row).id for row in range(dock.count)]


async def test_the_dialog_and_the_dock_answer_through_one_presenter_and_both_follow(
    qtbot: QtBot,
) -> None:
    answers = Answers(gone={"approval-3"})
    presenter, dialog, dock = views(answers)
    with shown(dock), shown(dialog):
        presenter.set_pending([approval(1), approval(2, label="make"), approval(3, label="ls")])
        assert dialog.count == dock.count == 3
        assert dialog.counter.text() == "Approval 1 of 3"

        # The dock answers one: it leaves the dialog's queue at once, not at the next reload.
        dock.select("approval-2")
        dock.buttons[Choice.ONCE].click()
        await until(lambda: dock.count == 2)
        assert dialog.count == 2 and dialog.counter.text() == "Approval 1 of 2"
        assert answers.calls == [("approval-2", Choice.ONCE, "", None)]
        current = dialog.current
        assert current is not None and current.id == "approval-1"  # the dialog stays put

        # The dialog answers its current one: the dock loses the row too.
        dialog.buttons[Choice.SESSION].click()
        await until(lambda: dialog.count == 1)
        assert dock_ids(dock) == ["approval-3"] and ids(presenter.approvals()) == ["approval-3"]
        assert answers.calls[-1] == ("approval-1", Choice.SESSION, "", None)

        # Answered elsewhere meanwhile: the dialog says so and stays; the dock is emptied.
        dialog.reason_edit.setText("not now")
        dialog.buttons[Choice.DENY].click()
        await until(dialog.notice.isVisible)
        assert dialog.notice.text() == NOT_PENDING and dialog.isVisible()
        assert dock.count == 0 and dock.empty_label.isVisible()
        assert not dock.notice.isVisible()  # the dock did not answer it
        assert answers.calls[-1] == ("approval-3", Choice.DENY, "not now", None)


async def test_answered_outside_both_views_the_dialog_hides_and_the_dock_empties(
    qtbot: QtBot,
) -> None:
    presenter, dialog, dock = views(Answers())
    with shown(dock), shown(dialog):
        presenter.set_pending([approval(1), approval(2)])
        dialog.present("approval-2", activate=False)
        assert dialog.counter.text() == "Approval 2 of 2"
        presenter.set_pending([approval(1)])  # a reload after the CLI answered approval-2
        current = dialog.current
        assert current is not None and current.id == "approval-1"
        assert dock_ids(dock) == ["approval-1"] and dialog.isVisible()
        presenter.set_pending([])
        assert not dialog.isVisible() and dock.count == 0


async def test_the_dialog_and_the_dock_offer_the_same_choices(qtbot: QtBot) -> None:
    _presenter, dialog, dock = views(Answers())
    with shown(dock), shown(dialog):
        assert list(dialog.buttons) == list(dock.buttons) == [label.choice for label in CHOICES]
        for label in CHOICES:
            in_dialog, in_dock = dialog.buttons[label.choice], dock.buttons[label.choice]
            assert in_dialog.accessibleName() == in_dock.accessibleName() == label.name
            assert in_dialog.text() == f"&{label.key} {label.text}"
            assert in_dock.text() == f"{label.key} {label.short}"  # the same keys answer
            assert in_dialog.toolTip() == f"{label.tip} (key {label.key})"
            assert in_dock.toolTip() == f"{label.tip} (key {label.key} in the list)"
        assert [label.name for label in CHOICES] == [
            "Allow once",
            "Allow for this session",
            "Always allow",
            "Deny",
        ]


async def test_cancelling_always_allow_answers_nothing_and_keeps_the_approval(
    qtbot: QtBot,
) -> None:
    answers = Answers()
    presenter, _dialog, dock = views(answers)
    with shown(dock):
        presenter.set_pending([approval(1)])
        task = asyncio.ensure_future(presenter.answer(approval(1), Choice.ALWAYS, parent=dock))
        editor = await child_dialog(dock, AlwaysAllowDialog)
        editor.cancel_button.click()
        answered = await task
    assert answered.outcome is Outcome.CANCELLED and answered.notice == ""
    assert answers.calls == [] and presenter.count == 1


class Loads:
    """The recording fake ``load``: returns the next list given, optionally held by ``gate``."""

    def __init__(self, *results: list[Approval]) -> None:
        self.results = list(results)
        self.calls = 0
        self.gate: asyncio.Event | None = None

    async def __call__(self) -> list[Approval]:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        return self.results.pop(0) if len(self.results) > 1 else self.results[0]


async def test_a_reload_queues_new_approvals_and_names_the_first_new_one() -> None:
    loads = Loads([approval(1)], [approval(1)], [approval(1), approval(2), approval(3)], [])
    presenter = ApprovalsPresenter(Answers(), describe, load=loads)
    arrived: list[str] = []
    loaded: list[list[str]] = []
    presenter.arrived.connect(arrived.append)
    presenter.loaded.connect(lambda pending: loaded.append(ids(pending)))
    await presenter.reload()
    assert arrived == ["approval-1"] and ids(presenter.approvals()) == ["approval-1"]
    await presenter.reload()  # nothing new: nothing arrives
    assert arrived == ["approval-1"]
    await presenter.reload()
    assert arrived == ["approval-1", "approval-2"]
    assert ids(presenter.approvals()) == ["approval-1", "approval-2", "approval-3"]
    await presenter.reload()
    assert presenter.count == 0 and presenter.current is None
    everything = ["approval-1", "approval-2", "approval-3"]
    assert loaded == [["approval-1"], ["approval-1"], everything, []]


async def test_the_status_line_says_approvals_wait_only_while_they_do(qtbot: QtBot) -> None:
    """Answered here, in the terminal or gone stale, the last one takes "N approvals waiting
    for you" off the status line (it stayed there, about nothing, until it timed out)."""
    window = QMainWindow()
    qtbot.addWidget(window)
    status = window.statusBar()
    shown_messages = MessagePresenter(status, window)
    shown_messages.attach()
    try:
        loads = Loads([approval(1)], [])
        presenter = ApprovalsPresenter(Answers(), describe, load=loads)
        await presenter.reload()
        await until(lambda: "1 approval waiting for you" in status.currentMessage())
        messages.info("Saved.", key="other")  # another message shown meanwhile stays
        await until(lambda: status.currentMessage() == "Saved.")
        await presenter.reload()
        await asyncio.sleep(0.1)
        assert status.currentMessage() == "Saved."
        await presenter.reload()  # still none: nothing to take away
        loads.results = [[approval(2)], []]
        await presenter.reload()
        await until(lambda: "1 approval waiting for you" in status.currentMessage())
        await presenter.reload()  # answered: gone at once (the warning would stay 15 s)
        await until(lambda: status.currentMessage() == "")
    finally:
        shown_messages.detach()


async def test_reload_requests_during_a_reload_make_one_more() -> None:
    loads = Loads([approval(1)], [approval(1), approval(2)])
    loads.gate = asyncio.Event()
    tasks = TaskGroup()
    presenter = ApprovalsPresenter(Answers(), describe, load=loads, tasks=tasks)
    presenter.request_reload()
    await until(lambda: loads.calls == 1)
    for _ in range(3):
        presenter.request_reload()  # ApprovalChanged, three times, while the first reads
    loads.gate.set()
    await until(lambda: presenter.count == 2)
    await until(lambda: len(tasks) == 0)
    assert loads.calls == 2


def test_the_current_approval_follows_removals_like_a_queue() -> None:
    presenter = ApprovalsPresenter(Answers(), describe)
    current: list[str | None] = []
    presenter.current_changed.connect(
        lambda: current.append(presenter.current.id if presenter.current else None)
    )
    presenter.set_pending([approval(1), approval(2), approval(3)])
    assert presenter.select("approval-3") and not presenter.select("approval-9")
    presenter.remove("approval-1")  # before the current one: it stays current
    assert presenter.index == 1 and current == ["approval-1", "approval-3"]
    presenter.remove("approval-3")  # the current one, last: the one before takes its place
    assert current[-1] == "approval-2" and presenter.index == 0
    first = presenter.first_of_session("s1")
    assert first is not None and first.id == "approval-2"
    assert presenter.first_of_session("s9") is None


async def test_an_answer_refused_because_fxdesk_is_shutting_down_is_said_not_a_bug(
    qtbot: QtBot,
) -> None:
    """The engine closes its approval registry at shutdown; an answer given in that moment is
    refused with ``RegistryClosed``. The view says so, the approval stays in the queue (it is
    settled at the next start), and no bug report opens."""
    from fxdesk.engine.facade import RegistryClosed

    async def closed(item: Approval, choice: Choice, reason: str, rules: object) -> None:
        raise RegistryClosed("the approval registry is closed: fxdesk is shutting down")

    presenter = ApprovalsPresenter(closed, describe)
    dialog = ApprovalDialog(presenter)
    with shown(dialog):
        presenter.set_pending([approval(1)])
        answered = await presenter.answer(approval(1), Choice.ONCE, parent=dialog)
        assert answered.outcome is Outcome.FAILED
        assert "shutting down" in answered.notice
        assert ids(presenter.approvals()) == ["approval-1"]
