"""Fixtures shared by the reliability tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The project folder the sessions work in."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
