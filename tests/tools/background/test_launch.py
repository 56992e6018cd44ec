"""The held-back wrapper with real bash children, unsandboxed and in real bubblewrap."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from fxdesk.domain.log_scan import EXIT_MARKER, exit_code
from fxdesk.domain.process_identity import TokenMatch
from fxdesk.tools.background import launch_args
from fxdesk.tools.background.launch import WrapperProvider
from fxdesk.tools.background.provider import (
    NOT_RELEASED_STATUS,
    CleanupStatus,
    LaunchFailed,
    LaunchSpec,
)
from fxdesk.tools.sandbox import SandboxPolicy
from tests.helpers import wait_for
from tests.tools.background.launching import (
    MODES,
    all_gone,
    descendants,
    finished,
    gone,
    log_has,
    make_spec,
)


@pytest.fixture
def provider() -> Iterator[WrapperProvider]:
    made = WrapperProvider()
    yield made
    made.close()  # ends every process-local task a failed test left running


@pytest.fixture
def workspace(var_tmp: Path) -> Path:
    folder = var_tmp / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


@pytest.mark.parametrize("mode", MODES)
def test_the_log_gets_stdout_and_stderr_in_order_then_the_exit_marker(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    owned = provider.spawn_prepared(spec).release("echo one; echo two >&2; echo three; exit 7")
    assert owned.wait(20) == 7
    data = spec.log_path.read_bytes()
    assert data == b"one\ntwo\nthree\n\n" + EXIT_MARKER + b"7\n"
    assert exit_code(data) == 7


@pytest.mark.parametrize("mode", MODES)
def test_bytes_that_are_not_text_land_in_the_log_untouched(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    owned = provider.spawn_prepared(spec).release(r"printf '\xff\xfe\000\001 \303( \033[31mred'")
    assert owned.wait(20) == 0
    assert spec.log_path.read_bytes() == (
        b"\xff\xfe\x00\x01 \xc3( \x1b[31mred\n" + EXIT_MARKER + b"0\n"
    )


@pytest.mark.parametrize("mode", MODES)
def test_the_command_keeps_every_byte_and_its_trailing_line_breaks(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    command = "cat <<'EOF'\n  indented é \\ $HOME 'quoted'\nEOF\n\n\n"
    owned = provider.spawn_prepared(spec).release(command)
    assert owned.wait(20) == 0
    assert spec.log_path.read_bytes().startswith("  indented é \\ $HOME 'quoted'\n".encode())


@pytest.mark.parametrize("mode", MODES)
def test_the_pid_is_the_wrappers_and_stays_the_same_after_the_release(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    prepared = provider.spawn_prepared(spec)
    before = provider.capture_token(prepared.pid)
    wrapper = psutil.Process(prepared.pid)
    assert wrapper.name() == "bash"
    assert os.getpgid(prepared.pid) == prepared.pid  # it leads its own process group
    if mode == "bwrap":
        assert wrapper.ppid() != os.getpid()  # not bubblewrap: two levels below it
        assert psutil.Process(wrapper.ppid()).ppid() in {c.pid for c in psutil.Process().children()}
    owned = prepared.release("echo pid=$$; sleep 300")
    text = log_has(spec.log_path, b"pid=")
    assert owned.pid == prepared.pid
    assert provider.capture_token(prepared.pid) == before
    assert provider.match_token(prepared.pid, before) is TokenMatch.MATCHED
    shown = int(text.split(b"pid=")[1].split()[0])
    with open(f"/proc/{prepared.pid}/status") as status:
        nspid = next(line for line in status if line.startswith("NSpid:")).split()[1:]
    assert int(nspid[-1]) == shown  # $$ inside is this very process, in its namespace
    provider.signal_group(prepared.pid, before, signal.SIGKILL)
    assert owned.wait(20) is not None


@pytest.mark.parametrize("mode", MODES)
def test_a_signal_to_the_group_reaches_a_grandchild(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    prepared = provider.spawn_prepared(spec)
    token = provider.capture_token(prepared.pid)
    owned = prepared.release("bash -c 'sleep 300 & wait' & echo started; wait")
    log_has(spec.log_path, b"started")
    wait_for(lambda: any(psutil.Process(p).name() == "sleep" for p in descendants(owned.pid)))
    below = descendants(owned.pid)
    provider.signal_group(owned.pid, token, signal.SIGTERM)
    assert owned.wait(20) == 143
    wait_for(lambda: all_gone(below), timeout=20, what="the sleep gone")
    wait_for(lambda: provider.match_token(owned.pid, token).gone, timeout=20)
    assert exit_code(finished(spec.log_path)) == 143  # stopped, not "completed successfully"


@pytest.mark.parametrize("mode", MODES)
def test_closing_without_the_release_exits_125_and_runs_nothing(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    prepared = provider.spawn_prepared(spec)
    token = provider.capture_token(prepared.pid)
    assert prepared.close_and_wait(20) is CleanupStatus.CONFIRMED
    assert prepared.wait_for_exit(0)
    assert prepared._popen.returncode == NOT_RELEASED_STATUS  # type: ignore[attr-defined]
    assert spec.log_path.read_bytes() == b""
    wait_for(lambda: provider.match_token(prepared.pid, token).gone, timeout=20)


def test_a_wrong_release_line_runs_nothing(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec("bare", workspace, logs)
    prepared = provider.spawn_prepared(spec)
    stdin = prepared._popen.stdin  # type: ignore[attr-defined]
    stdin.write(b"R\ntouch ran\n")
    stdin.close()
    assert prepared.wait_for_exit(20)
    assert prepared._popen.returncode == NOT_RELEASED_STATUS  # type: ignore[attr-defined]
    assert not (workspace / "ran").exists()


def test_a_release_to_a_wrapper_that_died_fails_and_cleanup_still_works(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    prepared = provider.spawn_prepared(make_spec("bare", workspace, logs))
    os.kill(prepared.pid, signal.SIGKILL)  # fxdesk's own unreaped child: its PID still
    assert prepared.wait_for_exit(20)
    with pytest.raises(LaunchFailed, match="no longer waiting"):
        prepared.release("echo hi")
    assert prepared.close_and_wait(1) is CleanupStatus.CONFIRMED


def test_a_command_with_nul_is_refused_and_the_wrapper_still_waits(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec("bare", workspace, logs)
    prepared = provider.spawn_prepared(spec)
    with pytest.raises(LaunchFailed, match="NUL"):
        prepared.release("echo a\x00b")
    assert not prepared.wait_for_exit(0)
    assert prepared.release("echo fine").wait(20) == 0
    assert spec.log_path.read_bytes().startswith(b"fine\n")


def test_a_wrapper_that_is_never_ready_fails_clearly_and_is_reaped(
    workspace: Path, logs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launch_args, "WRAPPER", "exec sleep 300")
    slow = WrapperProvider(ready_timeout_s=0.3)
    try:
        with pytest.raises(LaunchFailed, match=r"not ready within 0\.3 s"):
            slow.spawn_prepared(make_spec("bare", workspace, logs))
        assert not [c for c in psutil.Process().children() if c.name() == "sleep"]
    finally:
        slow.close()


def test_a_sandbox_that_cannot_start_says_what_bubblewrap_said(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec("bwrap", workspace, logs)
    assert spec.sandbox is not None
    broken = SandboxPolicy(
        workspace=workspace / "missing", environment=spec.sandbox.environment, network=True
    )
    bad = LaunchSpec(cwd=workspace, log_path=spec.log_path, sandbox=broken)
    with pytest.raises(LaunchFailed, match=r"the sandbox could not start: bwrap: .*missing"):
        provider.spawn_prepared(bad)


def test_a_log_that_cannot_be_opened_fails_before_anything_starts(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = LaunchSpec(cwd=workspace, log_path=logs / "nowhere" / "x.log")
    with pytest.raises(LaunchFailed, match="cannot open the task's log"):
        provider.spawn_prepared(spec)


@pytest.mark.parametrize("mode", MODES)
def test_a_bare_wait_in_the_command_does_not_wait_for_the_guard(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec(mode, workspace, logs)
    owned = provider.spawn_prepared(spec).release("sleep 0.1 & wait; echo waited")
    assert owned.wait(20) == 0
    assert spec.log_path.read_bytes().startswith(b"waited\n")


def test_bash_startup_variables_never_reach_the_wrapper(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    sourced = workspace / "env.sh"
    sourced.write_text("echo SOURCED\n")
    environment = {
        "PATH": os.environ["PATH"],
        "BASH_ENV": str(sourced),
        "BASH_FUNC_echo%%": "() { builtin echo HIJACKED; }",
        "KEPT": "yes",
    }
    spec = make_spec("bare", workspace, logs, environment=environment)
    assert provider.spawn_prepared(spec).release("echo kept=$KEPT").wait(20) == 0
    assert spec.log_path.read_bytes().startswith(b"kept=yes\n")


def test_the_sandboxed_command_cannot_see_fxdesks_secrets(
    provider: WrapperProvider, workspace: Path, logs: Path, var_tmp: Path
) -> None:
    data_dir = var_tmp / "data"
    data_dir.mkdir()
    (data_dir / "fxdesk.db").write_text("the database")
    secret = "sk-ant-the-secret-value"
    environ = {"PATH": os.environ["PATH"], "HOME": "/root", "ANTHROPIC_API_KEY": secret}
    spec = make_spec("bwrap", workspace, logs, data_dir=data_dir, environ=environ)
    command = f"env; ls -A {data_dir}; echo listed"
    prepared = provider.spawn_prepared(spec)
    with open(f"/proc/{prepared.pid}/environ", "rb") as seen:
        assert secret.encode() not in seen.read()
    assert prepared.release(command).wait(20) == 0
    data = spec.log_path.read_bytes()
    assert secret.encode() not in data
    assert b"ANTHROPIC_API_KEY" not in data
    assert b"fxdesk.db" not in data
    assert b"PATH=" in data  # the allow-list itself is there


def test_a_sandboxed_server_has_the_hosts_network(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec("bwrap", workspace, logs)
    owned = provider.spawn_prepared(spec).release("ls /sys/class/net")
    assert owned.wait(20) == 0
    host = sorted(os.listdir("/sys/class/net"))
    assert spec.log_path.read_bytes().split(b"\n\n")[0].decode().split() == host


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
def test_a_sandboxed_task_reaches_no_socket_file_of_the_host(
    provider: WrapperProvider, workspace: Path, logs: Path, var_tmp: Path, network: bool
) -> None:
    """The seccomp filter of run_command, with the network or without: a socket file the
    sandbox shows (Docker Desktop's under the home folder) is reached through the file system,
    which no network namespace covers."""
    path = var_tmp / "docker.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        listener.listen(4)
        listener.setblocking(False)
        spec = make_spec("bwrap", workspace, logs, network=network)
        script = f"import socket; socket.socket(socket.AF_UNIX).connect({str(path)!r})"
        owned = provider.spawn_prepared(spec).release(f'python3 -c "{script}"')
        assert owned.wait(20) != 0
        assert b"PermissionError: [Errno 1] Operation not permitted" in spec.log_path.read_bytes()
        with pytest.raises(BlockingIOError):
            listener.accept()


@pytest.mark.parametrize("mode", MODES)
def test_a_detached_reaper_collects_the_wrapper(
    mode: str, provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    prepared = provider.spawn_prepared(make_spec(mode, workspace, logs))
    child = prepared._popen.pid  # type: ignore[attr-defined]
    prepared.close_and_wait(0)
    assert prepared.detach_reaper()
    wait_for(lambda: not os.path.exists(f"/proc/{child}"), timeout=20, what="reaped")


def test_a_forgotten_task_keeps_running_and_is_reaped_when_it_ends(
    provider: WrapperProvider, workspace: Path, logs: Path
) -> None:
    spec = make_spec("bare", workspace, logs)
    prepared = provider.spawn_prepared(spec)
    token = provider.capture_token(prepared.pid)
    owned = prepared.release("while [ ! -e go ]; do sleep 0.02; done; echo went")
    owned.forget()
    assert provider.match_token(owned.pid, token) is TokenMatch.MATCHED
    (workspace / "go").touch()
    assert finished(spec.log_path).startswith(b"went\n")
    wait_for(lambda: not os.path.exists(f"/proc/{owned.pid}"), timeout=20, what="reaped")
    assert gone(owned.pid)
