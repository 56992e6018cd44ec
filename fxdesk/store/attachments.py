"""Images attached to messages (issue 18 item 6), stored with their bytes.

Written in the same transaction as the message (work item) that carries them; the history row
of that message lists them by id (``refs_for_work``). Reading bytes is by id, so a transcript or
a model call reads only the images it shows or sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fxdesk.domain.images import ImageAttachment
from fxdesk.store.schema import database_proxy as db

_COLUMNS = "id, name, media_type, data, width, height"


def add_images(
    session_id: str, work_id: str, images: Sequence[ImageAttachment], at_ms: int
) -> list[ImageAttachment]:
    """Store ``images`` as the attachments of ``work_id`` (inside a write); them with ids."""
    stored = []
    for position, image in enumerate(images):
        cursor = db.execute_sql(
            "INSERT INTO image_attachment (session_id, work_id, position, name, media_type, "
            "width, height, size, data, created_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                work_id,
                position,
                image.name,
                image.media_type,
                image.width,
                image.height,
                len(image.data),
                image.data,
                at_ms,
            ),
        )
        stored.append(
            ImageAttachment(
                image.name,
                image.media_type,
                image.data,
                image.width,
                image.height,
                cursor.lastrowid,
            )
        )
    return stored


def refs_for_work(work_id: str) -> list[dict[str, Any]]:
    """What the history row of ``work_id``'s message lists of its images, in order."""
    rows = db.execute_sql(
        "SELECT id, name, media_type, size, width, height FROM image_attachment "
        "WHERE work_id = ? ORDER BY position",
        (work_id,),
    ).fetchall()
    keys = ("id", "name", "media_type", "size", "width", "height")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def user_entry_data(work_id: str) -> dict[str, Any]:
    """The data of the history row that opens ``work_id``'s turn: its images, if any."""
    refs = refs_for_work(work_id)
    return {"images": refs} if refs else {}


def load_images(ids: Sequence[int]) -> dict[int, ImageAttachment]:
    """The images with these ids (those that exist), with their bytes."""
    if not ids:
        return {}
    rows = db.execute_sql(
        f"SELECT {_COLUMNS} FROM image_attachment WHERE id IN ({', '.join('?' * len(ids))})",
        tuple(ids),
    ).fetchall()
    return {
        row[0]: ImageAttachment(row[1], row[2], bytes(row[3]), row[4], row[5], row[0])
        for row in rows
    }


def session_images(session_id: str) -> list[dict[str, Any]]:
    """Every image of the session, oldest first, with its bytes (exports)."""
    rows = db.execute_sql(
        "SELECT id, work_id, position, name, media_type, width, height, data, created_at_ms "
        "FROM image_attachment WHERE session_id = ? ORDER BY id",
        (session_id,),
    ).fetchall()
    keys = (
        "id",
        "work_id",
        "position",
        "name",
        "media_type",
        "width",
        "height",
        "data",
        "created_at_ms",
    )
    return [dict(zip(keys, (*row[:7], bytes(row[7]), row[8]), strict=True)) for row in rows]
