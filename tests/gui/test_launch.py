"""The window's first frame comes before the engine: ``launch.first_frame`` shows the main window
with what it needs alone, and ``GuiController`` takes that window over (docs/performance.md)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fxdesk.app import App
from fxdesk.gui.application import GuiController, Outcome
from fxdesk.gui.sessions.delegate import SessionDelegate
from fxdesk.gui.sessions.model import SessionTreeModel
from fxdesk.gui.window.main_window import MainWindow
from fxdesk.paths import DataPaths
from tests.gui.waiting import until
from tests.helpers import child_env

# What fxdesk runs before its first frame, in a fresh process: the command line, then the frame.
FIRST_FRAME = """
import json, sys
from fxdesk.cli.main import main
from fxdesk.gui import launch
painted = {}
paint_filter = launch._PaintWait.eventFilter
def at_paint(self, watched, event):
    if event.type() == event.Type.Paint and not painted:
        painted["modules"] = sorted(sys.modules)
        painted["qt_namespace"] = "Qt" in vars(sys.modules["PySide6.QtCore"])
        painted["icon"] = not launch.QApplication.windowIcon().isNull()
    return paint_filter(self, watched, event)
launch._PaintWait.eventFilter = at_paint
window = launch.first_frame(sys.argv)
print(json.dumps({
    "visible": window.isVisible(),
    "page": window.centre.currentIndex(),
    "pages": window.centre.count(),
    "tree": window.tree.model() is window.proxy and window.proxy.sourceModel() is window.model,
    "modules": sorted(sys.modules),
    "at_paint": painted.get("modules"),
    "qt_namespace_at_paint": painted.get("qt_namespace"),
    "icon_at_paint": painted.get("icon"),
    "icon": not window.windowIcon().isNull(),
}))
"""

NOT_BEFORE_THE_FIRST_FRAME = (
    "asyncio",
    "qasync",
    "fxdesk.app",
    "fxdesk.engine",
    "fxdesk.store",
    "fxdesk.providers",
    "fxdesk.tools",
    "peewee",
    "fxdesk.gui.application",
    "fxdesk.gui.sessions.delegate",
    "fxdesk.gui.sessions.panel",
    "fxdesk.gui.transcript",
    "fxdesk.domain.agent_runs",
)


def first_frame_report() -> dict[str, Any]:
    """``FIRST_FRAME`` run in a fresh process: what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_first_frame_shows_the_window_without_the_engine() -> None:
    shown = first_frame_report()
    assert shown["visible"] is True
    assert shown["page"] == MainWindow.PAGE_EMPTY  # no data yet: what it shows with none
    assert shown["pages"] == MainWindow.PAGE_SESSION  # the session page comes after the frame
    early = [
        module
        for module in shown["modules"]
        for package in NOT_BEFORE_THE_FIRST_FRAME
        if module == package or module.startswith(package + ".")
    ]
    assert early == []
    assert shown["tree"] is True  # the session tree is there once the first frame returns


def test_the_first_frame_paints_before_the_session_tree_is_imported() -> None:
    """The frame shows no session: the tree's model and the domain's session types (and the
    Python enums of Qt's namespace they make) come just after it."""
    at_paint = first_frame_report()["at_paint"]
    assert at_paint is not None, "the window did not paint"
    assert "fxdesk.gui.window.main_window" in at_paint
    later_modules = (
        "fxdesk.gui.sessions.model",
        "fxdesk.domain.model",
        "fxdesk.gui.agents",
        "logging.handlers",  # the log rotates after the frame (fxdesk.logs.setup_logging)
    )
    for later in later_modules:
        assert later not in at_paint


async def test_the_controller_takes_over_the_window_shown_first(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    model = SessionTreeModel()
    window = MainWindow(model)
    model.setParent(window)
    window.show()
    controller = GuiController(App(data_paths), window=window)
    task = asyncio.ensure_future(controller.main())
    try:
        await until(lambda: controller.ready.is_set() or task.done())
        assert controller.window is window and controller.model is model
        assert window.transcript_model is controller.transcript
        assert isinstance(window.tree.itemDelegate(), SessionDelegate)  # built after the frame
        assert window.centre.widget(MainWindow.PAGE_SESSION) is window.panel
        project = tmp_path / "project"
        project.mkdir()
        session = await controller.app.sessions.create_root(project, name="Refactor")
        await until(lambda: window.selected_session() == session)
        assert "Refactor" in window.panel.title.text()
    finally:
        controller.request_quit()
        assert await asyncio.wait_for(task, 30) == Outcome.CLOSED


def test_the_first_frame_paints_before_the_enums_of_qts_namespace() -> None:
    """PySide6 makes the Python enums of the whole ``Qt`` namespace (105 of them) at the first
    ``Qt.*`` a process uses; the window sets what it needs from them by name until it painted."""
    shown = first_frame_report()
    assert shown["qt_namespace_at_paint"] is False


def test_the_icon_comes_just_after_the_first_frame() -> None:
    shown = first_frame_report()
    assert shown["icon_at_paint"] is False  # its file, SVG engine and pixmaps: after the frame
    assert shown["icon"] is True
