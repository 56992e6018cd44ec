"""The sandbox's policy (what is writable, protected, hidden; the environment), the probe that
says whether bubblewrap works here and why not, and the fallback where it does not."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.cli import doctor
from fxdesk.tools import protected, sandbox_probe, shell
from fxdesk.tools.base import ToolContext
from fxdesk.tools.protected import nested_git_folders
from fxdesk.tools.sandbox import (
    allowed_environment,
    bwrap_arguments,
    make_new_grants,
    policy_for,
)
from fxdesk.tools.sandbox_probe import SandboxStatus, explain, probe
from fxdesk.tools.shell import RunCommandTool


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder outside /tmp, which the sandbox would hide whatever the policy says."""
    root = Path(tempfile.mkdtemp(prefix="fxdesk-policy-test-", dir="/var/tmp")).resolve()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_write_grants_bind_the_target_itself_never_its_folder(place: Path) -> None:
    """A folder would let the same line change what the approval did not name."""
    home, workspace, outside = place / "home", place / "ws", place / "out"
    for folder in (home, workspace, outside):
        folder.mkdir()
    (outside / "exists").write_text("")
    policy = policy_for(
        workspace,
        home=home,
        write_grants=[
            outside / "exists",  # itself
            outside / "new.txt",  # not yet: itself, made at launch
            workspace / "inside",  # writable already
            home / ".bashrc-new",  # beside the person's files: still only itself
            place / "missing" / "deeper",  # no folder to make it in
            Path("/tmp/scratch"),  # the sandbox's own /tmp: no grant needed
        ],
    )
    assert policy.grants == (outside / "exists", outside / "new.txt", home / ".bashrc-new")
    assert len(policy.refused) == 1
    assert "does not exist" in policy.refused[0]
    assert not (outside / "new.txt").exists()  # the approval's summary makes nothing
    made = make_new_grants(policy)
    assert made.grants == policy.grants
    assert (outside / "new.txt").read_text() == ""
    assert (outside / "exists").read_text() == ""


def test_a_new_grant_that_cannot_be_made_is_refused_with_why(place: Path) -> None:
    locked = place / "locked"
    locked.mkdir(mode=0o500)
    (place / "ws").mkdir()
    try:
        policy = make_new_grants(policy_for(place / "ws", write_grants=[locked / "new.txt"]))
    finally:
        locked.chmod(0o700)
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    assert policy.grants == ()
    assert "cannot be made" in policy.refused[-1]


def test_a_git_file_protects_the_git_directory_it_names_and_its_common_one(place: Path) -> None:
    workspace, common = place / "ws", place / "main" / ".git"
    worktree_dir = common / "worktrees" / "ws"
    worktree_dir.mkdir(parents=True)
    workspace.mkdir()
    (workspace / ".git").write_text(f"gitdir: {worktree_dir}\n")
    (worktree_dir / "commondir").write_text("../..\n")
    (workspace / ".fxdesk").mkdir()
    policy = policy_for(workspace, home=place)
    # The same paths as tools/protected.py lists (its order), each bound read-only once.
    assert sorted(policy.protected) == sorted(
        (workspace / ".git", worktree_dir, common, workspace / ".fxdesk")
    )
    assert len(set(policy.protected)) == len(policy.protected)


def test_protected_paths_that_do_not_exist_are_not_bound(place: Path) -> None:
    """A workspace without .git may still `git init` (a repository the agent makes is like one
    it clones); .fxdesk is not read by fxdesk yet."""
    policy = policy_for(place, home=place)
    assert policy.protected == ()
    assert "--ro-bind" not in bwrap_arguments(policy, ["true"], place)[8:]


async def test_a_separate_git_directory_inside_the_workspace_stays_read_only(
    place: Path,
) -> None:
    """`git init --separate-git-dir .repo`: the config lives in .repo, named by the .git file."""
    workspace = place / "ws"
    (workspace / ".repo").mkdir(parents=True)
    (workspace / ".repo" / "config").write_text("[core]\n")
    (workspace / ".git").write_text("gitdir: .repo\n")
    result = await RunCommandTool().run(
        {"command": "echo '[core] fsmonitor = touch pwned' >> .repo/config; echo x > .git"},
        ToolContext(workspace, "s", "w", "c"),
    )
    assert result.output.count("Read-only file system") == 2, result.output
    assert (workspace / ".repo" / "config").read_text() == "[core]\n"
    assert (workspace / ".git").read_text() == "gitdir: .repo\n"


async def test_a_nested_repositorys_git_stays_read_only(place: Path) -> None:
    """Found by the attack suite: a vendored clone's (or a submodule's) .git was writable, so a
    command could plant a core.fsmonitor that the person's git runs there, outside the sandbox."""
    workspace = place / "ws"
    nested = workspace / "vendor" / "lib" / ".git"
    nested.mkdir(parents=True)
    (nested / "config").write_text("[core]\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".git").write_text("gitdir: ../.git/modules/sub\n")  # a submodule
    (workspace / "node_modules" / "pkg" / ".git").mkdir(parents=True)  # not searched
    policy = policy_for(workspace, home=place)
    assert nested in policy.protected and workspace / "sub" / ".git" in policy.protected
    assert workspace / "node_modules" / "pkg" / ".git" not in policy.protected
    result = await RunCommandTool().run(
        {"command": "echo '[core] fsmonitor = touch pwned' >> vendor/lib/.git/config;"
                    " echo x > sub/.git; echo ok > vendor/lib/file"},
        ToolContext(workspace, "s", "w", "c"),
    )  # fmt: skip
    assert result.output.count("Read-only file system") == 2, result.output
    assert (nested / "config").read_text() == "[core]\n"
    assert (workspace / "vendor" / "lib" / "file").read_text() == "ok\n"  # the rest is not


def test_the_search_for_nested_repositories_is_bounded(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = place.joinpath(*"abcdefgh", ".git")
    deep.mkdir(parents=True)
    assert nested_git_folders(place) == []  # 8 levels down: beyond NESTED_DEPTH
    shallow = place / "x" / ".git"
    shallow.mkdir(parents=True)
    assert nested_git_folders(place) == [shallow]
    monkeypatch.setattr(protected, "NESTED_ENTRIES", 1)
    assert nested_git_folders(place) == []  # the budget ran out first


async def test_a_workspace_inside_the_data_folder_stays_writable_the_rest_hidden(
    place: Path,
) -> None:
    data = place / "data"
    workspace = data / "ws"
    workspace.mkdir(parents=True)
    (data / "fxdesk.sqlite3").write_text("the database")
    result = await RunCommandTool().run(
        {"command": f"echo made > made && ls -A {data} && cat {data}/fxdesk.sqlite3"},
        ToolContext(workspace, "s", "w", "c", data_dir=data),
    )
    assert result.output.startswith("ws\n"), result.output
    assert "the database" not in result.output
    assert (workspace / "made").read_text() == "made\n"


def test_the_environment_is_an_allow_list() -> None:
    environ = {
        "PATH": "/bin",
        "HOME": "/home/x",
        "LC_ALL": "C",
        "GITHUB_TOKEN": "t",
        "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus",
        "SSH_AUTH_SOCK": "/run/user/1/ssh",
        "DISPLAY": ":0",
        "PROJECT_SETTING": "kept when the person says so",
    }
    assert allowed_environment(environ) == {"PATH": "/bin", "HOME": "/home/x", "LC_ALL": "C"}
    assert "PROJECT_SETTING" in allowed_environment(environ, ["PROJECT_SETTING"])
    policy = policy_for(Path("/"), environ=environ | {"TMPDIR": "/host/tmp"})
    assert dict(policy.environment)["TMPDIR"] == "/tmp"


def fake_bwrap(folder: Path, version: str, stderr: str = "", code: int = 0) -> str:
    script = folder / "bwrap"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "bubblewrap {version}"; exit 0; fi\n'
        f"echo {shlex.quote(stderr)} >&2\n"
        'for a in "$@"; do echo "$a"; done > "$(dirname "$0")/args"\n'
        f"exit {code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        ("kernel/unprivileged_userns_clone", "0", "kernel.unprivileged_userns_clone = 0"),
        ("user/max_user_namespaces", "0", "user.max_user_namespaces = 0"),
        (
            "kernel/apparmor_restrict_unprivileged_userns",
            "1",
            "AppArmor forbids unprivileged user namespaces",
        ),
    ],
)
def test_a_refused_namespace_is_explained_with_the_setting_and_its_fix(
    tmp_path: Path, setting: str, value: str, said: str
) -> None:
    sysctl = tmp_path / "sys"
    (sysctl / setting).parent.mkdir(parents=True)
    (sysctl / setting).write_text(value + "\n")
    bwrap = fake_bwrap(tmp_path, "0.8.0", "bwrap: setting up uid map: Permission denied", 1)
    status = probe(bwrap, sysctl)
    assert not status.available
    assert said in status.reason
    assert "sysctl" in status.fix or "apt install bubblewrap" in status.fix


def test_other_failures_are_reported_as_bubblewrap_says(tmp_path: Path) -> None:
    bwrap = fake_bwrap(tmp_path, "0.8.0", "bwrap: Can't mount proc on /newroot/proc", 1)
    status = probe(bwrap, tmp_path)
    assert status.reason == "bubblewrap fails here: bwrap: Can't mount proc on /newroot/proc"
    reason, _ = explain("bwrap: No permissions to creating new namespace", tmp_path)
    assert reason.startswith("bubblewrap cannot create namespaces here")


def test_a_missing_bubblewrap_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    status = probe()
    assert status == SandboxStatus(
        False, reason="bubblewrap is not installed", fix=sandbox_probe.INSTALL_FIX
    )
    assert "apt install bubblewrap" in status.fix


def test_an_older_bubblewrap_runs_without_forbidding_user_namespaces(tmp_path: Path) -> None:
    status = probe(fake_bwrap(tmp_path, "0.6.1"), tmp_path)
    assert status.available and status.version == "0.6.1" and not status.disable_userns
    assert "--disable-userns" not in (tmp_path / "args").read_text().split()
    newer = probe(fake_bwrap(tmp_path, "0.8.0"), tmp_path)
    assert newer.disable_userns
    assert "--disable-userns" in (tmp_path / "args").read_text().split()


def test_the_status_is_probed_once_unless_the_failure_may_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = [SandboxStatus(False, passing=True), SandboxStatus(False, reason="no")]
    calls: list[SandboxStatus] = []

    def probing() -> SandboxStatus:
        calls.append(answers[min(len(calls), 1)])
        return calls[-1]

    monkeypatch.setattr(sandbox_probe, "probe", probing)
    sandbox_probe.forget_status()
    try:
        assert sandbox_probe.sandbox_status().passing  # a timeout: asked again next time
        assert sandbox_probe.sandbox_status().reason == "no"
        assert sandbox_probe.sandbox_status().reason == "no"
        assert len(calls) == 2
    finally:
        sandbox_probe.forget_status()


async def test_without_a_sandbox_commands_run_as_before(
    place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No sandbox here: the command runs unconfined (the modes decide what that allows), with
    the same allow-listed environment, and says so in its result."""
    unavailable = SandboxStatus(False, reason="bubblewrap is not installed")
    monkeypatch.setattr(shell, "sandbox_status", lambda: unavailable)
    monkeypatch.setenv("GITHUB_TOKEN", "not passed on")
    (place / "ws").mkdir()
    result = await RunCommandTool().run(
        {"command": f'echo made > {place}/outside; echo "[$GITHUB_TOKEN]"'},
        ToolContext(place / "ws", "s", "w", "c"),
    )
    assert result.output == (
        "[]\n[exit code 0]\n"
        "[ran outside the sandbox: no sandbox on this machine (bubblewrap is not installed)]"
    )
    assert result.data["sandboxed"] is False
    assert (place / "outside").read_text() == "made\n"
    assert os.environ["GITHUB_TOKEN"] == "not passed on"


def test_doctor_checks_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    found = doctor.check_sandbox()
    assert found.status == doctor.OK, found
    assert found.data["available"] is True and found.data["bwrap"]
    monkeypatch.setenv("PATH", "/nonexistent")
    missing = doctor.check_sandbox()
    assert missing.status == doctor.FAIL
    assert missing.summary == "commands cannot run sandboxed: bubblewrap is not installed"
    assert "sudo apt install bubblewrap" in missing.fix
