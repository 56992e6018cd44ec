"""External agents (ACP) in the window, held open for a screenshot under a real window manager.

The external agent is the test agent (``tests/acp_agent.py``, on the ACP SDK's agent side, a
real child process); the native root's model is scripted. Scenes:

- ``tree``: a native root ("Release check") that delegated a task to an external agent: the
  child under it with its "ACP" badge, its transcript (thinking, plan, the edit as a diff);
- ``approval``: an external agent's permission request in the inline approval and the
  Approvals dock.

    /work/shared/tools/screenshot docs/screenshots/acp-tree.png --wm --size 1280x800 \\
        --wait 14 -- .venv/bin/python scripts/acp_shots.py tree
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtWidgets import QSplitter
from screenshots import PRICED, call, held_open, seed_project, until

from fxdesk.domain.model import PermissionMode, Session
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.gui.application import create_qapplication
from fxdesk.gui.transcript.model import Row, RowKind, TranscriptModel
from fxdesk.providers.acp import AcpAgentProvider, AcpLaunch
from fxdesk.providers.base import Provider
from fxdesk.providers.scripted import Reply, ScriptedProvider, Stall

REPO = Path(__file__).resolve().parent.parent


class ByName(ProviderResolver):
    """The external agent for sessions whose name has one of ``external``'s keys; else the
    native root's script."""

    def __init__(self, external: tuple[str, ...], agent: Provider, root: Provider) -> None:
        self.external = external
        self.agent = agent
        self.root = root

    async def resolve(self, session: Session) -> Resolved:
        if any(key in session.name for key in self.external):
            return Resolved(self.agent, "acp")
        return Resolved(self.root, "gpt-5-mini", PRICED)


def delegate(text: str, task: str) -> Reply:
    return call("delegate", text, requests=[{"agent": "general", "task": task}], mode="foreground")


async def main(scene: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-acp-"))
    project = seed_project(tmp)
    (project / "a.txt").write_text("one\n")
    env = {"PYTHONPATH": str(REPO), "ACP_TEST_STATE": str(tmp / "agent")}
    agent = AcpAgentProvider(
        AcpLaunch(sys.executable, (str(REPO / "tests" / "acp_agent.py"),), env), log_dir=tmp
    )
    root = ScriptedProvider(
        [
            delegate("I'll hand the edit to the external agent.", "think about a.txt"),
            Reply("The external agent added the second line to a.txt.", usage=(2400, 40)),
            Stall(),
        ]
    )
    providers = ByName(("think", "External agent"), agent, root)
    controller, task = await held_open(tmp / "data", providers)
    engine = controller.app.engine
    session = await engine.create_session(
        project,
        name="Release check",
        permission_mode=PermissionMode.YOLO,
        first_message="Add the missing line to a.txt (ask the external agent).",
    )
    await until(lambda: not engine.is_running(session.id), within=60)
    (run,) = await engine.runs(session.id)
    assert run.child_session_id is not None
    if scene == "approval":
        asking = await engine.create_session(
            project,
            name="External agent: notes",
            permission_mode=PermissionMode.ASK,
            first_message="fswrite notes.txt",
        )
        controller.window.select_session(asking.id)
        assert controller.approvals is not None
        inline = controller.approvals.inline
        await until(lambda: inline.isVisible(), within=60)
        controller.approvals_dock.show()
    else:
        controller.window.select_session(run.child_session_id)
        model = controller.window.transcript_model
        await until(lambda: any(r.kind == RowKind.TOOL for r in _rows(model)), within=30)
        model.toggle(next(i for i, r in enumerate(_rows(model)) if r.kind == RowKind.TOOL))
    splitter = controller.window.sessions_panel.parentWidget()
    assert isinstance(splitter, QSplitter)
    splitter.setSizes([470, 800])  # room for the badges
    controller.window.tree.expandAll()
    await task  # until the screenshot tool ends the process (SIGTERM quits the window)


def _rows(model: TranscriptModel) -> list[Row]:
    return [model.row_at(i) for i in range(model.rowCount())]


if __name__ == "__main__":
    qt = create_qapplication(sys.argv)
    qasync.run(main(sys.argv[1] if len(sys.argv) > 1 else "tree"))
