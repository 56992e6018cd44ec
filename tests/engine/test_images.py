"""Images attached to messages, through the real engine and store (issue 18 item 6): kept
across a restart, read back to the model on later turns (older ones beyond the budget as
``[image: name]``), and refused, with nothing queued, for a model that takes no images."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.domain import images as image_rules
from fxdesk.domain.images import ImageAttachment
from fxdesk.domain.model import Profile
from fxdesk.engine.errors import SessionError
from fxdesk.store import attachments, history, repo
from tests.engine.harness import Engine, call, say
from tests.pngs import png_bytes

PNG = png_bytes(6, 6, (10, 120, 200))


async def test_an_image_survives_a_restart_and_goes_to_the_model_again(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("I see a blue square")])
    session = await engine.root_session()
    image = ImageAttachment("blue.png", "image/png", PNG, 6, 6)
    await engine.sessions.send(session.id, "look", images=[image])
    await engine.run(session.id)
    (carried,) = engine.provider.requests[0].messages[-1].images
    assert carried.data == PNG and carried.name == "blue.png"
    await engine.close()

    engine = await engine.reopen([say("still blue")])
    try:
        rows = await engine.store.read(lambda: history.page_history(session.id, 0, 100))
        (ref,) = rows[0].data["images"]
        assert (ref["name"], ref["media_type"], ref["size"]) == ("blue.png", "image/png", len(PNG))
        stored = await engine.store.read(lambda: attachments.load_images([ref["id"]]))
        assert stored[ref["id"]].data == PNG  # the bytes, durable in the database file
        await engine.sessions.send(session.id, "and now?")
        await engine.run(session.id)
        first = engine.provider.requests[0].messages[0]
        assert first.content == "look" and [i.data for i in first.images] == [PNG]
    finally:
        await engine.close()


async def test_images_past_the_budget_reach_the_model_as_named_placeholders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(image_rules, "CONTEXT_IMAGES", 1)
    engine = await Engine.create(tmp_path, [say("one"), say("two")])
    try:
        session = await engine.root_session()
        old = ImageAttachment("old.png", "image/png", PNG)
        new = ImageAttachment("new.png", "image/png", png_bytes(2, 2))
        await engine.sessions.send(session.id, "first", images=[old])
        await engine.run(session.id)
        await engine.sessions.send(session.id, "second", images=[new])
        await engine.run(session.id)
        messages = engine.provider.requests[1].messages
        first, second = messages[0], messages[-1]
        assert first.images == () and first.content == "first\n[image: old.png]"
        assert [i.name for i in second.images] == ["new.png"]
    finally:
        await engine.close()


async def test_a_model_that_takes_no_images_is_refused_before_anything_is_queued(
    tmp_path: Path,
) -> None:
    engine = await Engine.create(tmp_path, [say("never")])
    try:
        await engine.store.write(
            lambda: repo.save_profile(Profile("text-only", "openai", model="gpt-3.5-turbo"))
        )
        session = await engine.sessions.create_root(engine.workspace, profile="text-only")
        image = ImageAttachment("x.png", "image/png", PNG)
        with pytest.raises(SessionError, match=r"gpt-3\.5-turbo .*does not accept images"):
            await engine.sessions.send(session.id, "look", images=[image])
        assert await engine.items(session.id) == []
        # The profile's own setting wins over the guess by name.
        await engine.store.write(
            lambda: repo.save_profile(
                Profile("text-only", "openai", model="gpt-3.5-turbo", accepts_images=True)
            )
        )
        item = await engine.sessions.send(session.id, "look", images=[image])
        refs = await engine.store.read(lambda: attachments.refs_for_work(item.id))
        assert [r["name"] for r in refs] == ["x.png"]
    finally:
        await engine.close()


async def test_a_file_that_is_not_an_image_is_refused(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path)
    try:
        session = await engine.root_session()
        fake = ImageAttachment("notes.png", "image/png", b"just text")
        with pytest.raises(SessionError, match="not a PNG, JPEG, GIF or WebP"):
            await engine.sessions.send(session.id, "look", images=[fake])
        assert await engine.items(session.id) == []
    finally:
        await engine.close()


async def test_an_image_on_its_own_is_a_message_that_names_it(tmp_path: Path) -> None:
    engine = await Engine.create(tmp_path, [say("ok")])
    try:
        session = await engine.root_session()
        image = ImageAttachment("only.png", "image/png", PNG)
        item = await engine.sessions.send(session.id, "  ", images=[image])
        assert item.content == "[image: only.png]"
        await engine.run(session.id)
        assert [i.name for i in engine.provider.requests[0].messages[-1].images] == ["only.png"]
    finally:
        await engine.close()


async def test_an_image_sent_to_steer_the_running_turn_reaches_its_next_model_call(
    tmp_path: Path,
) -> None:
    engine = await Engine.create(tmp_path, [call("echo", text="x"), say("seen it")])
    try:
        session = await engine.root_session("start")
        await engine.start_blocked(session.id)  # inside the turn's first model call
        image = ImageAttachment("steer.png", "image/png", PNG)
        steer = await engine.sessions.steer(session.id, "look at this too", images=[image])
        engine.provider.release()
        await engine.owner.join(session.id)
        last = engine.provider.requests[-1].messages[-1]
        assert (last.role, last.content) == ("user", "look at this too")
        assert [i.data for i in last.images] == [PNG]
        rows = await engine.store.read(lambda: history.page_history(session.id, 0, 100))
        steered = next(r for r in rows if r.data.get("steer"))
        assert steered.data["steer_id"] == steer.id
        assert [r["name"] for r in steered.data["images"]] == ["steer.png"]
    finally:
        engine.provider.release()
        await engine.close()
