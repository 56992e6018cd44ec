"""Telling the person to restart when fxdesk is upgraded (or removed) under the running program.

A package upgrade (``apt``, the tarball's ``install.sh``) replaces the bundle while fxdesk runs.
The running process keeps what it has loaded, but what it loads later (a module imported on
first use, a Qt plugin) would come from the new version's files, which need not fit: a restart
is due, and the person should hear it from fxdesk rather than from a failure. Only a frozen
build watches (a checkout's files change all the time); a stat every 30 s costs nothing.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

log = logging.getLogger(__name__)

INTERVAL_MS = 30_000


def frozen_program() -> Path | None:
    """The running program file of a frozen build (the bundle's ``fxdesk``), else None."""
    if getattr(sys, "frozen", False):
        return Path(sys.executable).resolve()
    return None


def _identity(path: Path) -> tuple[int, int, int] | None:
    """What changes when the file is replaced: a package manager writes a new file and renames
    it over the old one (a new inode), an install over it a new modification time."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_mtime_ns)


class ProgramWatch(QObject):
    """Watches the program file this fxdesk started from.

    Signals:
        replaced(bool): the file is no longer the one that started; True if it was removed.
    """

    replaced = Signal(bool)

    def __init__(
        self, program: Path, parent: QObject | None = None, *, interval_ms: int = INTERVAL_MS
    ) -> None:
        super().__init__(parent)
        self.program = program
        self._started_as = _identity(program)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    def start(self) -> None:
        if self._started_as is not None:
            self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def check(self) -> bool:
        """Whether the program was replaced; says so once (``replaced``), then stops."""
        now = _identity(self.program)
        if self._started_as is None or now == self._started_as:
            return False
        self._timer.stop()
        self._started_as = None
        log.info(
            "the program %s was %s on disk", self.program, "removed" if now is None else "replaced"
        )
        self.replaced.emit(now is None)
        return True


def restart_text(removed: bool) -> str:
    if removed:
        return "fxdesk was uninstalled while it runs. Quit it when your work allows."
    return (
        "fxdesk was updated while it runs. Quit and start it again to use the new version; "
        "until then, parts it has not used yet may fail to load."
    )
