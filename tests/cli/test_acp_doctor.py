"""``fxdesk doctor`` on the ACP presets' programs (found or not; never started: no network)."""

from __future__ import annotations

import pytest

from fxdesk.cli import doctor


def test_missing_programs_are_a_warning_that_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    check = doctor.check_acp_agents()
    assert check.status == doctor.WARN
    assert check.summary == "found the program of no preset external agent"
    assert "Install Node.js" in check.fix and "@google/gemini-cli" in check.fix


def test_npx_without_node_does_not_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        doctor.shutil,
        "which",
        lambda name: "/bin/gemini" if name == "gemini" else ("/bin/npx" if name == "npx" else None),
    )
    check = doctor.check_acp_agents()
    assert check.status == doctor.WARN and check.summary == "found the programs of Gemini CLI"
    assert check.data["presets"]["claude-code"] is None


def test_all_found_is_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor.shutil, "which", lambda name: f"/usr/bin/{name}")
    check = doctor.check_acp_agents()
    assert check.status == doctor.OK
    assert check.summary == "found the programs of Claude Code, Codex, Gemini CLI"
