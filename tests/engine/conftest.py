"""Engine tests: whatever a failing test left open is closed, so the next test starts clean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fxdesk.store import Store


@pytest.fixture(autouse=True)
def close_leftover_store() -> Iterator[None]:
    yield
    leftover = Store._open_instance
    if leftover is not None:
        leftover.close()
