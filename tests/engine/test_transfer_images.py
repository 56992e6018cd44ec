"""Export and import keep attached images (issue 18 item 6): the JSON export holds their bytes
as base64, the Markdown names them, an import restores them under new ids that its history rows
point to, and the imported session's next turn carries them to the model again."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.images import ImageAttachment
from fxdesk.domain.transfer import TransferError, check_document, to_markdown
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import Reply, ScriptedProvider
from tests.pngs import png_bytes

PNG = png_bytes(7, 3, (250, 200, 0))


async def test_images_round_trip_through_an_export(data_paths: DataPaths, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([Reply("yellow"), Reply("still yellow")])
    app = App(data_paths, providers=FixedResolver(provider))
    await app.start(background=False)
    try:
        engine = app.engine
        session = await engine.create_session(project, name="Colours")
        image = ImageAttachment("yellow.png", "image/png", PNG, 7, 3)
        await engine.send(session.id, "What colour?", images=[image])
        await engine.join(session.id)
        assert provider.calls == 1

        document = await engine.export(session.id)
        text = json.dumps(document)  # what `fxdesk export` writes
        (exported,) = document["sessions"]
        (stored,) = exported["images"]
        assert base64.b64decode(stored["data"]) == PNG
        assert (stored["name"], stored["media_type"], stored["width"]) == (
            "yellow.png",
            "image/png",
            7,
        )
        user = next(e for e in exported["history"] if e["kind"] == "user")
        assert user["data"]["images"][0]["id"] == stored["id"]
        assert "*Attached images: 🖼 yellow.png (image/png, 7×3)*" in to_markdown(document)

        (copy,) = await engine.import_export(text)
        assert copy.id != session.id
        rows = await engine.history_page(copy.id)
        (ref,) = rows[0].data["images"]
        assert ref["id"] != stored["id"]  # a new image row of its own
        found = await engine.images([ref["id"]])
        assert found[ref["id"]].data == PNG and found[ref["id"]].name == "yellow.png"

        await engine.send(copy.id, "And now?")
        await engine.join(copy.id)
        assert provider.calls == 2
        first = provider.requests[1].messages[0]
        assert first.content == "What colour?" and [i.data for i in first.images] == [PNG]
    finally:
        await app.stop()


def test_an_export_whose_image_is_not_what_it_says_is_refused() -> None:
    document = {
        "format": "fxdesk-export",
        "version": 1,
        "sessions": [
            {
                "id": "s",
                "parent_id": None,
                "name": "n",
                "workspace": "/w",
                "mode": "persistent",
                "permission_mode": "ask",
                "profile": None,
                "model": None,
                "effort": None,
                "state": "idle",
                "config": {},
                "created_at_ms": 1,
                "work_items": [],
                "history": [],
                "images": [
                    {
                        "id": 1,
                        "work_id": None,
                        "position": 0,
                        "name": "x.png",
                        "media_type": "image/png",
                        "width": 1,
                        "height": 1,
                        "data": base64.b64encode(b"<script>").decode(),
                        "created_at_ms": 1,
                    }
                ],
            }
        ],
    }
    with pytest.raises(TransferError, match="session 1, image 1: its data is not the image/png"):
        check_document(json.dumps(document))
