"""The paths the agent must not change without asking (*protected*) or must not see at all
(*hidden*): one list for the file tools, the permission check and the command sandbox.

- **Protected**: what a tool or a command the person runs later would *execute* if the agent
  wrote it. ``.git`` (its ``config`` can name a program that ``git status`` runs, its hooks run
  on commit), the git folder a ``.git`` file points to (a worktree's, and the common folder
  that holds its ``config``), and fxdesk's own ``.fxdesk`` folder in the workspace. Reading them
  is fine; writing asks (see ``engine/path_guard.py`` for the modes).
- **Hidden**: what holds keys and tokens, and fxdesk's data folder (its database holds every
  transcript; its logs, commands' output). No tool reads, writes, lists or searches them, in any
  mode, whatever a rule says.

Functions here take absolute paths that have been resolved already (``workspace.resolve_path``:
``..`` and symbolic links followed), so a link into ``~/.ssh`` or a ``../..`` detour is judged
by where it lands. Lists include both a path as named and where it resolves to, when the folder
itself is a link. Nothing here writes; ``protected_paths`` reads a ``.git`` file and a
``commondir`` file, and the lists resolve symbolic links.

The sandbox (``tools/sandbox.py``) uses ``protected_paths`` (bound read-only) and
``hidden_paths`` (covered). Processes are hidden there by a PID namespace; the in-process tools
use ``is_hidden``, which also refuses ``/proc/<pid>`` (another process's environment and memory,
fxdesk's own included).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fxdesk.tools.workspace import is_inside

GIT = ".git"
FXDESK = ".fxdesk"

# Under the home folder: where keys, tokens and logged-in sessions are kept, by the tool's own
# default location, and what records what the person typed. The file tools, the permission check
# and the sandbox (tools/sandbox.py) all hide exactly this list; ~/.npmrc too, though a private
# registry then needs its URL in the workspace's .npmrc (docs/sandbox.md).
HOME_SECRETS: tuple[tuple[str, str], ...] = (
    (".ssh", "SSH keys"),
    (".gnupg", "GnuPG keys"),
    (".aws", "AWS credentials"),
    (".azure", "Azure credentials"),
    (".kube", "Kubernetes credentials"),
    (".docker/config.json", "Docker registry credentials"),
    (".netrc", "login credentials"),
    (".git-credentials", "git credentials"),
    (".pypirc", "PyPI credentials"),
    (".cargo/credentials", "crates.io credentials"),
    (".cargo/credentials.toml", "crates.io credentials"),
    (".gem/credentials", "RubyGems credentials"),
    (".password-store", "pass passwords"),
    (".mozilla", "browser profiles (cookies, passwords)"),
    (".local/share/keyrings", "the keyring"),
    (".local/share/kwalletd", "the keyring"),
    (".local/share/python_keyring", "the keyring"),
    (".npmrc", "npm registry tokens"),
    (".vault-token", "a Vault token"),
    (".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"),
    (".codex/auth.json", "the Codex login"),
    (".claude/.credentials.json", "the Claude Code login"),
    (".thunderbird", "mail profiles"),
    (".bash_history", "what the person typed"),
    (".zsh_history", "what the person typed"),
    (".python_history", "what the person typed"),
    # macOS: the keychains, browsers' and mail's profiles, and messages.
    ("Library/Keychains", "the keychain"),
    ("Library/Cookies", "browser cookies"),
    ("Library/Safari", "browser profiles (cookies, passwords)"),
    ("Library/Application Support/Google/Chrome", "browser profiles (cookies, passwords)"),
    ("Library/Application Support/Firefox", "browser profiles (cookies, passwords)"),
    ("Library/Mail", "mail"),
    ("Library/Messages", "messages"),
)
# The same under the configuration folder ($XDG_CONFIG_HOME, default ~/.config).
CONFIG_SECRETS: tuple[tuple[str, str], ...] = (
    ("gh", "GitHub CLI credentials"),
    ("hub", "GitHub credentials"),
    ("glab-cli", "GitLab CLI credentials"),
    ("gcloud", "Google Cloud credentials"),
    ("op", "1Password CLI"),
    ("doctl", "DigitalOcean credentials"),
    ("rclone", "cloud storage credentials"),
    ("git/credentials", "git credentials"),
    ("google-chrome", "browser profiles (cookies, passwords)"),
    ("chromium", "browser profiles (cookies, passwords)"),
    ("BraveSoftware", "browser profiles (cookies, passwords)"),
)
DATA_FOLDER = "the fxdesk data folder (transcripts, logs, keys' settings)"
_PROCESS = re.compile(r"/proc/(?:[0-9]+|self|thread-self)(?:/|$)")


@dataclass(frozen=True)
class Guarded:
    """One protected or hidden path.

    Attributes:
        path: Absolute (and, where it exists, also listed resolved).
        label: How the person knows it: ``.git``, ``~/.ssh``, ``the fxdesk data folder``.
        why: What it holds, in a few words.
    """

    path: Path
    label: str
    why: str


def protected_paths(workspace: Path, extra: Iterable[Path] = ()) -> list[Path]:
    """The paths under ``workspace`` (and the git folder it uses) that writes must ask for.

    Args:
        workspace: The session's workspace (resolved here).
        extra: Other paths the person configured as protected.
    """
    return [entry.path for entry in protected_entries(workspace, extra)]


# Where a nested repository is looked for: so deep, so many entries at most (a command's policy
# is built before each command; a workspace is walked in a few milliseconds), and never inside
# these folders, which hold installed packages or build output by the thousand.
NESTED_DEPTH = 6
NESTED_ENTRIES = 20_000
NOT_SEARCHED = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", "target", "dist", "build", ".gradle", ".next"}
)  # fmt: skip


def nested_git_folders(workspace: Path) -> list[Path]:
    """The ``.git`` folders and files of repositories inside ``workspace`` (vendored clones,
    submodules), below its own: the sandbox keeps them read-only too, since the person's git
    runs their configuration and hooks there. Bounded (``NESTED_DEPTH``, ``NESTED_ENTRIES``,
    package and build folders skipped); what lies beyond is still asked about by the
    permission check (``protected_in``), not enforced (docs/sandbox.md)."""
    found: list[Path] = []
    budget = NESTED_ENTRIES
    level = [workspace]
    for _depth in range(NESTED_DEPTH):
        below: list[Path] = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        budget -= 1
                        if budget < 0:
                            return found
                        if entry.name == GIT and folder != workspace:
                            found.append(Path(entry.path))
                        elif entry.name not in NOT_SEARCHED and entry.is_dir(follow_symlinks=False):
                            below.append(Path(entry.path))
            except OSError:
                continue
        level = below
    return found


def hidden_paths(
    home: Path, data_dir: Path | None, environ: Mapping[str, str] | None = None
) -> list[Path]:
    """The paths no tool or command may read: credential stores and fxdesk's data folder.

    Args:
        home: The person's home folder.
        data_dir: fxdesk's data folder (None: not known here).
        environ: Where ``XDG_CONFIG_HOME``, ``XDG_DATA_HOME`` and ``GNUPGHOME`` are read
            (default: this process's environment).
    """
    return [entry.path for entry in hidden_entries(home, data_dir, environ)]


def is_hidden(
    path: Path, home: Path, data_dir: Path | None, environ: Mapping[str, str] | None = None
) -> bool:
    """Whether the resolved ``path`` is, or lies in, a hidden path (or a process's ``/proc``
    folder)."""
    return hidden_in(hidden_entries(home, data_dir, environ), path) is not None


def is_protected(path: Path, workspace: Path, extra: Iterable[Path] = ()) -> bool:
    """Whether writing the resolved ``path`` must ask: it is, or lies in, a protected path of
    ``workspace``, or in any ``.git`` folder (another repository's hooks run as well)."""
    root = Path(os.path.realpath(workspace))
    return protected_in(protected_entries(root, extra), root, path) is not None


def hidden_in(entries: Iterable[Guarded], path: Path | str) -> Guarded | None:
    """The entry of ``hidden_entries`` the resolved ``path`` is in, or None."""
    text = os.fspath(path)
    for entry in entries:
        if is_inside(text, entry.path):
            return entry
    if text.startswith("/proc/") and _PROCESS.match(text + "/"):
        return Guarded(Path(text), "/proc/<pid>", "a process's environment and memory")
    return None


def protected_in(entries: Iterable[Guarded], workspace: Path, path: Path | str) -> Guarded | None:
    """The entry of ``protected_entries`` a write to the resolved ``path`` would change, or
    None. Also any repository's ``.git`` (a nested one, a submodule's, the one above the
    workspace): its hooks and configuration run when the person uses git there; and any
    ``.fxdesk`` folder inside ``workspace``. Names compare in lower case, as macOS's file
    system does."""
    text = os.fspath(path)
    for entry in entries:
        if is_inside(text, entry.path):
            return entry
    parts = Path(text).parts
    for index, part in enumerate(parts):
        if part.lower() == GIT:
            return Guarded(Path(*parts[: index + 1]), GIT, "git's configuration and hooks")
        if part.lower() == FXDESK and is_inside(Path(*parts[:index]), workspace):
            return Guarded(Path(*parts[: index + 1]), FXDESK, "fxdesk's settings")
    return None


def protected_entries(workspace: Path, extra: Iterable[Path] = ()) -> list[Guarded]:
    """``protected_paths`` with what each one is."""
    root = Path(os.path.realpath(workspace))
    git = root / GIT
    found = [
        Guarded(git, GIT, "git's configuration and hooks, which git runs"),
        Guarded(root / FXDESK, FXDESK, "fxdesk's settings for this workspace"),
    ]
    found += [Guarded(path, GIT, "the git folder this workspace uses") for path in _git_dirs(git)]
    found += [Guarded(Path(os.path.abspath(path)), str(path), "configured") for path in extra]
    return _with_resolved(found)


def hidden_entries(
    home: Path, data_dir: Path | None, environ: Mapping[str, str] | None = None
) -> list[Guarded]:
    """``hidden_paths`` with what each one is."""
    env = os.environ if environ is None else environ
    home = Path(os.path.abspath(home))
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    found = [Guarded(home / name, f"~/{name}", why) for name, why in HOME_SECRETS]
    found += [
        Guarded(config / name, _shown(config / name, home), why) for name, why in CONFIG_SECRETS
    ]
    found.append(Guarded(data / "keyrings", _shown(data / "keyrings", home), "the keyring"))
    if env.get("GNUPGHOME"):
        found.append(Guarded(Path(env["GNUPGHOME"]), "$GNUPGHOME", "GnuPG keys"))
    if data_dir is not None:
        found.append(Guarded(Path(os.path.abspath(data_dir)), DATA_FOLDER, "fxdesk's own data"))
    return _with_resolved(found)


@dataclass(frozen=True)
class PathPolicy:
    """Both lists for one workspace, worked out once (a search asks for every file it meets).

    Build it with ``make``; ``hidden`` and ``protected`` then compare names only.
    """

    workspace: Path
    hidden_list: tuple[Guarded, ...]
    protected_list: tuple[Guarded, ...]

    @classmethod
    def make(
        cls,
        workspace: Path,
        home: Path,
        data_dir: Path | None,
        environ: Mapping[str, str] | None = None,
        extra: Iterable[Path] = (),
    ) -> PathPolicy:
        return cls(
            Path(os.path.realpath(workspace)),
            tuple(hidden_entries(home, data_dir, environ)),
            tuple(protected_entries(workspace, extra)),
        )

    def hidden(self, path: Path | str) -> Guarded | None:
        """The hidden path the resolved ``path`` is in, or None.

        A workspace inside fxdesk's data folder is a session's own git worktree
        (docs/worktrees.md): what lies inside it is not hidden by the data folder around it
        (the sandbox binds it back the same way); the rest of the data folder stays hidden."""
        found = hidden_in(self.hidden_list, path)
        if (
            found is not None
            and found.label == DATA_FOLDER
            and is_inside(self.workspace, found.path)
            and is_inside(path, self.workspace)
        ):
            return hidden_in((e for e in self.hidden_list if e.label != DATA_FOLDER), path)
        return found

    def below(self, folder: Path | str) -> PathPolicy:
        """This policy for paths found below ``folder`` (resolved, not itself hidden) without
        following a link: only the hidden paths inside it can hold them, so a search of a
        workspace with none checks each file against none."""
        inside = tuple(entry for entry in self.hidden_list if is_inside(entry.path, folder))
        return PathPolicy(self.workspace, inside, self.protected_list)

    def protected(self, path: Path | str) -> Guarded | None:
        """The protected path a write to the resolved ``path`` would change, or None."""
        return protected_in(self.protected_list, self.workspace, path)


def _git_dirs(git: Path) -> list[Path]:
    """The folders a ``.git`` *file* (a worktree or a submodule) points to: its ``gitdir`` and
    that folder's ``commondir`` (which holds the ``config`` and ``hooks``)."""
    try:
        is_file = git.is_file()
    except OSError:
        return []
    gitdir = pointed_gitdir(git) if is_file else None
    return with_common(gitdir) if gitdir is not None else []


def pointed_gitdir(dot_git: Path) -> Path | None:
    """The folder a ``.git`` file's ``gitdir:`` line names, resolved (None: not such a file)."""
    try:
        first = dot_git.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    return Path(os.path.realpath(dot_git.parent / first.partition(":")[2].strip()))


def with_common(gitdir: Path) -> list[Path]:
    """``gitdir`` and, for a worktree's, the common folder its ``commondir`` file names."""
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return found
    if common:
        path = Path(os.path.realpath(gitdir / common))
        if path != gitdir:
            found.append(path)
    return found


def _with_resolved(entries: list[Guarded]) -> list[Guarded]:
    """Each entry, and again where it resolves to when a link is on its way; no repeats."""
    seen: set[Path] = set()
    out: list[Guarded] = []
    for entry in entries:
        for path in (entry.path, Path(os.path.realpath(entry.path))):
            if path not in seen:
                seen.add(path)
                out.append(Guarded(path, entry.label, entry.why))
    return out


def _shown(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if is_inside(path, home) else str(path)
