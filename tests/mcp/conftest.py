"""MCP tests: real servers built with the SDK (``tiny_server.py``) as child processes."""

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
