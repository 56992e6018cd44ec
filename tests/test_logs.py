"""Crash logs and the unexpected-exception hooks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from fxdesk import messages
from fxdesk.logs import CrashLog, install_exception_hooks, setup_logging
from tests.helpers import child_env

CRASHER = """
import sys
from pathlib import Path
from fxdesk.logs import CrashLog
log = CrashLog(Path(sys.argv[1]))
log.arm()
print("armed", flush=True)
import faulthandler
faulthandler._sigsegv()
"""


def test_a_clean_run_leaves_no_crash_log(tmp_path: Path) -> None:
    crash = CrashLog(tmp_path)
    crash.arm()
    assert len(list(tmp_path.glob("*.log"))) == 1
    crash.disarm()
    assert list(tmp_path.iterdir()) == []
    assert crash.previous_reports() == []


def test_a_hard_crash_leaves_a_report_that_the_next_run_offers(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CRASHER, str(tmp_path)],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode < 0 or done.returncode > 128  # killed by SIGSEGV
    next_run = CrashLog(tmp_path)
    next_run.arm()
    try:
        assert len(next_run.previous) == 1
        report = next_run.previous[0]
        assert "Segmentation fault" in report.read_text()
        next_run.mark_seen(report)
        assert next_run.previous_reports() == []
        assert report.with_suffix(".seen").exists()
    finally:
        next_run.disarm()


def test_empty_logs_of_dead_runs_are_cleaned_up(tmp_path: Path) -> None:
    stale = tmp_path / "fault-20260101-000000-pid999999999.log"
    stale.touch()
    assert CrashLog(tmp_path).previous_reports() == []
    assert not stale.exists()
    live = tmp_path / f"fault-20260101-000000-pid{os.getppid()}.log"
    live.touch()  # another fxdesk still running: neither offered nor deleted
    assert CrashLog(tmp_path).previous_reports() == []
    assert live.exists()


def test_uncaught_exceptions_in_threads_reach_the_person(tmp_path: Path) -> None:
    setup_logging(tmp_path / "fxdesk.log")
    received: list[messages.Message] = []
    messages.hub.attach(received.append)
    undo = install_exception_hooks()
    try:
        thread = threading.Thread(target=lambda: 1 / 0, name="worker-x")
        thread.start()
        thread.join()
    finally:
        undo()
    assert len(received) == 1
    assert "ZeroDivisionError in worker-x" in received[0].text
    assert received[0].details is not None and "1 / 0" in received[0].details
    assert "ZeroDivisionError" in (tmp_path / "fxdesk.log").read_text()


def test_registered_secrets_never_reach_the_log(tmp_path: Path) -> None:
    import logging

    from fxdesk.logs import register_secret

    secret = "sk-live-0123456789abcdef"
    register_secret(secret)
    setup_logging(tmp_path / "fxdesk.log")
    logging.getLogger("some.sdk").warning("request failed for key %s", secret)
    try:
        raise ValueError(f"bad key {secret}")
    except ValueError:
        logging.getLogger("fxdesk.x").exception("oops")
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = (tmp_path / "fxdesk.log").read_text()
    assert secret not in text
    assert text.count("[redacted]") >= 2


def test_the_agents_environment_loses_every_variable_holding_a_key() -> None:
    from fxdesk.logs import environment_without_secrets, register_secret, register_secret_variable

    register_secret("sk-in-use-5a5a5a5a5a")
    register_secret_variable("PROFILE_NAMED_KEY")
    environ = {
        "PROFILE_NAMED_KEY": "not even read yet",
        "SOME_OTHER_NAME": "Bearer sk-in-use-5a5a5a5a5a",
        "HOME": "/home/me",
        "EMPTY": "",
    }
    assert environment_without_secrets(environ) == {"HOME": "/home/me", "EMPTY": ""}
    assert environ["PROFILE_NAMED_KEY"] == "not even read yet"  # the caller's mapping is kept


def test_the_log_rotates_once_it_is_set_up_rotating(tmp_path: Path) -> None:
    """The window appends to its log without rotating it until its first frame has painted,
    then sets logging up again, rotating: nothing written in between is lost, and a log past
    its size is rotated at the next record."""
    import logging

    import fxdesk.logs

    log_file = tmp_path / "fxdesk.log"
    log_file.write_text("x" * (fxdesk.logs._ROTATE_BYTES + 1) + "\n")
    setup_logging(log_file, rotate=False)
    logging.getLogger("fxdesk.test").info("before the frame")
    assert "before the frame" in log_file.read_text()  # appended, not rotated
    setup_logging(log_file)
    logging.getLogger("fxdesk.test").info("after the frame")
    for handler in logging.getLogger().handlers:
        handler.flush()
    assert log_file.read_text().count("after the frame") == 1
    assert "before the frame" in (tmp_path / "fxdesk.log.1").read_text()
