"""Creating a background task's log file (spec §2.4).

The name is ``fx-cmd-<32 lower-case hex>.log`` from 16 random bytes, created exclusively with
mode 0600 (nothing else on the machine can read what a dev server prints: tokens, keys), with
up to 16 tries on a name collision. Process-local tasks log in a temp folder, durable ones in
the data folder (the caller picks the folder).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

LOG_PREFIX = "fx-cmd-"
LOG_SUFFIX = ".log"
NAME_ATTEMPTS = 16


class LogFileUnavailable(Exception):
    """No log file could be made in the folder; ``str()`` says why."""


def new_log_file(folder: Path) -> Path:
    """A new, empty log file in ``folder`` (made if missing, mode 0700), open to its owner only."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise LogFileUnavailable(f"cannot make the log folder {folder}: {exc.strerror}") from exc
    for _ in range(NAME_ATTEMPTS):
        path = folder / f"{LOG_PREFIX}{secrets.token_hex(16)}{LOG_SUFFIX}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise LogFileUnavailable(f"cannot create a log in {folder}: {exc.strerror}") from exc
        os.close(fd)
        return path
    raise LogFileUnavailable(f"no free log name in {folder} after {NAME_ATTEMPTS} tries")
