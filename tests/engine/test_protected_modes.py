"""Protected and hidden paths through the whole engine, in every permission mode: the
permission check (``engine/path_guard.py``) and the tools together, real store, real files, a
real git worktree, a scripted model.

- A hidden path is refused without asking, in ask, auto and yolo mode alike, by every tool, and
  its content shows up nowhere (history, the model's requests, the engine's events).
- A write to a protected path asks in ask and auto mode ("a protected path (.git): ..."), is
  made once the person allows it and not otherwise; yolo mode, which never asks, refuses it.
  An allow rule naming the protected path counts; a broad one does not.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine import permissions as engine_permissions
from fxdesk.engine.owner import Result
from fxdesk.providers.scripted import Reply
from fxdesk.store import history
from fxdesk.tools import files, search, textfiles
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.protected import PathPolicy
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine, call, say
from tests.guarded import HIDDEN_FILES, Home, Repo, make_home, make_worktree
from tests.leaks import exposed

MODES = [PermissionMode.ASK, PermissionMode.AUTO, PermissionMode.YOLO]


@dataclass
class Run:
    """What one scripted turn did."""

    asked: list[Approval]
    results: list[str]
    texts: dict[str, str]


async def run_turn(
    root: Path,
    workspace: Path,
    data_dir: Path | None,
    step: Reply,
    mode: PermissionMode,
    answer: Choice = Choice.DENY,
    rules: tuple[PermissionRule, ...] = (),
) -> Run:
    """One turn making ``step``'s call; every approval raised is answered with ``answer``."""
    engine = await Engine.create(
        root, [step, say("done")], permissions=True, tools=ToolRegistry(all_tools())
    )
    service = engine.permissions
    assert service is not None
    service.data_dir = data_dir  # as App passes its paths.root
    asked: list[Approval] = []
    try:
        for rule in rules:
            await service.add_rule(rule)
        created = await engine.sessions.create_root(
            workspace, name="guard", permission_mode=mode, first_message="go"
        )
        engine.owner.start(created.id)
        done = asyncio.ensure_future(engine.owner.join(created.id))
        deadline = asyncio.get_running_loop().time() + 30
        while not done.done():
            for approval in await service.pending(created.id):
                asked.append(approval)
                await service.resolve(approval.id, answer)
            await asyncio.wait({done}, timeout=0.01)
            assert asyncio.get_running_loop().time() < deadline, "the turn did not end"
        assert done.result() == Result.IDLE
        rows = await engine.store.read(lambda: history.page_history(created.id, 0, 10_000))
        texts = {
            "history": "\n".join(f"{r.content}\n{r.full_text}\n{json.dumps(r.data)}" for r in rows),
            "model requests": "\n".join(repr(r) for r in engine.provider.requests),
            "events": "\n".join(repr(e) for e in engine.events),
        }
        results = [r.content for r in rows if r.kind is EntryKind.TOOL_RESULT]
    finally:
        await engine.close()
    return Run(asked, results, texts)


# --- hidden ----------------------------------------------------------------------------------


def hidden_step(tool: str, raw: str) -> Reply:
    return {
        "read_file": call("read_file", path=raw),
        "list_dir": call("list_dir", path=raw),
        "glob": call("glob", pattern="*", path=raw),
        "grep": call("grep", pattern="secret", path=raw),
        "edit_file": call("edit_file", path=raw, old_text="secret", new_text="gone"),
        "write_file": call("write_file", path=raw, content="overwritten\n"),
        "run_command": call("run_command", command=f"echo attacker >> {raw}"),
    }[tool]


WAYS = ["absolute", "tilde", "dot-dot", "link to the file", "chain of links"]
HIDDEN_TOOLS = ["read_file", "list_dir", "glob", "grep", "edit_file", "write_file", "run_command"]
HIDDEN_CASES = [
    (tool, kind, mode, WAYS[(i + j) % len(WAYS)])  # each pair of tool and kind by another way
    for i, tool in enumerate(HIDDEN_TOOLS)
    for j, kind in enumerate(HIDDEN_FILES)
    for mode in MODES
]


@pytest.mark.parametrize(("tool", "kind", "mode", "way"), HIDDEN_CASES)
async def test_a_hidden_path_is_refused_without_asking_in_every_mode(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tool: str,
    kind: str,
    mode: PermissionMode,
    way: str,
) -> None:
    home = make_home(tmp_path, monkeypatch)
    target = home.hidden[kind]
    raw = home.ways_to(target)[way]
    before = home.snapshot()
    # The engine's own data folder is the hidden one (its database lives there).
    run = await run_turn(home.data_dir, home.workspace, home.data_dir, hidden_step(tool, raw), mode)
    assert run.asked == []
    (result,) = run.results
    assert result.startswith("Not allowed: "), result
    assert "is hidden from the agent" in result
    assert home.snapshot() == before  # nothing written, nothing created
    assert_hidden_content_nowhere(run, home)


def assert_hidden_content_nowhere(run: Run, home: Home) -> None:
    for kind in home.hidden.values():
        key = kind.content.split(": ")[1].strip()
        for where, text in run.texts.items():
            assert exposed(text, key) == [], (kind.name, where)


@pytest.mark.parametrize("mode", MODES)
async def test_a_scan_of_the_home_folder_runs_but_shows_nothing_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: PermissionMode
) -> None:
    """Outside the workspace, so ask and auto ask (and are allowed here); nothing hidden is in
    what the scans return."""
    home = make_home(tmp_path, monkeypatch)
    for step in (
        call("grep", pattern="secret", path="~"),
        call("glob", pattern="**/*", path="~"),
        call("list_dir", path="~/.config"),
    ):
        run = await run_turn(
            tmp_path / f"data-{step.tool_calls[0].name}",
            home.workspace,
            home.data_dir,
            step,
            mode,
            answer=Choice.ONCE,
        )
        assert len(run.asked) == (0 if mode is PermissionMode.YOLO else 1)
        (result,) = run.results
        assert not result.startswith("Not allowed")
        assert_hidden_content_nowhere(run, home)
        assert ".ssh" not in result and "fxdesk.log" not in result


# --- protected -------------------------------------------------------------------------------


def protected_targets(repo: Repo) -> dict[str, tuple[str, Path, str]]:
    """name -> (path as the model writes it, the file it changes, the protected label)."""
    ws = repo.workspace
    (ws / "cfg").symlink_to("vendor/lib/.git/config")
    return {
        "nested .git/config": ("vendor/lib/.git/config", ws / "vendor/lib/.git/config", ".git"),
        "a new hook": (
            "vendor/lib/.git/hooks/pre-commit",
            ws / "vendor/lib/.git/hooks/pre-commit",
            ".git",
        ),
        "link to .git/config": ("cfg", ws / "vendor/lib/.git/config", ".git"),
        "the worktree's .git file": (".git", ws / ".git", ".git"),
        "the common git config": ("../main/.git/config", repo.main / ".git/config", ".git"),
        ".fxdesk": (".fxdesk/settings.json", ws / ".fxdesk/settings.json", ".fxdesk"),
    }


def writer_step(tool: str, raw: str, target: Path) -> Reply:
    if tool == "edit_file":
        text = target.read_text()
        return call("edit_file", path=raw, old_text=text, new_text=text + "# changed\n")
    if tool == "write_file":
        return call("write_file", path=raw, content="# changed\n", append=True)
    return call("run_command", command=f"printf '# changed\\n' >> {raw}")


PROTECTED_CASES = [
    (tool, name)
    for tool in ("write_file", "edit_file", "run_command")
    for name in (
        "nested .git/config",
        "a new hook",
        "link to .git/config",
        "the worktree's .git file",
        "the common git config",
        ".fxdesk",
    )
    if not (tool == "edit_file" and name == "a new hook")  # edit_file needs an existing file
]


def state(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize(("tool", "name"), PROTECTED_CASES)
@pytest.mark.parametrize("answer", [Choice.ONCE, Choice.DENY])
@pytest.mark.parametrize("mode", [PermissionMode.ASK, PermissionMode.AUTO])
async def test_a_protected_write_asks_and_happens_only_when_allowed(
    tmp_path: Path, tool: str, name: str, answer: Choice, mode: PermissionMode
) -> None:
    repo = make_worktree(tmp_path)
    raw, target, label = protected_targets(repo)[name]
    before = state(target)
    run = await run_turn(
        tmp_path / "data", repo.workspace, None, writer_step(tool, raw, target), mode, answer
    )
    (approval,) = run.asked
    assert f"a protected path ({label}): writes " in approval.detail["reason"]
    if tool != "run_command":  # the preview is the change, not the tool's refusal
        assert "will refuse" not in approval.detail.get("preview", "")
    if answer is Choice.ONCE:
        assert state(target) != before and "# changed" in target.read_text()
    else:
        assert state(target) == before
        assert run.results == ["The person denied this action."]


@pytest.mark.parametrize(("tool", "name"), PROTECTED_CASES)
async def test_yolo_refuses_a_protected_write_without_asking(
    tmp_path: Path, tool: str, name: str
) -> None:
    repo = make_worktree(tmp_path)
    raw, target, label = protected_targets(repo)[name]
    before = state(target)
    step = writer_step(tool, raw, target)
    run = await run_turn(tmp_path / "data", repo.workspace, None, step, PermissionMode.YOLO)
    assert run.asked == []
    (result,) = run.results
    assert result.startswith(f"Not allowed: a protected path ({label}): writes ")
    assert "read-only in yolo mode" in result
    assert state(target) == before


@pytest.mark.parametrize("mode", MODES)
async def test_protected_paths_are_read_without_asking(
    tmp_path: Path, mode: PermissionMode
) -> None:
    repo = make_worktree(tmp_path)
    step = call("read_file", path="vendor/lib/.git/config")
    run = await run_turn(tmp_path / "data", repo.workspace, None, step, mode)
    assert run.asked == []
    assert "repositoryformatversion" in run.results[0]


def rule(pattern: str) -> PermissionRule:
    return PermissionRule("write_file", pattern, Verdict.ALLOW, Scope.GLOBAL, Match.GLOB)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("pattern", "counts"),
    [
        ("vendor/lib/.git/hooks/*", True),
        ("vendor/lib/.git/hooks/pre-commit", True),
        ("vendor/lib/.git/**", True),
        ("*", False),
        ("**", False),
        ("vendor/*", False),
        ("vendor/lib/.git*", False),
    ],
)
async def test_an_allow_rule_counts_for_a_protected_path_only_when_it_names_it(
    tmp_path: Path, mode: PermissionMode, pattern: str, counts: bool
) -> None:
    repo = make_worktree(tmp_path)
    hook = repo.workspace / "vendor/lib/.git/hooks/pre-commit"
    step = call("write_file", path="vendor/lib/.git/hooks/pre-commit", content="#!/bin/sh\n")
    run = await run_turn(
        tmp_path / "data", repo.workspace, None, step, mode, Choice.DENY, (rule(pattern),)
    )
    if counts:
        assert run.asked == [] and hook.read_text() == "#!/bin/sh\n"
        return
    assert not hook.exists()
    assert len(run.asked) == (0 if mode is PermissionMode.YOLO else 1)


# --- the two layers, each alone ----------------------------------------------------------------


def without_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_permissions, "guard", lambda decision, *_: (decision, False))


def without_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    def nothing(ctx: Any) -> PathPolicy:
        return PathPolicy(Path(os.path.realpath(ctx.workspace)), (), ())

    for module in (textfiles, files, search):
        monkeypatch.setattr(module, "policy", nothing)


@pytest.mark.parametrize(
    ("check", "tools", "refused_by"),
    [
        (True, True, "Not allowed: "),
        (False, True, "which fxdesk hides from the agent"),
        (True, False, "Not allowed: "),
        (False, False, None),
    ],
    ids=["both", "the tools alone", "the check alone", "neither (the planted hole)"],
)
@pytest.mark.parametrize("tool", ["read_file", "grep", "write_file"])
async def test_each_layer_alone_keeps_a_hidden_file_and_without_both_it_leaks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    check: bool,
    tools: bool,
    refused_by: str | None,
    tool: str,
) -> None:
    home = make_home(tmp_path, monkeypatch)
    if not check:
        without_the_check(monkeypatch)
    if not tools:
        without_the_tools(monkeypatch)
    ssh = home.hidden["~/.ssh"]
    before = ssh.file.read_bytes()
    step = hidden_step(tool, "links/ssh-file")
    # yolo refuses a write outside the workspace by itself (a third layer): a write is allowed
    # by the person instead, so only the two layers under test stand in its way.
    mode, answer = (
        (PermissionMode.AUTO, Choice.ONCE)
        if tool == "write_file"
        else (PermissionMode.YOLO, Choice.DENY)
    )
    run = await run_turn(home.data_dir, home.workspace, home.data_dir, step, mode, answer)
    key = ssh.content.split(": ")[1].strip()
    leaked = exposed(run.texts["model requests"], key) or ssh.file.read_bytes() != before
    if refused_by is None:
        assert leaked  # the tests above can fail: this is what they would see
    else:
        assert refused_by in run.results[0]
        assert not leaked
