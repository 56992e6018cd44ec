"""An external agent's own process in fxdesk's sandbox (issue 19): what it does by itself,
not through fxdesk, is held by bubblewrap; what it does through the client still works.

The agent is the test agent (tests/acp_agent.py), a real child process, started from an
``acp`` profile through ``build_provider`` as the app does."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain.model import PermissionMode, Profile
from fxdesk.engine.owner import Result
from fxdesk.engine.providers import build_provider
from fxdesk.tools import sandbox_probe
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools
from tests.engine.acp_support import AGENT, finished, opened, rows, start
from tests.engine.harness import Engine
from tests.helpers import child_env

pytestmark = pytest.mark.skipif(
    not sandbox_probe.sandbox_status().available
    or sandbox_probe.sandbox_status().kind != sandbox_probe.BUBBLEWRAP,
    reason="needs a working bubblewrap (the agent's sandbox is bubblewrap's)",
)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the workspace and outside /tmp (the sandbox has its own /tmp, so a
    path there would be refused for another reason), writable by this user."""
    try:
        folder = Path(tempfile.mkdtemp(prefix="fxdesk-acp-outside-", dir="/var/tmp"))
    except OSError as exc:
        pytest.skip(f"/var/tmp is not writable here ({exc.strerror})")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def make(tmp_path: Path, *, sandbox: bool | None, preset: str | None = None) -> Engine:
    env = {"PYTHONPATH": child_env()["PYTHONPATH"]}
    if sandbox is False:  # sandboxed, the agent keeps its sessions in its own /tmp
        env["ACP_TEST_STATE"] = str(tmp_path / "agent")
    profile = Profile(
        "tagent",
        "acp",
        command=sys.executable,
        args=(AGENT,),
        env=tuple(env.items()),
        sandbox=sandbox,
        preset=preset,
    )
    provider = await build_provider(profile, log_dir=tmp_path, data_dir=tmp_path / "data")
    return await Engine.create(
        tmp_path, provider=provider, permissions=True, tools=ToolRegistry(all_tools())
    )


async def said(engine: Engine, message: str) -> str:
    """Run ``message`` as the first turn of a new session in yolo mode; the agent's last words."""
    sid = await start(engine, message, PermissionMode.YOLO)
    assert await finished(engine, sid) == Result.IDLE
    found = [content for kind, content, _ in await rows(engine, sid) if kind == "assistant"]
    return [c for c in found if c][-1]


async def test_a_sandboxed_agent_cannot_write_outside_the_workspace_by_itself(
    tmp_path: Path, outside: Path
) -> None:
    # no preset: in the sandbox by default
    async with opened(make(tmp_path, sandbox=None)) as engine:
        escape = outside / "escape.txt"
        answer = await said(engine, f"rawwrite {escape}")
        assert answer == f"cannot write {escape}: Read-only file system"
        assert not escape.exists()
        # Its own writes inside the workspace work, and so do writes through the client.
        direct = engine.workspace / "direct.txt"
        assert await said(engine, f"rawwrite {direct}") == f"wrote {direct}"
        assert direct.read_text() == "written by the agent itself\n"
        assert (await said(engine, "fsput notes.txt")).startswith("read back:")
        assert (engine.workspace / "notes.txt").read_text() == (
            "notes.txt written through the client\n"
        )
        # fxdesk's data folder is out of its sight (hidden; here also under /tmp, which the
        # sandbox replaces with its own).
        (tmp_path / "data").mkdir(exist_ok=True)
        secret = tmp_path / "data" / "fxdesk.sqlite3"
        secret.write_text("the database")
        answer = await said(engine, f"rawread {secret}")
        assert answer.startswith(f"cannot read {secret}:"), answer


async def test_an_agent_with_the_sandbox_off_can_write_outside(
    tmp_path: Path, outside: Path
) -> None:
    async with opened(make(tmp_path, sandbox=False)) as engine:
        escape = outside / "escape.txt"
        assert await said(engine, f"rawwrite {escape}") == f"wrote {escape}"
        assert escape.read_text() == "written by the agent itself\n"


async def test_a_presets_config_folder_is_writable_and_its_login_readable(
    tmp_path: Path,
) -> None:
    """The Codex preset declares ~/.codex: the agent reads its login there (hidden from the
    workspace's commands) and writes its configuration; the rest of the home stays closed
    (~/.ssh is hidden; the test's home is also under /tmp, which the sandbox replaces)."""
    home = Path.home()  # the test's own (tests/conftest.py)
    login = home / ".codex" / "auth.json"
    login.parent.mkdir(parents=True, exist_ok=True)
    login.write_text('{"token": "codex-login"}')
    (home / ".ssh").mkdir(exist_ok=True)
    (home / ".ssh" / "id_ed25519").write_text("a key")
    async with opened(make(tmp_path, sandbox=None, preset="codex")) as engine:
        assert await said(engine, f"rawread {login}") == f'read {login}: {{"token": "codex-login"}}'
        config = home / ".codex" / "config.toml"
        assert await said(engine, f"rawwrite {config}") == f"wrote {config}"
        assert config.read_text() == "written by the agent itself\n"
        key = home / ".ssh" / "id_ed25519"
        assert (await said(engine, f"rawread {key}")).startswith(f"cannot read {key}:")
