"""The Changes dock over a git repository, held open for a screenshot under a window manager:

    PYTHONPATH=scripts /work/shared/tools/screenshot docs/screenshots/changes.png --wm \\
        --size 1280x800 --wait 12 -- .venv/bin/python scripts/changes_shot.py

A scripted agent fixes a bug and adds a test through the real tools in a fresh repository; the
person has also edited the README. The model is scripted; everything else is the real app.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication
from screenshots import Run, until

from fxdesk.domain.model import PermissionMode
from fxdesk.gui.application import create_qapplication
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

GIT = {"GIT_AUTHOR_NAME": "you", "GIT_AUTHOR_EMAIL": "you@example.com"}
GIT |= {"GIT_COMMITTER_NAME": "you", "GIT_COMMITTER_EMAIL": "you@example.com"}


def repository(folder: Path) -> Path:
    folder.mkdir(parents=True)
    env = {**os.environ, **GIT}
    (folder / "tokenizer.py").write_text(
        "def tokenize(text):\n    out, i = [], 0\n    while i < len(text) - 1:\n"
        "        out.append(text[i])\n        i += 1\n    return out\n"
    )
    (folder / "README.md").write_text("# expr-parser\n\nParses arithmetic.\n")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-C", str(folder), *argv], check=True, env=env)
    return folder


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fxdesk-changes-"))
    project = repository(tmp / "expr-parser")
    fix = ScriptedCall(
        "edit_file",
        {"path": "tokenizer.py", "old_text": "len(text) - 1", "new_text": "len(text)"},
    )
    test = ScriptedCall(
        "write_file",
        {
            "path": "tests/test_tokenizer.py",
            "content": "from tokenizer import tokenize\n\n\ndef test_last_digit():\n"
            "    assert tokenize('12') == ['1', '2']\n",
        },
    )
    provider = ScriptedProvider(
        [Reply("Fixing the loop bound.", tool_calls=(fix, test)), Reply("Fixed, with a test.")]
    )
    run = Run(DataPaths(tmp / "data", "--data-dir"), provider)
    controller = await run.started()
    controller.window.showMaximized()
    engine = run.app.engine
    session = await engine.create_session(
        project,
        name="Fix the tokenizer bug",
        first_message="parse('12') returns 1. Fix it and add a test.",
        permission_mode=PermissionMode.YOLO,
    )
    await engine.join(session.id)
    (project / "README.md").write_text("# expr-parser\n\nParses arithmetic, digits included.\n")
    controller.window.select_session(session.id)
    changes = controller.changes
    assert changes is not None
    changes.toggle_action.trigger()
    await until(lambda: changes.dock.files.topLevelItemCount() == 3)
    await run.task


if __name__ == "__main__":
    qt = create_qapplication(sys.argv)
    assert isinstance(qt, QApplication)
    qasync.run(main())
