"""Shared fixtures. Every test runs with its own HOME, XDG folders and data folder, so nothing
ever touches the real home folder, and with a keyring backend that cannot prompt."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk import messages
from fxdesk.paths import DataPaths
from fxdesk.store import Store
from tests.llmock_server import llmock, llmock_server  # noqa: F401 - shared fixtures

# Before anything can read them (Qt reads QT_QPA_PLATFORM when the application is created).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"


@pytest.fixture(autouse=True)
def isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("FXDESK_HOME", str(home / "fxdesk-data"))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
    messages.hub.reset()
    return home


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Undo ``setup_logging`` so a test's log file and stderr handler do not leak."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


@pytest.fixture
def data_paths(tmp_path: Path) -> DataPaths:
    paths = DataPaths(tmp_path / "data", "test")
    paths.ensure()
    return paths


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "fxdesk.sqlite3")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def var_tmp() -> Iterator[Path]:
    """A private folder outside /tmp: in the sandbox /tmp is the session's own, so a path
    under the host's /tmp would not be where a sandboxed command writes."""
    folder = Path(tempfile.mkdtemp(prefix="fxdesk-test-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)
