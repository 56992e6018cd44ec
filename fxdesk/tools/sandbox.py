"""The sandbox every command the agent runs is held in: its policy, and that policy as bubblewrap.

The permission check reads a command line to explain it and to match rules; it cannot know all
bash will do (issue 11: expansions that execute, reads it never judges, a ``$PWD`` a loop
changes). The guarantee comes from the kernel instead. Each command runs under bubblewrap
(``bwrap``) in namespaces of its own, where:

- the whole file system is read-only, except the workspace, a private ``/tmp``, the paths an
  approval allowed to write and the folders the person made writable for the workspace (a
  tool's cache: ``extra_writable``, never a hidden path nor one that holds one);
- inside those, what other programs obey stays read-only: ``.git`` (and the git directory a
  ``.git`` file points to, and its common directory), ``.fxdesk``;
- fxdesk's data folder, credential stores, keyrings, browser profiles, shell histories, ``/run``
  (the D-Bus buses, ``systemd --user``, agents' and container engines' sockets) and the runtime
  folder are replaced by empty ones, so not even their names' contents can be read;
- it has its own PID namespace (``/proc/$PPID`` is bubblewrap's own init, never fxdesk), no
  capabilities, and may not make user namespaces of its own;
- the network is its own empty namespace, loopback only, unless the policy allows the network;
- the environment is an allow-list, not fxdesk's environment minus some names.

Why bubblewrap and not Landlock: Landlock rules only ever add access beneath a folder, so it
cannot keep ``.git`` read-only inside a writable workspace, nor hide ``~/.ssh`` while the rest
of the home folder stays readable; nor does it give a PID namespace, a private ``/tmp`` or a
loopback-only network. docs/performance.md has the measurements and the comparison.

This module runs no process: ``policy_for`` builds the policy from what the engine knows (reading
the file system, and making the workspace's missing writable folders under the home folder),
``bwrap_arguments`` turns it into the command line. ``fxdesk.tools.sandbox_probe`` says
whether bubblewrap works on this machine; ``fxdesk.tools.shell`` runs the command.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from fxdesk.domain.permissions import SANDBOX_TEMP as TEMP_FOLDER
from fxdesk.tools.protected import (
    Guarded,
    hidden_entries,
    nested_git_folders,
    protected_entries,
    protected_in,
    protected_paths,
)
from fxdesk.tools.workspace import is_inside

# Variables a command gets from fxdesk's environment: where things are and how to print, never
# keys. Anything else (GITHUB_TOKEN, another provider's key, DBUS_SESSION_BUS_ADDRESS,
# SSH_AUTH_SOCK, DISPLAY) is left out; the person may add names per workspace (``extra_env``).
ALLOWED_VARIABLES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "TZ",
        "TMPDIR",
        "EDITOR",
        "VISUAL",
        # Where toolchains live: builds need them, and they hold paths, not secrets.
        "JAVA_HOME",
        "GOPATH",
        "GOROOT",
        "GOBIN",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "NVM_DIR",
        "PYENV_ROOT",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
        "XDG_CONFIG_DIRS",
        "XDG_DATA_DIRS",
        # A company's certificate authority, without which https fails behind its proxy.
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
    }
)
ALLOWED_PREFIXES = ("LC_",)

# What is hidden and what is read-only comes from one list shared with the file tools and the
# permission check: fxdesk/tools/protected.py.

# Mounted afresh in the sandbox: nothing of the host's shows there unless bound again.
SANDBOX_TEMP = Path(TEMP_FOLDER)  # the session's own folder in the sandbox (``temp_dir``)
_REPLACED = (Path("/dev"), Path("/proc"), SANDBOX_TEMP, Path("/run"))

# Under /run, what programs need: name resolution (/etc/resolv.conf often points here) and, on
# NixOS, the system's programs.
_RUN_KEPT = (Path("/run/current-system"), Path("/run/opengl-driver"))


@dataclass(frozen=True)
class SandboxPolicy:
    """What one command may touch. Paths are absolute and resolved (no symlinks).

    Attributes:
        workspace: Writable, except its protected paths.
        grants: Writable beyond the workspace: what an approval allowed to write.
        protected: Read-only even inside a writable folder.
        hidden: Replaced by an empty folder (or an empty file).
        kept: Under ``/run``, bound again read-only (name resolution).
        environment: The command's whole environment.
        network: Whether the command shares fxdesk's network; else loopback only.
        temp_dir: The folder seen as ``/tmp`` (kept between commands); None for an empty one
            per command.
        refused: Write grants asked for and not given, with why (for the approval's text).
        readable: Bound read-only after ``/tmp`` is made: what would otherwise be hidden by the
            fresh ``/tmp`` yet must be read (an MCP server's own program living there).
    """

    workspace: Path
    grants: tuple[Path, ...] = ()
    protected: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    kept: tuple[Path, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    network: bool = False
    temp_dir: Path | None = None
    refused: tuple[str, ...] = ()
    readable: tuple[Path, ...] = ()

    @property
    def writable(self) -> tuple[Path, ...]:
        """Every folder or file a command may write, ``/tmp`` aside."""
        return (self.workspace, *self.grants)


def policy_for(
    workspace: Path,
    *,
    data_dir: Path | None = None,
    write_grants: Iterable[Path] = (),
    network: bool = False,
    temp_dir: Path | None = None,
    extra_env: Iterable[str] = (),
    extra_writable: Iterable[str] = (),
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> SandboxPolicy:
    """The policy for a command run in ``workspace`` (reads the file system, and makes the
    missing ``extra_writable`` folders under the home folder: call off the loop).

    Args:
        workspace: The session's workspace.
        data_dir: fxdesk's data folder: hidden.
        write_grants: Paths an approval allowed the command to write.
        network: Whether the command may use the network.
        temp_dir: The host folder the command sees as ``/tmp``.
        extra_env: Variable names the person lets through beyond ``ALLOWED_VARIABLES``.
        extra_writable: The workspace's writable paths as the person wrote them (``~`` for
            the home folder): see ``workspace_writable``.
        home: The home folder (default: ``$HOME``).
        environ: The environment to take variables from (default: this process's).
    """
    root = Path(os.path.realpath(workspace))
    home = Path(os.path.expanduser("~")) if home is None else home
    source = os.environ if environ is None else environ
    hidden = sandbox_hidden(home, data_dir, source)
    extra = workspace_writable(extra_writable, root, home, hidden)
    made, failed = _make_folders(extra.missing)
    folders = (*extra.granted, *made)
    protected = _existing([*protected_paths(root), *nested_git_folders(root)])
    # Inside a writable folder of the workspace's, a repository's .git stays read-only too.
    protected += tuple(p for p in _existing(_protected_in(folders)) if p not in protected)
    granted, refused = _grants(write_grants, root, home, protected)
    return SandboxPolicy(
        workspace=root,
        grants=tuple(dict.fromkeys((*granted, *folders))),
        protected=protected,
        hidden=_existing(entry.path for entry in hidden),
        kept=_run_kept(),
        environment=tuple(sorted(sandbox_environment(source, extra_env).items())),
        network=network,
        temp_dir=temp_dir,
        refused=(*refused, *extra.refused, *failed),
    )


@dataclass(frozen=True)
class WorkspaceWritable:
    """A workspace's writable paths as the sandbox takes them.

    Attributes:
        granted: Resolved, existing: bound writable.
        missing: Resolved, under the home folder, not there yet: made (mode 0700) before the
            command, then bound.
        refused: The paths not made writable, each with why.
    """

    granted: tuple[Path, ...] = ()
    missing: tuple[Path, ...] = ()
    refused: tuple[str, ...] = ()


def workspace_writable(
    listed: Iterable[str], workspace: Path, home: Path, hidden: Sequence[Guarded]
) -> WorkspaceWritable:
    """Which of the workspace's writable paths (``WorkspaceSandbox.writable``) the sandbox
    makes writable, resolved where they lead.

    Refused, with why: a hidden path, or a folder that holds one (a hidden path stays hidden,
    and a folder holding one would let a command make it before it is hidden); a protected
    path (``.git``: allowed only when asked, for one command); a path under a folder the
    sandbox mounts afresh (``/tmp``, ``/run``, ``/dev``, ``/proc``); a missing one outside
    the home folder; one reached through a link inside a folder commands can write (the
    workspace, another listed folder): a command could point that link at ``~/.local/bin``
    and have it bound writable at the next command. Paths inside the workspace are writable
    already and left out.

    Args:
        listed: Absolute paths, or ``~`` paths (against ``home``).
        workspace: The workspace, resolved.
        home: The home folder.
        hidden: What no command may see (``hidden_entries``, the runtime folder).
    """
    granted: list[Path] = []
    missing: list[Path] = []
    refused: list[str] = []
    home_real = Path(os.path.realpath(home))
    found = []
    protected = protected_entries(workspace)
    for raw in listed:
        path = _expand(raw, home)
        target = Path(os.path.realpath(path))
        found.append((raw, path, target, _not_writable(target, workspace, hidden, protected)))
    # What commands can write: where a link one of them made could lead a listed path.
    areas = [workspace, *(target for _raw, _path, target, why in found if not why)]
    for raw, path, target, why in found:
        link = None if why else _link_inside(path, areas)
        if link is not None:
            why = (
                f"it leads through {link}, a link in a folder commands can write (a command "
                "could point it elsewhere): name where it leads"
            )
        if why:
            refused.append(f"{raw}: {why}")
        elif _under(target, workspace):
            continue
        elif os.path.lexists(target):
            granted.append(target)
        elif _under(target, home_real) and target != home_real:
            missing.append(target)
        else:
            refused.append(
                f"{raw}: {target} does not exist (only folders under the home folder are made)"
            )
    return WorkspaceWritable(
        tuple(dict.fromkeys(granted)), tuple(dict.fromkeys(missing)), tuple(refused)
    )


def _link_inside(path: Path, areas: Sequence[Path]) -> Path | None:
    """The first symbolic link on the way to ``path`` that lies in one of ``areas`` (folders
    commands can write, so a command could have made it or could change it), or None."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        current = current / part
        if os.path.islink(current):
            if _under_any(Path(os.path.realpath(current.parent)) / current.name, areas):
                return current
            current = Path(os.path.realpath(current))
    return None


def _not_writable(
    target: Path, workspace: Path, hidden: Sequence[Guarded], protected: Sequence[Guarded]
) -> str:
    """Why ``target`` (resolved) cannot be one of the workspace's writable paths ('' if it can)."""
    for entry in hidden:
        if _under(target, entry.path):
            return f"{entry.label} is hidden ({entry.why}) and stays hidden"
    for entry in hidden:
        if _under(entry.path, target):
            return (
                f"it holds {entry.label} ({entry.why}), which stays hidden: name a folder "
                "inside it instead"
            )
    for fresh in _REPLACED:
        if _under(target, fresh):
            return f"the sandbox has its own {fresh}"
    guarded = protected_in(protected, workspace, target)
    if guarded is not None:
        return (
            f"{guarded.label} is protected ({guarded.why}): allow a write there when a command asks"
        )
    return ""


def allowed_environment(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The variables of ``environ`` on the allow-list (and the ``extra`` names)."""
    names = ALLOWED_VARIABLES | frozenset(extra)
    return {
        name: value
        for name, value in environ.items()
        if name in names or name.startswith(ALLOWED_PREFIXES)
    }


def sandbox_environment(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """The environment inside the sandbox: the allow-list, with ``/tmp`` as the temp folder
    (the host's ``TMPDIR`` may point where the sandbox cannot see)."""
    return allowed_environment(environ, extra) | {"TMPDIR": "/tmp"}


def bwrap_arguments(
    policy: SandboxPolicy,
    command: Sequence[str],
    cwd: Path,
    *,
    disable_userns: bool = True,
    die_with_parent: bool = True,
) -> list[str]:
    """bubblewrap's arguments (after the program) to run ``command`` in ``cwd`` under ``policy``.

    The order matters: each mount covers what an earlier one put at that path. Read-only root,
    fresh ``/dev``, ``/proc``, ``/run`` and ``/tmp``; then the writable folders; then the
    protected paths read-only again; then the grants that reach into a protected path (an
    approval for exactly that); hidden paths last, so nothing opens them.

    Args:
        policy: What the command may touch.
        command: The program and its arguments.
        cwd: Where it starts.
        disable_userns: Forbid new user namespaces inside (bubblewrap 0.8 and later).
        die_with_parent: End the sandbox when fxdesk ends; off for a background task that
            outlives fxdesk (``tools/background/launch.py``).
    """
    args = [
        "--unshare-all",  # user, PID, IPC, UTS, cgroup and network namespaces of its own
        "--unshare-user",  # also when fxdesk runs as root, so capabilities can be dropped
        "--cap-drop",
        "ALL",  # run as root, the command would keep every capability and could unmount
        *(["--die-with-parent"] if die_with_parent else []),
        "--new-session",  # no terminal to push keystrokes into (TIOCSTI)
    ]
    if disable_userns:
        args.append("--disable-userns")
    if policy.network:
        args.append("--share-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
    for path in policy.kept:
        args += ["--ro-bind", str(path), str(path)]
    if policy.temp_dir is None:
        args += ["--tmpfs", "/tmp"]
    else:
        args += ["--bind", str(policy.temp_dir), "/tmp"]
    for path in policy.readable:
        args += ["--ro-bind", str(path), str(path)]
    writable = policy.writable
    hidden = [path for path in policy.hidden if _visible(path, writable)]
    # A hidden folder that holds a writable one (the workspace inside the data folder) is
    # emptied first, so the writable folder is bound back into it, and made read-only last.
    holding = [path for path in hidden if path.is_dir() and _holds_any(path, writable)]
    for path in holding:
        args += ["--perms", "0500", "--tmpfs", str(path)]
    reaching, plain = _split(policy.grants, policy.protected)
    for path in (policy.workspace, *plain):
        args += ["--bind", str(path), str(path)]
    for path in policy.protected:
        if _under_any(path, writable):
            args += ["--ro-bind", str(path), str(path)]
    for path in reaching:
        args += ["--bind", str(path), str(path)]
    for path in hidden:
        if path in holding:
            args += ["--remount-ro", str(path)]
        elif path.is_dir():
            args += ["--perms", "0500", "--tmpfs", str(path), "--remount-ro", str(path)]
        else:  # a file (or a socket): an empty one in its place
            args += ["--ro-bind", "/dev/null", str(path)]
    args += ["--chdir", str(cwd), "--", *command]
    return args


def _grants(
    requested: Iterable[Path], root: Path, home: Path, protected: Sequence[Path] = ()
) -> tuple[tuple[Path, ...], tuple[str, ...]]:
    """The paths to bind writable for the approved write targets, and those refused.

    Each target is bound itself, never its folder: a folder would let the same line change
    what the approval did not name (``echo a > out/new.txt; echo b > out/other``, with only
    ``new.txt`` approved). A target that does not exist yet is made empty at launch
    (``make_new_grants``: a file, as redirections and ``tee`` write files) so it can be bound.
    ``/tmp`` in the sandbox is the session's own, so a target there needs no grant (binding
    the host's would expose it).
    """
    granted: list[Path] = []
    refused: list[str] = []
    del home  # the target alone is bound: no folder is ever too wide
    for raw in requested:
        target = Path(os.path.realpath(raw))
        guarded = any(_under(target, p) for p in protected)
        if _under(target, root) and not guarded:
            continue  # writable already (a protected path is read-only: its grant counts)
        if not guarded and (_under(Path(raw), SANDBOX_TEMP) or _under(target, SANDBOX_TEMP)):
            continue  # the sandbox's own /tmp (a protected path there, a git folder, is bound)
        if target.exists() or target.parent.is_dir():
            granted.append(target)
        else:
            refused.append(f"{raw}: its folder {target.parent} does not exist")
    return tuple(dict.fromkeys(granted)), tuple(refused)


def make_new_grants(policy: SandboxPolicy) -> SandboxPolicy:
    """``policy`` with every granted path that does not exist yet made, as an empty file,
    so bubblewrap can bind it (call when the command is about to run, never for the
    approval's summary). One that cannot be made is not granted, and says why."""
    kept: list[Path] = []
    refused: list[str] = []
    for path in policy.grants:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666))
        except FileExistsError:
            pass
        except OSError as exc:
            refused.append(f"{path}: cannot be made ({exc.strerror})")
            continue
        kept.append(path)
    if not refused:
        return policy
    return replace(policy, grants=tuple(kept), refused=(*policy.refused, *refused))


def sandbox_hidden(
    home: Path, data_dir: Path | None, environ: Mapping[str, str] | None = None
) -> list[Guarded]:
    """What the sandbox hides: ``hidden_entries``, and the desktop session's runtime folder
    (``/run/user/<uid>`` mostly, hidden with ``/run`` already).

    Args:
        home: The home folder.
        data_dir: fxdesk's data folder (None: not known here).
        environ: Where the XDG folders are read (default: this process's environment).
    """
    source = os.environ if environ is None else environ
    hidden = hidden_entries(home, data_dir, source)
    runtime = source.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        for path in dict.fromkeys((Path(runtime), Path(os.path.realpath(runtime)))):
            hidden.append(Guarded(path, "$XDG_RUNTIME_DIR", "the desktop session's sockets"))
    return hidden


def _expand(raw: str, home: Path) -> Path:
    """``raw`` with a leading ``~`` standing for ``home``, made absolute (not resolved)."""
    if raw == "~" or raw.startswith("~/"):
        return Path(os.path.abspath(os.path.join(home, raw[2:])))
    return Path(os.path.abspath(raw))


def _make_folders(paths: Iterable[Path]) -> tuple[list[Path], list[str]]:
    """Make each missing folder, and each missing one on its way, private to the person (mode
    0700: a cache may hold what other users should not read). (made, why some could not be)."""
    made: list[Path] = []
    failed: list[str] = []
    for path in paths:
        try:
            for level in (*reversed(path.parents), path):
                if not level.is_dir():
                    level.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            failed.append(f"{path}: cannot be made: {exc.strerror or exc}")
        else:
            made.append(path)
    return made, failed


def _protected_in(folders: Iterable[Path]) -> list[Path]:
    """The protected paths of each writable folder (its ``.git`` and the git folder it uses,
    its ``.fxdesk``), as a workspace has them."""
    return [path for folder in folders if folder.is_dir() for path in protected_paths(folder)]


def _run_kept() -> tuple[Path, ...]:
    kept = [path for path in _RUN_KEPT if path.exists()]
    resolver = Path(os.path.realpath("/etc/resolv.conf"))
    if _under(resolver, Path("/run")) and resolver.exists():
        kept.append(resolver.parent)
    return tuple(kept)


def _existing(paths: Iterable[Path]) -> tuple[Path, ...]:
    """Resolved, existing, each once (a symlink is hidden where it points)."""
    found = []
    for path in paths:
        if os.path.lexists(path):
            real = Path(os.path.realpath(path))
            if real.exists():
                found.append(real)
    return tuple(dict.fromkeys(found))


def _split(grants: Sequence[Path], protected: Sequence[Path]) -> tuple[list[Path], list[Path]]:
    """(grants at or inside a protected path, the others)."""
    reaching = [g for g in grants if any(_under(g, p) for p in protected)]
    return reaching, [g for g in grants if g not in reaching]


def _visible(path: Path, writable: Sequence[Path]) -> bool:
    """Whether ``path`` shows in the sandbox at all: not inside a folder mounted afresh, or
    bound again there (a data folder inside the workspace)."""
    return not any(_under(path, fresh) for fresh in _REPLACED) or _under_any(path, writable)


def _holds_any(folder: Path, paths: Iterable[Path]) -> bool:
    return any(path != folder and _under(path, folder) for path in paths)


def _under_any(path: Path, folders: Iterable[Path]) -> bool:
    return any(_under(path, folder) for folder in folders)


def _under(path: Path, folder: Path) -> bool:
    return is_inside(path, folder)  # by name (both resolved): Path.parents is slow
