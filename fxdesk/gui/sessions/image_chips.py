"""Images in the composer (issue 18 item 6): a dropped image file or pasted image data becomes a
chip above the message box (a thumbnail, the name, a remove button), and goes with the message.

Images are read here with ``QImage`` only to check and shrink them: one whose longest side is
over ``MAX_SIDE`` pixels, or whose file is over the size cap, is scaled down and re-encoded
(PNG, or JPEG when that is still too large); pasted image data becomes a PNG. The engine checks
the bytes again before anything is stored (``domain/images.py``).

Reading (decoding, shrinking, encoding) runs in a worker thread, one image at a time and in the
order they came: a large photo takes seconds, and the window must not stall meanwhile. ``QImage``
is not a ``QObject`` and is safe there; the chip's ``QPixmap`` is made back on the UI thread.

Signals:
    changed(): an image was added or removed.
    problem(str): an image could not be attached, and why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget

from fxdesk.domain.images import MAX_IMAGE_BYTES, MAX_IMAGES_PER_MESSAGE, ImageAttachment, sniff
from fxdesk.gui.tasks import alive

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
MAX_SIDE = 2048  # pixels; models scale larger images down themselves (and bill for them)
CHIP_THUMB = 40  # pixels: the chip's thumbnail


class ImageProblem(ValueError):
    """An image that cannot be attached, and why (said to the person)."""


def is_image_file(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES and path.is_file()


def _encode(image: QImage, fmt: str, quality: int = -1) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, fmt, quality)  # type: ignore[call-overload]  # str at run time
    buffer.close()
    return bytes(data.data())


def from_qimage(image: QImage, name: str, original: bytes | None = None) -> ImageAttachment:
    """An attachment of ``image`` (``original``: its file's bytes, kept when small enough)."""
    if image.isNull():
        raise ImageProblem(f"{name} could not be read as an image")
    kind = sniff(original) if original else None
    too_big = max(image.width(), image.height()) > MAX_SIDE
    if original and kind and not too_big and len(original) <= MAX_IMAGE_BYTES:
        return ImageAttachment(name, kind, original, image.width(), image.height())
    if too_big:
        image = image.scaled(
            QSize(MAX_SIDE, MAX_SIDE),
            Qt.AspectRatioMode.KeepAspectRatio,
            Qt.TransformationMode.SmoothTransformation,
        )
    data, kind = _encode(image, "PNG"), "image/png"
    if len(data) > MAX_IMAGE_BYTES:  # a photo: JPEG keeps it under the cap
        data, kind = (
            _encode(image.convertToFormat(QImage.Format.Format_RGB32), "JPEG", 85),
            ("image/jpeg"),
        )
        name = str(Path(name).with_suffix(".jpg"))
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageProblem(f"{name} is too large even after shrinking it")
    return ImageAttachment(name, kind, data, image.width(), image.height())


def from_file(path: Path) -> ImageAttachment:
    """The image file at ``path`` as an attachment; ``ImageProblem`` says why not."""
    try:
        original = path.read_bytes()
    except OSError as exc:
        raise ImageProblem(f"{path.name} could not be read ({exc.strerror})") from None
    image = QImage()
    image.loadFromData(original)
    return from_qimage(image, path.name, original)


def scaled(data: bytes, side: int) -> QImage:
    """The image in ``data`` within a ``side``-pixel square (null if unreadable); any thread."""
    image = QImage()
    image.loadFromData(data)
    if image.isNull():
        return image
    return image.scaled(
        QSize(side, side),
        Qt.AspectRatioMode.KeepAspectRatio,
        Qt.TransformationMode.SmoothTransformation,
    )


def thumbnail(data: bytes, side: int) -> QPixmap:
    """A ``side``-pixel square-bounded thumbnail of the image in ``data`` (UI thread)."""
    image = scaled(data, side)
    return QPixmap() if image.isNull() else QPixmap.fromImage(image)


class ImageChips(QWidget):
    """The images waiting to go with the next message, one removable chip each."""

    changed = Signal()
    problem = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.images: list[ImageAttachment] = []
        self.reading = 0  # images being read
        self._order: asyncio.Lock | None = None  # one read at a time, in order
        self._tasks: set[asyncio.Task[None]] = set()
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(6)
        self._row.addStretch(1)
        self.setAccessibleName("Attached images")
        self.hide()

    def add(self, image: ImageAttachment) -> None:
        if len(self.images) >= MAX_IMAGES_PER_MESSAGE:
            raise ImageProblem(f"a message may carry at most {MAX_IMAGES_PER_MESSAGE} images")
        self.images.append(image)
        self._rebuild()

    def read_in(self, read: Callable[[], ImageAttachment]) -> None:
        """Read an offered image in a worker thread, then add its chip."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a widget on its own): read it here
            self._add_read(read)
            return
        self.reading += 1
        task = loop.create_task(self._read(read), name="read-image")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _add_read(self, read: Callable[[], ImageAttachment]) -> None:
        try:
            self.add(read())
        except ImageProblem as exc:
            self.problem.emit(str(exc))

    async def _read(self, read: Callable[[], ImageAttachment]) -> None:
        try:
            if self._order is None:
                self._order = asyncio.Lock()
            async with self._order:
                image = await asyncio.to_thread(read)
        except ImageProblem as exc:
            image, problem = None, str(exc)
        except Exception:  # a bug: said plainly, logged with its trace
            log.exception("could not read an image")
            image, problem = None, "The image could not be read."
        finally:
            self.reading -= 1
        if not alive(self):
            return
        if image is None:
            self.problem.emit(problem)
            return
        self._add_read(lambda: image)

    def remove(self, index: int) -> None:
        if 0 <= index < len(self.images):
            del self.images[index]
            self._rebuild()

    def take(self) -> tuple[ImageAttachment, ...]:
        """The images, and none left."""
        taken = tuple(self.images)
        self.images = []
        self._rebuild()
        return taken

    def _rebuild(self) -> None:
        while self._row.count() > 1:  # the stretch stays last
            item = self._row.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:  # gone from the row now (a click on it may be running)
                widget.hide()
                widget.setParent(None)
                widget.deleteLater()
        for index, image in enumerate(self.images):
            self._row.insertWidget(index, self._chip(index, image))
        self.setVisible(bool(self.images))
        self.changed.emit()

    def _chip(self, index: int, image: ImageAttachment) -> QWidget:
        chip = QWidget(self)
        chip.setObjectName("imageChip")
        chip.setAccessibleName(f"Image {image.name}")
        chip.setStyleSheet(
            "#imageChip { border: 1px solid palette(mid); border-radius: 6px; "
            "background: palette(base); }"
        )
        row = QHBoxLayout(chip)
        row.setContentsMargins(4, 3, 2, 3)
        row.setSpacing(4)
        picture = QLabel()
        picture.setPixmap(thumbnail(image.data, CHIP_THUMB))
        picture.setFixedSize(CHIP_THUMB, CHIP_THUMB)
        picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row.addWidget(picture)
        size = f"{len(image.data) / 1024:.0f} KB"
        label = QLabel(f"{image.name}\n{image.width}×{image.height} · {size}")
        label.setToolTip(image.name)
        row.addWidget(label)
        close = QToolButton()
        close.setText("×")
        close.setAutoRaise(True)
        close.setAccessibleName(f"Remove image {image.name}")
        close.setToolTip("Remove this image from the message")
        close.clicked.connect(lambda _checked=False, i=index: self.remove(i))
        row.addWidget(close)
        return chip
