"""The busiest everyday window, held open for a screenshot under a real window manager.

The sample project of ``screenshots.py`` with: a finished session with tool cards, a sub-agent,
a session whose command waits for approval (inline in the transcript, in the Approvals dock and
counted in the tree), and a real background server in the Processes dock. The window is shown
maximized at whatever size the screen has, in the theme asked for, and stays open until the
process is ended. Used for issue 14's three sizes, light and dark:

    /work/shared/tools/screenshot docs/screenshots/layout-800x600-light.png --wm \\
        --size 800x600 --wait 14 -- .venv/bin/python scripts/layout_shots.py light

The model is scripted; everything else is the real app on a temporary data folder.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication
from screenshots import Run, seed_project, until

from fxdesk.domain.model import KeySource, PermissionMode, Profile
from fxdesk.domain.permissions import PermissionRule, Scope, Verdict
from fxdesk.gui.application import create_qapplication
from fxdesk.gui.theme import apply_appearance
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider


def script() -> list[Reply]:
    return [
        Reply(
            "The loop bound in `tokenize` skips the last character. Fixing it.",
            tool_calls=(
                ScriptedCall(
                    "edit_file",
                    {
                        "path": "tokenizer.py",
                        "old_text": "while i < len(text) - 1:",
                        "new_text": "while i < len(text):",
                    },
                ),
            ),
            usage=(2950, 120),
        ),
        Reply(
            "Now the tests.",
            tool_calls=(ScriptedCall("run_command", {"command": "ls -la tests"}),),
            usage=(3310, 40),
        ),
        Reply("Fixed: the loop stopped one character early. **12 passed**.", usage=(3620, 150)),
        Reply(
            "I'll clean the old build and rebuild, keeping a report of the output.",
            tool_calls=(
                ScriptedCall(
                    "run_command",
                    {"command": "rm -rf build && make all 2>&1 | tee ~/build-report.txt"},
                ),
            ),
            usage=(5600, 60),
        ),
    ]


async def main(theme: str) -> None:
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    apply_appearance(qapp, theme)
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-layout-"))
    project = seed_project(tmp)
    provider = ScriptedProvider(script())
    run = Run(DataPaths(tmp / "data", "--data-dir"), provider)
    controller = await run.started()
    controller.window.showMaximized()
    app = run.app
    await app.engine.profiles.set_appearance(theme)
    apply_appearance(qapp, theme)
    await app.profiles.save(Profile("demo", "scripted", key_source=KeySource.NONE))
    await app.permissions.add_rule(
        PermissionRule("run_command", "ls -la tests", Verdict.ALLOW, Scope.GLOBAL)
    )
    await app.permissions.add_rule(
        PermissionRule("run_command", "make all", Verdict.ALLOW, Scope.GLOBAL)
    )
    sessions, owner, engine = app.sessions, app.owner, app.engine
    fix = await sessions.create_root(
        project, name="Fix the tokenizer bug", permission_mode=PermissionMode.AUTO
    )
    await sessions.send(fix.id, 'parse("12") returns 1. Please fix it.')
    owner.start(fix.id)
    await until(lambda: provider.calls >= 3 and not owner.is_running(fix.id))
    await sessions.create_child(fix.id, name="Write regression tests for numbers at the end")
    await engine.start_background(
        fix.id, "python3 -m http.server 0 --bind 127.0.0.1", expect_url=True, durable=False
    )  # process-local: it stops with the screenshot's process
    clean = await sessions.create_root(
        project, name="Clean build and report", permission_mode=PermissionMode.AUTO
    )
    controller.window.select_session(clean.id)
    await sessions.send(clean.id, "Do a clean build.")
    owner.start(clean.id)
    approvals = controller.approvals
    assert approvals is not None
    await until(approvals.inline.isVisible)  # the dock opens by itself where there is room
    await run.task  # until the screenshot tool ends the process (SIGTERM quits the window)


if __name__ == "__main__":
    qt = create_qapplication(sys.argv)
    qasync.run(main(sys.argv[1] if len(sys.argv) > 1 else "light"))
