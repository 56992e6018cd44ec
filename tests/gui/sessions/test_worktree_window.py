"""A worktree session in the window (docs/worktrees.md): the header shows its branch, Session →
Worktree is enabled for it and acts through the engine (status, merge), the New session dialog
offers the folder's default, and closing a session whose worktree holds uncommitted work asks
with verbs ("Discard changes and close" / "Keep open"): keeping leaves it open and its work
there; discarding closes it and removes the worktree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fxdesk.domain.model import SessionState
from fxdesk.domain.worktrees import Worktree
from fxdesk.gui.sessions.new_session import NewSessionDialog
from fxdesk.gui.sessions.worktree_actions import status_text
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider
from tests.engine.test_worktrees import IDENTITY
from tests.gui.sessions.test_session_flow import Window
from tests.gui.waiting import until


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def make_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "first")
    return repo


async def test_a_worktree_session_shows_its_branch_merges_and_asks_before_closing_dirty(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path)
    run = await Window(data_paths, ScriptedProvider([Reply("ok")])).started()
    controller = run.controller
    assert controller.sessions is not None
    answers: list[bool] = []
    asked: list[tuple[str, str, str]] = []

    async def confirm(title: str, _text: str, do: str, keep: str) -> bool:
        asked.append((title, do, keep))
        return answers.pop(0)

    controller.sessions.confirm = confirm
    engine = controller.app.engine
    try:
        session = await engine.create_session(repo, name="Parser", worktree=True)
        tree = Worktree.from_config(session.config)
        assert tree is not None
        controller.window.select_session(session.id)
        await until(lambda: f"⎇ {tree.branch}" in run.panel.title.text())
        assert tree.folder in run.panel.title.toolTip()

        actions = controller.worktrees
        actions.window.session_menu.aboutToShow.emit()
        assert actions.menu.isEnabled()

        wt = Path(tree.path)
        (wt / "parser.py").write_text("def parse(): ...\n")
        text = status_text(await engine.worktree_status(session.id))
        assert "1 uncommitted" in text and "Merges into main" in text
        await engine.worktree_commit(session.id, "parser")
        await actions.merge(session.id, "fast-forward")
        assert (repo / "parser.py").exists()

        (wt / "half.py").write_text("# not done\n")
        answers[:] = [True, False]  # close: yes; then, on the dirty worktree: keep open
        await controller.sessions._close()
        assert asked == [
            ("Close this session?", "Close session", "Keep open"),
            ("Uncommitted work in the worktree", "Discard changes and close", "Keep open"),
        ]
        kept = await engine.session(session.id)
        assert kept is not None and kept.state != SessionState.ARCHIVED
        assert (wt / "half.py").exists()

        answers[:] = [True, True]
        await controller.sessions._close()
        closed = await engine.session(session.id)
        assert closed is not None and closed.state == SessionState.ARCHIVED
        assert not wt.exists()
    finally:
        await run.stop()


def test_the_new_session_dialog_offers_the_folders_default(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "other"
    other.mkdir()
    dialog = NewSessionDialog(
        folder=str(tmp_path), worktree_defaults={str(tmp_path): True, str(other): False}
    )
    qtbot.addWidget(dialog)
    assert dialog.worktree() == (True, False)
    dialog.folder_edit.setText(str(other))
    assert dialog.worktree() == (False, False)
    dialog.worktree_box.setChecked(True)
    dialog.remember_box.setChecked(True)
    assert dialog.worktree() == (True, True)
