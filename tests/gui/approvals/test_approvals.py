"""The approval dialog and the Approvals dock.

The dialog and dock are driven with real key presses and clicks; only the ``answer`` callback is a
recording fake. (The Rules page is tested in ``tests/gui/settings/test_rules.py``.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QDialog, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from fxdesk import messages
from fxdesk.domain.approvals import Approval, ApprovalNotPending, ApprovalStatus, Choice
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.gui.approvals.always_allow import AlwaysAllowDialog
from fxdesk.gui.approvals.dialog import ApprovalDialog
from fxdesk.gui.approvals.dock import (
    COL_AGE,
    COL_LABEL,
    COL_SESSION,
    COL_TOOL,
    EMPTY_TEXT,
    ApprovalsDock,
    ApprovalsModel,
)
from fxdesk.gui.approvals.presenter import NOT_PENDING, ApprovalsPresenter
from fxdesk.gui.widgets import code_spans, monospace
from tests.gui.settings.test_settings import focus_chain, shown, unnamed_controls
from tests.gui.waiting import until

NOW_MS = 1_700_000_000_000
WORKSPACE = "/home/me/project"
LONG_COMMAND = (
    "cd frontend && npm ci --no-audit --prefer-offline && npm run lint -- --max-warnings=0 "
    "&& npm test -- --coverage --reporters=default --reporters=jest-junit "
    "&& curl -fsS https://example.invalid/upload --data-binary @coverage/lcov.info"
)
DIFF = """--- a/app.py
+++ b/app.py
@@ -1,3 +1,3 @@
 import os
-DEBUG = True
+DEBUG = False
 print(os.getcwd())
"""


def approval(
    n: int = 1,
    *,
    tool: str = "run_command",
    label: str = "npm test",
    session: str = "s1",
    **detail: Any,
) -> Approval:
    explanation = detail.pop("explanation", "")
    base: dict[str, Any] = {
        "reason": "No rule allows this command yet.",
        "uncovered": [label] if tool == "run_command" else [],
        "targets": [] if tool == "run_command" else [label],
        "outside": False,
        "workspace_id": 7,
        "mode": "ask",
    }
    base.update(detail)
    return Approval(
        id=f"approval-{n}",
        session_id=session,
        root_id=session,
        work_id=f"work-{n}",
        call_id=f"call-{n}",
        fingerprint=f"fp-{n}",
        tool=tool,
        label=label,
        explanation=explanation,
        detail=base,
        created_at_ms=NOW_MS - n * 60_000,
    )


def describe(item: Approval) -> tuple[str, str]:
    return (f"session {item.session_id}", WORKSPACE)


@dataclass
class Answers:
    """The recording fake ``answer``: what was asked, optionally held until ``release``."""

    calls: list[tuple[str, Choice, str, list[PermissionRule] | None]] = field(default_factory=list)
    gone: set[str] = field(default_factory=set)  # these raise ApprovalNotPending
    gate: asyncio.Event | None = None

    async def __call__(
        self, item: Approval, choice: Choice, reason: str, rules: list[PermissionRule] | None
    ) -> None:
        self.calls.append((item.id, choice, reason, rules))
        if self.gate is not None:
            await self.gate.wait()
        if item.id in self.gone:
            raise ApprovalNotPending(item.id, ApprovalStatus.ALLOWED_ONCE)

    @property
    def choices(self) -> list[Choice]:
        return [call[1] for call in self.calls]


@pytest.fixture(autouse=True)
def keep_running(qapp: QApplication) -> Iterator[None]:
    before = qapp.quitOnLastWindowClosed()
    qapp.setQuitOnLastWindowClosed(False)
    yield
    qapp.setQuitOnLastWindowClosed(before)


@pytest.fixture(autouse=True)
def no_bugs() -> Iterator[None]:
    """Fails the test if a task the widgets started ended in an unexpected error."""
    seen: list[messages.Message] = []
    detach = messages.hub.attach(seen.append)
    yield
    detach()
    errors = [m.text for m in seen if m.level == messages.Level.ERROR]
    assert not errors, errors


async def active(dialog: ApprovalDialog) -> None:
    dialog.present()
    await until(dialog.isActiveWindow)


async def child_dialog(owner: QWidget, kind: type[QDialog]) -> Any:
    found = await until(lambda: next((d for d in owner.findChildren(kind) if d.isVisible()), None))
    assert isinstance(found, kind)
    return found


# --- the dialog ------------------------------------------------------------------------------


async def test_keys_1_to_4_answer_with_their_choice(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    for n in range(1, 5):
        dialog.presenter.add(approval(n, label=f"make step{n}"))
    with shown(dialog):
        await active(dialog)
        for key, n in ((Qt.Key.Key_1, 1), (Qt.Key.Key_2, 2), (Qt.Key.Key_3, 3), (Qt.Key.Key_4, 4)):
            current = dialog.current
            assert current is not None and current.id == f"approval-{n}"
            qtbot.keyClick(dialog.label_box, key)
            if key == Qt.Key.Key_3:  # "Always allow…" asks which rules first
                editor = await child_dialog(dialog, AlwaysAllowDialog)
                editor.save_button.click()
            await until(lambda n=n: len(answers.calls) == n and dialog.count == 4 - n)
            if dialog.count:  # offscreen: nothing gives the focus back after the editor
                await active(dialog)
        assert [c[0] for c in answers.calls] == [f"approval-{n}" for n in range(1, 5)]
        assert answers.choices == [Choice.ONCE, Choice.SESSION, Choice.ALWAYS, Choice.DENY]
        always = answers.calls[2][3]
        assert always == [
            PermissionRule(
                "run_command", "make step3", Verdict.ALLOW, Scope.WORKSPACE, scope_key="7"
            )
        ]
        assert [c[3] for c in answers.calls if c[1] != Choice.ALWAYS] == [None, None, None]
        assert not dialog.isVisible()  # nothing left: it hides


async def test_the_keypad_digits_answer_too(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1))
    with shown(dialog):
        await active(dialog)
        keypad = Qt.KeyboardModifier.KeypadModifier
        qtbot.keyClick(dialog.label_box, Qt.Key.Key_4, keypad)
        await until(lambda: answers.calls)
    assert answers.choices == [Choice.DENY]


async def test_present_shows_the_approval_asked_for(qtbot: QtBot) -> None:
    dialog = ApprovalDialog(ApprovalsPresenter(Answers(), describe))
    for n in (1, 2, 3):
        dialog.presenter.add(approval(n, label=f"make {n}"))
    with shown(dialog):
        dialog.hide()
        dialog.present("approval-3")
        assert dialog.isVisible() and dialog.counter.text() == "Approval 3 of 3"
        assert dialog.label_box.toPlainText() == "make 3"
        dialog.present("not-queued", activate=False)  # unknown: stays where it is
        assert dialog.label_box.toPlainText() == "make 3"


async def test_enter_or_return_alone_answers_nothing(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1, label=LONG_COMMAND, uncovered=["npm ci", "curl -fsS x"]))
    dialog.presenter.add(approval(2, tool="edit_file", label=f"{WORKSPACE}/app.py", preview=DIFF))
    with shown(dialog):
        await active(dialog)
        buttons = dialog.findChildren(QPushButton)
        assert buttons and not any(b.isDefault() or b.autoDefault() for b in buttons)
        for page in (0, 1):
            dialog.show_index(page)
            for widget in [dialog, *focus_chain(dialog)]:
                widget.setFocus()
                for key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                    qtbot.keyClick(widget, key)
        await asyncio.sleep(0.1)
        assert answers.calls == []
        assert dialog.isVisible() and dialog.count == 2


async def test_escape_hides_without_answering(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1))
    with shown(dialog):
        await active(dialog)
        qtbot.keyClick(dialog.label_box, Qt.Key.Key_Escape)
        await until(lambda: not dialog.isVisible())
        await asyncio.sleep(0.05)
        assert answers.calls == [] and dialog.count == 1  # still pending, still queued


async def test_approvals_queue_with_a_counter_and_leave_when_answered_elsewhere(
    qtbot: QtBot,
) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    with shown(dialog):
        dialog.presenter.add(approval(1, label="make one"))
        assert not dialog.counter.isVisible()  # one alone: no counter
        assert dialog.presenter.add(approval(2, label="make two"))
        assert dialog.presenter.add(approval(3, label="make three"))
        assert not dialog.presenter.add(approval(2, label="make two"))  # the same id again: ignored
        assert dialog.count == 3
        assert dialog.counter.isVisible() and dialog.counter.text() == "Approval 1 of 3"
        assert dialog.label_box.toPlainText() == "make one"
        dialog.next_button.click()
        assert dialog.counter.text() == "Approval 2 of 3"
        assert dialog.label_box.toPlainText() == "make two"
        dialog.reason_edit.setText("typed for two")
        # Not the one shown: it stays, and so does the reason.
        assert dialog.presenter.remove("approval-3")
        assert dialog.counter.text() == "Approval 2 of 2"
        assert dialog.reason_edit.text() == "typed for two"
        assert not dialog.presenter.remove("approval-3")
        assert dialog.presenter.remove("approval-2")  # the one shown: the next one takes its place
        current = dialog.current
        assert current is not None and current.id == "approval-1"
        assert not dialog.counter.isVisible() and dialog.reason_edit.text() == ""
        assert dialog.isVisible()
        assert dialog.presenter.remove("approval-1")
        assert not dialog.isVisible() and dialog.count == 0 and dialog.current is None
    assert answers.calls == []


async def test_the_deny_reason_reaches_the_agent(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1, label="rm -rf build"))
    with shown(dialog):
        await active(dialog)
        dialog.reason_edit.setFocus()
        qtbot.keyClicks(dialog.reason_edit, "use make clean 4 times")  # digits type, not answer
        assert answers.calls == []
        assert dialog.reason_edit.text() == "use make clean 4 times"
        dialog.buttons[Choice.DENY].click()
        await until(lambda: answers.calls)
    assert answers.calls == [("approval-1", Choice.DENY, "use make clean 4 times", None)]


async def test_a_reason_is_not_sent_with_an_allow(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1))
    with shown(dialog):
        dialog.reason_edit.setText("never mind")
        dialog.buttons[Choice.ONCE].click()
        await until(lambda: answers.calls)
    assert answers.calls == [("approval-1", Choice.ONCE, "", None)]


async def test_always_allow_edits_the_rules_before_they_are_stored(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    item = approval(1, label="npm test && npm run lint", uncovered=["npm test", "npm run lint"])
    dialog.presenter.add(item)
    with shown(dialog):
        # Cancel goes back to the approval, answering nothing.
        dialog.buttons[Choice.ALWAYS].click()
        editor = await child_dialog(dialog, AlwaysAllowDialog)
        assert editor.windowModality() != Qt.WindowModality.NonModal
        assert not dialog.buttons[Choice.ONCE].isEnabled()  # no answer while the editor is open
        editor.cancel_button.click()
        await until(lambda: dialog.buttons[Choice.ONCE].isEnabled())
        assert answers.calls == [] and dialog.current == item

        dialog.buttons[Choice.ALWAYS].click()
        editor = await child_dialog(dialog, AlwaysAllowDialog)
        assert [e.text() for e in editor.pattern_edits] == ["npm test", "npm run lint"]
        assert all(c.isVisible() for c in editor.match_combos)  # commands: match is offered
        assert editor.scope_combos[0].currentText() == f"this workspace ({WORKSPACE})"
        assert unnamed_controls(editor) == []
        editor.pattern_edits[0].setText("")
        editor.save_button.click()
        await until(editor.message.isVisible)  # an empty pattern is not saved
        assert answers.calls == []
        editor.pattern_edits[0].setText("npm")
        prefix = editor.match_combos[0].findData(Match.PREFIX.value)
        editor.match_combos[0].setCurrentIndex(prefix)
        assert editor.match_combos[0].currentText().startswith("prefix — also longer commands")
        editor.scope_combos[1].setCurrentIndex(editor.scope_combos[1].findText("everywhere"))
        editor.save_button.click()
        await until(lambda: answers.calls)
    assert answers.calls == [
        (
            "approval-1",
            Choice.ALWAYS,
            "",
            [
                PermissionRule(
                    "run_command",
                    "npm",
                    Verdict.ALLOW,
                    Scope.WORKSPACE,
                    Match.PREFIX,
                    scope_key="7",
                ),
                PermissionRule("run_command", "npm run lint", Verdict.ALLOW, Scope.GLOBAL),
            ],
        )
    ]


async def test_always_allow_for_a_file_offers_no_match_choice(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1, tool="edit_file", label=f"{WORKSPACE}/app.py", preview=DIFF))
    with shown(dialog):
        dialog.buttons[Choice.ALWAYS].click()
        editor = await child_dialog(dialog, AlwaysAllowDialog)
        assert [e.text() for e in editor.pattern_edits] == [f"{WORKSPACE}/app.py"]
        assert not editor.match_combos[0].isVisible()
        editor.cancel_button.click()
        await until(lambda: dialog.buttons[Choice.ALWAYS].isEnabled())
    assert answers.calls == []


async def test_an_approval_answered_elsewhere_says_so_and_moves_on(qtbot: QtBot) -> None:
    answers = Answers(gone={"approval-1"})
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1, label="make one"))
    dialog.presenter.add(approval(2, label="make two"))
    with shown(dialog):
        dialog.buttons[Choice.ONCE].click()
        await until(dialog.notice.isVisible)
        assert dialog.notice.text() == NOT_PENDING
        assert dialog.notice.text().startswith("This approval is no longer pending")
        assert dialog.count == 1 and dialog.label_box.toPlainText() == "make two"
        assert dialog.buttons[Choice.ONCE].isEnabled()
        dialog.buttons[Choice.SESSION].click()
        await until(lambda: len(answers.calls) == 2)
        await until(lambda: not dialog.isVisible())
        assert not dialog.notice.isVisible()  # a later good answer clears it
    assert answers.choices == [Choice.ONCE, Choice.SESSION]


async def test_the_last_approval_gone_stays_open_with_the_message(qtbot: QtBot) -> None:
    answers = Answers(gone={"approval-1"})
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1))
    with shown(dialog):
        dialog.buttons[Choice.DENY].click()
        await until(dialog.notice.isVisible)
        assert dialog.isVisible() and dialog.count == 0  # so the message can be read
        assert dialog.empty_label.isVisible()
        assert not any(b.isEnabled() for b in dialog.buttons.values())


async def test_buttons_wait_for_the_answer_so_nothing_is_answered_twice(qtbot: QtBot) -> None:
    answers = Answers(gate=asyncio.Event())
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(approval(1))
    dialog.presenter.add(approval(2))
    with shown(dialog):
        await active(dialog)
        qtbot.keyClick(dialog.label_box, Qt.Key.Key_1)
        await until(lambda: answers.calls)
        assert not any(b.isEnabled() for b in dialog.buttons.values())
        qtbot.keyClick(dialog.label_box, Qt.Key.Key_1)
        dialog.buttons[Choice.DENY].click()
        await asyncio.sleep(0.05)
        assert len(answers.calls) == 1
        assert answers.gate is not None
        answers.gate.set()
        await until(lambda: dialog.count == 1)
        assert all(b.isEnabled() for b in dialog.buttons.values())
    assert answers.calls == [("approval-1", Choice.ONCE, "", None)]


async def test_the_dialog_shows_all_of_the_command_and_why(qtbot: QtBot) -> None:
    answers = Answers()
    dialog = ApprovalDialog(ApprovalsPresenter(answers, describe))
    dialog.presenter.add(
        approval(
            1,
            label=LONG_COMMAND,
            uncovered=["npm ci --no-audit --prefer-offline", "curl -fsS https://example.invalid"],
            explanation="I need the coverage report uploaded for the PR check.",
            outside=True,
        )
    )
    dialog.presenter.add(approval(2, tool="edit_file", label=f"{WORKSPACE}/app.py", preview=DIFF))
    with shown(dialog):
        assert dialog.windowTitle() == "Approval needed"  # Qt adds " — fxdesk" itself
        assert not dialog.isModal()
        assert dialog.tool_label.text() == "Run a command"
        assert dialog.where_label.text() == f"Session “session s1” · {WORKSPACE}"
        box = dialog.label_box
        assert box.toPlainText() == LONG_COMMAND and box.isReadOnly()  # all of it, never elided
        assert box.font().family() == monospace().family()
        assert dialog.reason_label.text() == "No rule allows this command yet."
        assert dialog.uncovered_box.isVisible()
        assert dialog.uncovered_box.toPlainText().splitlines() == [
            "• npm ci --no-audit --prefer-offline",
            "• curl -fsS https://example.invalid",
        ]
        assert dialog.explanation_label.isVisible()
        assert "coverage report" in dialog.explanation_label.text()
        assert dialog.outside_label.isVisible()
        assert not dialog.preview_box.isVisible()
        assert unnamed_controls(dialog) == []

        dialog.show_index(1)
        assert dialog.tool_label.text() == "Edit a file"
        assert dialog.label_box.accessibleName() == "Path"
        assert not dialog.explanation_label.isVisible()  # the agent said nothing
        assert not dialog.uncovered_box.isVisible() and not dialog.outside_label.isVisible()
        assert dialog.preview_box.isVisible()
        assert dialog.preview_box.toPlainText() == DIFF.rstrip("\n")
        lines = {
            block.text(): block
            for block in _blocks(dialog.preview_box.document())
            if block.text()[:1] in "+-"
        }
        added = lines["+DEBUG = False"].blockFormat().background().color()
        removed = lines["-DEBUG = True"].blockFormat().background().color()
        assert added.green() > added.red() and removed.red() > removed.green()
        assert lines["+++ b/app.py"].blockFormat().background().style() == Qt.BrushStyle.NoBrush

        chain = focus_chain(dialog)
        expected = [
            dialog.label_box,
            dialog.preview_box,
            dialog.reason_edit,
            *dialog.buttons.values(),
            dialog.previous_button,
        ]
        assert [w for w in chain if w in expected] == expected


def _blocks(document: Any) -> Iterator[Any]:
    block = document.begin()
    while block.isValid():
        yield block
        block = block.next()


async def test_the_diff_colours_follow_a_dark_palette(qtbot: QtBot, qapp: QApplication) -> None:
    dialog = ApprovalDialog(ApprovalsPresenter(Answers(), describe))
    dialog.presenter.add(approval(1, tool="edit_file", label=f"{WORKSPACE}/app.py", preview=DIFF))
    with shown(dialog):
        light = _added_colour(dialog)
        palette = QPalette(dialog.preview_box.palette())
        palette.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.black)
        dialog.preview_box.setPalette(palette)
        dark = _added_colour(dialog)
        assert light.lightness() > 128 > dark.lightness()  # a tint on either background


def _added_colour(dialog: ApprovalDialog) -> Any:
    block = next(b for b in _blocks(dialog.preview_box.document()) if b.text() == "+DEBUG = False")
    return block.blockFormat().background().color()


# --- the dock --------------------------------------------------------------------------------


def dock_texts(dock: ApprovalsDock, row: int) -> list[str]:
    model = dock.model
    return [
        str(model.index(row, col).data()) for col in (COL_SESSION, COL_TOOL, COL_LABEL, COL_AGE)
    ]


async def test_the_dock_lists_every_pending_approval(qtbot: QtBot) -> None:
    answers = Answers()
    dock = ApprovalsDock(ApprovalsPresenter(answers, describe), now_ms=lambda: NOW_MS)
    with shown(dock):
        assert dock.count == 0 and dock.empty_label.isVisible()
        assert dock.empty_label.text() == EMPTY_TEXT == "Nothing is waiting for you."
        assert not dock.button_box.isVisible()
        first, second = approval(1, label=LONG_COMMAND), approval(2, session="s2", label="ls /")
        dock.presenter.set_pending([first, second])
        assert dock.count == 2 and dock.view.isVisible() and not dock.empty_label.isVisible()
        assert dock_texts(dock, 0) == ["session s1", "Run", LONG_COMMAND, "1 min"]
        assert dock_texts(dock, 1) == ["session s2", "Run", "ls /", "2 min"]
        tooltip = str(dock.model.index(0, COL_LABEL).data(Qt.ItemDataRole.ToolTipRole))
        assert tooltip.replace("\n", "") == LONG_COMMAND  # the full text, in lines
        assert dock.view.textElideMode() != Qt.TextElideMode.ElideNone
        assert dock.model.index(0, COL_AGE).data(Qt.ItemDataRole.ToolTipRole) == "Waiting for 1 min"

        dock.select("approval-2")
        third = approval(3, label="make")
        dock.presenter.set_pending([second, third])  # a refresh keeps the selection
        selected = dock.selected()
        assert selected is not None and selected.id == "approval-2"
        assert [dock_texts(dock, r)[2] for r in range(2)] == ["ls /", "make"]
        dock.presenter.set_pending([third])  # the selected one gone: the first is selected
        selected = dock.selected()
        assert selected is not None and selected.id == "approval-3"
        assert unnamed_controls(dock) == []
        dock.presenter.set_pending([])
        assert dock.empty_label.isVisible() and not dock.button_box.isVisible()


def test_the_approvals_model_passes_the_model_tester(qtmodeltester: Any) -> None:
    model = ApprovalsModel(describe, lambda: NOW_MS)
    model.set_approvals([approval(1), approval(2), approval(3)])
    qtmodeltester.check(model, force_py=True)
    model.set_approvals([approval(4), approval(2), approval(5, label="changed")])
    model.set_approvals([approval(5), approval(2)])  # reordered: reset
    qtmodeltester.check(model, force_py=True)
    assert [model.approval(r).id for r in range(model.rowCount())] == ["approval-5", "approval-2"]


async def test_the_dock_answers_the_selected_row(qtbot: QtBot) -> None:
    answers = Answers(gone={"approval-3"})
    dock = ApprovalsDock(ApprovalsPresenter(answers, describe), now_ms=lambda: NOW_MS)
    with shown(dock):
        dock.presenter.set_pending(
            [approval(1), approval(2, label="make"), approval(3, label="ls")]
        )
        dock.select("approval-2")
        dock.buttons[Choice.SESSION].click()
        await until(lambda: dock.count == 2)
        assert answers.calls == [("approval-2", Choice.SESSION, "", None)]

        dock.select("approval-3")
        dock.buttons[Choice.DENY].click()
        await until(dock.notice.isVisible)
        assert dock.notice.text() == NOT_PENDING and dock.count == 1

        dock.select("approval-1")
        dock.buttons[Choice.ALWAYS].click()
        editor = await child_dialog(dock, AlwaysAllowDialog)
        editor.save_button.click()
        await until(lambda: dock.count == 0)
        assert dock.empty_label.isVisible()
    assert answers.calls[-1] == (
        "approval-1",
        Choice.ALWAYS,
        "",
        [PermissionRule("run_command", "npm test", Verdict.ALLOW, Scope.WORKSPACE, scope_key="7")],
    )


async def test_the_dock_previews_the_selected_row_and_keys_answer_it(qtbot: QtBot) -> None:
    """Issue 14: the dock's "What" column was cut to a few letters with no preview, so
    answering from it was answering blind; its buttons now answer with the dialog's keys."""
    answers = Answers()
    dock = ApprovalsDock(ApprovalsPresenter(answers, describe), now_ms=lambda: NOW_MS)
    change = "--- a/n.md\n+++ b/n.md\n@@ -1 +1 @@\n-old\n+new\n"
    with shown(dock):
        dock.resize(420, 600)
        dock.presenter.set_pending(
            [
                approval(1, label=LONG_COMMAND, explanation="Checking the build first."),
                approval(2, tool="edit_file", label="n.md", preview=change,
                         reason="Edits need your approval in `ask` mode."),
            ]
        )  # fmt: skip
        preview = dock.preview
        assert dock.selected() is not None and dock.preview_scroll.isVisible()
        assert preview.label_box.toPlainText() == LONG_COMMAND  # all of it, not "Wh…"
        assert preview.label_box.accessibleName() == "Command"
        assert "The agent said: “Checking the build first.”" in preview.details.text()
        assert not preview.preview.isVisible()  # a command has no change to show

        dock.view.setFocus()
        qtbot.keyClick(dock.view, Qt.Key.Key_Down)
        selected = dock.selected()
        assert selected is not None and selected.id == "approval-2"
        assert preview.label_box.toPlainText() == "n.md"
        assert preview.label_box.accessibleName() == "Path"
        assert "<code>ask</code>" in preview.reason.text()  # code, not `backticks`
        assert preview.preview.isVisible() and "+new" in preview.preview.toPlainText()

        qtbot.keyClick(dock.view, Qt.Key.Key_2)  # 2: allow for this session, as in the dialog
        await until(lambda: dock.count == 1)
        assert answers.calls == [("approval-2", Choice.SESSION, "", None)]
        assert [b.text().split(" ")[0] for b in dock.buttons.values()] == ["1", "2", "3", "4"]
        qtbot.keyClick(dock.view, Qt.Key.Key_A)  # other keys are the list's
        assert len(answers.calls) == 1


async def test_double_click_or_enter_on_a_row_asks_to_open_it(qtbot: QtBot) -> None:
    dock = ApprovalsDock(ApprovalsPresenter(Answers(), describe), now_ms=lambda: NOW_MS)
    opened: list[str] = []
    dock.open_requested.connect(opened.append)
    with shown(dock):
        dock.presenter.set_pending([approval(1), approval(2, label="make")])
        rect = dock.view.visualRect(dock.model.index(1, COL_TOOL))
        qtbot.mouseClick(dock.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        qtbot.mouseDClick(dock.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
        assert opened == ["approval-2"]
        dock.select("approval-1")
        dock.view.setFocus()
        qtbot.keyClick(dock.view, Qt.Key.Key_Return)
        assert opened == ["approval-2", "approval-1"]


async def test_why_it_asks_shows_code_in_code_type_not_backticks(qtbot: QtBot) -> None:
    """Issue 14 polish: the engine marks commands with backticks; the dialog showed them raw."""
    dialog = ApprovalDialog(ApprovalsPresenter(Answers(), describe))
    reason = "`a < b` uses values only known when it runs, so only a `*` rule can cover it"
    dialog.presenter.add(approval(1, reason=reason))
    with shown(dialog):
        shown_text = dialog.reason_label.text()
        assert "`" not in shown_text
        assert "<code>a &lt; b</code> uses values" in shown_text
        assert "<code>*</code> rule" in shown_text
    assert code_spans("one ` backtick <b>") == "one ` backtick &lt;b&gt;"  # not markup
