"""A worktree session in the window, for docs/screenshots/worktree-session.png.

Seeds a temporary data folder and a small git repository, runs a session in a worktree of its own
(a scripted agent writes a file there with the real tools), commits it on the session's branch,
leaves one more change uncommitted, then opens the window on that session with Session →
Worktree → Worktree status shown. Run it under the screenshot tool (it keeps the window open
until ended):

    /work/shared/tools/screenshot docs/screenshots/worktree-session.png --size 1280x800 \\
        --wm --wait 14 -- \\
        .venv/bin/python scripts/screenshot_worktree.py
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import qasync

from fxdesk.app import App
from fxdesk.domain.model import KeySource, PermissionMode, Profile
from fxdesk.domain.worktrees import Worktree
from fxdesk.engine.providers import FixedResolver
from fxdesk.gui.application import GuiController, create_qapplication
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada",
    "GIT_AUTHOR_EMAIL": "ada@example.org",
    "GIT_COMMITTER_NAME": "Ada",
    "GIT_COMMITTER_EMAIL": "ada@example.org",
}


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def seed_repo(root: Path) -> Path:
    repo = root / "expression-parser"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "tokenizer.py").write_text("def tokenize(text):\n    return text.split()\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Tokenizer")
    return repo


FIX = (
    "def tokenize(text):\n"
    '    """Numbers, operators and parentheses, in order."""\n'
    "    return [t for t in text.replace('(', ' ( ').replace(')', ' ) ').split() if t]\n"
)


async def main() -> None:
    os.environ.update(IDENTITY)
    root = Path(tempfile.mkdtemp(prefix="fxdesk-worktree-shot-"))
    repo = seed_repo(root)
    provider = ScriptedProvider(
        [
            Reply(
                "I'll fix the tokenizer on this session's branch.",
                tool_calls=(ScriptedCall("write_file", {"path": "tokenizer.py", "content": FIX}),),
            ),
            Reply(
                "Done: parentheses are now their own tokens. The change is on the session's "
                "branch in its worktree; your checkout is untouched until you merge it "
                "(Session → Worktree → Merge back)."
            ),
        ]
    )
    app = App(DataPaths(root / "data", "--data-dir"), providers=FixedResolver(provider))
    controller = GuiController(app)
    task = asyncio.ensure_future(controller.main())
    await controller.ready.wait()
    controller.window.setGeometry(0, 0, 1280, 800)
    await app.profiles.save(
        Profile("demo", "scripted", key_source=KeySource.NONE), make_default=True
    )
    engine = app.engine
    session = await engine.create_session(
        repo,
        name="Fix the tokenizer",
        permission_mode=PermissionMode.AUTO,
        first_message="Parentheses glued to numbers break the tokenizer. Fix it on a branch.",
        worktree=True,
    )
    assert await engine.join(session.id) is not None
    await engine.worktree_commit(session.id, "Tokenize parentheses")
    tree = Worktree.from_config(session.config)
    assert tree is not None
    (Path(tree.path) / "NOTES.md").write_text("Follow-up: unary minus.\n")
    controller.window.select_session(session.id)
    await asyncio.sleep(1.0)
    # The Worktree status dialog over the session, its header (with the branch) left in view.
    status = asyncio.ensure_future(controller.worktrees.show_status(session.id))
    await asyncio.sleep(1.0)
    await task
    status.cancel()


if __name__ == "__main__":
    os.environ.setdefault("FXDESK_LOG_LEVEL", "WARNING")
    qt = create_qapplication(sys.argv)
    qasync.run(main())
