"""The paths module: one place decides where fxdesk's files live."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from fxdesk import paths


def test_data_dir_option_wins(tmp_path: Path) -> None:
    resolved = paths.resolve(tmp_path / "opt", {"FXDESK_HOME": str(tmp_path / "env")})
    assert resolved.root == tmp_path / "opt"
    assert resolved.source == "--data-dir"


def test_environment_comes_next(tmp_path: Path) -> None:
    resolved = paths.resolve(None, {"FXDESK_HOME": str(tmp_path / "env")})
    assert resolved.root == tmp_path / "env"
    assert resolved.source == "FXDESK_HOME"


def test_platform_folder_last(isolated_home: Path) -> None:
    resolved = paths.resolve(None, {})
    assert resolved.source == "platform"
    # the test's XDG_DATA_HOME, never the real home folder
    assert resolved.root == isolated_home / ".local/share/fxdesk"


def test_relative_and_user_paths_become_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    assert paths.resolve("rel").root == tmp_path / "rel"
    assert paths.resolve("~/x").root == Path.home() / "x"


def test_layout_and_private_folders(tmp_path: Path) -> None:
    data = paths.DataPaths(tmp_path / "d", "test")
    data.ensure()
    assert data.database == tmp_path / "d" / "fxdesk.sqlite3"
    assert data.log_file.parent == data.logs
    for folder in (data.root, data.logs, data.background_logs, data.crash_dir, data.locks):
        assert folder.is_dir()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
