"""Launch policies and their failure matrix (spec §3.2-3.6): scenarios 1-7 and 9 of spec §9,
with the recording fake provider (``tests/fakes``); the real-bash versions of 1-5 are in
``test_real_processes.py``.

The store, the logs and the numbering are real; the fake stands for the processes so a test
can make an identity unreadable or a cleanup unconfirmed.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import pytest

from fxdesk.domain.background import (
    IdentityIndeterminate,
    IdentityUnavailable,
    LaunchPolicy,
    LaunchRefused,
    Persistence,
    PersistenceRequired,
    TaskState,
)
from fxdesk.engine.background import launching
from fxdesk.store import background
from fxdesk.store.faults import Fault
from fxdesk.tools.background.provider import LaunchFailed
from tests.engine.background.harness import Harness
from tests.fakes.background_provider import FakeProcess


def _marker_on_release(bg: Harness, marker: Path) -> list[list[tuple[object, ...]]]:
    """The fake 'runs' the command at release: writes ``marker``; and records what the store
    held at that moment (did the record exist before the command ran?)."""
    seen: list[list[tuple[object, ...]]] = []

    def run(process: FakeProcess, command: str) -> None:
        seen.append(
            bg.store.read_blocking(lambda: bg.store_rows("SELECT stable_id FROM background_task"))
        )
        marker.write_text("released")

    bg.fake.on_release = run
    return seen


async def test_scenario_01_saved_headless_waits_for_the_initial_record(bg: Harness) -> None:
    """Scenario 1: saved-headless is released only after its record is saved."""
    marker = bg.root / "marker"
    seen = _marker_on_release(bg, marker)
    task = await bg.launch(f"printf released > '{marker}'", policy=LaunchPolicy.SAVED_HEADLESS)
    assert marker.read_text() == "released"
    assert seen == [[(task.stable_id,)]]  # the record was there when the command was released
    assert task.persistence is Persistence.CONFIRMED and task.state is TaskState.RUNNING
    calls = [c[0] for c in bg.fake.calls]
    assert calls.index("capture") < calls.index("release")


async def test_a_durable_record_is_saved_before_its_command_runs(bg: Harness) -> None:
    """Killed between the release and the record, fxdesk would leave a durable server running
    that no record names and no later fxdesk finds (found by the crash harness,
    tests/reliability): the record comes first, as a saved-headless one's does."""
    marker = bg.root / "marker"
    seen = _marker_on_release(bg, marker)
    task = await bg.launch(f"printf released > '{marker}'", policy=LaunchPolicy.DURABLE)
    assert marker.exists() and task.persistence is not Persistence.INITIAL_RECORD_DEGRADED
    assert seen == [[(task.stable_id,)]]  # the record was there when the command was released


async def test_a_durable_record_is_removed_when_its_release_fails(bg: Harness) -> None:
    bg.fake.release_error = LaunchFailed("the wrapper went away")
    with pytest.raises(LaunchRefused, match="Failed to start"):
        await bg.launch("true", policy=LaunchPolicy.DURABLE)
    assert await bg.records() == []


async def test_scenario_02_identity_retried_while_unavailable(bg: Harness) -> None:
    """Scenario 2: capture fails twice ("unavailable"), the third try succeeds."""
    marker = bg.root / "marker"
    _marker_on_release(bg, marker)
    bg.fake.capture_failures = 2
    command = f"printf released > '{marker}'"
    task = await bg.launch(command, policy=LaunchPolicy.SAVED_HEADLESS)
    assert len(bg.fake.named("capture")) == 3
    assert marker.exists()
    assert len(bg.runtime.tasks(bg.session_id)) == 1
    rows = await bg.records()
    assert [(r[1], r[4]) for r in rows] == [(task.stable_id, command)]


async def test_scenario_03_identity_never_available_keeps_the_command_held(bg: Harness) -> None:
    """Scenario 3: capture always fails: the command never runs, nothing is kept."""
    marker = bg.root / "marker"
    _marker_on_release(bg, marker)
    bg.fake.capture_always_fails = True
    with pytest.raises(IdentityUnavailable, match="not started"):
        await bg.launch(f"printf released > '{marker}'", policy=LaunchPolicy.SAVED_HEADLESS)
    assert len(bg.fake.named("capture")) == 3
    assert not bg.fake.named("release") and not marker.exists()
    assert bg.runtime.tasks(bg.session_id) == [] and await bg.records() == []
    assert bg.fake.named("close_and_wait")  # the pipe was closed: the wrapper exits with 125
    assert not bg.fake.named("signal")  # no token: never a signal
    spec = bg.fake.named("spawn")[0][2]
    assert not spec.log_path.exists()  # type: ignore[attr-defined]
    # The number was freed (the counter goes on, as the reference's): forced back, #1 is free.
    assert bg.runtime._ctx.table.claim(bg.session_id, 1) == 1


async def test_scenario_04_headless_record_failure_closes_the_unreleased_wrapper(
    bg: Harness,
) -> None:
    """Scenario 4: the saved-headless record cannot be saved: the command never runs."""
    marker = bg.root / "marker"
    _marker_on_release(bg, marker)
    bg.faults.fail(1, Fault.DEFINITE, onward=True, label="background record")
    with pytest.raises(PersistenceRequired, match="not started"):
        await bg.launch(f"printf released > '{marker}'", policy=LaunchPolicy.SAVED_HEADLESS)
    assert not bg.fake.named("release") and not marker.exists()
    assert bg.runtime.tasks(bg.session_id) == [] and await bg.records() == []
    assert bg.fake.processes[bg.fake.named("spawn")[0][1]].closed  # type: ignore[index]


async def test_scenario_05_durable_record_failure_runs_degraded(bg: Harness) -> None:
    """Scenario 5: durable: the command runs even though its record could not be saved; it
    says so, and it is stopped at quit (nothing could find it after a restart)."""
    marker = bg.root / "marker"
    _marker_on_release(bg, marker)
    bg.faults.fail(1, Fault.DEFINITE, onward=True, label="background record")
    task = await bg.launch(f"printf released > '{marker}'", policy=LaunchPolicy.DURABLE)
    assert marker.exists()
    assert task.persistence is Persistence.INITIAL_RECORD_DEGRADED
    assert "will not be restored" in task.persistence_warning
    stops, keeps = bg.runtime.quit_plan()
    assert [t.number for t in stops] == [task.number] and keeps == []


async def test_scenario_06_indeterminate_cleanup_retires_the_number(bg: Harness) -> None:
    """Scenario 6: a held-back wrapper that cannot be confirmed gone retires its #N."""
    bg.fake.capture_always_fails = True
    bg.fake.cleanup_confirms = False
    with pytest.raises(IdentityIndeterminate, match="#1 is retired"):
        await bg.launch("npm run dev", policy=LaunchPolicy.PROCESS_LOCAL)
    assert bg.fake.named("detach_reaper")
    assert not bg.fake.named("signal")  # no token: not signalled even then
    # Forced back to the retired number, the table hands out another one.
    assert bg.runtime._ctx.table.claim(bg.session_id, 1) == 2
    bg.fake.capture_always_fails = False
    assert (await bg.launch("true", policy=LaunchPolicy.PROCESS_LOCAL)).number == 3


async def test_scenario_07_indeterminate_durable_cleanup_retires_the_stable_id(
    bg: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario 7: the retired stable id is never handed out again; a known token is signalled."""
    id1, id2 = bytes(range(16)).hex(), bytes(range(16, 32)).hex()
    given = iter([id1, id1, id2, id2])
    monkeypatch.setattr(launching, "new_stable_id", lambda: next(given))
    bg.fake.release_error = LaunchFailed("pipe closed")
    bg.fake.cleanup_confirms = False
    bg.fake.ignores_sigterm = True
    with pytest.raises(IdentityIndeterminate):
        await bg.launch("npm run dev", policy=LaunchPolicy.DURABLE)
    # A token was known: the cleanup signalled it, and still could not confirm it gone.
    assert len(bg.fake.signals) == 1 and bg.fake.named("detach_reaper")
    bg.fake.release_error = None
    task = await bg.launch("npm run dev", policy=LaunchPolicy.DURABLE)
    assert task.number == 2 and task.stable_id == id2


async def test_a_failed_release_frees_everything(bg: Harness) -> None:
    """Spec §3.6 "release fails": the saved-headless record is deleted, the log too."""
    bg.fake.release_error = LaunchFailed("the wrapper's pipe broke")
    with pytest.raises(LaunchRefused, match="pipe broke"):
        await bg.launch("npm run dev", policy=LaunchPolicy.SAVED_HEADLESS)
    assert await bg.records() == []
    assert bg.runtime.tasks(bg.session_id) == []
    spec = bg.fake.named("spawn")[0][2]
    assert not spec.log_path.exists()  # type: ignore[attr-defined]


async def test_a_failed_spawn_says_the_command_did_not_start(bg: Harness) -> None:
    bg.fake.spawn_error = LaunchFailed("bash not found")
    with pytest.raises(LaunchRefused, match="bash not found"):
        await bg.launch("npm run dev")
    assert bg.runtime.tasks(bg.session_id) == []


async def test_scenario_09_numbers_continue_above_the_stored_records(bg: Harness) -> None:
    """Scenario 9: the store holds record 41: the next launch is #42, saved as running."""
    await bg.launch("old")
    await bg.store.write(
        lambda: bg.store_rows("UPDATE background_task SET number = 41") and None,
    )
    restarted = await bg.restart()
    task = await restarted.launch(bg.session_id, "vite", cwd="web", expect_url=True)
    assert task.number == 42
    stored = await bg.store.read(lambda: background.by_stable_id(bg.session_id, task.stable_id))
    assert stored is not None
    assert (stored.number, stored.pid, stored.command, stored.cwd, stored.state) == (
        42,
        task.pid,
        "vite",
        str((bg.workspace / "web").resolve()),
        TaskState.RUNNING,
    )


async def test_durable_and_local_logs_go_where_they_belong(bg: Harness) -> None:
    durable = await bg.launch("a", policy=LaunchPolicy.DURABLE)
    local = await bg.launch("b", policy=LaunchPolicy.PROCESS_LOCAL)
    assert Path(durable.log_path).parent == bg.root / "data" / "background" / bg.session_id
    assert Path(local.log_path).parent == bg.root / "tmp"
    assert oct(Path(local.log_path).stat().st_mode & 0o777) == "0o600"
    assert [c[3] for c in bg.specs.calls] == [True, False]  # survives fxdesk: durable only
    assert local.persistence is Persistence.NOT_APPLICABLE
    assert [r[1] for r in await bg.records()] == [durable.stable_id]  # local: no record


async def test_scenario_08_traces_are_metadata_only(
    bg: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """Scenario 8: nothing the runtime logs names a log path, a folder or a command."""
    caplog.set_level(logging.DEBUG, logger="fxdesk")
    bg.fake.capture_failures = 2
    task = await bg.launch("SECRET_CMD --port 1", cwd="web", expect_url=True)
    bg.fake.finish(task.pid, 3)
    await bg.runtime.refresh(force=True)
    second = await bg.launch("SECRET_CMD two")
    bg.fake.reuse_pid(second.pid)
    await bg.runtime.stop(second.ref, bg.session_id)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "background task completed" in text  # it did trace
    for secret in (str(bg.workspace), str(bg.root), task.log_path, "SECRET_CMD"):
        assert secret not in text


async def test_a_launch_cancelled_before_the_release_leaves_nothing_held(
    bg: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person cancels the turn while the record is being saved: the wrapper held back for
    the command is closed, the record removed, the number free, the command never runs. (Cut
    there, it used to stay held for ever, listed as running with an empty log: the soak.)"""
    marker = bg.root / "marker"
    _marker_on_release(bg, marker)
    saving = asyncio.Event()
    go_on = asyncio.Event()
    save = launching.records.save

    async def slow_save(*args: object, **kwargs: object) -> bool:
        saving.set()
        await go_on.wait()
        return await save(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(launching.records, "save", slow_save)
    started = asyncio.ensure_future(bg.launch("true", policy=LaunchPolicy.DURABLE))
    await asyncio.wait_for(saving.wait(), 10)
    started.cancel()
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await started
    assert not bg.fake.named("release") and not marker.exists()
    assert bg.fake.named("close_and_wait")  # the held-back wrapper was told to go
    assert not any(p.alive for p in bg.fake.processes.values())
    assert bg.runtime.tasks(bg.session_id) == []
    assert await bg.records() == []


async def test_a_launch_cancelled_during_the_release_keeps_the_task_it_started(
    bg: Harness,
) -> None:
    """Cancelled while the command is being released: it runs, so it stays listed and
    recorded (the Processes dock shows it, a later fxdesk finds it), and the caller is
    cancelled all the same."""
    releasing = threading.Event()
    go_on = threading.Event()

    def run(process: FakeProcess, command: str) -> None:
        releasing.set()
        go_on.wait(10)

    bg.fake.on_release = run
    started = asyncio.ensure_future(bg.launch("true", policy=LaunchPolicy.DURABLE))
    await asyncio.to_thread(releasing.wait, 10)
    started.cancel()
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await started
    assert len(bg.fake.named("release")) == 1
    [task] = bg.runtime.tasks(bg.session_id)
    assert [(r[1], r[2]) for r in await bg.records()] == [(task.stable_id, "running")]
