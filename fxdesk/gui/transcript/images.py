"""The images of the person's messages in the transcript (issue 18 item 6): a strip of
thumbnails under the message's text.

A history row lists its images without their bytes (``data["images"]``); the thumbnails are
read through the engine when a row first shows them (``Thumbnails``), a batch at a time, and
kept scaled (``THUMB`` pixels high), so scrolling never reads an image twice. Until an image is
read its place shows a frame with its name.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QPainter, QPalette, QPixmap

from fxdesk.domain.images import ImageAttachment, refs_of
from fxdesk.gui.sessions.image_chips import scaled
from fxdesk.gui.tasks import TaskGroup

log = logging.getLogger(__name__)

THUMB = 96  # pixels high
MAX_THUMB_WIDTH = 192
GAP = 6
CACHE = 200  # thumbnails kept

Fetch = Callable[[Sequence[int]], Awaitable[Mapping[int, ImageAttachment]]]


def thumb_rects(
    data: Mapping[str, Any], left: int, top: int, width: int
) -> list[tuple[QRect, dict[str, Any]]]:
    """Where each image of a row goes: rows of thumbnails from ``(left, top)``, at most
    ``width`` wide."""
    placed: list[tuple[QRect, dict[str, Any]]] = []
    x, y = left, top
    for ref in refs_of(data):
        w, h = int(ref.get("width") or 0), int(ref.get("height") or 0)
        shown = min(MAX_THUMB_WIDTH, max(THUMB // 2, THUMB * w // h if w and h else THUMB))
        if x > left and x + shown > left + width:
            x, y = left, y + THUMB + GAP
        placed.append((QRect(x, y, shown, THUMB), ref))
        x += shown + GAP
    return placed


def strip_height(placed: Sequence[tuple[QRect, dict[str, Any]]], top: int) -> int:
    """How far below ``top`` the strip reaches (0 without images)."""
    return max((rect.bottom() + 1 for rect, _ in placed), default=top) - top


class Thumbnails:
    """Scaled thumbnails of attached images, read through ``fetch`` when first asked for.

    Args:
        fetch: the engine's ``images`` (ids to images with their bytes).
        tasks: where the reads run.
        loaded: called when a batch arrived (the view repaints).
    """

    def __init__(self, fetch: Fetch, tasks: TaskGroup, loaded: Callable[[], None]) -> None:
        self._fetch = fetch
        self._tasks = tasks
        self._loaded = loaded
        self._pixmaps: OrderedDict[int, QPixmap] = OrderedDict()
        self._wanted: set[int] = set()
        self._reading = False
        self.reads = 0  # batches read (tests)

    def pixmap(self, image_id: int) -> QPixmap | None:
        """The thumbnail, or None while it is read (asked for now if it was not yet)."""
        found = self._pixmaps.get(image_id)
        if found is not None:
            self._pixmaps.move_to_end(image_id)
            return found
        self._wanted.add(image_id)
        if not self._reading:
            self._reading = True
            self._tasks.spawn(self._read(), "thumbnails")
        return None

    async def _read(self) -> None:
        try:
            while self._wanted:
                ids = sorted(self._wanted)
                self._wanted.clear()
                found = await self._fetch(ids)
                self.reads += 1
                for image_id in ids:
                    image = found.get(image_id)
                    # Decoded and scaled in a worker thread (a large image takes a while); an
                    # image that is gone (or unreadable) keeps its named frame.
                    small = (
                        await asyncio.to_thread(scaled, image.data, MAX_THUMB_WIDTH)
                        if image
                        else None
                    )
                    shown = QPixmap.fromImage(small) if small and not small.isNull() else QPixmap()
                    self._pixmaps[image_id] = shown
                while len(self._pixmaps) > CACHE:
                    self._pixmaps.popitem(last=False)
                self._loaded()
        finally:
            self._reading = False


def paint_thumbs(
    painter: QPainter,
    placed: Sequence[tuple[QRect, dict[str, Any]]],
    thumbnails: Thumbnails | None,
    palette: QPalette,
) -> None:
    for rect, ref in placed:
        pixmap = thumbnails.pixmap(int(ref["id"])) if thumbnails is not None else None
        if pixmap is not None and not pixmap.isNull():
            scaled = pixmap.scaled(
                rect.size(),
                Qt.AspectRatioMode.KeepAspectRatio,
                Qt.TransformationMode.SmoothTransformation,
            )
            x = rect.left() + (rect.width() - scaled.width()) // 2
            y = rect.top() + (rect.height() - scaled.height()) // 2
            painter.drawPixmap(x, y, scaled)
            continue
        painter.setPen(palette.color(QPalette.ColorRole.Mid))
        painter.setBrush(palette.color(QPalette.ColorRole.Base))
        painter.drawRoundedRect(QRectF(rect), 4, 4)
        painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        painter.drawText(
            QRectF(rect).adjusted(4, 4, -4, -4),
            int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap),
            str(ref.get("name") or "image"),
        )
