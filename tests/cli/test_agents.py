"""``fxdesk agents list|show`` as a subprocess on real definition files."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers import child_env, fxdesk_command, run_fxdesk

RESEARCHER = """---
description: Researches a question.
profile: research
model: gpt-5-mini
effort: high
tools: [read_file, grep]
permission_mode: auto
max_iterations: 12
timeout: 5m
signals: steer
---
You research.
"""
BROKEN = "---\ndescription: d\ntools: [read_file]\npermission_mode: sometimes\n---\n"
REVIEWER = """---
name: reviewer
description: Reviews code.
tools: Read, Grep, WebFetch
model: sonnet
---
You review.
"""


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    workspace = tmp_path / "ws"
    (workspace / ".fxdesk" / "agents").mkdir(parents=True)
    (workspace / ".claude" / "agents").mkdir(parents=True)
    (workspace / ".fxdesk" / "agents" / "researcher.md").write_text(RESEARCHER)
    (workspace / ".fxdesk" / "agents" / "x.md").write_text(BROKEN)
    (workspace / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    return {"ws": workspace, "data": tmp_path / "data", "home": tmp_path / "home"}


def fxdesk(world: dict[str, Path], *args: str):  # type: ignore[no-untyped-def]
    return run_fxdesk(
        "--data-dir",
        str(world["data"]),
        *args,
        HOME=str(world["home"]),
        CLAUDE_CONFIG_DIR=str(world["home"] / ".claude"),
    )


def test_list_shows_every_agent_with_its_source_and_broken_ones_with_their_error(
    world: dict[str, Path],
) -> None:
    done = fxdesk(world, "agents", "list", "-w", str(world["ws"]))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["explorer", "built-in"],
        ["general", "built-in"],
        ["researcher", "workspace"],
        ["reviewer", "claude"],
        ["x", "workspace"],
    ]
    assert lines[3].endswith("Reviews code.  (2 warnings: fxdesk agents show reviewer)")
    assert lines[4].split(None, 2)[2] == (
        "BROKEN: .fxdesk/agents/x.md line 4: permission_mode: 'sometimes' is not one of "
        "ask, auto, yolo"
    )


def test_list_as_json(world: dict[str, Path]) -> None:
    done = fxdesk(world, "agents", "list", "-w", str(world["ws"]), "--json")
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    assert rows["x"]["broken"] is True and "line 4: permission_mode" in rows["x"]["error"]
    assert rows["researcher"]["source"] == "workspace"
    researcher = world["ws"] / ".fxdesk" / "agents" / "researcher.md"
    assert rows["researcher"]["hash"] == hashlib.sha256(researcher.read_bytes()).hexdigest()
    assert rows["researcher"]["path"] == str(researcher)
    assert rows["general"] | {"description": ""} == {
        "id": "general",
        "source": "built-in",
        "path": None,
        "broken": False,
        "error": None,
        "overrides": [],
        "description": "",
        "hash": rows["general"]["hash"],
        "warnings": [],
    }


def test_without_w_the_current_folder_is_the_workspace(world: dict[str, Path]) -> None:
    done = subprocess.run(
        fxdesk_command("--data-dir", str(world["data"]), "agents"),
        cwd=world["ws"],
        env=child_env(HOME=str(world["home"]), CLAUDE_CONFIG_DIR=str(world["home"])),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ids = [line.split()[0] for line in done.stdout.splitlines()]
    assert ids == ["explorer", "general", "researcher", "reviewer", "x"]


def test_show_prints_every_field_the_prompt_the_hash_and_the_file(world: dict[str, Path]) -> None:
    done = fxdesk(world, "agents", "show", "researcher", "-w", str(world["ws"]))
    assert done.returncode == 0, done.stderr
    path = world["ws"] / ".fxdesk" / "agents" / "researcher.md"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for expected in [
        "id:              researcher",
        "source:          workspace",
        f"file:            {path}",
        f"hash:            sha256:{digest}",
        "profile:         research",
        "model:           gpt-5-mini",
        "effort:          high",
        "tools:           read_file, grep",
        "permission mode: auto (never more than the caller's)",
        "max iterations:  12",
        "timeout:         300 s",
        "signals:         steer lane",
        "You research.",
    ]:
        assert expected in done.stdout.splitlines(), expected


def test_show_json_of_a_claude_agent_has_the_mapping_and_its_warnings(
    world: dict[str, Path],
) -> None:
    done = fxdesk(world, "agents", "show", "reviewer", "-w", str(world["ws"]), "--json")
    assert done.returncode == 0, done.stderr
    definition = json.loads(done.stdout)["definition"]
    assert definition["format"] == "claude"
    assert definition["tools"] == ["read_file", "grep"]
    assert definition["model"] is None and definition["prompt"] == "You review."
    assert len(definition["warnings"]) == 2


def test_show_of_a_broken_agent_says_why_and_fails(world: dict[str, Path]) -> None:
    done = fxdesk(world, "agents", "show", "x", "-w", str(world["ws"]))
    assert done.returncode == 1
    assert "BROKEN:          .fxdesk/agents/x.md line 4: permission_mode:" in done.stdout


def test_show_of_an_unknown_agent_or_a_missing_workspace(world: dict[str, Path]) -> None:
    done = fxdesk(world, "agents", "show", "nope", "-w", str(world["ws"]))
    assert done.returncode == 1
    assert "fxdesk: no agent 'nope' (known: explorer, general, researcher, reviewer, x)" in (
        done.stderr
    )
    done = fxdesk(world, "agents", "list", "-w", str(world["ws"] / "missing"))
    assert done.returncode == 2
    assert "cannot use that workspace" in done.stderr and "does not exist" in done.stderr
