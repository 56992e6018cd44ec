"""The table of git subcommands that write the git folder (``domain.git_commands``)."""

from __future__ import annotations

import pytest

from fxdesk.domain.git_commands import GitWrite, git_writes
from fxdesk.domain.shell import analyse

WS, HOME = "/ws", "/home/u"

WRITING = [
    "git commit -m x",
    "git add -A",
    "git checkout -b feature",
    "git checkout -- file",
    "git merge other",
    "git rebase main",
    "git reset --hard HEAD~1",
    "git stash",
    "git stash push -m wip",
    "git stash pop",
    "git tag v1",
    "git tag -a v1 -m release",
    "git tag -d v1",
    "git branch new",
    "git branch -d old",
    "git branch -m old new",
    "git branch --set-upstream-to=origin/main",
    "git fetch",
    "git pull",
    "git push origin main",
    "git am 0001.patch",
    "git apply --index fix.patch",
    "git apply --cached fix.patch",
    "git apply -3 fix.patch",
    "git cherry-pick abc123",
    "git revert HEAD",
    "git rm --cached f",
    "git mv a b",
    "git restore --staged f",
    "git restore -SW f",
    "git switch main",
    "git gc",
    "git config user.name me",
    "git config --unset user.name",
    "git config --add remote.origin.fetch x",
    "git init",
    "git worktree add ../wt",
    "git worktree remove ../wt",
    "git notes add -m x",
    "git update-index --assume-unchanged f",
    "git commit-tree HEAD^{tree} -m x",
    "git update-ref refs/heads/x HEAD",
    "git symbolic-ref HEAD refs/heads/x",
    "git remote add origin url",
    "git reflog expire --all",
    "git submodule update --init",
    "git hash-object -w f",
    "git bisect start",
    "git sparse-checkout set dir",
    "git replace a b",
    "git co main",  # an alias: fxdesk cannot tell, so it asks
    "git lfs pull",  # an external command
    "git -C sub commit -m x",
    "git --no-pager -c user.name=x commit -m x",
    "git --git-dir=.git --work-tree=. add f",
    "env GIT_DIR=/r git add f",
    "nice -n 5 git add f",
    "timeout 10 git commit -m x",
    "/usr/bin/git commit -m x",
]

READING = [
    "git status",
    "git status --short",
    "git log --oneline -5",
    "git diff HEAD",
    "git show HEAD:README",
    "git rev-parse HEAD",
    "git ls-files",
    "git grep needle",
    "git blame README",
    "git config --get user.name",
    "git config --list",
    "git config -l --show-origin",
    "git config get user.name",
    "git config user.name",
    "git branch",
    "git branch -a -v",
    "git branch --show-current",
    "git branch --contains HEAD",
    "git branch --list 'feat*'",
    "git tag",
    "git tag -l 'v*'",
    "git tag --contains HEAD",
    "git stash list",
    "git stash show -p",
    "git worktree list",
    "git remote -v",
    "git remote get-url origin",
    "git notes",
    "git notes show HEAD",
    "git reflog",
    "git submodule status",
    "git restore f",
    "git apply --check fix.patch",
    "git apply fix.patch",  # the work tree only
    "git symbolic-ref HEAD",
    "git hash-object f",
    "git cat-file -p HEAD",
    "git describe --tags",
    "git ls-remote origin",
    "git format-patch -1",
    "git -C sub status",
    "git --no-pager log",
    "git --version",
    "git --help",
    "git",
    "git --bogus commit",  # git refuses an option it does not have: nothing runs
    "gitk --all",  # not git
    "echo git commit",
]


def writes(line: str) -> GitWrite | None:
    (command,) = analyse(line, cwd=WS, home=HOME).commands
    return git_writes(command.words, command.cwd, HOME)


@pytest.mark.parametrize("line", WRITING)
def test_a_git_command_that_writes_the_repository_is_counted(line: str) -> None:
    assert writes(line) is not None


@pytest.mark.parametrize("line", READING)
def test_a_git_command_that_only_reads_is_not(line: str) -> None:
    assert writes(line) is None


@pytest.mark.parametrize(
    ("line", "start", "git_dir"),
    [
        ("git commit -m x", "/ws", None),
        ("git -C sub commit -m x", "/ws/sub", None),
        ("git -C sub -C ../other add f", "/ws/other", None),
        ("git -C /elsewhere add f", "/elsewhere", None),
        ("git --git-dir=/r/.git add f", "/ws", "/r/.git"),
        ("git -C sub --git-dir ../g add f", "/ws/sub", "/ws/g"),
        ("GIT_DIR=g git add f", "/ws", "/ws/g"),
        ("cd sub && git add f", "/ws/sub", None),
    ],
)
def test_the_repository_is_found_where_git_looks(
    line: str, start: str, git_dir: str | None
) -> None:
    command = analyse(line, cwd=WS, home=HOME).commands[-1]
    found = git_writes(command.words, command.cwd, HOME)
    assert found is not None
    assert (found.start, found.git_dir) == (start, git_dir)


def test_git_init_names_its_own_folder_only() -> None:
    found = writes("git init sub")
    assert found is not None and found.exact and found.start == "/ws/sub"


@pytest.mark.parametrize(
    ("line", "file"),
    [
        ("git config --global user.name me", "/home/u/.gitconfig"),
        ("git config --system core.x y", "/etc/gitconfig"),
        ("git config --file=cfg a.b c", "/ws/cfg"),
        ("git config -f ../cfg a.b c", "/cfg"),
        ("git config user.name me", None),
    ],
)
def test_git_config_writes_the_file_it_names(line: str, file: str | None) -> None:
    found = writes(line)
    assert found is not None and found.config_file == file


def test_the_approval_shows_the_git_command_as_written() -> None:
    found = writes("timeout 10 git -C sub commit -m 'a b'")
    assert found is not None and found.command == "git -C sub commit -m a b"
