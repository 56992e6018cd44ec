"""The crash harness (issue 16 item 1): the App run as the window runs it, SIGKILLed at random
moments (uniform over the run from the process's start, or inside a random commit), restarted,
and checked (``invariants.after_recovery``) after every recovery.

CI runs a few dozen kill points (about a minute); ``FXDESK_TORTURE=1`` (``scripts/torture``)
runs hundreds. ``FXDESK_CRASH_SEED`` replays a run; ``FXDESK_CRASH_REPORT=FILE`` writes the
figures as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest

from tests.reliability import harness

TORTURE = os.environ.get("FXDESK_TORTURE") == "1"
TRIALS = int(os.environ.get("FXDESK_CRASH_TRIALS", "150" if TORTURE else "14"))
SEED = int(os.environ.get("FXDESK_CRASH_SEED", "1600"))


@pytest.mark.slow
@pytest.mark.timeout(3600 if TORTURE else 600)
def test_sigkill_at_random_moments_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    began = time.monotonic()
    ref = harness.measure(tmp_path)
    figures = harness.Figures()
    for index in range(TRIALS):
        harness.trial(tmp_path, f"t{index}", SEED + index, ref, figures)
    report = {
        **dataclasses.asdict(figures),
        "trials": TRIALS,
        "seed": SEED,
        "reference": dataclasses.asdict(ref),
        "seconds": round(time.monotonic() - began),
    }
    if os.environ.get("FXDESK_CRASH_REPORT"):
        Path(os.environ["FXDESK_CRASH_REPORT"]).write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "violations"}))
    assert figures.violations == [], f"seed {SEED}: {figures.violations}"
    assert figures.kill_points >= TRIALS  # every trial killed at least once
