"""Helpers shared by the tests: subprocess plumbing and waiting on conditions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# A Python for commands that run in the sandbox (a test's server): the system's, because the
# test's own interpreter may live in a virtualenv under /tmp, and in the sandbox /tmp is the
# session's own (a clean clone in a temporary folder found it missing: exit code 127).
SANDBOX_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"


def fxdesk_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "fxdesk", *args]


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_fxdesk(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        fxdesk_command(*args),
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_for(
    condition: Callable[[], object],
    timeout: float = 30.0,
    interval: float = 0.02,
    what: str = "condition",
) -> object:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def python_child(code: str, **kwargs: object) -> subprocess.Popen[str]:
    """Start ``python -c code`` with line-buffered text pipes."""
    return subprocess.Popen(
        [sys.executable, "-u", "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
        **kwargs,
    )  # type: ignore[call-overload]


def killed_when_running(module: str, *args: str, env: dict[str, str]) -> list[str]:
    """Run ``python -m module args`` in its own process group until it prints its first line,
    ``RUNNING <words>``, then SIGKILL the group (a crash at that moment); the words."""
    child = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("RUNNING "), line
        return line.split()[1:]
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(30)
