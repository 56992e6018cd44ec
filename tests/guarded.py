"""A person's home folder with the things fxdesk hides (keys, tokens, its own data folder),
and a workspace in it with links and ``..`` paths that lead there; a real git repository with
a worktree for the protected paths. Shared by the tool and engine tests of protected paths.

The hidden files hold random keys nobody registered as secrets: only the path policy, not the
redaction, keeps them out of what tests look at (``tests/leaks.py`` finds them).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.leaks import make_key


@dataclass(frozen=True)
class Hidden:
    """One kind of hidden store: a file in it, and its folder (the file's parent)."""

    name: str
    file: Path
    content: str

    @property
    def folder(self) -> Path:
        return self.file.parent


# Relative to the home folder; the data folder where fxdesk keeps it by default on Linux.
HIDDEN_FILES = {
    "~/.ssh": ".ssh/id_ed25519",
    "~/.aws": ".aws/credentials",
    "~/.gnupg": ".gnupg/private-keys-v1.d/key.key",
    "~/.config/gh": ".config/gh/hosts.yml",
    "~/.local/share/keyrings": ".local/share/keyrings/login.keyring",
    "~/.netrc": ".netrc",
    "data folder": ".local/share/fxdesk/logs/fxdesk.log",
}
DATA_DIR = ".local/share/fxdesk"


@dataclass(frozen=True)
class Home:
    home: Path
    workspace: Path
    data_dir: Path
    hidden: dict[str, Hidden]

    def snapshot(self) -> dict[str, tuple[bytes, int]]:
        """Every file in the home folder outside the workspace (bytes and mtime), but those
        of a running fxdesk in the data folder: the planted log file is the data folder's."""
        planted = self.hidden["data folder"].file
        found = {}
        for folder, _, names in os.walk(self.home):
            if Path(folder).is_relative_to(self.workspace):
                continue
            for name in names:
                path = Path(folder) / name
                if path.is_relative_to(self.data_dir) and path != planted:
                    continue
                found[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
        return found

    def ways_to(self, kind: Hidden) -> dict[str, str]:
        """Paths a call may write that lead to ``kind``'s file, as named from the workspace."""
        relative = kind.file.relative_to(self.home)
        ways = {
            "absolute": str(kind.file),
            "tilde": f"~/{relative}",
            "dot-dot": f"../{relative}",
            "dot-dot through a folder": f"sub/../../{relative}",
            "link to the file": f"links/{_slug(kind.name)}-file",
            "chain of links": f"links/{_slug(kind.name)}-chain",
            "link to the home folder": f"links/home/{relative}",
        }
        if kind.folder != self.home:
            ways["link to the folder"] = f"links/{_slug(kind.name)}-folder/{kind.file.name}"
        return ways


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")


def make_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    """A home folder at ``tmp_path/home`` (``HOME`` points there for the test), with every
    hidden store, a workspace ``~/proj`` and links from ``~/proj/links`` to each store."""
    home = tmp_path / "home"
    workspace = home / "proj"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "links").mkdir()
    (workspace / "notes.txt").write_text("ordinary notes\n")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "GNUPGHOME"):
        monkeypatch.delenv(name, raising=False)
    (workspace / "links" / "home").symlink_to(home)
    hidden = {}
    for name, relative in HIDDEN_FILES.items():
        file = home / relative
        file.parent.mkdir(parents=True, exist_ok=True)
        content = f"secret of {name}: {make_key()}\n"
        file.write_text(content)
        kind = Hidden(name, file, content)
        hidden[name] = kind
        slug = _slug(name)
        (workspace / "links" / f"{slug}-file").symlink_to(file)
        (workspace / "links" / f"{slug}-chain").symlink_to(f"{slug}-file")
        if kind.folder != home:
            (workspace / "links" / f"{slug}-folder").symlink_to(kind.folder)
    return Home(home, workspace, home / DATA_DIR, hidden)


@dataclass(frozen=True)
class Repo:
    """A workspace that is a git worktree of ``main``: its ``.git`` is a file pointing to
    ``main/.git/worktrees/<name>``, whose ``commondir`` is ``main/.git`` (config, hooks)."""

    workspace: Path
    main: Path
    gitdir: Path


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    return done.stdout


def make_worktree(tmp_path: Path) -> Repo:
    main = tmp_path / "main"
    main.mkdir()
    git("init", "-q", cwd=main)
    (main / "README").write_text("main\n")
    git("add", "README", cwd=main)
    git("commit", "-qm", "first", cwd=main)
    workspace = tmp_path / "wt"
    git("worktree", "add", "-q", str(workspace), cwd=main)
    gitdir = Path(git("rev-parse", "--absolute-git-dir", cwd=workspace).strip())
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    git("init", "-q", cwd=nested)
    (workspace / ".fxdesk").mkdir()
    (workspace / ".fxdesk" / "settings.json").write_text("{}\n")
    return Repo(workspace, main, gitdir)
