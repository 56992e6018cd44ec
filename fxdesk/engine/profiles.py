"""Model profiles and app settings, for the CLI and the GUI alike.

The GUI never touches the keyring or the database itself: it calls these. Keys go to the OS
keyring in a worker thread; "test" makes one tiny streamed call and reports what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from dataclasses import dataclass

from fxdesk.domain.acp_presets import looks_secret
from fxdesk.domain.conversation import ChatMessage
from fxdesk.domain.model import UNRESTRICTED_SETTING, KeySource, PermissionMode, Profile
from fxdesk.engine.acp_programs import find_agent_program
from fxdesk.engine.providers import build_provider, env_secrets
from fxdesk.logs import register_secret, register_secret_variable
from fxdesk.providers.base import ModelRequest, ProviderError, collect
from fxdesk.providers.scripted import ScriptedProvider
from fxdesk.store import Store, repo, secrets

TEST_PROMPT = "Reply with the single word: ok"

DEFAULT_PROFILE = "default_profile"
DEFAULT_PERMISSION_MODE = "default_permission_mode"
APPEARANCE = "appearance"  # "system" | "light" | "dark"
LAST_SESSION = "last_session"  # reopened at the next start
WINDOW_STATE = "window_state"  # the main window's place, size, maximized state and docks
NOTIFICATIONS = "notifications"  # bool: desktop notifications from the GUI (default on)


class ProfileError(ValueError):
    """A profile that cannot be saved as given; the message says why."""


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str
    elapsed_ms: float


class ProfileService:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def list(self) -> list[Profile]:
        return await self.store.read(repo.list_profiles)

    async def get(self, name: str) -> Profile | None:
        return await self.store.read(lambda: repo.get_profile(name))

    async def default_name(self) -> str | None:
        value = await self.store.read(lambda: repo.get_setting(DEFAULT_PROFILE))
        return str(value) if value else None

    async def set_default(self, name: str | None) -> None:
        await self.store.write(lambda: repo.set_setting(DEFAULT_PROFILE, name), label="setting")

    async def save(
        self, profile: Profile, *, key: str | None = None, make_default: bool = False
    ) -> None:
        """Store the profile (and its key in the keyring, if given).

        Raises:
            ProfileError: a required field is missing or the script is unreadable.
            secrets.SecretsUnavailable: a key was given and no keyring can keep it.
        """
        if not profile.name.strip():
            raise ProfileError("the profile needs a name")
        if profile.kind not in ("scripted", "openai", "anthropic", "acp"):
            raise ProfileError(f"unknown kind {profile.kind!r}")
        if profile.kind == "acp" and not profile.command:
            raise ProfileError("an acp profile needs the command that starts the agent")
        if profile.kind not in ("scripted", "acp") and not profile.model:
            raise ProfileError(f"a {profile.kind} profile needs a model name")
        if (
            profile.kind == "scripted"
            and profile.script_path
            and not (profile.script_path.startswith("builtin:"))
        ):
            try:
                await asyncio.to_thread(ScriptedProvider.from_file, profile.script_path)
            except ProviderError as exc:
                raise ProfileError(exc.message) from exc
        if profile.kind == "acp":
            profile = await self._keep_env_secrets(profile)
        elif key:
            await asyncio.to_thread(secrets.set_secret, profile.name, key)
        stored = profile
        await self.store.write(lambda: repo.save_profile(stored), label="profile")
        if profile.key_source == KeySource.ENV and profile.key_env:
            register_secret_variable(profile.key_env)
        if make_default:
            await self.set_default(profile.name)

    async def _keep_env_secrets(self, profile: Profile) -> Profile:
        """An ``acp`` profile with the values of its secret-looking variables moved to the
        keyring (one JSON object under the profile's entry, as another profile's API key).

        ``profile.env`` holds the values given now; a name in ``profile.secret_env`` without
        one keeps its stored value; a secret no longer named is forgotten.

        Raises:
            secrets.SecretsUnavailable: there are secrets and no keyring to keep them.
        """
        for name, _value in profile.env:
            if not name.isidentifier():
                raise ProfileError(f"{name!r} is not an environment variable name")
        given = {name: value for name, value in profile.env if looks_secret(name)}
        names = tuple(dict.fromkeys((*profile.secret_env, *given)))
        kept = {name: value for name, value in profile.env if name not in given}
        for value in given.values():
            register_secret(value)
        if not names:
            if profile.secret_env or (await self._stored_env_secrets(profile.name)):
                with contextlib.suppress(secrets.SecretsUnavailable):
                    await asyncio.to_thread(secrets.delete_secret, profile.name)
        else:
            stored = await self._stored_env_secrets(profile.name) if profile.secret_env else {}
            values = {name: given.get(name, stored.get(name, "")) for name in names}
            missing = [name for name, value in values.items() if not value]
            if missing:
                raise ProfileError(f"no value is stored or given for {', '.join(missing)}")
            text = json.dumps(values, sort_keys=True)
            await asyncio.to_thread(secrets.set_secret, profile.name, text)
        return dataclasses.replace(profile, env=tuple(kept.items()), secret_env=names)

    async def _stored_env_secrets(self, name: str) -> dict[str, str]:
        try:
            return await env_secrets(name)
        except secrets.SecretsUnavailable:
            return {}

    async def hide_env_keys(self) -> None:
        """Keep every profile's key variable (``--api-key-env``) out of the agent's commands,
        including profiles this process has not used yet."""
        for profile in await self.list():
            if profile.key_source == KeySource.ENV and profile.key_env:
                register_secret_variable(profile.key_env)

    async def remove(self, name: str) -> bool:
        removed = await self.store.write(lambda: repo.remove_profile(name), label="profile")
        with contextlib.suppress(secrets.SecretsUnavailable):  # then nothing was stored there
            await asyncio.to_thread(secrets.delete_secret, name)
        if removed and await self.default_name() == name:
            await self.set_default(None)
        return bool(removed)

    async def has_key(self, name: str) -> bool | None:
        """Whether the keyring holds a key for ``name`` (None: no keyring to ask)."""
        try:
            return bool(await asyncio.to_thread(secrets.get_secret, name))
        except secrets.SecretsUnavailable:
            return None

    async def keyring_status(self) -> secrets.KeyringStatus:
        return await asyncio.to_thread(secrets.status)

    async def test(self, profile: Profile, *, api_key: str | None = None) -> ProbeResult:
        """One tiny streamed call; never raises for provider trouble.

        ``api_key``: test with this key (typed, not saved yet) instead of the stored one.
        """
        began = time.monotonic()
        if profile.kind == "acp":
            program = await asyncio.to_thread(find_agent_program, profile.command or "")
            elapsed = (time.monotonic() - began) * 1000
            if not program.found:
                return ProbeResult(False, program.problem, elapsed)
            return ProbeResult(
                True,
                f"found {program.path} (whether the agent starts and is logged in shows at "
                "its first turn)",
                elapsed,
            )
        try:
            provider = await build_provider(profile, api_key=api_key)
            response = await collect(
                provider.stream(
                    ModelRequest(
                        model=profile.model or "scripted",
                        messages=(ChatMessage("user", TEST_PROMPT),),
                        max_tokens=16,
                    )
                )
            )
        except ProviderError as exc:
            elapsed = (time.monotonic() - began) * 1000
            return ProbeResult(False, str(exc), elapsed)
        elapsed = (time.monotonic() - began) * 1000
        reply = " ".join(response.text.split())[:80]
        return ProbeResult(
            True,
            f"{profile.model or profile.kind} replied {reply!r} in {elapsed:.0f} ms "
            f"({response.usage.input_tokens} tokens in, {response.usage.output_tokens} out)",
            elapsed,
        )

    # --- app settings --------------------------------------------------------------------

    async def default_permission_mode(self) -> PermissionMode:
        """The mode new sessions start with (yolo for an unrestricted one turned off since)."""

        def read() -> PermissionMode:
            value = repo.get_setting(DEFAULT_PERMISSION_MODE)
            try:
                mode = PermissionMode(value) if value else PermissionMode.AUTO
            except ValueError:
                return PermissionMode.AUTO
            if mode is PermissionMode.UNRESTRICTED and not repo.unrestricted_enabled():
                return PermissionMode.YOLO
            return mode

        return await self.store.read(read)

    async def unrestricted_enabled(self) -> bool:
        """Whether ``unrestricted`` mode (no sandbox) is offered: off until the person says."""
        return await self.store.read(repo.unrestricted_enabled)

    async def set_unrestricted_enabled(self, enabled: bool) -> None:
        value = bool(enabled)
        await self.store.write(
            lambda: repo.set_setting(UNRESTRICTED_SETTING, value), label="setting"
        )

    async def set_default_permission_mode(self, mode: PermissionMode) -> None:
        await self.store.write(
            lambda: repo.set_setting(DEFAULT_PERMISSION_MODE, mode.value), label="setting"
        )

    async def appearance(self) -> str:
        value = await self.store.read(lambda: repo.get_setting(APPEARANCE))
        return value if value in ("system", "light", "dark") else "system"

    async def set_appearance(self, value: str) -> None:
        if value not in ("system", "light", "dark"):
            raise ValueError(value)
        await self.store.write(lambda: repo.set_setting(APPEARANCE, value), label="setting")

    async def notifications_enabled(self) -> bool:
        return await self.store.read(lambda: repo.get_setting(NOTIFICATIONS)) is not False

    async def set_notifications_enabled(self, enabled: bool) -> None:
        value = bool(enabled)
        await self.store.write(lambda: repo.set_setting(NOTIFICATIONS, value), label="setting")

    async def last_session(self) -> str | None:
        value = await self.store.read(lambda: repo.get_setting(LAST_SESSION))
        return str(value) if value else None

    async def window_state(self) -> dict[str, str]:
        """What the window saved of itself when it last closed (opaque Qt state, base64 text
        by name); empty when nothing usable was saved."""
        value = await self.store.read(lambda: repo.get_setting(WINDOW_STATE))
        if not isinstance(value, dict):
            return {}
        return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}

    async def set_window_state(self, state: dict[str, str]) -> None:
        value = dict(state)
        await self.store.write(lambda: repo.set_setting(WINDOW_STATE, value), label="setting")

    async def set_last_session(self, session_id: str | None) -> None:
        await self.store.write(lambda: repo.set_setting(LAST_SESSION, session_id), label="setting")
