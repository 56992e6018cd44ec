"""``fxdesk mcp trust`` and ``fxdesk mcp list --json``: the command line over the same service,
with the real tiny server over stdio."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxdesk.cli.main import main
from tests.mcp.harness import stdio_config, tiny_processes, write_config


def test_trust_then_list_shows_the_running_server_and_its_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    workspace = tmp_path / "project"
    write_config(workspace / ".mcp.json", {"tiny": stdio_config()})

    assert main([*data, "mcp", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # not a workspace yet: nothing to list

    assert main([*data, "mcp", "trust", str(workspace)]) == 0
    out = capsys.readouterr()
    assert "trusted the MCP configuration" in out.err
    assert "tiny (" in out.out and ": running" in out.out
    assert "mcp__tiny__echo: Say the text back." in out.out

    # Trusting made the folder a workspace: a new process starts its server and lists it.
    assert main([*data, "mcp", "list", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["name"] == "tiny" and listed["state"] == "running"
    assert listed["tools"] == ["mcp__tiny__echo", "mcp__tiny__add", "mcp__tiny__hang"]
    assert tiny_processes() == []  # every command stopped its servers on the way out


def test_trust_refuses_a_folder_without_a_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert (
        main(["--data-dir", str(tmp_path / "data"), "mcp", "trust", str(tmp_path / "empty")]) == 2
    )
    assert "has no MCP configuration" in capsys.readouterr().err
