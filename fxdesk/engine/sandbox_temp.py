"""Removing the ``/tmp`` folders of sessions that will run no command again.

Each session's sandboxed commands see ``<data folder>/sandbox-tmp/<session>`` as ``/tmp``, kept
between its commands (a build's objects, a tool's cache). A closed session takes no new work, so
its folder is only disk space; nor does one whose session is gone from the database.

When: at start-up, while this process is the only fxdesk (it holds the instance lock alone), so
no command of any session can be running, here or in another process; not at close, when a
command of the session may still be finishing in whichever process runs it. A folder removed
by mistake would cost a session its scratch files, never the person's work: the workspace is
elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from pathlib import Path

from fxdesk.store import Store, repo

log = logging.getLogger(__name__)


async def sweep_sandbox_temp(store: Store, folder: Path) -> list[str]:
    """Remove the entries of ``folder`` that are not an open session's; the names removed."""
    open_ids = await store.read(lambda: {s.id for s in repo.list_sessions()})
    return await asyncio.to_thread(remove_all_but, folder, open_ids)


def remove_all_but(folder: Path, kept: set[str]) -> list[str]:
    """Remove every entry of ``folder`` not named in ``kept`` (blocking). A link is removed,
    never followed: what a command left in its ``/tmp`` may point anywhere."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cannot list the sandbox's temp folders in %s: %s", folder, exc)
        return []
    removed = []
    for entry in entries:
        if entry.name in kept:
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as exc:
            log.warning("cannot remove the sandbox's temp folder %s: %s", entry.path, exc)
            continue
        removed.append(entry.name)
    if removed:
        log.info("removed the temp folders of %d closed or deleted sessions", len(removed))
    return removed
