"""The real app in a subprocess: orderly shutdown on signals, crash logs offered next time."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers import child_env, fxdesk_command, run_fxdesk, wait_for


def _start(data: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        fxdesk_command("--data-dir", str(data)),
        env=child_env(QT_QPA_PLATFORM="offscreen"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _log(data: Path) -> str:
    path = data / "logs" / "fxdesk.log"
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_quits_cleanly_after_an_orderly_shutdown(tmp_path: Path, signum: int) -> None:
    data = tmp_path / "data"
    app = _start(data)
    try:
        wait_for(lambda: "fxdesk.messages: Ready" in _log(data), 60, what="the window to be ready")
        app.send_signal(signum)
        app.wait(timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
        app.communicate()
    assert app.returncode == 0
    log = _log(data)
    order = [
        f"received {signal.Signals(signum).name}; quitting",
        "shutdown: gui ...",
        "shutdown: engine stopped",
        "shutdown: store stopped",
        "shutdown: gui closed",
        "fxdesk exited with code 0",
    ]
    positions = [log.index(line) for line in order]
    assert positions == sorted(positions), log
    assert list((data / "crash").glob("*.log")) == []  # a clean exit leaves no crash log


def test_a_crash_leaves_a_log_offered_at_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    app = _start(data)
    try:
        wait_for(lambda: "fxdesk.messages: Ready" in _log(data), 60, what="the window to be ready")
        app.send_signal(signal.SIGSEGV)
        app.wait(timeout=60)
    finally:
        if app.poll() is None:
            app.kill()
        app.communicate()
    assert app.returncode != 0
    reports = list((data / "crash").glob("*.log"))
    assert len(reports) == 1 and "Segmentation fault" in reports[0].read_text()
    done = run_fxdesk("--data-dir", str(data), "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["crash_logs"]["status"] == "warn"
    assert checks["crash_logs"]["data"]["reports"] == [str(reports[0])]
