"""The check resolves what a command line reads, writes and moves to before deciding.

Real engine, real files, real symbolic links: `cd` through a link that points out, the fallback
bash takes through one, `cd -P`, CDPATH, and input redirections. Every command is allowed by a `*`
rule, so what asks is the place or the file, resolved as the file system resolves it. Ask mode
asks about every place and file outside; auto mode, whose sandbox lets commands read and move
anywhere, only about writes there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxdesk.domain.model import PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.permissions import Check
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine


async def checked(tmp_path: Path, line: str, mode: PermissionMode = PermissionMode.AUTO) -> Check:
    engine = await Engine.create(
        tmp_path / "e", [], permissions=True, tools=ToolRegistry(all_tools())
    )
    try:
        workspace = engine.workspace
        outer = tmp_path / "outer"
        for folder in ("inside/inner", "tmpx", "out"):
            (outer / folder).mkdir(parents=True, exist_ok=True)
        (outer / "inside" / "secret").write_text("top secret")
        (workspace / "link").symlink_to(outer / "inside", target_is_directory=True)
        (workspace / "src").mkdir()
        assert engine.permissions is not None
        await engine.permissions.add_rule(
            PermissionRule("run_command", "*", Verdict.ALLOW, Scope.GLOBAL, Match.GLOB)
        )
        created = await engine.sessions.create_root(
            workspace, name="p", permission_mode=mode, first_message="go"
        )
        session = await engine.session(created.id)
        return await engine.permissions.check(
            session,
            mode,
            workspace,
            "run_command",
            json.dumps({"command": line}),
            tools=ToolRegistry(all_tools()),
        )
    finally:
        await engine.close()


@pytest.mark.parametrize(
    ("line", "leads_to"),
    [
        pytest.param("cd link && echo x > f", "inside", id="cd-through-a-link"),
        pytest.param("cd link/../tmpx && echo x > f", "tmpx", id="logical-falls-back"),
        pytest.param("cd -P link && cd .. && echo x > out/f", "out", id="cd-p-then-up"),
        pytest.param("cd link && cd ../tmpx", "tmpx", id="up-from-a-link"),
        pytest.param("cat < link/secret", "inside", id="read-through-a-link"),
        pytest.param("echo $(< link/inner/../secret)", "inside", id="read-in-a-substitution"),
    ],
)
async def test_a_line_reaching_out_through_a_link_asks(
    var_tmp: Path, line: str, leads_to: str
) -> None:
    check = await checked(var_tmp, line, PermissionMode.ASK)
    assert check.decision.verdict is Verdict.ASK, check.decision.reason
    outside = str((var_tmp / "outer" / leads_to).resolve())
    assert any(outside in part for part in check.decision.uncovered), check.decision.uncovered


@pytest.mark.parametrize(
    "line", ["cd src && echo x > f", "cd src && cd .. && echo x > f", "cat < src/../f", "cd ."]
)
async def test_a_line_staying_inside_is_allowed_in_auto(tmp_path: Path, line: str) -> None:
    check = await checked(tmp_path, line)
    assert check.decision.verdict is Verdict.ALLOW, check.decision.reason


async def test_a_read_outside_is_in_the_approval_s_targets(tmp_path: Path) -> None:
    check = await checked(tmp_path, "cat < link/secret", PermissionMode.ASK)
    secret = str((tmp_path / "outer" / "inside" / "secret").resolve())
    assert check.detail["targets"] == [secret]
    assert check.decision.uncovered == (f"reads {secret}",)


async def test_cdpath_given_to_fxdesk_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask = PermissionMode.ASK
    assert (await checked(tmp_path / "a", "cd tmpx", ask)).decision.verdict is Verdict.ALLOW
    monkeypatch.setenv("CDPATH", str(tmp_path / "b" / "outer"))
    check = await checked(tmp_path / "b", "cd tmpx", ask)
    assert check.decision.verdict is Verdict.ASK
    assert check.detail["outside"] is True
