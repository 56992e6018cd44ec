"""Which sessions' models take images, and the images a model call carries (issue 18 item 6).

``image_support`` runs inside a store job: it reads the session's profile (or the default one)
as of that transaction, so the check and the message it guards are written against the same
profile. ``context_images`` picks the images of the newest messages within the budget of
``domain/images.py`` and reads only their bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fxdesk.domain import images
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.images import ImageAttachment
from fxdesk.domain.model import EntryKind, Profile, Session
from fxdesk.store import Store, attachments, repo


@dataclass(frozen=True)
class ImageSupport:
    """Whether the session's model takes images; ``model`` names it for the person."""

    accepted: bool
    model: str = ""
    profile: str = ""

    @property
    def refusal(self) -> str:
        """What the person is told when images cannot go to this model."""
        what = f"The model {self.model}" if self.model else "This session's model"
        where = f" (profile {self.profile})" if self.profile else ""
        return (
            f"{what}{where} does not accept images. Remove the image, or choose a model "
            "profile that takes images (Settings → Profiles → “Accepts images”)."
        )


def session_profile(session: Session) -> Profile | None:
    """The profile the session's turns use (its own or the default), inside a store job."""
    name = session.profile or repo.get_setting("default_profile")
    return repo.get_profile(name) if isinstance(name, str) and name else None


def support_for(profile: Profile | None, model: str | None = None) -> ImageSupport:
    """Whether ``profile`` (``model`` overriding its model) takes images. No profile: the
    session runs on a fixed provider (tests, the demo), which takes them."""
    if profile is None:
        return ImageSupport(True, model or "")
    name = model or profile.model or ""
    return ImageSupport(
        images.accepts(profile.kind, name, profile.accepts_images), name, profile.name
    )


def image_support(session: Session) -> ImageSupport:
    """Whether ``session``'s model takes images (inside a store job)."""
    return support_for(session_profile(session), session.model)


def context_images(entries: Sequence[HistoryEntry], accepted: bool) -> dict[int, ImageAttachment]:
    """The images (with bytes) a model call over ``entries`` carries: none when the model takes
    none, else the newest within the budget (inside a store job)."""
    if not accepted:
        return {}
    newest_first = [
        ref
        for entry in reversed(entries)
        if entry.kind == EntryKind.USER
        for ref in images.refs_of(entry.data)
    ]
    return attachments.load_images(images.chosen_for_context(newest_first))


class ImagesPart:
    """The engine's image queries (the composer and the transcript). Needs ``_store`` and
    ``session``."""

    _store: Store

    async def session(self, session_id: str) -> Session | None:  # provided by Engine
        raise NotImplementedError

    async def image_support(self, session_id: str) -> ImageSupport:
        """Whether the session's model takes images (the composer says so before sending)."""
        session = await self.session(session_id)
        if session is None:
            return ImageSupport(False)
        return await self._store.read(lambda: image_support(session))

    async def images(self, ids: Sequence[int]) -> dict[int, ImageAttachment]:
        """Attached images by id, with their bytes (the transcript's thumbnails)."""
        return await self._store.read(lambda: attachments.load_images(list(ids)))

    async def work_images(self, work_id: str) -> list[ImageAttachment]:
        """The images a message (work item) carried, in order, with their bytes (Retry sends
        them again with its text)."""

        def read() -> list[ImageAttachment]:
            ids = [int(ref["id"]) for ref in attachments.refs_for_work(work_id)]
            found = attachments.load_images(ids)
            return [found[i] for i in ids if i in found]

        return await self._store.read(read)
