"""Which provider and model a session's turns use: resolved from its profile."""

from __future__ import annotations

import abc
import asyncio
from dataclasses import dataclass

from fxdesk.domain.model import Session
from fxdesk.providers.base import Provider, ProviderError
from fxdesk.providers.scripted import ScriptedProvider
from fxdesk.store import Store, repo


@dataclass(frozen=True)
class Resolved:
    provider: Provider
    model: str


class ProviderResolver(abc.ABC):
    @abc.abstractmethod
    async def resolve(self, session: Session) -> Resolved:
        """The provider for ``session``; ``ProviderError`` when it cannot be had."""


class ProfileResolver(ProviderResolver):
    """Looks the session's profile (or the default profile) up in the database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def resolve(self, session: Session) -> Resolved:
        name = session.profile or await self.store.read(lambda: repo.get_setting("default_profile"))
        if not name:
            raise ProviderError(
                "unavailable", "no model profile is set up; add one with `fxdesk profiles add`"
            )
        profile = await self.store.read(lambda: repo.get_profile(name))
        if profile is None:
            raise ProviderError("unavailable", f"the profile {name!r} does not exist")
        if profile.kind == "scripted":
            if not profile.script_path:
                raise ProviderError("unavailable", f"the scripted profile {name!r} has no script")
            provider = await asyncio.to_thread(ScriptedProvider.from_file, profile.script_path)
            return Resolved(provider, session.model or profile.model or "scripted")
        raise ProviderError(
            "unavailable", f"profiles of kind {profile.kind!r} are not supported yet"
        )


class FixedResolver(ProviderResolver):
    """One provider for every session (tests, the offline demo)."""

    def __init__(self, provider: Provider, model: str = "scripted") -> None:
        self.provider = provider
        self.model = model
        self.resolved: list[str] = []

    async def resolve(self, session: Session) -> Resolved:
        self.resolved.append(session.id)
        return Resolved(self.provider, session.model or self.model)
