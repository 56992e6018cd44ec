"""The session header's usage line: this session, its tree and today, each only when it says
something (found walking the window: a session used on an earlier day read "today none")."""

from __future__ import annotations

from typing import Any

from fxdesk.domain.usage import UsageSummary, UsageTotals
from fxdesk.gui.sessions.panel import SessionPanel
from fxdesk.gui.transcript.model import TranscriptModel
from tests.gui.transcript.test_transcript import FakeHistory


def make_panel(qtbot: Any) -> SessionPanel:
    panel = SessionPanel(TranscriptModel(FakeHistory([])))
    qtbot.addWidget(panel)
    return panel


def test_a_session_used_on_an_earlier_day_shows_no_today_part(qtbot: Any) -> None:
    panel = make_panel(qtbot)
    used = UsageTotals(model_calls=2, input_tokens=4000, output_tokens=600)
    panel.show_usage(UsageSummary(session=used, tree=used, today=UsageTotals()))
    assert "4.0k in / 600 out" in panel.usage.text()
    assert "today" not in panel.usage.text()
    assert "Every session today: no model calls" in panel.usage.toolTip()


def test_today_and_the_tree_show_when_they_differ(qtbot: Any) -> None:
    panel = make_panel(qtbot)
    session = UsageTotals(model_calls=1, input_tokens=100, output_tokens=10, unpriced=1)
    tree = session + UsageTotals(model_calls=1, input_tokens=50, output_tokens=5, unpriced=1)
    panel.show_usage(UsageSummary(session=session, tree=tree, today=tree))
    assert "tree 165 tokens" in panel.usage.text() and "today 165 tokens" in panel.usage.text()


def test_nothing_used_anywhere_shows_nothing(qtbot: Any) -> None:
    panel = make_panel(qtbot)
    panel.show_usage(UsageSummary(UsageTotals(), UsageTotals(), UsageTotals()))
    assert panel.usage.text() == ""
