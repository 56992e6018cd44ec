"""``fxdesk run --worktree`` and ``fxdesk worktree …`` in real processes over a real git
repository (docs/worktrees.md): the scripted agent's file lands in the worktree, status shows it,
commit and merge (squash) bring it into the main checkout, a patch is written, discard asks
for --yes off a terminal and then removes the branch; outside git, run --worktree says why."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_sessions import Setup
from tests.engine.test_worktrees import IDENTITY


def git(folder: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)


def test_a_worktree_session_from_run_to_merge_and_discard(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    repo = s.workspace
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "first")
    s.write_script(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a\n"}}]},
        {"text": "done"},
    )
    added = s.fx(
        "profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default"
    )
    assert added.returncode == 0, added.stderr
    done = s.fx("run", "-w", str(repo), "--worktree", "write a")
    assert done.returncode == 0, done.stderr
    assert "on branch fxdesk/" in done.stderr
    session = s.only_session()
    assert not (repo / "a.txt").exists()

    status = json.loads(s.fx("worktree", "status", session, "--json").stdout)
    assert status["changed"] == ["?? a.txt"] and status["target"] == "main"
    assert (Path(status["folder"]) / "a.txt").read_text() == "a\n"
    text = s.fx("worktree", "status", session).stdout
    assert f"branch   {status['branch']}" in text and "1 uncommitted" in text

    committed = s.fx("worktree", "commit", session, "-m", "add a")
    assert committed.returncode == 0 and committed.stdout.startswith("committed "), committed
    merged = s.fx("worktree", "merge", session, "--squash")
    assert merged.returncode == 0, merged.stderr
    assert "merged 1 commit(s) into main (squash)" in merged.stdout
    assert (repo / "a.txt").read_text() == "a\n"
    assert git(repo, "log", "--format=%s").splitlines()[1] == "first"
    nothing = s.fx("worktree", "merge", session)
    assert nothing.returncode == 2 and "nothing to merge" in nothing.stderr

    (Path(status["folder"]) / "b.txt").write_text("b\n")
    patch = tmp_path / "b.patch"
    assert s.fx("worktree", "patch", session, "-o", str(patch)).returncode == 0
    assert "+b" in patch.read_text()

    asked = s.fx("worktree", "discard", session)
    assert asked.returncode == 2 and "--yes" in asked.stderr
    gone = s.fx("worktree", "discard", session, "--yes")
    assert gone.returncode == 0, gone.stderr
    assert not Path(status["folder"]).exists()
    assert git(repo, "branch", "--list", status["branch"]) == ""

    default = s.fx("worktree", "default", "-w", str(repo), "on")
    assert "new sessions get a worktree" in default.stdout


def test_run_with_a_worktree_outside_git_says_why(tmp_path: Path) -> None:
    s = Setup(tmp_path)
    s.write_script({"text": "never"})
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    done = s.fx("run", "-w", str(s.workspace), "--worktree", "go")
    assert done.returncode == 2
    assert "is not in a git repository" in done.stderr
    assert json.loads(s.fx("sessions", "--json").stdout) == []
