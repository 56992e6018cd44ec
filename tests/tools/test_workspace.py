"""tools/workspace.py: where a path leads, as both the tools and the permission check read it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxdesk.tools.workspace import (
    PathOutsideWorkspace,
    display_path,
    is_inside,
    no_follow,
    resolve_in_workspace,
    resolve_path,
)


def test_relative_paths_start_at_the_workspace(workspace: Path) -> None:
    root = workspace.resolve()
    assert resolve_path(workspace, "a/b.txt") == root / "a" / "b.txt"
    assert resolve_path(workspace, ".") == root
    assert resolve_path(workspace, "") == root
    assert resolve_path(workspace, "a/../b") == root / "b"


def test_a_relative_workspace_is_resolved_first(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workspace.parent)
    assert resolve_path(Path(workspace.name), "x") == workspace.resolve() / "x"


def test_a_leading_tilde_is_home_and_only_a_leading_one(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert resolve_path(workspace, "~/notes.txt") == home.resolve() / "notes.txt"
    assert resolve_path(workspace, "~") == home.resolve()
    assert resolve_path(workspace, "a/~b") == workspace.resolve() / "a" / "~b"


def test_symbolic_links_are_followed(workspace: Path, tmp_path: Path) -> None:
    (workspace / "real.txt").write_text("x")
    (workspace / "alias.txt").symlink_to("real.txt")
    (workspace / "out").symlink_to(tmp_path)
    assert resolve_path(workspace, "alias.txt") == workspace.resolve() / "real.txt"
    assert resolve_path(workspace, "out/secret") == tmp_path.resolve() / "secret"


def test_a_path_that_does_not_exist_resolves_through_its_existing_parents(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "out").symlink_to(tmp_path)
    assert resolve_path(workspace, "out/new/file.txt") == tmp_path.resolve() / "new" / "file.txt"
    assert resolve_path(workspace, "new/dir/f") == workspace.resolve() / "new" / "dir" / "f"


def test_absolute_paths_stay_as_they_are(workspace: Path, tmp_path: Path) -> None:
    assert resolve_path(workspace, str(tmp_path / "secret")) == tmp_path.resolve() / "secret"


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/ws", "/ws", True),
        ("/ws/a", "/ws", True),
        ("/ws/a/b", "/ws/", True),
        ("/ws2", "/ws", False),  # a shared prefix is not a parent
        ("/w", "/ws", False),
        ("/", "/ws", False),
        ("/anything", "/", True),
        ("/", "/", True),
    ],
)
def test_is_inside_compares_whole_names(path: str, root: str, inside: bool) -> None:
    assert is_inside(path, root) is inside
    assert is_inside(Path(path), Path(root)) is inside


def test_resolve_in_workspace_refuses_what_leads_out(workspace: Path, tmp_path: Path) -> None:
    (workspace / "out").symlink_to(tmp_path)
    for raw in ("../secret", "out/secret", str(tmp_path / "secret"), "out"):
        with pytest.raises(PathOutsideWorkspace, match="is outside the workspace"):
            resolve_in_workspace(workspace, raw)
        assert resolve_in_workspace(workspace, raw, outside_ok=True) == resolve_path(workspace, raw)
    assert resolve_in_workspace(workspace, ".") == workspace.resolve()
    assert resolve_in_workspace(workspace, "new/f") == workspace.resolve() / "new" / "f"


def test_display_path(workspace: Path) -> None:
    root = workspace.resolve()
    assert display_path(root, root) == "."
    assert display_path(root / "a" / "b.txt", root) == "a/b.txt"
    assert display_path(root / "a" / "b.txt", Path("/")) == str(root / "a" / "b.txt")


def test_no_follow_refuses_a_link_in_the_last_part(workspace: Path, tmp_path: Path) -> None:
    (workspace / "link").symlink_to(tmp_path / "secret")
    (workspace / "plain.txt").write_text("mine")
    with open(workspace / "plain.txt", encoding="utf-8", opener=no_follow) as handle:
        assert handle.read() == "mine"
    with pytest.raises(OSError, match="became a symbolic link after it was checked"):
        open(workspace / "link", encoding="utf-8", opener=no_follow)  # noqa: SIM115
    assert os.path.exists(tmp_path / "secret")
