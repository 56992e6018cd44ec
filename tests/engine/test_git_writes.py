"""A git command that writes its repository, through the whole engine: the permission check
counts it as a write of the git folder (``domain.git_commands``, ``engine.git_writes``), so the
protected-path rules apply, and once allowed the sandbox lets exactly that command write it.
Real store, real git repositories, real bubblewrap, a scripted model.

- auto and ask mode ask ("a protected path (.git): writes … (`git commit -m x` writes the
  repository)"); allowed once, the commit exists; denied, there is none and the model is told.
- yolo mode, which never asks, refuses it as every protected write (an allow rule naming the
  git folder lets it through).
- Read-only git commands do not ask beyond what their command rule says.
- The planted hole: without the git table the commit is not asked about and fails inside the
  sandbox ("Read-only file system"), which is the bug this fixes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine import call_facts
from tests.engine.harness import call
from tests.engine.test_protected_modes import run_turn
from tests.guarded import git, make_worktree

COMMIT = "git add -A && git commit -q -m x"


def make_repo(tmp_path: Path) -> Path:
    """A workspace that is a fresh repository with one commit and a changed file."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    git("init", "-q", cwd=workspace)
    git("config", "user.name", "t", cwd=workspace)
    git("config", "user.email", "t@example.org", cwd=workspace)
    (workspace / "README").write_text("one\n")
    git("add", "README", cwd=workspace)
    git("commit", "-qm", "first", cwd=workspace)
    (workspace / "README").write_text("two\n")
    return workspace


def subjects(workspace: Path) -> list[str]:
    return git("log", "--format=%s", cwd=workspace).split()


def allow(tool: str, pattern: str, match: Match = Match.GLOB) -> PermissionRule:
    return PermissionRule(tool, pattern, Verdict.ALLOW, Scope.GLOBAL, match)


@pytest.mark.parametrize("mode", [PermissionMode.AUTO, PermissionMode.ASK])
async def test_a_commit_asks_and_lands_once_allowed(tmp_path: Path, mode: PermissionMode) -> None:
    workspace = make_repo(tmp_path)
    step = call("run_command", command=COMMIT)
    run = await run_turn(tmp_path / "data", workspace, None, step, mode, Choice.ONCE)
    (approval,) = run.asked
    reason = approval.detail["reason"]
    assert "a protected path (.git): writes " in reason
    assert "`git add -A` writes the repository" in reason
    assert f"writes {workspace.resolve() / '.git'}" in approval.detail["uncovered"]
    assert subjects(workspace) == ["x", "first"], run.results
    assert "Read-only file system" not in run.results[0]


@pytest.mark.parametrize("mode", [PermissionMode.AUTO, PermissionMode.ASK])
async def test_a_denied_commit_leaves_no_commit_and_the_model_is_told(
    tmp_path: Path, mode: PermissionMode
) -> None:
    workspace = make_repo(tmp_path)
    step = call("run_command", command=COMMIT)
    run = await run_turn(tmp_path / "data", workspace, None, step, mode, Choice.DENY)
    assert len(run.asked) == 1
    assert subjects(workspace) == ["first"]
    assert run.results == ["The person denied this action."]


async def test_auto_asks_for_the_commit_even_when_a_rule_allows_the_command(
    tmp_path: Path,
) -> None:
    workspace = make_repo(tmp_path)
    rules = (allow("run_command", "git *"),)
    step = call("run_command", command=COMMIT)
    run = await run_turn(
        tmp_path / "data", workspace, None, step, PermissionMode.AUTO, Choice.ONCE, rules
    )
    (approval,) = run.asked
    assert approval.detail["uncovered"] == [f"writes {workspace.resolve() / '.git'}"]
    assert subjects(workspace) == ["x", "first"]


async def test_yolo_refuses_the_commit_without_asking(tmp_path: Path) -> None:
    workspace = make_repo(tmp_path)
    step = call("run_command", command=COMMIT)
    run = await run_turn(tmp_path / "data", workspace, None, step, PermissionMode.YOLO)
    assert run.asked == []
    (result,) = run.results
    assert result.startswith("Not allowed: a protected path (.git): writes ")
    assert "read-only in yolo mode" in result
    assert subjects(workspace) == ["first"]


@pytest.mark.parametrize("mode", [PermissionMode.AUTO, PermissionMode.YOLO])
@pytest.mark.parametrize(
    ("pattern", "counts"),
    [(".git", True), (".git/**", True), (".git/hooks/*", False), ("*", False)],
)
async def test_an_allow_rule_naming_the_git_folder_lets_the_commit_through(
    tmp_path: Path, mode: PermissionMode, pattern: str, counts: bool
) -> None:
    workspace = make_repo(tmp_path)
    rules = (allow("run_command", "git *"), allow("write_file", pattern))
    step = call("run_command", command=COMMIT)
    run = await run_turn(tmp_path / "data", workspace, None, step, mode, Choice.DENY, rules)
    if counts:
        assert run.asked == []
        assert subjects(workspace) == ["x", "first"], run.results
    else:
        assert len(run.asked) == (0 if mode is PermissionMode.YOLO else 1)
        assert subjects(workspace) == ["first"]


READS = [
    "git status --short",
    "git log --oneline",
    "git diff",
    "git show --stat HEAD",
    "git rev-parse HEAD",
    "git ls-files",
    "git grep one HEAD",
    "git blame README",
    "git config --get user.name",
    "git -C . branch --show-current",
]


@pytest.mark.parametrize("line", READS)
@pytest.mark.parametrize("mode", [PermissionMode.AUTO, PermissionMode.YOLO])
async def test_a_read_only_git_command_runs_without_asking(
    tmp_path: Path, line: str, mode: PermissionMode
) -> None:
    workspace = make_repo(tmp_path)
    rules = (allow("run_command", "git *"),)
    step = call("run_command", command=line)
    run = await run_turn(tmp_path / "data", workspace, None, step, mode, Choice.DENY, rules)
    assert run.asked == []
    (result,) = run.results
    assert not result.startswith(("Not allowed", "Error")), result
    assert "Read-only file system" not in result and "fatal:" not in result, result


async def test_a_commit_in_a_linked_worktree_writes_its_gitdir_and_the_common_folder(
    tmp_path: Path,
) -> None:
    repo = make_worktree(tmp_path)
    git("config", "user.name", "t", cwd=repo.main)
    git("config", "user.email", "t@example.org", cwd=repo.main)
    (repo.workspace / "README").write_text("changed\n")
    step = call("run_command", command="git commit -q -am x")
    run = await run_turn(
        tmp_path / "data", repo.workspace, None, step, PermissionMode.AUTO, Choice.ONCE
    )
    (approval,) = run.asked
    uncovered = approval.detail["uncovered"]
    assert f"writes {repo.gitdir.resolve()}" in uncovered
    assert f"writes {(repo.main / '.git').resolve()}" in uncovered
    assert subjects(repo.workspace)[0] == "x", run.results


async def test_without_the_git_table_the_commit_is_not_asked_about_and_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted hole: the check as it was. The tests above see the difference."""
    monkeypatch.setattr(call_facts, "written_git_folders", lambda *_: {})
    workspace = make_repo(tmp_path)
    rules = (allow("run_command", "git *"),)
    step = call("run_command", command=COMMIT)
    run = await run_turn(
        tmp_path / "data", workspace, None, step, PermissionMode.AUTO, Choice.ONCE, rules
    )
    assert run.asked == []
    assert subjects(workspace) == ["first"]
    assert "Read-only file system" in run.results[0]
