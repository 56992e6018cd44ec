"""What a session changed (issue 18 item 1), against real git repositories and a real App whose
scripted agent edits files through the real tools."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.changes import ChangesError
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(folder: Path, *args: str) -> str:
    import os

    done = subprocess.run(
        ["git", "-C", str(folder), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
        check=True,
    )
    return done.stdout


def repository(folder: Path) -> Path:
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "parser.py").write_text("def parse(s):\n    return int(s[:-1])\n")
    (folder / "README.md").write_text("readme\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "start")
    return folder


def agent() -> ScriptedProvider:
    fix = ScriptedCall(
        "edit_file",
        {"path": "parser.py", "old_text": "int(s[:-1])", "new_text": "int(s)"},
    )
    new = ScriptedCall("write_file", {"path": "tests/test_parser.py", "content": "assert 1\n"})
    return ScriptedProvider([Reply("Fixing.", tool_calls=(fix, new)), Reply("Done.")])


async def run_agent(data_paths: DataPaths, folder: Path) -> tuple[App, str]:
    app = App(data_paths, providers=FixedResolver(agent()))
    await app.start()
    session = await app.engine.create_session(
        folder, first_message="Fix the parser", permission_mode=PermissionMode.YOLO
    )
    await asyncio.wait_for(app.engine.join(session.id), 60)
    return app, session.id


async def test_in_git_the_session_s_changes_and_the_others_revert_and_patch(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    folder = repository(tmp_path / "repo")
    app, session_id = await run_agent(data_paths, folder)
    try:
        (folder / "README.md").write_text("readme, edited by the person\n")  # not the session
        found = await app.engine.changes(session_id)
        assert found.git and found.note == ""
        by_path = {c.path: c for c in found.files}
        assert list(by_path) == ["parser.py", "tests/test_parser.py", "README.md"]  # its own first
        fix, new, readme = (
            by_path["parser.py"],
            by_path["tests/test_parser.py"],
            by_path["README.md"],
        )
        assert (fix.status, fix.by_session, fix.added, fix.removed) == ("modified", True, 1, 1)
        assert "-    return int(s[:-1])" in fix.diff and "+    return int(s)" in fix.diff
        assert (new.status, new.by_session, new.added) == ("added", True, 1)
        assert (readme.status, readme.by_session) == ("modified", False)

        # The patch applies to a clean copy of the repository.
        copy = tmp_path / "copy"
        await asyncio.to_thread(git, tmp_path, "clone", "-q", str(folder), str(copy))
        patch = tmp_path / "all.patch"
        patch.write_text(found.patch())
        git(copy, "apply", "--check", str(patch))

        said = await app.engine.revert_change(session_id, "parser.py")
        assert "back as the last commit has it" in said
        assert "int(s[:-1])" in (folder / "parser.py").read_text()
        said = await app.engine.revert_change(session_id, "tests/test_parser.py")
        assert said.startswith("removed the new file")
        assert not (folder / "tests" / "test_parser.py").exists()
        left = await app.engine.changes(session_id)
        # The session's edit is undone in the files; its history still says it happened.
        assert {c.path: c.status for c in left.files} == {
            "README.md": "modified",
            "parser.py": "edited",
            "tests/test_parser.py": "edited",
        }
        with pytest.raises(ChangesError, match="no change to revert"):
            await app.engine.revert_change(session_id, "nothing.py")
    finally:
        await app.stop()


async def test_outside_git_the_session_s_own_edits_from_its_history(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "parser.py").write_text("def parse(s):\n    return int(s[:-1])\n")
    app, session_id = await run_agent(data_paths, folder)
    try:
        found = await app.engine.changes(session_id)
        assert not found.git and "Not a git repository" in found.note
        by_path = {c.path: c for c in found.files}
        assert set(by_path) == {"parser.py", "tests/test_parser.py"}
        assert "+    return int(s)" in by_path["parser.py"].diff  # as edit_file reported it
        assert by_path["parser.py"].status == "edited"
        with pytest.raises(ChangesError, match="only files in a git repository"):
            await app.engine.revert_change(session_id, "parser.py")
        assert "int(s)" in (folder / "parser.py").read_text()  # nothing touched
    finally:
        await app.stop()


def test_fxdesk_changes_lists_and_patches(tmp_path: Path) -> None:
    """The same through the command line, in real processes."""
    import json

    from tests.cli.test_sessions import Setup

    s = Setup(tmp_path)
    folder = repository(tmp_path / "repo")
    fix = {"path": "parser.py", "old_text": "int(s[:-1])", "new_text": "int(s)"}
    s.write_script({"text": "Fixing.", "tool_calls": [{"name": "edit_file", "arguments": fix}]},
                   {"text": "Done."})  # fmt: skip
    s.fx("profiles", "add", "demo", "--kind", "scripted", "--script", str(s.script), "--default")
    ran = s.fx("run", "-w", str(folder), "--mode", "yolo", "Fix the parser")
    assert ran.returncode == 0, ran.stderr
    session_id = s.only_session()
    listed = json.loads(s.fx("changes", session_id, "--json").stdout)
    assert listed["git"] is True
    assert listed["files"] == [
        {"path": "parser.py", "status": "modified", "added": 1, "removed": 1, "by_session": True}
    ]
    patch = s.fx("changes", session_id[:8], "--patch").stdout
    assert patch.startswith("diff --git a/parser.py b/parser.py") and "+    return int(s)" in patch


async def test_a_worktree_session_s_changes_are_against_its_base_committed_ones_too(
    data_paths: DataPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)  # the worktree's commit needs an identity
    folder = repository(tmp_path / "repo")
    app = App(data_paths, providers=FixedResolver(agent()))
    await app.start()
    try:
        session = await app.engine.create_session(
            folder,
            first_message="Fix the parser",
            permission_mode=PermissionMode.YOLO,
            worktree=True,
        )
        await asyncio.wait_for(app.engine.join(session.id), 60)
        await app.engine.worktree_commit(session.id, "Fix the parser")
        found = await app.engine.changes(session.id)
        assert found.note.startswith("Against ")  # the branch's base, not its HEAD
        assert {c.path: (c.status, c.by_session) for c in found.files} == {
            "parser.py": ("modified", True),
            "tests/test_parser.py": ("added", True),
        }
        assert (folder / "parser.py").read_text().endswith("int(s[:-1])\n")  # main untouched
    finally:
        await app.stop()


def test_side_by_side_pairs_removed_and_added_lines() -> None:
    from fxdesk.engine.changes import hunks, side_by_side

    diff = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n"
        "@@ -1,3 +1,3 @@\n keep\n-old one\n-old two\n+new one\n tail\n"
        "@@ -9,1 +9,2 @@\n nine\n+ten\n"
    )
    header, parts = hunks(diff)
    assert header.endswith("+++ b/f\n") and len(parts) == 2
    left, right = side_by_side(diff)
    assert left == ["@@ -1,3 +1,3 @@", " keep", "-old one", "-old two", " tail",
                    "@@ -9,1 +9,2 @@", " nine", " "]  # fmt: skip
    assert right == ["@@ -1,3 +1,3 @@", " keep", "+new one", " ", " tail",
                     "@@ -9,1 +9,2 @@", " nine", "+ten"]  # fmt: skip


def test_one_hunk_is_reverted_and_the_others_kept(tmp_path: Path) -> None:
    from fxdesk.engine.changes import changes, revert_hunk

    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "init", "-q")
    lines = [f"line {n}" for n in range(1, 41)]
    (folder / "f.txt").write_text("\n".join(lines) + "\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "start")
    lines[1], lines[35] = "line 2 changed", "line 36 changed"
    (folder / "f.txt").write_text("\n".join(lines) + "\n")
    (change,) = changes(folder, {}).files
    said = revert_hunk(folder, change, 1)
    assert said == "undid hunk 2 of 2 in f.txt"
    text = (folder / "f.txt").read_text()
    assert "line 2 changed" in text and "line 36 changed" not in text
    (left,) = changes(folder, {}).files
    with pytest.raises(ChangesError, match="no hunk 2"):
        revert_hunk(folder, left, 1)


async def test_the_whole_tree_counts_a_sub_agent_s_edits(
    data_paths: DataPaths, tmp_path: Path
) -> None:
    """Outside git only the history knows: a sub-agent's edit shows for its tree, not for its
    parent alone."""
    from fxdesk.domain.conversation import HistoryEntry
    from fxdesk.domain.model import EntryKind
    from fxdesk.store import history

    folder = tmp_path / "plain"
    folder.mkdir()
    app = App(data_paths, providers=FixedResolver(agent()))
    await app.start()
    try:
        root = await app.engine.create_session(folder, name="Root")
        child = await app.sessions.create_child(root.id, name="Helper")
        entries = [
            HistoryEntry(child.id, 0, EntryKind.TOOL_CALL, call_id="c1", tool_name="write_file",
                         content='{"path": "made.txt", "content": "x"}'),
            HistoryEntry(child.id, 0, EntryKind.TOOL_RESULT, call_id="c1",
                         tool_name="write_file", content="wrote", data={"ok": True}),
        ]  # fmt: skip
        await app.store.write(lambda: history.append_history(child.id, entries))
        assert (await app.engine.changes(root.id)).files == ()
        tree = await app.engine.changes(root.id, whole_tree=True)
        assert [(c.path, c.by_session) for c in tree.files] == [("made.txt", True)]
        assert [c.path for c in (await app.engine.changes(child.id)).files] == ["made.txt"]
    finally:
        await app.stop()
