"""Export and import of a session or a session tree (issue 18 item 5).

An export is the JSON document of ``domain.transfer`` (complete: every session of the tree, its
messages, its whole history) or its Markdown rendering. Before a document leaves, every API key
of every profile is read and registered for redaction, and every text in it is passed through
``logs.redact``: a key an agent printed by accident never leaves in an export. Profiles are
only named.

An import is checked whole before anything is written, then written in one transaction as new
sessions (new ids: it never overwrites, and importing twice gives two copies); unfinished
messages come in cancelled, so an import never starts work.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

from fxdesk import __version__
from fxdesk.domain import transfer
from fxdesk.domain.transfer import TransferError
from fxdesk.engine.profiles import ProfileService
from fxdesk.engine.providers import api_key_for
from fxdesk.engine.sessions import InvalidWorkspace, validate_workspace
from fxdesk.logs import redact
from fxdesk.store import Store
from fxdesk.store import transfer as rows

log = logging.getLogger(__name__)


async def export_document(
    store: Store, profiles: ProfileService, session_id: str, *, whole_tree: bool
) -> dict[str, Any]:
    """The export of ``session_id`` (``whole_tree``: of its root and everything below it)."""
    await _register_keys(profiles)
    sessions = await store.read(lambda: rows.read_tree(session_id, whole_tree))
    if not sessions:
        raise TransferError(f"no session {session_id}")
    document = {
        "format": transfer.FORMAT,
        "version": transfer.VERSION,
        "fxdesk": __version__,
        "exported_at_ms": int(time.time() * 1000),
        "sessions": sessions,
    }
    redacted = await asyncio.to_thread(_redacted, document)  # the images' bytes pass as they are
    await asyncio.to_thread(transfer.with_base64_images, redacted["sessions"])
    return dict(redacted)


async def import_document(
    store: Store, text: str, workspace: str | os.PathLike[str] | None, at_ms: int
) -> list[str]:
    """Import the export in ``text`` as new sessions; their ids (the top one first).
    ``workspace``: the folder they belong to here (default: the one they were exported from,
    which must exist). ``TransferError`` says why a file cannot be imported."""
    document = await asyncio.to_thread(transfer.check_document, text)
    sessions = document["sessions"]
    where = workspace if workspace is not None else sessions[0]["workspace"]
    try:
        folder = await asyncio.to_thread(validate_workspace, where)
    except InvalidWorkspace as exc:
        raise TransferError(
            f"the workspace folder {str(where)!r} cannot be used here ({exc}); "
            "give another with --workspace"
        ) from None
    path = Path(folder)
    return await store.write(
        lambda: rows.write_tree(sessions, str(path), path.name or str(path), at_ms),
        label="import",
    )


async def _register_keys(profiles: ProfileService) -> None:
    for profile in await profiles.list():
        try:
            await api_key_for(profile)
        except Exception as exc:  # a key that cannot be read cannot be in the export either
            log.debug("export: the key of profile %s is not readable: %s", profile.name, exc)


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value
