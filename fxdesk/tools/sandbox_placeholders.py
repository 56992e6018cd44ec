"""Protected paths that do not exist yet: bubblewrap can keep only what exists read-only.

bubblewrap binds ``.fxdesk`` read-only when it is there; when it is not, a command could create
it and write fxdesk's settings for this workspace. A placeholder mounted in its place would be
made by bubblewrap itself as an empty folder in the workspace, and would stay after the command
(the mount point is made through the workspace's bind, on the host's disk); removing it after
the command is not safe either, since removing a mount point on the host detaches that mount in
every other sandbox running meanwhile (measured), which could then create it. So fxdesk makes
the empty folder itself, once, before the first sandboxed command of the workspace: from then on
it exists and is bound read-only like any protected path. An empty folder is all it leaves: git
does not see empty folders.

``.git`` is not made: ``git init`` in the workspace is the agent's right (docs/sandbox.md).
Seatbelt (macOS) matches paths, so it refuses a missing ``.fxdesk`` without a folder.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from fxdesk.tools.protected import FXDESK

log = logging.getLogger(__name__)


def make_fxdesk_folder(workspace: Path) -> None:
    """Make ``<workspace>/.fxdesk`` if nothing has that name (blocking)."""
    folder = Path(os.path.realpath(workspace)) / FXDESK
    try:
        folder.mkdir()
    except FileExistsError:
        pass  # a folder, a file or a link: protected as it is
    except OSError as exc:  # a workspace fxdesk may not write, nor then may its commands
        log.info("cannot make %s: %s", folder, exc)
