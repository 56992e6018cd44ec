"""A workspace's sandbox settings: checked when the person saves them, tolerant when read."""

from __future__ import annotations

import pytest

from fxdesk.domain.sandbox_settings import SandboxSettingsError, WorkspaceSandbox, setting_key


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
