"""Fixtures shared by the settings tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.null
import keyring.core
import pytest


@pytest.fixture
def file_keyring(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A plain-text file keyring in the test's own folder (never the real keyring)."""
    folder = tmp_path / "xdg-data"
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    keyring.core.init_backend()
    try:
        yield folder
    finally:
        keyring.set_keyring(keyring.backends.null.Keyring())
