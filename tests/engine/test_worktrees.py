"""A git worktree per root session (docs/worktrees.md), through the real App: real git
repositories in ``tmp_path``, the real tools (a scripted model makes the calls), the real
sandbox for commands.

- A worktree session's file writes, commands and sub-agents land in its worktree, never in the
  main checkout; the data folder around the worktree stays hidden from the agent.
- Commit, merge back (fast-forward and squash), patch, discard; a dirty worktree refuses close
  unless forced; a commit made by the agent from inside the sandbox lands once approved.
- Outside git, and in a repository without commits, a worktree is refused and nothing is made.
- The worktree survives a restart: status, and a new turn, find it again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from fxdesk.domain.approvals import Choice
from fxdesk.domain.model import PermissionMode, Session, SessionState
from fxdesk.domain.worktrees import Worktree
from fxdesk.engine.facade import Engine, WorktreeDirty, WorktreeError
from fxdesk.engine.owner import Result
from fxdesk.paths import DataPaths
from fxdesk.providers.base import Provider
from fxdesk.providers.scripted import Reply
from fxdesk.store import background
from tests.engine.agents.harness import Script, call, desk, tool_results

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.org",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.org",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """fxdesk's own git (Commit, Merge) and these tests' run with a known identity and no
    configuration of the machine's, as on a clean CI runner."""
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), *args], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(tmp_path: Path, name: str = "repo") -> Path:
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hello\n")
    git(repo, "add", "README")
    git(repo, "commit", "-qm", "first")
    return repo


def paths(tmp_path: Path) -> DataPaths:
    return DataPaths(tmp_path / "data", "--data-dir")


def write(path: str, content: str) -> Reply:
    return call("write_file", path=path, content=content)


async def run_to_end(engine: Engine, session: Session) -> None:
    engine.start(session.id)
    assert await engine.join(session.id) == Result.IDLE


async def new_session(
    engine: Engine, repo: Path, message: str = "go", *, mode: PermissionMode = PermissionMode.AUTO
) -> tuple[Session, Worktree]:
    session = await engine.create_session(
        repo, permission_mode=mode, first_message=message, start=False, worktree=True
    )
    worktree = Worktree.from_config(session.config)
    assert worktree is not None
    return session, worktree


async def test_an_agents_changes_land_in_the_worktree_then_commit_and_fast_forward(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    script = Script(
        [
            write("notes.txt", "from the agent\n"),
            call("run_command", command="pwd > where.txt && echo ran >> notes.txt"),
            Reply("done"),
        ]
    )
    async with desk(paths(tmp_path), script) as app:
        engine = app.engine
        session, worktree = await new_session(engine, repo)
        wt = Path(worktree.path)
        assert wt.parent == tmp_path / "data" / "worktrees"
        assert worktree.branch == git(wt, "branch", "--show-current")
        assert worktree.base == git(repo, "rev-parse", "HEAD")
        await run_to_end(engine, session)

        assert (wt / "notes.txt").read_text() == "from the agent\nran\n"
        assert (wt / "where.txt").read_text().strip() == str(wt)  # the command's folder
        assert not (repo / "notes.txt").exists() and not (repo / "where.txt").exists()
        status = await engine.worktree_status(session.id)
        assert status.exists and status.dirty and status.ahead == 0
        assert status.target == "main"

        commit = await engine.worktree_commit(session.id, "agent notes")
        assert git(wt, "log", "-1", "--format=%s") == "agent notes"
        assert git(repo, "log", "--format=%s") == "first"  # nothing in main yet
        status = await engine.worktree_status(session.id)
        assert not status.dirty and status.ahead == 1 and status.head == commit

        merged = await engine.worktree_merge(session.id, "fast-forward")
        assert (merged.how, merged.target, merged.commit) == ("fast-forward", "main", commit)
        assert git(repo, "rev-parse", "HEAD") == commit
        assert (repo / "notes.txt").read_text() == "from the agent\nran\n"
        after = await engine.session(session.id)
        assert after is not None
        moved = Worktree.from_config(after.config)
        assert moved is not None and moved.base == commit  # changes now count from here
        assert (await engine.worktree_status(session.id)).ahead == 0

        # Closed: nothing unmerged, so the worktree and its branch go.
        said = await engine.close(session.id)
        assert "and its branch" in said
        assert not wt.exists()
        assert git(repo, "branch", "--list", worktree.branch) == ""


async def test_squash_merge_makes_one_commit_and_the_branch_goes_on_from_it(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    script = Script([write("a.txt", "a\n"), Reply("one"), write("b.txt", "b\n"), Reply("two")])
    async with desk(paths(tmp_path), script) as app:
        engine = app.engine
        session, worktree = await new_session(engine, repo)
        await run_to_end(engine, session)
        await engine.worktree_commit(session.id, "add a")
        await engine.send(session.id, "more")
        assert await engine.join(session.id) == Result.IDLE
        await engine.worktree_commit(session.id, "add b")
        # The main checkout moved on meanwhile: a fast-forward is refused, a squash is not.
        (repo / "main.txt").write_text("main\n")
        git(repo, "add", "main.txt")
        git(repo, "commit", "-qm", "main moves")
        with pytest.raises(WorktreeError, match="cannot be fast-forwarded"):
            await engine.worktree_merge(session.id, "fast-forward")

        merged = await engine.worktree_merge(session.id, "squash", "the agent's work")
        assert merged.how == "squash" and merged.commits == 2
        assert git(repo, "log", "--format=%s").splitlines() == [
            "the agent's work",
            "main moves",
            "first",
        ]
        assert (repo / "a.txt").exists() and (repo / "b.txt").exists()
        assert git(repo, "status", "--porcelain") == ""
        wt = Path(worktree.path)
        assert git(wt, "rev-parse", "HEAD") == merged.commit  # the branch stands there now
        assert (wt / "main.txt").exists()
        status = await engine.worktree_status(session.id)
        assert status.ahead == 0 and not status.dirty
        with pytest.raises(WorktreeError, match="nothing to merge"):
            await engine.worktree_merge(session.id, "squash")


async def test_a_patch_holds_commits_and_uncommitted_and_new_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    script = Script([write("README", "changed\n"), write("new/file.txt", "new\n"), Reply("ok")])
    async with desk(paths(tmp_path), script) as app:
        engine = app.engine
        session, worktree = await new_session(engine, repo)
        await run_to_end(engine, session)
        out = tmp_path / "work.patch"
        text = await engine.worktree_patch(session.id, out)
        assert out.read_text() == text
        assert "+changed" in text and "new/file.txt" in text and "+new" in text
        # The worktree's own index is untouched: the new file is still untracked there.
        assert "?? new/" in git(Path(worktree.path), "status", "--porcelain")
        git(repo, "apply", "--check", str(out))  # it applies to the main checkout
        git(repo, "apply", str(out))
        assert (repo / "new" / "file.txt").read_text() == "new\n"


async def test_a_dirty_worktree_refuses_close_unless_forced_and_discard_removes_all(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    script = Script(
        [
            *(write("wip.txt", "half done\n"), Reply("ok")),
            *(write("kept.txt", "kept\n"), Reply("ok")),
            *(write("gone.txt", "gone\n"), Reply("ok")),
        ]
    )
    async with desk(paths(tmp_path), script) as app:
        engine = app.engine
        first, first_wt = await new_session(engine, repo)
        await run_to_end(engine, first)
        with pytest.raises(WorktreeDirty, match="1 uncommitted change"):
            await engine.close(first.id)
        still = await engine.session(first.id)
        assert still is not None and still.state != SessionState.ARCHIVED
        assert (Path(first_wt.path) / "wip.txt").exists()
        await engine.close(first.id, force=True)
        assert not Path(first_wt.path).exists()
        assert git(repo, "branch", "--list", first_wt.branch) == ""

        # A commit not merged back keeps its branch when the session closes...
        second, second_wt = await new_session(engine, repo)
        await run_to_end(engine, second)
        await engine.worktree_commit(second.id, "kept")
        said = await engine.close(second.id)
        assert "kept its branch" in said and not Path(second_wt.path).exists()
        assert git(repo, "log", "-1", "--format=%s", second_wt.branch) == "kept"

        # ...and Discard removes the worktree and the branch, commits and changes with them.
        third, third_wt = await new_session(engine, repo)
        await run_to_end(engine, third)
        await engine.worktree_commit(third.id, "thrown away")
        (Path(third_wt.path) / "more.txt").write_text("uncommitted\n")
        await engine.worktree_discard(third.id)
        closed = await engine.session(third.id)
        assert closed is not None and closed.state == SessionState.ARCHIVED
        assert not Path(third_wt.path).exists()
        assert git(repo, "branch", "--list", third_wt.branch) == ""
        assert "thrown away" not in git(repo, "log", "--all", "--format=%s")
        assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
        assert not (repo / "wip.txt").exists()


async def test_outside_git_and_without_commits_a_worktree_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    async with desk(paths(tmp_path), Script([])) as app:
        engine = app.engine
        with pytest.raises(WorktreeError, match="is not in a git repository"):
            await engine.create_session(plain, worktree=True)
        with pytest.raises(WorktreeError, match="has no commits yet"):
            await engine.create_session(empty, worktree=True)
        assert (await engine.catalog()).sessions == []
        assert not (tmp_path / "data" / "worktrees").exists() or not any(
            (tmp_path / "data" / "worktrees").iterdir()
        )
        plain_session = await engine.create_session(plain)  # without one: fine
        with pytest.raises(WorktreeError, match="runs in its workspace, not a worktree"):
            await engine.worktree_status(plain_session.id)


async def test_the_workspace_default_and_a_subfolder_workspace(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    git(repo, "add", "pkg")
    git(repo, "commit", "-qm", "pkg")
    async with desk(paths(tmp_path), Script([write("here.txt", "in pkg\n"), Reply("ok")])) as app:
        engine = app.engine
        workspace = await engine.ensure_workspace(repo / "pkg")
        assert await engine.worktree_default(workspace.id) is False
        await engine.set_worktree_default(workspace.id, True)
        session = await engine.create_session(
            repo / "pkg", permission_mode=PermissionMode.AUTO, first_message="go", start=False
        )
        worktree = Worktree.from_config(session.config)
        assert worktree is not None and worktree.subdir == "pkg"
        await run_to_end(engine, session)
        assert (Path(worktree.path) / "pkg" / "here.txt").read_text() == "in pkg\n"
        plain = await engine.create_session(repo / "pkg", worktree=False)
        assert Worktree.from_config(plain.config) is None


async def test_sub_agents_and_background_tasks_work_in_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    child_script = Script([write("from_child.txt", "child\n"), Reply("child done")])
    routes: dict[str, Provider] = {"helper": child_script}
    async with desk(paths(tmp_path), Script([Reply("root")]), routes) as app:
        engine = app.engine
        session, worktree = await new_session(engine, repo)
        await run_to_end(engine, session)
        child = await engine.create_child(session.id, "write a file", name="helper")
        assert await engine.join(child.id) == Result.COMPLETED
        assert (Path(worktree.path) / "from_child.txt").read_text() == "child\n"
        assert not (repo / "from_child.txt").exists()
        for sid in (session.id, child.id):  # where a background task of either would run
            place = await app.store.read(lambda sid=sid: background.session_place(sid))
            assert place is not None and place[1] == worktree.folder


async def test_the_data_folder_around_the_worktree_stays_hidden(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    database = tmp_path / "data" / "fxdesk.sqlite3"
    script = Script([call("read_file", path=str(database)), Reply("ok")])
    async with desk(paths(tmp_path), script) as app:
        session, _ = await new_session(app.engine, repo, mode=PermissionMode.YOLO)
        await run_to_end(app.engine, session)
        (result,) = tool_results(script.requests[-1])
        assert "hidden from the agent" in result


async def test_an_agents_commit_from_inside_the_sandbox_lands_once_approved(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path)
    command = (
        "printf 'by agent\\n' > agent.txt && git add -A && "
        "git -c user.name=A -c user.email=a@example.org commit -q -m 'agent commit'"
    )
    script = Script([call("run_command", command=command), Reply("ok")])
    async with desk(paths(tmp_path), script) as app:
        engine = app.engine
        session, worktree = await new_session(engine, repo)
        engine.start(session.id)
        done = asyncio.ensure_future(engine.join(session.id))
        asked = []
        while not done.done():
            for approval in await engine.pending_approvals(session.id):
                asked.append(approval)
                await engine.answer_approval(approval.id, Choice.ONCE)
            await asyncio.wait({done}, timeout=0.02)
        assert done.result() == Result.IDLE
        (approval,) = asked
        # The git folders the worktree's .git file leads to, in the main repository.
        assert str(repo / ".git" / "worktrees") in " ".join(approval.detail["uncovered"])
        wt = Path(worktree.path)
        assert git(wt, "log", "-1", "--format=%s") == "agent commit", tool_results(
            script.requests[-1]
        )
        assert git(repo, "log", "--format=%s") == "first"
        assert (await engine.worktree_status(session.id)).ahead == 1


async def test_a_worktree_survives_a_restart(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    data = paths(tmp_path)
    async with desk(data, Script([write("one.txt", "1\n"), Reply("ok")])) as app:
        session, worktree = await new_session(app.engine, repo)
        await run_to_end(app.engine, session)
    async with desk(data, Script([write("two.txt", "2\n"), Reply("ok")])) as app:
        engine = app.engine
        status = await engine.worktree_status(session.id)
        assert status.exists and status.worktree == worktree
        assert status.changed == ("?? one.txt",)
        await engine.send(session.id, "again")
        assert await engine.join(session.id) == Result.IDLE
        assert (Path(worktree.path) / "two.txt").exists()
        assert not (repo / "two.txt").exists()
        await engine.worktree_commit(session.id, "both")
        assert (await engine.worktree_merge(session.id, "squash")).commits == 1
        assert (repo / "one.txt").exists() and (repo / "two.txt").exists()
