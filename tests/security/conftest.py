"""The world fixture of the attack suite (``tests/security/world.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fxdesk.tools import sandbox_probe
from tests.security.world import World, build_world


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    if not sandbox_probe.sandbox_status().available:
        pytest.skip("needs a working bubblewrap")
    yield from build_world(monkeypatch)
