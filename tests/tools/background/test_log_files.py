import re
import stat

import pytest

from fxdesk.tools.background import log_files
from fxdesk.tools.background.log_files import LogFileUnavailable, new_log_file


def test_a_new_log_is_empty_private_and_named_by_random_hex(tmp_path):
    path = new_log_file(tmp_path / "logs")
    assert re.fullmatch(r"fx-cmd-[0-9a-f]{32}\.log", path.name)
    assert path.read_bytes() == b""
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert new_log_file(tmp_path / "logs") != path


def test_sixteen_collisions_give_a_clear_error(tmp_path, monkeypatch):
    asked = []

    def same_name(count):
        asked.append(count)
        return "0" * 32

    (tmp_path / f"fx-cmd-{'0' * 32}.log").write_text("kept")
    monkeypatch.setattr(log_files.secrets, "token_hex", same_name)
    with pytest.raises(LogFileUnavailable, match="after 16 tries"):
        new_log_file(tmp_path)
    assert asked == [16] * 16
    assert (tmp_path / f"fx-cmd-{'0' * 32}.log").read_text() == "kept"


def test_an_unusable_folder_says_which(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(LogFileUnavailable, match="cannot make the log folder"):
        new_log_file(blocker / "logs")
