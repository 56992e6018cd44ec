"""The display going away (issue 16 item 6): when the X server dies or the person logs out,
fxdesk quits in order, as on SIGTERM: every subsystem stopped, exit code 0, no crash log, so
no crash banner at the next start. It used to end in "Event loop stopped before Future
completed" and a crash report.

A real X server (Xvfb, in scripts/_setup.sh's test packages) runs the real window; the test
kills the server under it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fxdesk.logs import CrashLog
from fxdesk.paths import DataPaths
from tests.helpers import child_env, fxdesk_command

pytestmark = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")


XLIB_EXIT = "X connection to"  # Xlib's default I/O error message, just before its exit(1)


def start_xvfb() -> tuple[subprocess.Popen[bytes], str]:
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-nolisten", "tcp", "-screen", "0", "1280x800x24"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(write)
    with os.fdopen(read) as numbers:
        number = numbers.readline().strip()
    assert number, "Xvfb did not say which display it took"
    return server, f":{number}"


def wait_for(condition: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_losing_the_display_quits_in_order_and_leaves_no_crash_report(tmp_path: Path) -> None:
    paths = DataPaths(tmp_path / "data", "test")
    server, display = start_xvfb()
    env = child_env(DISPLAY=display, QT_QPA_PLATFORM="xcb")
    window = subprocess.Popen(
        fxdesk_command("--data-dir", str(paths.root)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        log_text = lambda: paths.log_file.read_text() if paths.log_file.exists() else ""  # noqa: E731
        wait_for(lambda: "Ready" in log_text(), 120, "the window to be ready")
        server.send_signal(signal.SIGTERM)  # the X server ends under the window
        server.wait(30)
        _out, err = window.communicate(timeout=120)
    finally:
        for process in (window, server):
            if process.poll() is None:
                process.kill()
                process.wait(30)
    log = log_text()
    if window.returncode == 1 and XLIB_EXIT in err and "the display went away" not in log:
        # Known, not fixed (docs/reliability.md, "Left"): Qt reaches the server through an
        # Xlib display, and when Xlib notices the dead connection before Qt's own reader does,
        # Xlib's I/O error handling ends the process with exit(1) before fxdesk can quit in
        # order (about 1 run in 10 here). An exit handler that returns instead lets Xlib go on
        # with the dead display and crash (SIGSEGV), which is worse. Any other outcome fails.
        pytest.xfail("Xlib ended the process before Qt noticed the X server was gone")
    assert window.returncode == 0, f"{err}\n--- its log, the end:\n{log[-3000:]}"

    assert "the display went away" in log
    assert "shutdown: store stopped" in log and "shutdown: gui closed" in log
    assert "Event loop stopped before Future completed" not in log + err
    assert CrashLog(paths.crash_dir).previous_reports() == []  # no crash banner next time
