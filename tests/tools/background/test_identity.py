"""Process identity with real processes: capture, match, and signals guarded by the token."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain.process_identity import ProcessToken, TokenMatch
from fxdesk.tools.background import identity
from fxdesk.tools.background.provider import (
    ProcessIdentityIndeterminate,
    ProcessIdentityUnavailable,
)
from tests.helpers import wait_for

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A ``sleep`` leading its own process group, killed and reaped at the end."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def other_ticks(token: ProcessToken) -> ProcessToken:
    prefix, _, ticks = token.text.rpartition(":")
    return ProcessToken(f"{prefix}:{int(ticks) + 1}")


def test_a_live_process_matches_its_token(sleeper: subprocess.Popen[bytes]) -> None:
    token = identity.capture_token(sleeper.pid)
    assert token.text.startswith(f"linux:{identity.boot_id()}:")
    assert identity.capture_token(sleeper.pid) == token
    assert identity.match_token(sleeper.pid, token) is TokenMatch.MATCHED


def test_the_start_ticks_are_field_22_of_stat(sleeper: subprocess.Popen[bytes]) -> None:
    stat = identity.read_stat(sleeper.pid)
    ticks = stat[stat.rindex(")") + 2 :].split()[19]  # field 22, after pid, comm, state
    assert identity.capture_token(sleeper.pid).text.endswith(f":{ticks}")


def test_a_name_with_spaces_and_parentheses_is_read_after_the_last_parenthesis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fields = " ".join(["S", *["0"] * 18, "987654", "0", "0"])
    monkeypatch.setattr(identity, "read_stat", lambda pid: f"{pid} (a) b (c)) {fields}\n")
    assert identity.capture_token(4242).text.endswith(":987654")


def test_a_killed_and_reaped_process_is_missing(sleeper: subprocess.Popen[bytes]) -> None:
    token = identity.capture_token(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    assert identity.match_token(sleeper.pid, token) is TokenMatch.MISSING
    with pytest.raises(ProcessLookupError):
        identity.capture_token(sleeper.pid)


def test_a_token_with_other_start_ticks_is_mismatched(sleeper: subprocess.Popen[bytes]) -> None:
    reused = other_ticks(identity.capture_token(sleeper.pid))
    assert identity.match_token(sleeper.pid, reused) is TokenMatch.MISMATCHED


def test_a_token_of_another_boot_is_mismatched(sleeper: subprocess.Popen[bytes]) -> None:
    token = identity.capture_token(sleeper.pid)
    ticks = token.text.rpartition(":")[2]
    other_boot = ProcessToken(f"linux:{'0' * 32}:{ticks}")
    assert identity.match_token(sleeper.pid, other_boot) is TokenMatch.MISMATCHED


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied"), OSError(5, "EIO")])
def test_an_unreadable_process_is_unavailable_never_gone(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    token = identity.capture_token(sleeper.pid)
    asked: list[int] = []

    def unreadable(pid: int) -> str:
        asked.append(pid)
        raise error

    monkeypatch.setattr(identity, "read_stat", unreadable)
    with pytest.raises(ProcessIdentityUnavailable):
        identity.capture_token(sleeper.pid)
    found = identity.match_token(sleeper.pid, token)
    assert found is TokenMatch.UNAVAILABLE
    assert not found.gone
    assert asked == [sleeper.pid, sleeper.pid]


def test_a_garbled_stat_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity, "read_stat", lambda pid: f"{pid} (cut")
    with pytest.raises(ProcessIdentityUnavailable):
        identity.capture_token(4242)


def test_no_pid_below_one_exists() -> None:
    with pytest.raises(ProcessLookupError):
        identity.capture_token(0)


def group_with_grandchild() -> tuple[subprocess.Popen[bytes], int]:
    """A ``bash`` leading its group, with a ``sleep`` it started: (bash, the sleep's PID)."""
    proc = subprocess.Popen(
        ["bash", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "killpg"])
def test_a_matching_token_signals_the_whole_group(
    pidfd: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not pidfd:
        monkeypatch.setattr(identity, "_group_flag_works", False)
    proc, grandchild = group_with_grandchild()
    try:
        token = identity.capture_token(proc.pid)
        identity.signal_group(proc.pid, token, signal.SIGTERM)
        assert proc.wait(10) == -signal.SIGTERM
        wait_for(lambda: gone(grandchild), timeout=10, what="the grandchild gone")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_mismatched_token_sends_nothing(sleeper: subprocess.Popen[bytes]) -> None:
    reused = other_ticks(identity.capture_token(sleeper.pid))
    with pytest.raises(ProcessIdentityIndeterminate, match="mismatched"):
        identity.signal_group(sleeper.pid, reused, signal.SIGKILL)
    assert sleeper.poll() is None
    assert identity.match_token(sleeper.pid, identity.capture_token(sleeper.pid)).value == "matched"


def test_an_unavailable_identity_sends_nothing(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = identity.capture_token(sleeper.pid)

    def unreadable(pid: int) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(identity, "read_stat", unreadable)
    with pytest.raises(ProcessIdentityIndeterminate, match="unavailable"):
        identity.signal_group(sleeper.pid, token, signal.SIGKILL)
    assert sleeper.poll() is None


def test_a_missing_process_is_never_signalled(sleeper: subprocess.Popen[bytes]) -> None:
    token = identity.capture_token(sleeper.pid)
    sleeper.kill()
    sleeper.wait()
    with pytest.raises(ProcessIdentityIndeterminate, match="missing"):
        identity.signal_group(sleeper.pid, token, signal.SIGTERM)


PERMISSION_CHECK = """
import sys
from fxdesk.tools.background import identity
pid = int(sys.argv[1])
try:
    identity.signal_group(pid, identity.capture_token(pid), 0)
except PermissionError:
    print("PermissionError")
"""


def test_permission_denied_passes_through(sleeper: subprocess.Popen[bytes]) -> None:
    """Another user's process group: the caller gets PermissionError (as root, the check runs
    as ``nobody`` against this test's ``sleep``)."""
    drop = (
        [] if os.geteuid() != 0 else ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    )
    target = sleeper.pid if drop else 1
    if drop:
        readable = subprocess.run(
            [*drop, sys.executable, "-c", "import fxdesk.tools.background.identity"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if readable.returncode != 0:  # a clone in a private temporary folder
            where = Path(identity.__file__).resolve()
            pytest.skip(f"user nobody cannot import {where} with {sys.executable}")
    done = subprocess.run(
        [*drop, sys.executable, "-c", PERMISSION_CHECK, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "PermissionError", done.stderr
    assert sleeper.poll() is None
