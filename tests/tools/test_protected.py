"""Protected and hidden paths in the file tools themselves (``tools/protected.py``,
``textfiles.reachable``), on real files, links and a real git worktree.

Every call here is *allowed to reach outside the workspace* (what yolo mode or an approval
gives): hidden paths are refused all the same, by every way of naming them, their content in no
output and no file changed; scans of a folder holding them neither list nor enter them. Writes
to protected paths are refused unless the permission check allowed them (``protected_ok``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fxdesk.tools import protected
from fxdesk.tools.base import Tool, ToolContext, ToolResult
from fxdesk.tools.basic import WriteFileTool
from fxdesk.tools.files import EditFileTool, ListDirTool, ReadFileTool
from fxdesk.tools.search import GlobTool, GrepTool
from tests.guarded import HIDDEN_FILES, Home, Repo, git, make_home, make_worktree
from tests.leaks import exposed

HIDES = "which fxdesk hides from the agent"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    return make_home(tmp_path, monkeypatch)


def context(workspace: Path, data_dir: Path | None, **extra: Any) -> ToolContext:
    return ToolContext(workspace, "s", "w", "c", outside_ok=True, data_dir=data_dir, **extra)


def shown(result: ToolResult) -> str:
    return f"{result.output}\n{result.full_output or ''}\n{result.data}"


def assert_nothing_of(result: ToolResult, home: Home) -> None:
    """No hidden file's content, in any form, in anything the tool returned."""
    for kind in home.hidden.values():
        key = kind.content.split(": ")[1].strip()
        assert exposed(shown(result), key) == [], kind.name


# --- the lists ------------------------------------------------------------------------------


def test_the_hidden_list_names_every_credential_store_and_the_data_folder(home: Home) -> None:
    listed = protected.hidden_paths(home.home, home.data_dir)
    for kind in home.hidden.values():
        assert any(kind.file.is_relative_to(path) for path in listed), kind.name
    assert home.data_dir in listed
    assert not any(home.workspace.is_relative_to(path) for path in listed)


def test_the_hidden_list_follows_xdg_folders_and_links(home: Home, tmp_path: Path) -> None:
    config, data, gnupg = tmp_path / "cfg", tmp_path / "xdg-data", tmp_path / "gpg"
    environ = {"XDG_CONFIG_HOME": str(config), "XDG_DATA_HOME": str(data), "GNUPGHOME": str(gnupg)}
    listed = protected.hidden_paths(home.home, None, environ)
    assert {config / "gh", config / "gcloud", data / "keyrings", gnupg} <= set(listed)
    # ~/.ssh as a link to a folder elsewhere: what it points to is hidden too.
    real = tmp_path / "keys"
    real.mkdir()
    (home.home / ".ssh").rename(tmp_path / "old-ssh")
    (home.home / ".ssh").symlink_to(real)
    assert protected.is_hidden(real / "id_rsa", home.home, None)


@pytest.mark.parametrize(
    ("path", "hidden"),
    [
        ("/proc/self/environ", True),
        ("/proc/thread-self/environ", True),
        ("/proc/{pid}/environ", True),  # this process's own number, filled in when run
        ("/proc/1/cmdline", True),
        ("/proc/cpuinfo", False),
        ("/procs/1", False),
    ],
)
def test_processes_are_hidden_but_not_the_rest_of_proc(home: Home, path: str, hidden: bool) -> None:
    resolved = Path(os.path.realpath(path.format(pid=os.getpid())))
    assert protected.is_hidden(resolved, home.home, None) is hidden


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_worktree(tmp_path)


def test_the_protected_list_holds_the_worktrees_git_folders(repo: Repo) -> None:
    listed = protected.protected_paths(repo.workspace)
    assert repo.workspace / ".git" in listed  # the .git *file* (rewritten, it moves the repo)
    assert repo.workspace / ".fxdesk" in listed
    assert repo.gitdir in listed and repo.main / ".git" in listed


def test_git_reads_the_configuration_the_list_protects(repo: Repo) -> None:
    """Why the common folder is protected: git, run in the worktree, takes its config (where a
    core.fsmonitor line would name a program to run) from there."""
    git("config", "core.fsmonitor", "/bin/true", cwd=repo.main)
    origin = git("config", "--show-origin", "core.fsmonitor", cwd=repo.workspace)
    config = Path(origin.split("\t")[0].removeprefix("file:"))
    assert protected.is_protected(Path(os.path.realpath(config)), repo.workspace)


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        (".git", True),
        (".git/config", True),
        (".git/hooks/pre-commit", True),
        (".GIT/config", True),  # the same folder on macOS
        ("vendor/lib/.git/config", True),  # a nested repository's
        (".fxdesk/settings.json", True),
        ("sub/.fxdesk/x", True),
        (".gitignore", False),
        (".github/workflows/ci.yml", False),
        ("src/git/config", False),
        ("README", False),
    ],
)
def test_what_is_protected_in_a_workspace(repo: Repo, relative: str, expected: bool) -> None:
    assert protected.is_protected(repo.workspace / relative, repo.workspace) is expected


def test_a_fxdesk_folder_outside_the_workspace_is_not_protected(repo: Repo) -> None:
    assert not protected.is_protected(repo.main / ".fxdesk" / "x", repo.workspace)
    assert protected.is_protected(repo.main / ".git" / "config", repo.workspace)


# --- hidden: every tool, every way to name it --------------------------------------------------

FileCall = Callable[[str], tuple[Tool, dict[str, Any]]]
FILE_TOOLS: dict[str, FileCall] = {
    "read_file": lambda path: (ReadFileTool(), {"path": path}),
    "edit_file": lambda path: (
        EditFileTool(),
        {"path": path, "old_text": "secret", "new_text": "gone"},
    ),
    "write_file": lambda path: (WriteFileTool(), {"path": path, "content": "overwritten\n"}),
    "append": lambda path: (
        WriteFileTool(),
        {"path": path, "content": "ssh-ed25519 AAAA attacker\n", "append": True},
    ),
    "list_dir": lambda path: (ListDirTool(), {"path": path}),
    "glob": lambda path: (GlobTool(), {"pattern": "*", "path": path}),
    "grep": lambda path: (GrepTool(), {"pattern": "secret", "path": path}),
}


def cases() -> list[tuple[str, str, str]]:
    ways = ["absolute", "tilde", "dot-dot", "dot-dot through a folder", "link to the file"]
    ways += ["chain of links", "link to the home folder", "link to the folder", "the folder"]
    return [
        (tool, kind, way)
        for tool in FILE_TOOLS
        for kind in HIDDEN_FILES
        for way in ways
        if not (way == "link to the folder" and HIDDEN_FILES[kind].count("/") == 0)
    ]


@pytest.mark.parametrize(("tool", "kind", "way"), cases())
async def test_a_hidden_path_is_refused_by_every_tool_however_it_is_named(
    home: Home, tool: str, kind: str, way: str
) -> None:
    target = home.hidden[kind]
    ways = home.ways_to(target)
    if way == "the folder":
        ways[way] = str(target.folder) if target.folder != home.home else str(target.file)
    before = home.snapshot()
    runner, args = FILE_TOOLS[tool](ways[way])
    result = await runner.run(args, context(home.workspace, home.data_dir))
    assert not result.ok
    assert HIDES in result.output, result.output
    assert_nothing_of(result, home)
    assert home.snapshot() == before  # nothing written, nothing created


async def test_a_new_file_in_a_hidden_folder_is_not_created(home: Home) -> None:
    for raw in ("~/.ssh/authorized_keys", "links/ssh-folder/authorized_keys", "~/.aws/new/x"):
        result = await WriteFileTool().run(
            {"path": raw, "content": "ssh-ed25519 AAAA attacker\n"},
            context(home.workspace, home.data_dir),
        )
        assert not result.ok and HIDES in result.output
    assert not (home.home / ".ssh" / "authorized_keys").exists()
    assert not (home.home / ".aws" / "new").exists()


async def test_a_process_folder_is_refused_and_fxdesks_environment_stays_unread(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = context(home.workspace, home.data_dir)
    for raw in ("/proc/self/environ", f"/proc/{os.getpid()}/environ", "/proc/self/cmdline"):
        result = await ReadFileTool().run({"path": raw}, ctx)
        assert not result.ok and HIDES in result.output, raw
        assert "HOME=" not in shown(result)
    listing = await ListDirTool().run({"path": "/proc"}, ctx)
    assert listing.ok
    names = {line.split()[0].rstrip("/") for line in listing.output.splitlines()}
    assert "cpuinfo" in names
    assert not any(name.isdigit() or name in ("self", "thread-self") for name in names)


# --- hidden: scans of a folder that holds them --------------------------------------------------


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every folder a tool lists (os.scandir) during the test."""
    seen: list[str] = []
    real = os.scandir

    def recording(path: Any = ".") -> Any:
        seen.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", recording)
    return seen


SCANS = {
    "list_dir ~": (ListDirTool(), {"path": "~"}),
    "list_dir ~/.config": (ListDirTool(), {"path": "~/.config"}),
    "list_dir links": (ListDirTool(), {"path": "links"}),
    "glob ~ **/*": (GlobTool(), {"pattern": "**/*", "path": "~"}),
    "glob ~ .*/**/*": (GlobTool(), {"pattern": ".*/**/*", "path": "~"}),
    "glob ~ .*/*": (GlobTool(), {"pattern": ".*/*", "path": "~"}),
    "glob links */*": (GlobTool(), {"pattern": "*/*", "path": "links"}),
    "glob ../.ssh/*": (GlobTool(), {"pattern": "../.ssh/*"}),
    "glob through a link to home */*": (GlobTool(), {"pattern": "links/home/*/*"}),
    "glob through a link to home .*/*": (GlobTool(), {"pattern": "links/home/.*/*"}),
    "glob through a link to home .*/**/*": (GlobTool(), {"pattern": "links/home/.*/**/*"}),
    "list_dir through a link to home": (ListDirTool(), {"path": "links/home"}),
    "grep through a link to home": (GrepTool(), {"pattern": "secret", "path": "links/home"}),
    "grep ~": (GrepTool(), {"pattern": "secret", "path": "~"}),
    "grep the workspace": (GrepTool(), {"pattern": "secret"}),
    "grep links": (GrepTool(), {"pattern": "secret", "path": "links"}),
}


@pytest.mark.parametrize("scan", SCANS)
async def test_a_scan_never_lists_nor_enters_a_hidden_path(
    home: Home, scanned: list[str], scan: str
) -> None:
    tool, args = SCANS[scan]
    result = await tool.run(args, context(home.workspace, home.data_dir))
    assert result.ok, result.output
    assert_nothing_of(result, home)
    text = shown(result).replace(str(args.get("pattern")), "")  # "no paths match '...'"
    for kind in home.hidden.values():
        assert kind.file.name not in text, kind.name
    for name in (".ssh", ".aws", ".gnupg", "keyrings/", "login.keyring", ".netrc", "fxdesk.log"):
        assert name not in text
    assert not [
        path
        for path in scanned
        if protected.is_hidden(Path(os.path.realpath(path)), home.home, home.data_dir)
    ]


async def test_list_dir_says_a_link_leads_to_a_hidden_path_without_following_it(home: Home) -> None:
    result = await ListDirTool().run({"path": "links"}, context(home.workspace, home.data_dir))
    assert "ssh-file -> (a hidden path)" in result.output
    assert "notes" not in result.output


async def test_ordinary_files_beside_hidden_ones_are_still_found(home: Home) -> None:
    (home.home / ".config" / "editor.conf").write_text("a secret-free setting\n")
    ctx = context(home.workspace, home.data_dir)
    found = await GrepTool().run({"pattern": "secret-free", "path": "~"}, ctx)
    assert found.output == ".config/editor.conf:1: a secret-free setting" or found.output.endswith(
        "/.config/editor.conf:1: a secret-free setting"
    )
    listed = await GlobTool().run({"pattern": ".config/*", "path": "~"}, ctx)
    assert listed.output.splitlines() == [str(home.home / ".config" / "editor.conf")]


# --- protected: writes refused unless allowed ------------------------------------------------


def protected_writes(repo: Repo) -> dict[str, tuple[Path, str]]:
    """Ways to write a protected path, and the path each one changes."""
    main = repo.main
    (main / ".fxdesk").mkdir(exist_ok=True)
    (main / ".fxdesk" / "settings.json").write_text("{}\n")
    (main / "cfg").symlink_to(".git/config")
    return {
        ".git/config": (main, ".git/config"),
        "a new hook": (main, ".git/hooks/pre-commit"),
        ".GIT/config": (main, ".GIT/config"),
        ".fxdesk/settings.json": (main, ".fxdesk/settings.json"),
        "a link to .git/config": (main, "cfg"),
        "dot-dot back into .git": (main, "sub/../.git/config"),
        "the worktree's .git file": (repo.workspace, ".git"),
        "the worktree's git folder": (repo.workspace, str(repo.gitdir / "HEAD")),
        "the common git config": (repo.workspace, "../main/.git/config"),
        "a nested repository": (repo.workspace, "vendor/lib/.git/config"),
    }


WRITERS: dict[str, Callable[[str, Path], tuple[Tool, dict[str, Any]]]] = {
    "write_file": lambda raw, _: (WriteFileTool(), {"path": raw, "content": "[core]\n\tx = 1\n"}),
    "append": lambda raw, _: (
        WriteFileTool(),
        {"path": raw, "content": "\tfsmonitor = /tmp/run-me\n", "append": True},
    ),
    # The whole text: it occurs exactly once.
    "edit_file": lambda raw, target: (
        EditFileTool(),
        {"path": raw, "old_text": target.read_text(), "new_text": target.read_text() + "\n"},
    ),
}
PROTECTED_WAYS = [
    ".git/config",
    "a new hook",
    ".GIT/config",
    ".fxdesk/settings.json",
    "a link to .git/config",
    "dot-dot back into .git",
    "the worktree's .git file",
    "the worktree's git folder",
    "the common git config",
    "a nested repository",
]


def state(path: Path) -> tuple[bytes, int] | None:
    return (path.read_bytes(), path.stat().st_mtime_ns) if path.exists() else None


@pytest.mark.parametrize(
    ("writer", "way"),
    [
        (writer, way)
        for writer in WRITERS
        for way in PROTECTED_WAYS
        # edit_file changes files that exist; these two name a file not made yet.
        if not (writer == "edit_file" and way in ("a new hook", ".GIT/config"))
    ],
)
async def test_a_protected_path_is_written_only_when_the_check_allowed_it(
    repo: Repo, writer: str, way: str
) -> None:
    workspace, raw = protected_writes(repo)[way]
    target = Path(os.path.realpath(workspace / os.path.expanduser(raw)))
    before = state(target)
    tool, args = WRITERS[writer](raw, target)
    refused = await tool.run(args, context(workspace, None))
    assert not refused.ok
    assert "is in a protected path (.git" in refused.output or "(.fxdesk" in refused.output
    assert state(target) == before
    allowed = await tool.run(args, context(workspace, None, protected_ok=True))
    assert allowed.ok, allowed.output
    assert state(target) != before


async def test_protected_paths_can_be_read(repo: Repo) -> None:
    ctx = context(repo.main, None)
    assert (await ReadFileTool().run({"path": ".git/config"}, ctx)).ok
    assert (await ListDirTool().run({"path": ".git"}, ctx)).ok
    assert (await GlobTool().run({"pattern": ".git/*"}, ctx)).data["matches"] > 3


async def test_an_edit_preview_of_a_protected_path_refuses_without_approval(repo: Repo) -> None:
    args = {"path": ".git/config", "old_text": "[core]\n", "new_text": "[core]\n\tx = 1\n"}
    preview = await EditFileTool().preview(args, context(repo.main, None))
    assert not preview.ok and "protected path (.git" in preview.output
    allowed = await EditFileTool().preview(args, context(repo.main, None, protected_ok=True))
    assert allowed.ok and "\n+\tx = 1\n" in allowed.output


def test_the_planted_kinds_cover_what_the_issue_names() -> None:
    """The hidden files these tests plant include every kind issue 11 lists."""
    assert set(HIDDEN_FILES) >= {"~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gh", "data folder"}
    assert any("keyrings" in relative for relative in HIDDEN_FILES.values())
