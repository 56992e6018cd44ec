"""The rules for attached images (issue 18 item 6): what is an image, which models take them,
which images a model call carries, and how the rest are named."""

from __future__ import annotations

import pytest

from fxdesk.domain.conversation import HistoryEntry, build_messages
from fxdesk.domain.images import (
    ImageAttachment,
    ImageError,
    accepts,
    check,
    chosen_for_context,
    guess_accepts,
    sniff,
)
from fxdesk.domain.model import EntryKind
from tests.pngs import png_bytes


def test_types_are_told_by_their_bytes_not_their_names() -> None:
    assert sniff(png_bytes()) == "image/png"
    assert sniff(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff(b"GIF89a...") == "image/gif"
    assert sniff(b"RIFF\x10\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff(b"<svg/>") is None
    named_jpeg = ImageAttachment("x.jpg", "image/jpeg", png_bytes())
    assert check(named_jpeg).media_type == "image/png"


def test_an_image_over_the_cap_is_refused_with_its_size() -> None:
    big = png_bytes() + b"\x00" * (5 * 1024 * 1024)
    with pytest.raises(ImageError, match=r"big\.png is 5\.0 MB; an image may be at most 5 MB"):
        check(ImageAttachment("big.png", "image/png", big))


@pytest.mark.parametrize(
    ("kind", "model", "expected"),
    [
        ("anthropic", "claude-sonnet-4-5", True),
        ("anthropic", "claude-3-haiku-20240307", True),
        ("anthropic", "claude-2.1", False),
        ("openai", "gpt-4o-mini", True),
        ("openai", "gpt-5", True),
        ("openai", "gpt-3.5-turbo", False),
        ("openai", "o3-mini", False),
        ("openai", "llava:13b", True),
        ("openai", "qwen2.5-coder:7b", False),
        ("scripted", None, True),
        ("acp", None, False),
    ],
)
def test_which_models_take_images_by_name(kind: str, model: str | None, expected: bool) -> None:
    assert guess_accepts(kind, model) is expected


def test_a_profile_setting_wins_over_the_guess() -> None:
    assert accepts("openai", "qwen2.5-coder:7b", True) is True
    assert accepts("openai", "gpt-4o", False) is False


def test_the_newest_images_within_the_budget_are_carried() -> None:
    refs = [{"id": 3, "size": 10}, {"id": 2, "size": 10}, {"id": 1, "size": 10}]
    assert chosen_for_context(refs, max_images=2, max_bytes=100) == [3, 2]
    assert chosen_for_context(refs, max_images=9, max_bytes=25) == [3, 2]


def test_images_not_carried_are_named_in_the_message() -> None:
    image = ImageAttachment("a.png", "image/png", png_bytes(), id=1)
    entry = HistoryEntry(
        "s",
        1,
        EntryKind.USER,
        content="see",
        data={"images": [image.ref(), {"id": 2, "name": "b.png"}]},
    )
    (message,) = build_messages([entry], {1: image})
    assert message.images == (image,)
    assert message.content == "see\n[image: b.png]"
