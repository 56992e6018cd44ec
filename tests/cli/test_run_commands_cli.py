"""``fxdesk run-commands -w DIR add/edit/remove`` as the person types them: the real entry point
in subprocesses on a temporary data folder, and the command added here started by name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_fxdesk


class Saved:
    """One data folder and one workspace folder, and ``fxdesk run-commands`` run on them."""

    def __init__(self, tmp_path: Path) -> None:
        self.data = tmp_path / "data"
        self.workspace = tmp_path / "project"
        self.workspace.mkdir()

    def fx(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_fxdesk("--data-dir", str(self.data), *args)

    def rc(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.fx("run-commands", "-w", str(self.workspace), *args)

    def ok(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = self.rc(*args)
        assert done.returncode == 0, done.stderr
        return done

    def listed(self) -> list[dict[str, Any]]:
        return json.loads(self.ok("--json").stdout)  # type: ignore[no-any-return]


@pytest.fixture
def saved(tmp_path: Path) -> Saved:
    return Saved(tmp_path)


def test_add_edit_and_remove_then_start_what_was_added(saved: Saved) -> None:
    (saved.workspace / "web").mkdir()
    # the first add makes the folder a workspace, as `sandbox set` does
    added = saved.ok("add", "dev server", "--url", "-C", "web/", "--", "npm run dev")
    assert f"added 'dev server' in {saved.workspace}" in added.stderr
    assert added.stdout == "dev server: npm run dev (in web)  [url]\n"
    # -w after the action reads as well; several words after -- are quoted back into one line
    done = saved.fx(
        "run-commands", "add", "-w", str(saved.workspace), "hello", "--", "sh", "-c", "echo hi $0"
    )
    assert done.returncode == 0, done.stderr
    assert [c["name"] for c in saved.listed()] == ["dev server", "hello"]
    assert saved.listed()[1]["command"] == "sh -c 'echo hi $0'"

    changed = saved.ok("edit", "DEV SERVER", "--durable", "--no-url", "--name", "web")
    assert "changed 'dev server'" in changed.stderr
    assert saved.listed()[0] == {
        "name": "web",
        "command": "npm run dev",
        "folder": "web",
        "expect_url": False,
        "durable": True,
    }
    saved.ok("edit", "hello", "-C", "web", "--", "echo hello from $PWD")
    saved.ok("edit", "web", "-C", ".")  # the workspace itself
    assert [(c["name"], c["folder"]) for c in saved.listed()] == [("web", ""), ("hello", "web")]

    started = saved.fx("start", "-w", str(saved.workspace), "--saved", "hello")
    assert started.returncode == 0, started.stderr
    assert started.stdout == f"hello from {(saved.workspace / 'web').resolve()}\n"

    removed = saved.ok("remove", "Web")
    assert "removed 'web'" in removed.stderr
    assert removed.stdout == "hello: echo hello from $PWD (in web)\n"
    saved.ok("remove", "hello")
    assert saved.ok().stdout.startswith(f"no run commands saved for {saved.workspace}; add one")


def test_what_cannot_be_saved_is_refused_with_the_domains_words_and_nothing_changes(
    saved: Saved, tmp_path: Path
) -> None:
    saved.ok("add", "tests", "--", "pytest")
    before = saved.listed()
    for args, says in (
        (("add", "Tests", "--", "pytest -x"), "nothing saved: two run commands are named 'Tests'"),
        (("add", "lint"), "nothing saved: 'lint' has no command to run"),
        (("add", "lint", "--", "  "), "nothing saved: 'lint' has no command to run"),
        (("add", " ", "--", "make"), "nothing saved: a run command needs a name"),
        (("add", "up", "-C", "../other", "--", "make"), "('../other') leads out of the workspace"),
        (("add", "up", "-C", str(tmp_path), "--", "make"), "must be inside the workspace"),
        (("edit", "tests", "-C", "/etc"), "the folder of 'tests' must be inside the workspace"),
        (("edit", "lint", "--url"), "no run command named 'lint' here ('tests')"),
        (("remove", "lint"), "no run command named 'lint' here ('tests')"),
        (("edit", "tests"), "nothing to change: give --name"),
        (("add", "lint", "ruff", "check"), "put the command after --: … -- ruff check"),
    ):
        done = saved.rc(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    duplicate = saved.rc("add", "TESTS", "--", "pytest")
    assert "(change that one with `fxdesk run-commands -w" in duplicate.stderr
    assert saved.listed() == before  # nothing was saved by any of them

    nowhere = saved.fx("run-commands", "add", "x", "--", "make")
    assert nowhere.returncode == 2 and "say which workspace: run-commands -w DIR" in nowhere.stderr
    other = tmp_path / "other"
    other.mkdir()
    unknown = saved.fx("run-commands", "-w", str(other), "remove", "x")
    assert unknown.returncode == 2 and "is not a workspace of fxdesk yet" in unknown.stderr
    missing = saved.fx("run-commands", "-w", str(tmp_path / "missing"), "add", "x", "--", "make")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
