"""Tool tests: a workspace folder with a secret file beside it, outside the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.tools.base import ToolContext

SECRET = "the secret outside the workspace\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret").write_text(SECRET)
    return ws


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, session_id="s", work_id="w", call_id="c")
