"""Which provider and model a session's turns use: resolved from its profile.

Providers are built once per profile (their HTTP connections are reused) and rebuilt when the
profile changes. Keys come from the OS keyring (default), an environment variable, or nowhere
(local servers); a missing key or keyring is a ``ProviderError`` with what to do, never a crash.
"""

from __future__ import annotations

import abc
import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.model import KeySource, Profile, Session
from fxdesk.engine.acp_sandbox import agent_sandbox
from fxdesk.logs import register_secret, register_secret_variable
from fxdesk.providers.acp import AcpAgentProvider, AcpLaunch
from fxdesk.providers.base import Provider, ProviderError
from fxdesk.providers.demo import DEMO_SCRIPT, DemoProvider
from fxdesk.providers.retry import RetryingProvider
from fxdesk.providers.scripted import ScriptedProvider
from fxdesk.store import Store, repo, secrets


@dataclass(frozen=True)
class Resolved:
    provider: Provider
    model: str
    profile: Profile | None = None


class ProviderResolver(abc.ABC):
    @abc.abstractmethod
    async def resolve(self, session: Session) -> Resolved:
        """The provider for ``session``; ``ProviderError`` when it cannot be had."""


async def api_key_for(profile: Profile) -> str | None:
    """The profile's key from where it says it lives (registered for redaction)."""
    key = await _find_key(profile)
    if key:
        register_secret(key)
    return key


async def _find_key(profile: Profile) -> str | None:
    if profile.key_source == KeySource.NONE:
        return None
    if profile.key_source == KeySource.ENV:
        name = profile.key_env or ""
        register_secret_variable(name)
        value = os.environ.get(name)
        if not value:
            raise ProviderError(
                "auth",
                f"the environment variable {name or '(none named)'} holding the API key "
                f"of profile {profile.name!r} is not set",
            )
        return value
    try:
        key = await asyncio.to_thread(secrets.get_secret, profile.name)
    except secrets.SecretsUnavailable as exc:
        raise ProviderError("auth", exc.user_message) from None
    if not key:
        raise ProviderError(
            "auth",
            f"no API key is stored for profile {profile.name!r}; set one with "
            f"`fxdesk profiles add {profile.name} ... --api-key-stdin`",
        )
    return key


async def env_secrets(profile_name: str) -> dict[str, str]:
    """The secret environment values of an ``acp`` profile, from the keyring (registered for
    redaction); empty when none are stored.

    Raises:
        secrets.SecretsUnavailable: no keyring to ask.
    """
    text = await asyncio.to_thread(secrets.get_secret, profile_name)
    try:
        values = json.loads(text) if text else {}
    except ValueError:
        values = {}
    if not isinstance(values, dict):
        return {}
    found = {str(k): str(v) for k, v in values.items()}
    for value in found.values():
        register_secret(value)
    return found


async def _agent_environment(profile: Profile) -> dict[str, str]:
    env = dict(profile.env)
    if not profile.secret_env:
        return env
    try:
        stored = await env_secrets(profile.name)
    except secrets.SecretsUnavailable as exc:
        raise ProviderError("auth", exc.user_message) from None
    missing = [name for name in profile.secret_env if name not in stored]
    if missing:
        raise ProviderError(
            "auth",
            f"the keyring holds no value for {', '.join(missing)} of profile {profile.name!r}: "
            "set it again in Settings → Profiles",
        )
    return env | {name: stored[name] for name in profile.secret_env}


async def build_provider(
    profile: Profile,
    *,
    api_key: str | None = None,
    log_dir: Path | None = None,
    data_dir: Path | None = None,
) -> Provider:
    """A fresh provider for ``profile`` (with retries for the network kinds).

    ``api_key`` stands in for the stored key: a key typed into a form, tested before saving.
    ``log_dir``: where an ACP agent's stderr goes (none: discarded); ``data_dir``: fxdesk's
    data folder, hidden from a sandboxed agent (which keeps its ``/tmp`` there).
    """
    if profile.kind == "acp":
        if not profile.command:
            raise ProviderError(
                "unavailable", f"the ACP profile {profile.name!r} has no command to start"
            )
        launch = AcpLaunch(profile.command, profile.args, await _agent_environment(profile))
        wrap = agent_sandbox(profile, data_dir)
        return AcpAgentProvider(launch, log_dir=log_dir, wrap=wrap)
    if profile.kind == "scripted":
        if not profile.script_path or profile.script_path == DEMO_SCRIPT:
            return DemoProvider()  # a scripted profile without a script: the offline demo
        return await asyncio.to_thread(ScriptedProvider.from_file, profile.script_path)
    if api_key:
        register_secret(api_key)
        key: str | None = api_key
    else:
        key = await api_key_for(profile)
    timeouts = (profile.connect_timeout_s, profile.read_timeout_s)
    # The SDKs take a second or two to import: only when a profile of their kind is used.
    inner: Provider
    if profile.kind == "openai":
        from fxdesk.providers.openai_compat import OpenAICompatProvider

        inner = OpenAICompatProvider(
            base_url=profile.base_url,
            api_key=key,
            connect_timeout_s=timeouts[0],
            read_timeout_s=timeouts[1],
            max_tokens=profile.max_tokens,
        )
    elif profile.kind == "anthropic":
        from fxdesk.providers.anthropic_provider import AnthropicProvider

        inner = AnthropicProvider(
            base_url=profile.base_url,
            api_key=key,
            connect_timeout_s=timeouts[0],
            read_timeout_s=timeouts[1],
            max_tokens=profile.max_tokens,
        )
    else:
        raise ProviderError("unavailable", f"unknown profile kind {profile.kind!r}")
    return RetryingProvider(inner)


class ProfileResolver(ProviderResolver):
    """Looks the session's profile (or the default profile) up in the database."""

    def __init__(
        self, store: Store, *, log_dir: Path | None = None, data_dir: Path | None = None
    ) -> None:
        self.store = store
        self.log_dir = log_dir  # ACP agents' stderr
        self.data_dir = data_dir  # hidden from sandboxed ACP agents
        self._built: dict[str, tuple[Profile, Provider]] = {}

    async def resolve(self, session: Session) -> Resolved:
        name = session.profile or await self.store.read(lambda: repo.get_setting("default_profile"))
        if not name:
            raise ProviderError(
                "unavailable", "no model profile is set up; add one with `fxdesk profiles add`"
            )
        profile = await self.store.read(lambda: repo.get_profile(name))
        if profile is None:
            raise ProviderError("unavailable", f"the profile {name!r} does not exist")
        built = self._built.get(name)
        if built is None or built[0] != profile or profile.kind == "scripted":
            # Scripts are re-read per session run, so each run plays its script from the start.
            built = (
                profile,
                await build_provider(profile, log_dir=self.log_dir, data_dir=self.data_dir),
            )
            self._built[name] = built
        return Resolved(built[1], session.model or profile.model or profile.kind, profile)


class FixedResolver(ProviderResolver):
    """One provider for every session (tests, the offline demo)."""

    def __init__(self, provider: Provider, model: str = "scripted") -> None:
        self.provider = provider
        self.model = model
        self.resolved: list[str] = []

    async def resolve(self, session: Session) -> Resolved:
        self.resolved.append(session.id)
        return Resolved(self.provider, session.model or self.model)
