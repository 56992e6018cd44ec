"""Whether a task outlives fxdesk: a real parent process starts it and is SIGKILLed.

Process-local tasks die with it, the whole task (the shell and what it started) and not only
the wrapper; durable ones keep running and keep working.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain.process_identity import ProcessToken, TokenMatch
from fxdesk.tools.background import identity
from fxdesk.tools.background.launch import WrapperProvider
from fxdesk.tools.background.provider import LaunchSpec, PreparedProcess
from tests.helpers import wait_for
from tests.tools.background.launching import (
    MODES,
    all_gone,
    descendants,
    finished,
    log_has,
    make_spec,
)

ROOT = Path(__file__).resolve().parents[3]

# Stands in for fxdesk: starts one task and then waits to be killed.
PARENT = """
import json, pickle, sys
from fxdesk.tools.background.launch import WrapperProvider
spec = pickle.loads(bytes.fromhex(sys.argv[1]))
provider = WrapperProvider()
prepared = provider.spawn_prepared(spec)
token = provider.capture_token(prepared.pid)
owned = prepared.release(sys.argv[2])
print(json.dumps({"pid": owned.pid, "token": token.text}), flush=True)
sys.stdin.read()
"""


class Parent:
    """A real parent process holding one task."""

    def __init__(self, spec: LaunchSpec, command: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PARENT, pickle.dumps(spec).hex(), command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert self.proc.stdout is not None
        started = json.loads(self.proc.stdout.readline())
        self.pid: int = started["pid"]
        self.token = ProcessToken(started["token"])

    def sigkill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


@pytest.fixture
def workspace(var_tmp: Path) -> Path:
    folder = var_tmp / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def cleanup() -> Iterator[list[tuple[int, ProcessToken]]]:
    """Tasks to stop at the end, by token (durable ones outlive their parent by design)."""
    tasks: list[tuple[int, ProcessToken]] = []
    yield tasks
    for pid, token in tasks:
        if identity.match_token(pid, token) is TokenMatch.MATCHED:
            identity.signal_group(pid, token, signal.SIGKILL)


@pytest.mark.parametrize("mode", MODES)
def test_a_process_local_task_dies_with_a_sigkilled_parent(
    mode: str, workspace: Path, tmp_path: Path, cleanup: list[tuple[int, ProcessToken]]
) -> None:
    spec = make_spec(mode, workspace, tmp_path / "logs")
    parent = Parent(spec, "bash -c 'sleep 300 & wait' & echo started; wait")
    cleanup.append((parent.pid, parent.token))
    log_has(spec.log_path, b"started")
    wait_for(lambda: len(descendants(parent.pid)) >= 2, timeout=20, what="the grandchild")
    task = [parent.pid, *descendants(parent.pid)]
    assert identity.match_token(parent.pid, parent.token) is TokenMatch.MATCHED
    parent.sigkill()
    wait_for(lambda: all_gone(task), timeout=20, what="every process of the task gone")
    wait_for(lambda: identity.match_token(parent.pid, parent.token).gone, timeout=20)


@pytest.mark.parametrize("mode", MODES)
def test_a_durable_task_keeps_running_after_its_parent_is_sigkilled(
    mode: str, workspace: Path, tmp_path: Path, cleanup: list[tuple[int, ProcessToken]]
) -> None:
    spec = make_spec(mode, workspace, tmp_path / "logs", survives=True)
    command = "echo started; while [ ! -e go ]; do sleep 0.02; done; echo after the parent"
    parent = Parent(spec, command)
    cleanup.append((parent.pid, parent.token))
    log_has(spec.log_path, b"started")
    parent.sigkill()
    assert identity.match_token(parent.pid, parent.token) is TokenMatch.MATCHED
    (workspace / "go").touch()  # only now can it finish: it ran on after the parent died
    data = finished(spec.log_path)
    assert data == b"started\nafter the parent\n\n__FX_EXIT_CODE__=0\n"


@pytest.mark.parametrize("mode", MODES)
def test_closing_the_provider_ends_its_process_local_tasks_only(
    mode: str, workspace: Path, tmp_path: Path, cleanup: list[tuple[int, ProcessToken]]
) -> None:
    provider = WrapperProvider()
    local = make_spec(mode, workspace, tmp_path / "logs")
    durable = make_spec(mode, workspace, tmp_path / "logs", survives=True)
    started = []
    for spec in (local, durable):
        prepared = provider.spawn_prepared(spec)
        token = provider.capture_token(prepared.pid)
        owned = prepared.release("echo started; sleep 300")
        owned.forget()
        cleanup.append((owned.pid, token))
        started.append((owned.pid, token))
        log_has(spec.log_path, b"started")
    provider.close()
    (local_pid, local_token), (durable_pid, durable_token) = started
    wait_for(lambda: identity.match_token(local_pid, local_token).gone, timeout=20)
    assert identity.match_token(durable_pid, durable_token) is TokenMatch.MATCHED


@pytest.mark.parametrize("mode", MODES)
def test_a_process_local_task_outlives_the_thread_that_started_it(
    mode: str, workspace: Path, tmp_path: Path, cleanup: list[tuple[int, ProcessToken]]
) -> None:
    """PR_SET_PDEATHSIG follows the thread that forked: the runtime spawns through
    ``asyncio.to_thread``, whose thread may end; the provider forks on its own thread."""
    provider = WrapperProvider()
    spec = make_spec(mode, workspace, tmp_path / "logs")
    got: list[PreparedProcess] = []
    worker = threading.Thread(target=lambda: got.append(provider.spawn_prepared(spec)))
    worker.start()
    worker.join()
    try:
        (prepared,) = got
        token = provider.capture_token(prepared.pid)
        cleanup.append((prepared.pid, token))
        owned = prepared.release("while [ ! -e go ]; do sleep 0.02; done; echo still here")
        (workspace / "go").touch()
        assert finished(spec.log_path).startswith(b"still here\n")
        assert owned.wait(20) == 0
    finally:
        provider.close()
