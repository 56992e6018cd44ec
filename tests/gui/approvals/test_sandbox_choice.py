"""What the approval dialog says the sandbox lets through, and "Run outside the sandbox, once":
its own warning-coloured button, no key, never default, offered only for a command that would
run in the sandbox. Driven with real clicks and keys; ``answer`` is the recording fake."""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from fxdesk.domain.approvals import Approval, Choice, SandboxSummary
from fxdesk.gui.approvals.dialog import ApprovalDialog
from fxdesk.gui.approvals.dock import COL_LABEL, ApprovalsModel
from fxdesk.gui.approvals.presenter import ApprovalsPresenter
from fxdesk.gui.theme import Role, css
from tests.gui.approvals.test_approvals import (  # noqa: F401 - fixtures used by name
    Answers,
    active,
    approval,
    describe,
    keep_running,
    no_bugs,
    shown,
)
from tests.gui.waiting import until

IN_SANDBOX = SandboxSummary(True, writes=("/home/me/notes",), network=False)
NOT_IN_IT = SandboxSummary(False, outside="no sandbox on this machine (bubblewrap is missing)")


def command(n: int, summary: SandboxSummary | None, **detail: Any) -> Approval:
    if summary is not None:
        detail["sandbox"] = summary.to_detail()
    return approval(n, label=f"make step{n}", **detail)


async def test_the_dialog_says_what_the_sandbox_lets_through(qtbot: QtBot) -> None:
    dialog = ApprovalDialog(ApprovalsPresenter(Answers(), describe))
    dialog.presenter.add(command(1, IN_SANDBOX))
    dialog.presenter.add(command(2, NOT_IN_IT))
    dialog.presenter.add(approval(3, tool="write_file", label="/home/me/notes/a.txt"))
    with shown(dialog):
        assert dialog.sandbox_label.isVisible()
        assert dialog.sandbox_label.text() == (
            "Sandbox: may write the workspace, /tmp and /home/me/notes; network off"
        )
        dialog.show_index(1)
        assert dialog.sandbox_label.text() == (
            "Outside the sandbox: no sandbox on this machine (bubblewrap is missing)"
        )
        dialog.show_index(2)  # a file tool does not run in the sandbox: nothing to say
        assert not dialog.sandbox_label.isVisible()


async def test_run_outside_is_its_own_loud_button_offered_only_where_it_applies(
    qtbot: QtBot,
) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(command(1, NOT_IN_IT))
    dialog.presenter.add(approval(2, tool="write_file", label="/home/me/a.txt"))
    dialog.presenter.add(command(3, IN_SANDBOX))
    button = dialog.outside_button
    with shown(dialog):
        assert not button.isVisible()  # runs outside anyway: no such choice
        dialog.show_index(1)
        assert not button.isVisible()  # a file edit
        dialog.show_index(2)
        assert button.isVisible() and button.isEnabled()
        assert css(Role.WARNING) in button.styleSheet()
        assert not (button.isDefault() or button.autoDefault())
        assert button.shortcut().isEmpty() and "&" not in button.text()
        assert button not in dialog.buttons.values()  # not one of the keyed answers
        await active(dialog)
        for key in (Qt.Key.Key_5, Qt.Key.Key_0, Qt.Key.Key_Return, Qt.Key.Key_Space):
            qtbot.keyClick(dialog.label_box, key)
        await asyncio.sleep(0.1)
        assert answers.calls == []  # no key chooses it
        button.click()
        await until(lambda: answers.calls)
    assert answers.calls == [("approval-3", Choice.ONCE_UNSANDBOXED, "", None)]


async def test_key_1_allows_inside_the_sandbox_never_outside(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(command(1, IN_SANDBOX))
    with shown(dialog):
        await active(dialog)
        qtbot.keyClick(dialog.label_box, Qt.Key.Key_1)
        await until(lambda: answers.calls)
    assert answers.choices == [Choice.ONCE]


def test_the_dock_tooltip_names_the_sandbox_too() -> None:
    model = ApprovalsModel(describe, now_ms=lambda: 0)
    model.set_approvals([command(1, IN_SANDBOX)])
    tip = model.data(model.index(0, COL_LABEL), Qt.ItemDataRole.ToolTipRole)
    assert (
        tip == "make step1\nSandbox: may write the workspace, /tmp and /home/me/notes; network off"
    )
