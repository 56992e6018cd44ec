"""The soak (tests/reliability/soak.py), short in CI and an hour on demand.

What must hold however long it runs: nothing stuck or failed, no command run twice, no child
process or background task left, the database intact, at least one restart survived, and no
error in the log. The slopes are figures for docs/reliability.md, not asserted here (a short
run's slope is noise); ``FXDESK_SOAK_MINUTES=60 ./scripts/torture -k soak`` measures them, with
``FXDESK_SOAK_REPORT=FILE`` keeping the whole report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _minutes() -> float:
    given = os.environ.get("FXDESK_SOAK_MINUTES")
    if given:
        return float(given)
    return 10.0 if os.environ.get("FXDESK_TORTURE") else 0.6


@pytest.mark.timeout(0)
def test_a_soak_with_restarts_loses_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    minutes = _minutes()
    report_file = Path(os.environ.get("FXDESK_SOAK_REPORT") or tmp_path / "soak.json")
    restart_every = 300 if minutes >= 20 else max(10.0, minutes * 60 / 3)
    sample = 10 if minutes >= 10 else 2
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.reliability.soak",
            f"--minutes={minutes}",
            f"--restart-every={restart_every}",
            f"--sample={sample}",
            f"--data={tmp_path / 'soak'}",
            f"--out={report_file}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=minutes * 60 + 600,
        check=False,
    )
    assert report_file.exists(), done.stdout[-2000:] + done.stderr[-4000:]
    report = json.loads(report_file.read_text(encoding="utf-8"))
    assert report["problems"] == [], report["problems"]
    assert done.returncode == 0, done.stderr[-4000:]
    assert report["integrity"] == "ok"
    assert report["restarts"] >= 1
    assert report["after_stop"]["children"] == 0
    # Every kind of work happened: commands, files, both kinds of sub-agent, background tasks.
    actions = report["model_actions"]
    for kind in ("command", "file write", "foreground sub-agent", "background task"):
        assert actions.get(kind, 0) > 0, actions
    assert actions["tagged command runs"] > 0
    errors = {kind: n for kind, n in report["log"].items() if not kind.startswith("WARNING")}
    assert errors == {}, errors


def test_the_soak_checks_catch_a_repeated_command_and_a_logged_error(tmp_path: Path) -> None:
    from tests.reliability.soak import log_kinds, ran_twice

    assert ran_twice(["a-1", "b-2", "child-c-3"]) == []
    assert ran_twice(["a-1", "b-2", "a-1"]) == ["a-1"]
    log = tmp_path / "fxdesk.log"
    log.write_text(
        "2026-12-02 12:40:48,448 INFO    MainThread fxdesk.app: startup: store ...\n"
        "2026-12-02 12:40:49,001 ERROR   fxdesk-db-writer fxdesk.store.db: commit 12 failed\n"
        "2026-12-02 12:40:50,001 ERROR   fxdesk-db-writer fxdesk.store.db: commit 13 failed\n"
        "2026-12-02 12:40:51,001 WARNING MainThread fxdesk.engine.turn: slow step\n",
        encoding="utf-8",
    )
    assert log_kinds(log) == {
        "ERROR fxdesk.store.db commit N failed": 2,
        "WARNING fxdesk.engine.turn slow step": 1,
    }
