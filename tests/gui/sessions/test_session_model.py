"""The session tree model: qtmodeltester, and engine changes touch exactly the rows they change."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, Qt

from fxdesk.domain.model import PermissionMode, Session, SessionMode, SessionState, Workspace
from fxdesk.gui.sessions.model import (
    KIND_SESSION,
    KIND_WORKSPACE,
    ROLE_ID,
    ROLE_KIND,
    ROLE_STATE,
    SessionFilterModel,
    SessionTreeModel,
)


def workspace(wid: int, name: str) -> Workspace:
    return Workspace(id=wid, path=f"/work/{name}", name=name, created_at_ms=wid)


def session(
    sid: str,
    wid: int = 1,
    parent: str | None = None,
    name: str | None = None,
    state: SessionState = SessionState.IDLE,
) -> Session:
    return Session(
        id=sid,
        workspace_id=wid,
        parent_id=parent,
        root_id=parent or sid,
        is_child=parent is not None,
        name=name or sid,
        mode=SessionMode.PERSISTENT,
        profile=None,
        model=None,
        effort=None,
        permission_mode=PermissionMode.ASK,
        state=state,
        archived_from=None,
        generation=1,
        next_event_sequence=2,
        last_work_id=None,
        created_at_ms=0,
        updated_at_ms=0,
    )


def populated() -> SessionTreeModel:
    model = SessionTreeModel()
    model.load(
        [workspace(2, "zeta"), workspace(1, "alpha")],
        # children listed before their parents on purpose
        [
            session("c1", parent="r1"),
            session("g1", parent="c1"),
            session("r1"),
            session("r2", wid=2),
            session("c2", parent="r1", state=SessionState.RUNNING),
        ],
    )
    return model


class Recorder:
    """Records every change signal a model emits."""

    def __init__(self, model: SessionTreeModel) -> None:
        self.events: list[tuple[str, Any]] = []
        model.dataChanged.connect(
            lambda a, b, roles=(): self.events.append(("data", (a.data(ROLE_ID), b.data(ROLE_ID))))
        )
        model.rowsInserted.connect(
            lambda p, first, last: self.events.append(("insert", (p.data(ROLE_ID), first, last)))
        )
        model.rowsRemoved.connect(
            lambda p, first, last: self.events.append(("remove", (p.data(ROLE_ID), first, last)))
        )
        model.rowsMoved.connect(
            lambda sp, s, e, dp, d: self.events.append(
                ("move", (sp.data(ROLE_ID), dp.data(ROLE_ID)))
            )
        )
        model.modelReset.connect(lambda: self.events.append(("reset", None)))
        model.layoutChanged.connect(lambda *a: self.events.append(("layout", None)))


def test_empty_model_passes_modeltester(qtmodeltester: Any) -> None:
    qtmodeltester.check(SessionTreeModel())


def test_populated_model_passes_modeltester(qtmodeltester: Any) -> None:
    model = populated()
    qtmodeltester.check(model)
    assert model.rowCount() == 2


def test_tree_shape_workspaces_roots_children_at_any_depth() -> None:
    model = populated()
    alpha = model.index(0, 0)
    assert alpha.data() == "alpha" and alpha.data(ROLE_KIND) == KIND_WORKSPACE
    r1 = model.index(0, 0, alpha)
    assert r1.data(ROLE_ID) == "r1" and r1.data(ROLE_KIND) == KIND_SESSION
    assert [model.index(i, 0, r1).data(ROLE_ID) for i in range(model.rowCount(r1))] == [
        "c1",
        "c2",
    ]
    c1 = model.session_index("c1")
    assert model.index(0, 0, c1).data(ROLE_ID) == "g1"
    assert model.parent(model.session_index("g1")) == c1
    assert model.index(0, 0, model.index(1, 0)).data(ROLE_ID) == "r2"
    assert model.session_index("c2").data(ROLE_STATE) == "running"


def test_a_state_change_updates_exactly_that_row(qtmodeltester: Any) -> None:
    model = populated()
    qtmodeltester.check(model)
    recorder = Recorder(model)
    model.upsert_session(session("c2", parent="r1", state=SessionState.COMPLETED))
    assert recorder.events == [("data", ("c2", "c2"))]
    assert model.session_index("c2").data(ROLE_STATE) == "completed"


def test_a_new_session_is_inserted_under_its_parent() -> None:
    model = populated()
    recorder = Recorder(model)
    model.upsert_session(session("g2", parent="c1"))
    assert recorder.events == [("insert", ("c1", 1, 1))]
    model.upsert_session(session("r3"))
    assert recorder.events[-1] == ("insert", (1, 1, 1))  # under workspace alpha, after r1


def test_reparenting_moves_the_row() -> None:
    model = populated()
    recorder = Recorder(model)
    model.upsert_session(session("g1", parent="c2"))
    assert recorder.events == [("move", ("c1", "c2"))]
    assert model.parent(model.session_index("g1")) == model.session_index("c2")


def test_workspaces_are_inserted_in_name_order() -> None:
    model = populated()
    recorder = Recorder(model)
    model.add_workspace(workspace(3, "middle"))
    assert recorder.events == [("insert", (None, 1, 1))]
    assert [model.index(i, 0).data() for i in range(3)] == ["alpha", "middle", "zeta"]


def test_removing_a_session_removes_its_subtree() -> None:
    model = populated()
    recorder = Recorder(model)
    model.remove_session("c1")
    assert recorder.events == [("remove", ("r1", 0, 0))]
    assert not model.session_index("g1").isValid()
    assert model.session_count == 3


def test_unknown_workspace_is_an_error() -> None:
    with pytest.raises(KeyError):
        populated().upsert_session(session("x", wid=99))


def test_filter_keeps_ancestors_and_hides_archived(qtmodeltester: Any) -> None:
    model = populated()
    model.upsert_session(session("old", name="old work", state=SessionState.ARCHIVED))
    proxy = SessionFilterModel()
    proxy.setSourceModel(model)
    qtmodeltester.check(proxy)

    def ids(parent: QModelIndex = QModelIndex()) -> list[Any]:
        found = []
        for row in range(proxy.rowCount(parent)):
            index = proxy.index(row, 0, parent)
            found.append(index.data(ROLE_ID))
            found.extend(ids(index))
        return found

    assert "old" not in ids()
    proxy.set_show_archived(True)
    assert "old" in ids()
    proxy.setFilterFixedString("G1")
    assert ids() == [1, "r1", "c1", "g1"]
    proxy.setFilterFixedString("")
    proxy.set_show_archived(False)
    assert len(ids()) == 7

    # Closing a parent hides its whole subtree, even children still open.
    model.upsert_session(session("r1", state=SessionState.ARCHIVED))
    assert [i for i in ids() if isinstance(i, str)] == ["r2"]
    proxy.setFilterFixedString("g1")
    assert ids() == []
    proxy.set_show_archived(True)
    assert ids() == [1, "r1", "c1", "g1"]


def test_tooltips_and_accessible_text() -> None:
    model = populated()
    c2 = model.session_index("c2")
    assert "running" in c2.data(Qt.ItemDataRole.ToolTipRole)
    assert c2.data(Qt.ItemDataRole.AccessibleDescriptionRole) == "session, running"
    assert model.index(0, 0).data(Qt.ItemDataRole.ToolTipRole) == "/work/alpha"


def test_snapshots_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        session("x").name = "y"  # type: ignore[misc]


def test_a_row_has_one_badge_for_its_state_and_keeps_its_name_readable(qtbot: Any) -> None:
    """Waiting approvals say "1 to approve" and not also "awaiting approval"; in a narrow tree
    the least important badges go before the name is crushed (issue 14: a sub-agent row showed
    only "z" and two badges that said the same thing)."""
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtWidgets import QStyleOptionViewItem, QTreeView

    from fxdesk.gui.sessions.delegate import SessionDelegate
    from fxdesk.gui.sessions.model import ROLE_APPROVALS, ROLE_BACKGROUND, ROLE_QUEUED

    model = SessionTreeModel()
    long_name = "Write the user guide for the parser module"
    model.load(
        [workspace(1, "alpha")],
        [session("s1", name=long_name, state=SessionState.AWAITING_APPROVAL)],
    )
    model.set_mark("s1", ROLE_APPROVALS, 1)
    model.set_mark("s1", ROLE_QUEUED, 2)
    model.set_mark("s1", ROLE_BACKGROUND, 1)
    index = model.session_index("s1")
    badges = SessionDelegate._badges(index, SessionState.AWAITING_APPROVAL)
    assert [text for text, _ in badges] == ["1 to approve", "▶ 1", "2 queued"]

    view = QTreeView()
    qtbot.addWidget(view)
    view.setModel(model)
    delegate = SessionDelegate(view)
    drawn: dict[int, str] = {}
    for width in (200, 600):
        option = QStyleOptionViewItem()
        option.rect.setRect(0, 0, width, 28)
        option.font = view.font()
        option.widget = view
        image = QImage(width, 28, QImage.Format.Format_ARGB32)
        painter = QPainter(image)
        delegate.paint(painter, option, index)
        painter.end()
        drawn[width] = delegate.last_name
    assert drawn[600] == long_name
    narrow = drawn[200]
    assert "…" in narrow and narrow.startswith("Write") and narrow.endswith("dule")
    assert len(narrow) >= 8  # a name, not "z"


def test_a_session_run_by_an_external_agent_says_which_in_its_badge_and_tooltip() -> None:
    from fxdesk.gui.sessions.delegate import SessionDelegate

    model = SessionTreeModel()
    acp = {"acp_session": {"id": "a1", "agent": "npx x", "name": "claude-code-acp"}}
    child = dataclasses.replace(session("c1", parent="r1"), config_json=json.dumps(acp))
    model.load([workspace(1, "alpha")], [session("r1"), child])
    index = model.session_index("c1")
    badges = [text for text, _ in SessionDelegate._badges(index, SessionState.IDLE)]
    assert badges == ["idle", "ACP · claude-code-acp"]
    assert "external agent over ACP: claude-code-acp" in index.data(Qt.ItemDataRole.ToolTipRole)
    root = model.session_index("r1")  # the native root: no such badge
    assert [text for text, _ in SessionDelegate._badges(root, SessionState.IDLE)] == ["idle"]
    assert "ACP" not in root.data(Qt.ItemDataRole.ToolTipRole)
