"""ProfileService: what the GUI's setup and settings dialogs call."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.domain.model import KeySource, PermissionMode, Profile
from fxdesk.engine.profiles import ProfileError, ProfileService
from fxdesk.store import Store, secrets


@pytest.fixture
async def service(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = await Store.aopen(tmp_path / "db.sqlite3")
    yield ProfileService(store)
    store.close()


async def test_save_list_default_and_remove(service: ProfileService) -> None:
    demo = Profile("demo", "scripted", script_path="builtin:demo", key_source=KeySource.NONE)
    await service.save(demo, make_default=True)
    assert [p.name for p in await service.list()] == ["demo"]
    assert await service.default_name() == "demo"
    result = await service.test(demo)
    assert result.ok and "offline demo agent" in result.message
    assert await service.remove("demo")
    assert await service.default_name() is None
    assert not await service.remove("demo")


async def test_invalid_profiles_are_refused(service: ProfileService, tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="needs a model"):
        await service.save(Profile("x", "openai"))
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    with pytest.raises(ProfileError, match="cannot read the script"):
        await service.save(Profile("y", "scripted", script_path=str(bad)))
    with pytest.raises(ProfileError, match="needs a name"):
        await service.save(Profile(" ", "scripted"))


async def test_a_key_without_a_keyring_is_refused_and_nothing_saved(
    service: ProfileService,
) -> None:
    with pytest.raises(secrets.SecretsUnavailable):
        await service.save(Profile("k", "openai", model="m"), key="sk-abcdefgh")
    assert await service.list() == []
    assert await service.has_key("k") is None  # no keyring to ask


async def test_a_failing_test_reports_instead_of_raising(service: ProfileService) -> None:
    profile = Profile(
        "down",
        "openai",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        key_source=KeySource.NONE,
        connect_timeout_s=1,
    )
    result = await service.test(profile)
    assert not result.ok and "cannot reach the provider" in result.message


async def test_app_settings(service: ProfileService) -> None:
    assert await service.default_permission_mode() == PermissionMode.AUTO
    await service.set_default_permission_mode(PermissionMode.ASK)
    assert await service.default_permission_mode() == PermissionMode.ASK
    assert await service.appearance() == "system"
    await service.set_appearance("dark")
    assert await service.appearance() == "dark"
    with pytest.raises(ValueError):
        await service.set_appearance("purple")


async def test_every_profiles_key_variable_is_kept_from_the_agents_commands(
    service: ProfileService,
) -> None:
    from fxdesk.logs import environment_without_secrets
    from fxdesk.store import repo

    environ = {"SAVED_HERE_KEY": "a", "SAVED_ELSEWHERE_KEY": "b", "PATH": "/usr/bin"}
    saved = Profile("here", "openai", model="m", key_source=KeySource.ENV, key_env="SAVED_HERE_KEY")
    await service.save(saved)
    assert "SAVED_HERE_KEY" not in environment_without_secrets(environ)
    # Written by another fxdesk process: known here only once the profiles are read.
    other = Profile(
        "elsewhere", "openai", model="m", key_source=KeySource.ENV, key_env="SAVED_ELSEWHERE_KEY"
    )
    await service.store.write(lambda: repo.save_profile(other))
    assert "SAVED_ELSEWHERE_KEY" in environment_without_secrets(environ)
    await service.hide_env_keys()
    assert environment_without_secrets(environ) == {"PATH": "/usr/bin"}
