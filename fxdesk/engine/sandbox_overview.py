"""What the sandbox gives one workspace's commands, in the person's words: what Settings →
Permissions and ``fxdesk sandbox show`` say (whether it works at all: ``health``).

Worked out here, from the same functions the sandbox uses (``fxdesk.tools.sandbox``,
``fxdesk.tools.protected``), so what is shown is what a command gets; clients read the plain
result and import nothing of ``fxdesk.tools``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.sandbox_settings import DEFAULTS, WorkspaceSandbox, variable_warning
from fxdesk.tools.protected import DATA_FOLDER, Guarded, protected_entries
from fxdesk.tools.sandbox import sandbox_hidden, workspace_writable
from fxdesk.tools.sandbox_probe import SandboxStatus

__all__ = ["SandboxOverview", "SandboxStatus", "overview", "refusals"]

TEMP_TEXT = "/tmp (the session's own)"
# Hidden by the sandbox's mounts, namespaces and seccomp filter rather than by name
# (tools/sandbox.py, tools/sandbox_seccomp.py).
HIDDEN_ALWAYS = (
    "/run: the session bus, agents' and container engines' sockets",
    "other processes (fxdesk's own included)",
    "every Unix socket of the host (a socket file anywhere, e.g. ~/.docker/desktop/docker.sock;"
    " abstract ones): no Unix socket at all, socketpair only",
)


@dataclass(frozen=True)
class SandboxOverview:
    """What every command of one workspace gets.

    Attributes:
        status: Whether the sandbox works on this machine.
        workspace: The workspace folder ('' when none was given: the defaults).
        settings: The workspace's own additions, as saved.
        writable: What commands may write, each as shown.
        read_only: What stays read-only inside the workspace.
        hidden: What commands cannot see, the person's paths first.
        refused: The workspace's writable paths the sandbox does not make writable, with why.
        network: The network, in one line.
        key_variables: The variables profiles read their model keys from.
    """

    status: SandboxStatus
    workspace: str
    settings: WorkspaceSandbox
    writable: tuple[str, ...]
    read_only: tuple[str, ...]
    hidden: tuple[str, ...]
    refused: tuple[str, ...]
    network: str
    key_variables: frozenset[str] = frozenset()

    def warnings(self) -> tuple[str, ...]:
        """What to know about the workspace's extra variables (names that look like secrets)."""
        found = (variable_warning(name, self.key_variables) for name in self.settings.extra_env)
        return tuple(text for text in found if text)


def overview(
    status: SandboxStatus,
    workspace: Path | None,
    settings: WorkspaceSandbox = DEFAULTS,
    *,
    data_dir: Path | None,
    key_variables: Iterable[str] = (),
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> SandboxOverview:
    """What commands of ``workspace`` get (reads the file system, makes nothing: off the loop).

    Args:
        status: ``sandbox_status()``.
        workspace: The workspace folder; None for what every workspace gets by default.
        settings: The workspace's own additions.
        data_dir: fxdesk's data folder (hidden).
        key_variables: The variables profiles read their keys from.
        home: The home folder (default: ``$HOME``).
        environ: Where the XDG folders are read (default: this process's environment).
    """
    home = Path(os.path.expanduser("~")) if home is None else home
    hidden = sandbox_hidden(home, data_dir, environ)
    writable = [f"the workspace ({_short(workspace, home)})" if workspace else "the workspace"]
    writable.append(TEMP_TEXT)
    read_only = [".git", ".fxdesk"]
    refused: tuple[str, ...] = ()
    if workspace is not None:
        root = Path(os.path.realpath(workspace))
        extra = workspace_writable(settings.writable, root, home, hidden)
        writable += [_short(path, home) for path in extra.granted]
        writable += [f"{_short(path, home)} (made when first used)" for path in extra.missing]
        read_only += [
            f"{_short(entry.path, home)} (the git folder this workspace uses)"
            for entry in protected_entries(root)
            if root not in (entry.path, *entry.path.parents) and entry.path.exists()
        ]
        refused = extra.refused
    return SandboxOverview(
        status=status,
        workspace=str(workspace or ""),
        settings=settings,
        writable=tuple(writable),
        read_only=tuple(dict.fromkeys(read_only)),
        hidden=_hidden_labels(hidden, data_dir, home),
        refused=refused,
        network=(
            "on for this workspace's commands, in every mode"
            if settings.network
            else "off in auto mode (this workspace can allow it); on in ask and yolo mode"
        ),
        key_variables=frozenset(key_variables),
    )


def refusals(
    workspace: Path,
    writable: Iterable[str],
    *,
    data_dir: Path | None,
    home: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """Why some of ``writable`` would not be made writable for ``workspace`` (none: all
    would), so saving them can say so at once."""
    home = Path(os.path.expanduser("~")) if home is None else home
    hidden = sandbox_hidden(home, data_dir, environ)
    return workspace_writable(writable, Path(os.path.realpath(workspace)), home, hidden).refused


def _hidden_labels(hidden: Iterable[Guarded], data_dir: Path | None, home: Path) -> tuple[str, ...]:
    """Each hidden path once, as the person knows it; the data folder with where it is."""
    labels = (
        f"{_short(data_dir, home)}: {DATA_FOLDER}"
        if entry.label == DATA_FOLDER and data_dir is not None
        else entry.label
        for entry in hidden
    )
    return (*dict.fromkeys(labels), *HIDDEN_ALWAYS)


def _short(path: Path | str, home: Path) -> str:
    """``path`` with the home folder as ``~``."""
    text = os.fspath(path)
    home_text = os.fspath(home).rstrip("/")
    if text == home_text:
        return "~"
    if text.startswith(home_text + "/"):
        return "~" + text[len(home_text) :]
    return text
