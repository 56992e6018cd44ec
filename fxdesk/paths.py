"""Where fxdesk keeps its files: one place decides, everything else asks.

The data folder holds the database, the logs, the background-process logs, the crash logs and the
session lock files. It comes from, in order: the ``--data-dir`` option, the ``FXDESK_HOME``
environment variable, and the platform's user data folder (``platformdirs``). Tests always set one
of the first two, so a test run never touches the real home folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from fxdesk import APP_NAME

ENV_HOME = "FXDESK_HOME"
DATABASE_NAME = "fxdesk.sqlite3"
# Under the data folder: one folder per session, which its sandboxed commands see as /tmp.
SANDBOX_TEMP = "sandbox-tmp"
# Under the data folder: one git worktree per session that asked for one (docs/worktrees.md).
WORKTREES = "worktrees"


@dataclass(frozen=True)
class DataPaths:
    """Every file location fxdesk uses, derived from one data folder."""

    root: Path
    source: str  # "--data-dir", "FXDESK_HOME" or "platform": shown by `fxdesk doctor`

    @property
    def database(self) -> Path:
        return self.root / DATABASE_NAME

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def log_file(self) -> Path:
        return self.logs / "fxdesk.log"

    @property
    def background_logs(self) -> Path:
        return self.root / "background"

    @property
    def crash_dir(self) -> Path:
        return self.root / "crash"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    @property
    def sandbox_temp(self) -> Path:
        return self.root / SANDBOX_TEMP

    @property
    def worktrees(self) -> Path:
        return self.root / WORKTREES

    @property
    def config(self) -> Path:
        """The person's settings files: the platform's user config folder, or the data folder
        when ``--data-dir`` or ``FXDESK_HOME`` moved it (so a test never reads the real one)."""
        if self.source == "platform":
            return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))
        return self.root

    @property
    def user_agents(self) -> Path:
        """The person's own agent definitions, for every workspace (docs/agents.md)."""
        return self.config / "agents"

    def ensure(self) -> None:
        """Create the folders, private to the user (they hold transcripts and logs)."""
        for folder in (self.root, self.logs, self.background_logs, self.crash_dir, self.locks):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)


def resolve(
    data_dir: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> DataPaths:
    """Pick the data folder: ``--data-dir``, then ``FXDESK_HOME``, then the platform default."""
    env = os.environ if environ is None else environ
    if data_dir is not None and str(data_dir):
        return DataPaths(Path(data_dir).expanduser().absolute(), "--data-dir")
    home = env.get(ENV_HOME, "")
    if home:
        return DataPaths(Path(home).expanduser().absolute(), ENV_HOME)
    return DataPaths(Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)), "platform")
