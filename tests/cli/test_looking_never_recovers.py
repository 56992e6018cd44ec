"""Commands that only look never run start-up recovery (issue 10 item 13).

``fxdesk sessions`` between a ``run --no-input`` that stopped for an approval (exit 3) and the
``fxdesk approve`` it told the person to run used to recover: the item turned interrupted, the
approval stale, and the approve failed ("no longer pending").
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_approvals import approvals, run_stopped_for_approval, status_of
from tests.cli.test_sessions import Setup


def test_listing_sessions_between_exit_3_and_approve_keeps_the_approval_pending(
    tmp_path: Path,
) -> None:
    s = Setup(tmp_path)
    run_stopped_for_approval(s)
    (pending,) = approvals(s)

    listed = s.fx("sessions", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert row["state"] == "awaiting_approval"  # looking changed nothing
    assert status_of(s, pending["id"]) == "pending"
    shown = s.show(row["id"])
    assert [q["status"] for q in shown["queue"]] == ["awaiting_approval"]

    approved = s.fx("approve", pending["id"][:12], "once")
    assert approved.returncode == 0, approved.stderr
    assert status_of(s, pending["id"]) == "allowed_once"

    s.write_script({"text": "Done."})  # a new process plays its script from the start
    resumed = s.fx("resume", row["id"], "--no-input")
    assert resumed.returncode == 0, resumed.stderr
    assert (s.workspace / "made").is_dir()
