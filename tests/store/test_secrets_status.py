"""Where keys are kept, in the person's words (issue 14: Settings showed a keyring class name)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.null
import pytest
from keyrings.alt.file import PlaintextKeyring

from fxdesk.store import secrets


@pytest.fixture
def restore_keyring() -> Iterator[None]:
    yield
    keyring.set_keyring(keyring.backends.null.Keyring())


def test_a_file_keyring_is_named_as_a_file_and_not_encrypted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_keyring: None
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    keyring.set_keyring(PlaintextKeyring())
    state = secrets.status()
    assert state.usable and not state.encrypted
    assert state.label == "a file in your home folder"
    assert state.backend == "keyrings.alt.file.PlaintextKeyring"  # the class, for diagnostics


def test_no_keyring_says_what_to_do(restore_keyring: None) -> None:
    keyring.set_keyring(keyring.backends.null.Keyring())
    state = secrets.status()
    assert not state.usable and state.detail == secrets.NO_BACKEND_HELP
