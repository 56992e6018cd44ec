"""Tells the composer whether the open session's model takes images (issue 18 item 6), so it
says so before the person sends, not after: checked when images are added, when a session is
opened and when its profile changes."""

from __future__ import annotations

from collections.abc import Callable

from fxdesk.domain.model import Session
from fxdesk.engine.facade import Engine
from fxdesk.gui.sessions.composer import Composer


class ImageSupportWatch:
    def __init__(
        self, composer: Composer, engine: Engine, session: Callable[[], Session | None]
    ) -> None:
        self.composer = composer
        self.engine = engine
        self.session = session
        self.checks = 0  # how many times the engine was asked (tests wait on it)

    async def check(self) -> None:
        session = self.session()
        if session is None:
            return
        support = await self.engine.image_support(session.id)
        self.checks += 1
        current = self.session()
        if current is not None and current.id == session.id:
            self.composer.set_images_refusal("" if support.accepted else support.refusal)
