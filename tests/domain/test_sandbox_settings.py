"""A workspace's sandbox settings: checked when the person saves them, tolerant when read."""

from __future__ import annotations

import pytest

from fxdesk.domain.sandbox_settings import (
    SandboxSettingsError,
    WorkspaceSandbox,
    secret_like,
    setting_key,
    variable_warning,
)


def test_make_keeps_absolute_and_home_paths_and_names_once_in_order() -> None:
    made = WorkspaceSandbox.make(
        ["~/.cache/pip", " /opt/cache ", "", "~/.cache/pip"],
        ["GOFLAGS", "NPM_CONFIG_CACHE", "GOFLAGS"],
    )
    assert made.writable == ("~/.cache/pip", "/opt/cache")
    assert made.extra_env == ("GOFLAGS", "NPM_CONFIG_CACHE")
    assert made.network is False


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("relative/cache", "not absolute"),
        ("~other/x", "not absolute"),
        ("/", "whole file system"),
        ("~", "whole home folder"),
        ("~/", "whole home folder"),
    ],
)
def test_make_refuses_paths_that_cannot_be_used_naming_them(path: str, says: str) -> None:
    with pytest.raises(SandboxSettingsError, match=says) as raised:
        WorkspaceSandbox.make([path])
    assert repr(path.strip()) in str(raised.value)


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "É", "$X"])
def test_make_refuses_what_is_not_a_variable_name(name: str) -> None:
    with pytest.raises(SandboxSettingsError, match="not a variable name"):
        WorkspaceSandbox.make(extra_env=[name])


def test_value_round_trip_and_damaged_values_read_as_defaults() -> None:
    settings = WorkspaceSandbox.make(["~/.cache"], ["GOFLAGS"], network=True)
    assert WorkspaceSandbox.from_value(settings.to_value()) == settings
    assert WorkspaceSandbox.from_value(None) == WorkspaceSandbox()
    assert WorkspaceSandbox.from_value({"writable": "/x", "network": "yes"}) == WorkspaceSandbox()
    assert WorkspaceSandbox.from_value({"writable": ["relative"]}) == WorkspaceSandbox()
    assert setting_key(7) == "workspace.7.sandbox"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("TMPDIR", "the sandbox sets it to its own /tmp"),
        ("BASH_ENV", "bash reads it before the command"),
        ("SHELLOPTS", "bash reads it before the command"),
        ("BASH_FUNC_ls%%", "not a variable name"),
        ("BASH_FUNC_ls", "bash function"),
    ],
)
def test_make_refuses_the_sandboxs_own_variables_saying_why(name: str, says: str) -> None:
    """Names that would be ignored (the sandbox sets them, or they are never passed) are
    refused rather than silently dropped."""
    with pytest.raises(SandboxSettingsError, match=says):
        WorkspaceSandbox.make(extra_env=["GOFLAGS", name])


@pytest.mark.parametrize(
    "name",
    ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "MYTOKEN", "DB_PASSWORD",
     "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "npm_config__authToken"],
)  # fmt: skip
def test_names_that_look_like_secrets_are_warned_about(name: str) -> None:
    assert secret_like(name)
    assert "looks like a secret" in variable_warning(name)


@pytest.mark.parametrize(
    "name", ["GOFLAGS", "PIP_CACHE_DIR", "npm_config_cache", "XDG_SESSION_TYPE", "KEYMAP", "PWD"]
)
def test_ordinary_names_are_not_warned_about(name: str) -> None:
    assert not secret_like(name)
    assert variable_warning(name) == ""


def test_a_profiles_key_variable_is_named_as_such() -> None:
    """A profile's key variable is never passed on (logs.environment_without_secrets): the
    warning says so, whatever the name looks like."""
    assert variable_warning("LLM_X", key_variables={"LLM_X"}) == (
        "LLM_X holds a model key of a profile: fxdesk never passes it to commands"
    )
