"""A root agent with sub-agents, held open for a screenshot under a real window manager.

"Release check" delegates two background runs (a watcher that raises signals on the steer lane
and keeps watching, and a helper that finishes with a result) and then one foreground run (the
read-only explorer, still working, so the root waits for it). Scenes:

- ``tree``: the session tree with the three runs under their caller;
- ``runs``: the same with the Runs dock open (View → Runs);
- ``inbox``: the Inbox dock with the signals, the signal row selected.

    /work/shared/tools/screenshot docs/screenshots/agents-tree.png --wm --size 1280x800 \\
        --wait 14 -- .venv/bin/python scripts/agents_shots.py tree

Each session's model is scripted (chosen by the session's name); everything else is the real
app on a temporary data folder.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtCore import Qt
from screenshots import PRICED, call, held_open, seed_project, until

from fxdesk.domain.model import PermissionMode, Session
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.gui.application import create_qapplication
from fxdesk.providers.base import Provider
from fxdesk.providers.scripted import Reply, ScriptedProvider, Stall

WATCHER = """---
id: watcher
description: Watches the staging service and raises alerts when it misbehaves.
signals: steer
timeout: 15m
---
You watch the staging service and raise a signal when something goes wrong.
"""


class ByName(ProviderResolver):
    """The script of the first route whose key is in the session's name (else ``default``)."""

    def __init__(self, routes: dict[str, Provider], default: Provider) -> None:
        self.routes = routes
        self.default = default

    async def resolve(self, session: Session) -> Resolved:
        provider = next((p for k, p in self.routes.items() if k in session.name), self.default)
        return Resolved(provider, "gpt-5-mini", PRICED)


def signal(severity: str, summary: str, dedupe: str) -> Reply:
    return call("emit_signal", key=dedupe, severity=severity, summary=summary, dedupe_key=dedupe)


def scripts() -> tuple[Provider, dict[str, Provider]]:
    root = ScriptedProvider(
        [
            call(
                "delegate",
                "I'll watch staging and summarise CI in the background, then map the code.",
                requests=[
                    {"agent": "watcher", "task": "Watch the error rate of staging svc-a"},
                    {"agent": "general", "task": "Summarise yesterday's CI failures"},
                ],
                mode="background",
            ),
            call(
                "delegate",
                "While they work: where do sessions get stored?",
                requests=[{"agent": "explorer", "task": "Map where sessions are stored"}],
                mode="foreground",
            ),
            Stall(),
        ]
    )
    watcher = ScriptedProvider(
        [
            signal("warning", "error rate 7% on svc-a (threshold 5%)", "svc-a:err"),
            signal("warning", "error rate 7% on svc-a (threshold 5%)", "svc-a:err"),
            signal("warning", "error rate 7% on svc-a (threshold 5%)", "svc-a:err"),
            signal("info", "p95 latency back under 300 ms", "svc-a:p95"),
            Stall(),
        ]
    )
    ci = ScriptedProvider(
        [
            call("list_dir", "Reading the CI notes.", path="."),
            Reply(
                "3 failures, all `test_login_timeout` on the macOS runner: a flaky 2 s timeout.",
                usage=(5200, 310),
            ),
        ]
    )
    explorer = ScriptedProvider(
        [call("grep", "Looking for the store.", pattern="class Store", path="."), Stall()]
    )
    routes: dict[str, Provider] = {"Watch the": watcher, "Summarise": ci, "Map where": explorer}
    return root, routes


async def main(scene: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-agents-"))
    project = seed_project(tmp)
    (project / ".fxdesk" / "agents").mkdir(parents=True)
    (project / ".fxdesk" / "agents" / "watcher.md").write_text(WATCHER)
    root, routes = scripts()
    controller, task = await held_open(tmp / "data", ByName(routes, root))
    engine = controller.app.engine
    other = await engine.create_session(
        project, name="Fix the tokenizer bug", permission_mode=PermissionMode.AUTO
    )
    del other
    session = await engine.create_session(
        project,
        name="Release check",
        permission_mode=PermissionMode.YOLO,
        first_message="Get the release ready: watch staging, summarise CI, map the store.",
    )
    controller.window.select_session(session.id)
    agents = controller.agents
    assert agents is not None

    def settled() -> bool:
        runs = agents.runs.get(session.id, [])
        done = [r for r in runs if r.status.terminal]
        return len(runs) == 3 and len(done) == 1 and agents.inbox_dock.model.rowCount() >= 3

    await until(settled, within=30)
    await asyncio.sleep(1.5)
    controller.window.select_session(session.id)  # each new sub-agent took the selection
    controller.window.tree.expandAll()
    if scene == "runs":
        agents.show_runs()
        dock = agents.runs_dock
        dock.select(next(r.id for r in agents.runs[session.id] if r.agent_id == "watcher"))
    elif scene == "inbox":
        inbox = agents.inbox_dock
        inbox.show()
        inbox.view.setCurrentIndex(inbox.model.index(0, 0))
        inbox.view.setFocus(Qt.FocusReason.OtherFocusReason)
    await task  # until the screenshot tool ends the process (SIGTERM quits the window)


if __name__ == "__main__":
    qt = create_qapplication(sys.argv)
    qasync.run(main(sys.argv[1] if len(sys.argv) > 1 else "tree"))
