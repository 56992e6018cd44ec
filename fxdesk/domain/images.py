"""Images the person attaches to a message (issue 18 item 6): what is accepted, which models
take them, and how many of a conversation's images a model call carries.

An image is stored once, with the message (work item) that carried it; the history row of that
message lists it (``HistoryEntry.data["images"]``: id, name, type, size, width, height), so the
transcript and an export know of it without reading its bytes. A model call carries the images
of the newest messages, up to ``CONTEXT_IMAGES`` images and ``CONTEXT_IMAGE_BYTES`` bytes; older
ones, and every image when the model does not accept images, reach it as ``[image: name]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # per image, after the GUI's downscale (Anthropic's limit)
MAX_IMAGES_PER_MESSAGE = 8
# What one model call carries at most: both providers take requests far larger than this, but
# every later call of the conversation re-sends them (and pays for their tokens).
CONTEXT_IMAGES = 8
CONTEXT_IMAGE_BYTES = 16 * 1024 * 1024


class ImageError(ValueError):
    """An image that cannot be attached, and why."""


@dataclass(frozen=True)
class ImageAttachment:
    """One attached image with its bytes; ``id`` once stored."""

    name: str
    media_type: str
    data: bytes
    width: int = 0
    height: int = 0
    id: int | None = None

    def ref(self) -> dict[str, Any]:
        """What a history row lists of it (no bytes)."""
        return {
            "id": self.id,
            "name": self.name,
            "media_type": self.media_type,
            "size": len(self.data),
            "width": self.width,
            "height": self.height,
        }


def sniff(data: bytes) -> str | None:
    """The media type the bytes are, by their signature; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def check(image: ImageAttachment) -> ImageAttachment:
    """``image`` with its media type taken from its bytes; ``ImageError`` when it is not a PNG,
    JPEG, GIF or WebP, or is larger than ``MAX_IMAGE_BYTES``."""
    kind = sniff(image.data)
    if kind is None:
        raise ImageError(f"{image.name} is not a PNG, JPEG, GIF or WebP image")
    if len(image.data) > MAX_IMAGE_BYTES:
        raise ImageError(
            f"{image.name} is {len(image.data) / 1_048_576:.1f} MB; an image may be at most "
            f"{MAX_IMAGE_BYTES // 1_048_576} MB"
        )
    return replace(image, media_type=kind) if kind != image.media_type else image


def check_all(images: Sequence[ImageAttachment]) -> list[ImageAttachment]:
    if len(images) > MAX_IMAGES_PER_MESSAGE:
        raise ImageError(f"a message may carry at most {MAX_IMAGES_PER_MESSAGE} images")
    return [check(image) for image in images]


# Model names (or parts of them) of models that take images. A profile's own
# ``accepts_images`` setting wins over this guess.
_VISION_OPENAI = (
    "gpt-4o",
    "gpt-4.1",
    "gpt-4-turbo",
    "gpt-4-vision",
    "gpt-5",
    "chatgpt-4o",
    "o1",
    "o3",
    "o4",
    "vision",
    "-vl",
    "llava",
    "bakllava",
    "pixtral",
    "gemma3",
    "gemma-3",
    "gemini",
    "claude",
    "minicpm-v",
    "moondream",
    "qwen2.5vl",
    "llama4",
    "grok-4",
)
_TEXT_ONLY = ("o1-mini", "o3-mini", "gpt-3.5", "-instruct", "claude-2", "claude-instant")


def guess_accepts(kind: str, model: str | None) -> bool:
    """Whether a ``kind`` profile's ``model`` takes images, by its name: Claude 3 and later,
    GPT-4o-like and known vision models; the scripted provider takes them (it records them);
    an external (ACP) agent's prompt stays text here."""
    if kind == "scripted":
        return True
    if kind == "acp":
        return False
    name = (model or "").lower()
    if any(part in name for part in _TEXT_ONLY):
        return False
    if kind == "anthropic":
        return name.startswith("claude") or not name
    return any(part in name for part in _VISION_OPENAI)


def accepts(kind: str, model: str | None, setting: bool | None) -> bool:
    """The profile's ``accepts_images`` when it says, else the guess by model name."""
    return setting if setting is not None else guess_accepts(kind, model)


def refs_of(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The image refs a history row's data lists (a malformed list gives none)."""
    found = data.get("images")
    if not isinstance(found, list):
        return []
    return [r for r in found if isinstance(r, dict) and isinstance(r.get("id"), int)]


def placeholder(ref: Mapping[str, Any]) -> str:
    return f"[image: {ref.get('name') or 'image'}]"


def chosen_for_context(
    newest_first: Iterable[Mapping[str, Any]],
    max_images: int | None = None,
    max_bytes: int | None = None,
) -> list[int]:
    """The ids of the images a model call carries, from the refs of its messages newest first:
    the newest ones until ``max_images`` or ``max_bytes`` is reached (a message's images are
    all taken or, past the budget, the rest are left out)."""
    max_images = CONTEXT_IMAGES if max_images is None else max_images
    max_bytes = CONTEXT_IMAGE_BYTES if max_bytes is None else max_bytes
    chosen: list[int] = []
    total = 0
    for ref in newest_first:
        size = int(ref.get("size") or 0)
        if len(chosen) >= max_images or total + size > max_bytes:
            break
        chosen.append(int(ref["id"]))
        total += size
    return chosen
