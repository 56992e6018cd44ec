"""`cd` followed as bash does: CDPATH, `cd -P`, and the fallback through symbolic links.

The analysis lists every place bash may land in as a path for the caller to resolve; the second
half runs the attack lines in a real bash, among real symbolic links, and checks that where bash
ended is one of those places once resolved (as the engine resolves them).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fxdesk.domain.shell import analyse

WS = "/work/proj"
HOME = "/home/u"
BASH = "/usr/bin/bash"


def places(line: str, cdpath: str | None = None) -> tuple[str, ...]:
    analysis = analyse(line, cwd=WS, home=HOME, cdpath=cdpath)
    assert analysis.understood, analysis.problems
    return analysis.directories


@pytest.mark.parametrize(
    ("line", "cdpath", "expected"),
    [
        pytest.param("cd src", None, (f"{WS}/src",), id="no-cdpath"),
        pytest.param("cd src", "", (f"{WS}/src",), id="empty-cdpath"),
        pytest.param("cd src", "/opt", ("/opt/src", f"{WS}/src"), id="cdpath-entry"),
        pytest.param("cd src", "/a:/b", ("/a/src", "/b/src", f"{WS}/src"), id="two-entries"),
        pytest.param("cd src", ":/opt", (f"{WS}/src", "/opt/src"), id="empty-entry-is-here"),
        pytest.param("cd src", "~/p", (f"{HOME}/p/src", f"{WS}/src"), id="tilde-entry"),
        pytest.param("cd src", "lib", (f"{WS}/lib/src", f"{WS}/src"), id="relative-entry"),
        pytest.param("cd a/b", "/opt", ("/opt/a/b", f"{WS}/a/b"), id="nested-operand"),
        pytest.param("pushd src", "/opt", ("/opt/src", f"{WS}/src"), id="pushd"),
        pytest.param("cd ''", "/opt", ("/opt", WS), id="empty-operand"),
        pytest.param("cd ./src", "/opt", (f"{WS}/src",), id="dot-slash-skips-cdpath"),
        pytest.param("cd ../x", "/opt", ("/work/x",), id="dot-dot-skips-cdpath"),
        pytest.param("cd /etc", "/opt", ("/etc",), id="absolute-skips-cdpath"),
        pytest.param("cd ~/x", "/opt", (f"{HOME}/x",), id="tilde-skips-cdpath"),
        pytest.param("cd ..", "/opt", ("/work",), id="dot-dot-alone"),
    ],
)
def test_cdpath_entries_are_places_cd_may_land_in(
    line: str, cdpath: str | None, expected: tuple[str, ...]
) -> None:
    assert places(line, cdpath) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("cd -P a", (f"{WS}/a",), id="physical"),
        pytest.param("cd -P a && cd ..", (f"{WS}/a", f"{WS}/a/.."), id="up-from-physical"),
        pytest.param("cd -P a/..", (f"{WS}/a/..",), id="physical-dot-dot"),
        pytest.param(
            "cd -P a && cd b && cd ../..", (f"{WS}/a", f"{WS}/a/b", f"{WS}/a/.."), id="anchored"
        ),
        pytest.param("cd -LP a; cd -PL ..", (f"{WS}/a", f"{WS}/a/..", "/work"), id="last-wins"),
        pytest.param("cd a/../b", (f"{WS}/b", f"{WS}/a/../b"), id="dot-dot-after-a-name"),
        pytest.param("cd a && cd ../b", (f"{WS}/a", f"{WS}/b", f"{WS}/a/../b"), id="sibling"),
        pytest.param("cd a && cd ..", (f"{WS}/a", WS), id="back-up-where-it-stood"),
        pytest.param("cd a/b && cd ../..", (f"{WS}/a/b", WS), id="two-back"),
        pytest.param("cd ../x", ("/work/x",), id="above-the-start"),
        pytest.param("cd ../../w/proj/x", ("/w/proj/x",), id="start-is-physical"),
        pytest.param(
            "pushd -- a && cd -P b && popd && cd ..",
            (f"{WS}/a", f"{WS}/a/b", WS, "/work"),
            id="pushd-popd",
        ),
    ],
)
def test_where_only_the_file_system_knows_both_places_are_listed(
    line: str, expected: tuple[str, ...]
) -> None:
    assert places(line) == expected


# --- against a real bash, among real symbolic links ---------------------------------------------

ATTACKS = (
    ("cd link/../tmpx", None),  # no tmpx in the workspace: bash resolves link, then ..
    ("cd ./link/../tmpx", None),
    ("cd -P link && cd ..", None),
    ("cd -P link; cd ..; cd outside", None),
    ("cd link && cd ../tmpx", None),
    ("cd link/inner/../../tmpx", None),
    ("pushd link >/dev/null && cd ../tmpx", None),
    ("cd -P link/..", None),
    ("cd -P -e link && cd ../outside", None),
    ("cd tmpx", "{outer}"),  # CDPATH leads out
    ("cd outside", ":{outer}"),
    ("cd ''", "{outer}"),
    ("cd link; cd ..", None),
    ("cd src && cd ..", None),
)


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    outer = tmp_path / "outer"
    (outer / "tmpx").mkdir(parents=True)
    (outer / "inside" / "inner").mkdir(parents=True)
    (outer / "outside").mkdir()
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "link").symlink_to(outer / "inside", target_is_directory=True)
    return {"outer": outer.resolve(), "ws": workspace.resolve()}


@pytest.mark.skipif(not os.access(BASH, os.X_OK), reason=f"needs bash at {BASH}")
@pytest.mark.parametrize(("line", "cdpath"), ATTACKS)
def test_bash_ends_where_the_analysis_said_it_may(
    line: str, cdpath: str | None, world: dict[str, Path]
) -> None:
    workspace, outer = world["ws"], world["outer"]
    cdpath = cdpath.format(outer=outer) if cdpath is not None else None
    analysis = analyse(line, cwd=str(workspace), home=str(outer), cdpath=cdpath)
    assert analysis.understood, analysis.problems
    env = {"PATH": os.defpath, "HOME": str(outer), **({"CDPATH": cdpath} if cdpath else {})}
    done = subprocess.run(
        [BASH, "-c", f"{line}\npwd -P"],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    ended = done.stdout.strip().splitlines()[-1]
    resolved = {os.path.realpath(place) for place in analysis.directories} | {str(workspace)}
    assert ended in resolved, f"bash ended in {ended}; the analysis listed {resolved}"
