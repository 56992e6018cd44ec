"""The runtime with real ``bash`` children (the real ``WrapperProvider``): scenarios 1-6 of
spec §9 as the reference runs them (a real wrapper, a marker file the command writes), and
what only real processes show: a server that ignores SIGTERM is killed with its children; one
that double-forks out of its process group is reported; odd bytes in output.

Unsandboxed, except where a test says ``real.specs.sandboxed`` (the policy ``run_command``
uses, in real bubblewrap). The scenarios' waits are the spec's: the marker within 1 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import signal
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from fxdesk.domain.background import (
    IdentityIndeterminate,
    IdentityUnavailable,
    LaunchPolicy,
    Persistence,
    PersistenceRequired,
    StopResult,
    TaskState,
)
from fxdesk.store.faults import Fault
from tests.engine.background.harness import Harness, RealProvider, wait_until
from tests.tools.background.launching import gone, require_bwrap

MARKER_WAIT_S = 1.0  # spec §7: "marker file ≤1000 ms"


def provider(real: Harness) -> RealProvider:
    assert isinstance(real.provider, RealProvider)
    return real.provider


async def marker_within(marker: Path, seconds: float) -> bool:
    """Whether the command wrote ``released`` to ``marker`` within ``seconds`` (the shell
    creates the file before ``printf`` writes to it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not (marker.exists() and marker.read_text() == "released"):
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def all_gone(pids: list[int], timeout: float = 10.0) -> None:
    await wait_until(lambda: all(gone(pid) for pid in pids), timeout)


async def in_log(task_log: str, pattern: str, timeout: float = 20.0) -> re.Match[str]:
    found: list[re.Match[str]] = []

    def look() -> bool:
        match = re.search(pattern, Path(task_log).read_text(errors="replace"))
        if match is not None:
            found.append(match)
        return match is not None

    await wait_until(look, timeout)
    return found[0]


async def test_scenario_01_real_saved_headless_runs_after_its_record(real: Harness) -> None:
    """Scenario 1, real wrapper: saved-headless is confirmed and its command runs (≤1 s)."""
    marker = real.root / "marker"
    task = await real.launch(f"printf released > '{marker}'", policy=LaunchPolicy.SAVED_HEADLESS)
    assert task.persistence is Persistence.CONFIRMED
    assert await marker_within(marker, MARKER_WAIT_S)
    assert [r[1] for r in await real.records()] == [task.stable_id]


async def test_scenario_02_real_identity_retried_then_released(real: Harness) -> None:
    """Scenario 2, real wrapper: two captures fail, the third succeeds; the command runs,
    one task, one record holding the command as given."""
    marker = real.root / "marker"
    provider(real).capture_failures = 2
    command = f"printf released > '{marker}'"
    task = await real.launch(command, policy=LaunchPolicy.SAVED_HEADLESS)
    assert provider(real).captures == 3
    assert await marker_within(marker, MARKER_WAIT_S)
    assert len(real.runtime.tasks(real.session_id)) == 1
    assert [(r[1], r[4]) for r in await real.records()] == [(task.stable_id, command)]


async def test_scenario_03_real_identity_never_available_runs_nothing(real: Harness) -> None:
    """Scenario 3, real wrapper: the original error (closing the pipe ended the wrapper
    cleanly, status 125), three captures, no marker, no task, no record, no log."""
    marker = real.root / "marker"
    provider(real).capture_always_fails = True
    with pytest.raises(IdentityUnavailable, match="not started"):
        await real.launch(f"printf released > '{marker}'", policy=LaunchPolicy.SAVED_HEADLESS)
    assert provider(real).captures == 3
    await all_gone(provider(real).spawned)
    assert not marker.exists()
    assert real.runtime.tasks(real.session_id) == [] and await real.records() == []
    assert not real.specs.calls[0][2].exists()  # the log was deleted


async def test_scenario_04_real_headless_record_failure_runs_nothing(real: Harness) -> None:
    """Scenario 4, real wrapper: the record cannot be saved: the command never runs."""
    marker = real.root / "marker"
    real.faults.fail(1, Fault.DEFINITE, onward=True, label="background record")
    with pytest.raises(PersistenceRequired, match="not started"):
        await real.launch(f"printf released > '{marker}'", policy=LaunchPolicy.SAVED_HEADLESS)
    await all_gone(provider(real).spawned)
    assert not marker.exists()
    assert real.runtime.tasks(real.session_id) == []


async def test_scenario_05_real_durable_record_failure_still_runs(real: Harness) -> None:
    """Scenario 5, real wrapper: durable, the record cannot be saved: the command runs all
    the same (≤1 s), degraded."""
    marker = real.root / "marker"
    real.faults.fail(1, Fault.DEFINITE, onward=True, label="background record")
    task = await real.launch(f"printf released > '{marker}'", policy=LaunchPolicy.DURABLE)
    assert task.persistence is Persistence.INITIAL_RECORD_DEGRADED
    assert await marker_within(marker, MARKER_WAIT_S)


async def test_scenario_06_real_child_that_ignores_cleanup_retires_its_number(
    real: Harness,
) -> None:
    """Scenario 6, a real child: it says it is ready, then ignores its closed pipe for 0.2 s
    (cleanup timeout 10 ms); with no token it is never signalled: the launch is indeterminate,
    its number retired, and the child is reaped in the background."""
    real.runtime = real.new_runtime(
        timings=dataclasses.replace(real.timings, cleanup_timeout_s=0.01)
    )
    provider(real).deaf_wrapper = True
    provider(real).capture_always_fails = True
    with pytest.raises(IdentityIndeterminate, match="#1 is retired"):
        await real.launch("true", policy=LaunchPolicy.PROCESS_LOCAL)
    (child,) = provider(real).spawned
    assert not gone(child)  # still there after the 10 ms: that is what made it indeterminate
    assert real.runtime._ctx.table.claim(real.session_id, 1) == 2
    await all_gone([child])  # the detached reaper collected it: no zombie left


@pytest.mark.parametrize("policy", [LaunchPolicy.DURABLE, LaunchPolicy.PROCESS_LOCAL])
async def test_a_server_ignoring_sigterm_is_killed_with_its_children(
    real: Harness, policy: LaunchPolicy
) -> None:
    """Issue 12: a server that ignores SIGTERM, and the child it started (which inherits
    that), are still there after the grace period; the deliberate SIGKILL of the group ends
    both. The outcome says it was forced."""
    command = "trap '' TERM; sleep 600 & echo \"child=$!\"; wait"
    task = await real.launch(command, policy=policy)
    child = int((await in_log(task.log_path, r"child=(\d+)")).group(1))
    began = time.monotonic()
    outcome = await real.runtime.stop(task.ref, real.session_id)
    assert outcome.result is StopResult.KILLED, outcome
    assert time.monotonic() - began >= real.timings.stop_grace_s  # SIGTERM was given its time
    assert "ignored SIGTERM" in outcome.message
    await all_gone([task.pid, child])
    assert real.task(task.number).state is TaskState.STOPPED


async def test_a_double_fork_out_of_the_group_is_reported_not_silently_left(
    real: Harness,
) -> None:
    """Issue 12: a command that double-forks a ``setsid`` process out of its group. The stop
    ends the group and says that this process still runs, by PID, and that fxdesk did not
    stop it (it signals only the task's group); it is left running, not signalled."""
    command = '( setsid sleep 600 & echo "escaped=$!" ); echo ready; sleep 600'
    task = await real.launch(command)
    escaped = int((await in_log(task.log_path, r"escaped=(\d+)")).group(1))
    try:
        await wait_until(lambda: os.getpgid(escaped) != task.pid)  # out of the task's group
        outcome = await real.runtime.stop(task.ref, real.session_id)
        assert outcome.result is StopResult.STOPPED
        assert outcome.left_running == ((escaped, "sleep"),)
        assert f"PID {escaped} (sleep)" in outcome.message
        assert "did not stop" in outcome.message and f"kill {escaped}" in outcome.message
        assert not gone(escaped)
        await all_gone([task.pid])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)


@pytest.mark.parametrize("policy", [LaunchPolicy.PROCESS_LOCAL, LaunchPolicy.DURABLE])
async def test_in_the_sandbox_a_double_fork_is_ended_with_its_sandbox(
    real: Harness, policy: LaunchPolicy
) -> None:
    """In bubblewrap the task has a PID namespace of its own. A process-local task's
    namespace ends with its wrapper (``--die-with-parent`` takes the namespace's init). A
    durable task's init stays while anything in the namespace runs (it must outlive fxdesk),
    so a stop that finds something left in it kills that init, which ends the namespace:
    the escaped process ends too, nothing is reported, and no zombie is left (issue 16
    item 5; before, it was reported and left running)."""
    require_bwrap()
    real.specs.sandboxed = True
    command = '( setsid sleep 600 & echo "escaped=$!" ); echo ready; sleep 600'
    task = await real.launch(command, policy=policy)
    await in_log(task.log_path, r"ready")
    init = psutil.Process(task.pid).parent()

    def escaped_sleeps() -> list[int]:
        return [
            p.pid
            for p in init.children(recursive=True)
            if p.name() == "sleep" and os.getpgid(p.pid) != task.pid
        ]

    await wait_until(escaped_sleeps)
    (escaped,) = escaped_sleeps()
    try:
        outcome = await real.runtime.stop(task.ref, real.session_id)
        assert outcome.result is StopResult.STOPPED
        assert outcome.left_running == ()
        assert outcome.message == f"Command #{task.number} stopped."
        await all_gone([task.pid, escaped, init.pid])
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(init.pid, signal.SIGKILL)
        await all_gone([escaped])


async def test_non_utf8_and_nul_bytes_do_not_break_the_log_summary(real: Harness) -> None:
    """Issue 12: a command printing invalid UTF-8, NUL bytes and colours: its summary reads,
    with U+FFFD and ␀ where the bytes were, and the exit code from the marker."""
    command = (
        r"printf 'caf\xe9 \x00nul\xff\xfe end\n'; printf '\033[31mred\033[0m\n'; "
        r"head -c 3000 /dev/urandom; printf '\nlast line\n'"
    )
    task = await real.launch(command)
    await in_log(task.log_path, "__FX_EXIT_CODE__=0")
    summary = await real.runtime.log_summary(task.ref, real.session_id)
    assert summary.exit_code == 0
    assert summary.head.startswith("caf\ufffd \u2400nul\ufffd\ufffd end\nred\n")
    assert (summary.head + summary.tail).endswith("last line\n")
    assert "__FX_EXIT_CODE__" not in summary.text()
    await real.runtime.refresh(force=True)
    assert real.task(task.number).state is TaskState.EXITED
