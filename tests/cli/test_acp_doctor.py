"""``fxdesk doctor`` on the ACP presets' programs (found or not; never started: no network).

The programs are real executable files in a folder that is the whole ``PATH``."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.cli import doctor


def path_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *programs: str) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in programs:
        program = folder / name
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))


def test_missing_programs_are_a_warning_that_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path_with(tmp_path, monkeypatch)
    check = doctor.check_acp_agents()
    assert check.status == doctor.WARN
    assert check.summary == "found the program of no preset external agent"
    assert "Install Node.js" in check.fix and "@google/gemini-cli" in check.fix


def test_npx_without_node_does_not_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path_with(tmp_path, monkeypatch, "gemini", "npx")
    check = doctor.check_acp_agents()
    assert check.status == doctor.WARN and check.summary == "found the programs of Gemini CLI"
    assert check.data["presets"]["claude-code"] is None


def test_all_found_is_ok(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path_with(tmp_path, monkeypatch, "gemini", "npx", "node")
    check = doctor.check_acp_agents()
    assert check.status == doctor.OK
    assert check.summary == "found the programs of Claude Code, Codex, Gemini CLI"
