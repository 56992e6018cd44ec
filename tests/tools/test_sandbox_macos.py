"""The macOS sandbox (Seatbelt) as far as Linux can show it.

What the profile *means* is checked with a small SBPL evaluator (tests/tools/sbpl.py): each
element of the policy allows or refuses what it should. That no path can change the profile is
checked on the text itself. What ``run_command`` starts on macOS is checked end to end with a
stand-in ``sandbox-exec`` (a real child process that records its arguments and runs the
command): the real one, and whether macOS reads the profile as the evaluator does, need a Mac
(docs/sandbox.md).
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from fxdesk.cli.doctor import check_sandbox
from fxdesk.tools import sandbox_macos, sandbox_probe
from fxdesk.tools.base import ToolContext
from fxdesk.tools.sandbox import SandboxPolicy
from fxdesk.tools.sandbox_macos import (
    seatbelt_arguments,
    seatbelt_launch,
    seatbelt_profile,
)
from fxdesk.tools.shell import BASH, RunCommandTool, command_policy
from tests.tools.sbpl import Profile, parse

# A name made to close the profile's string and open a rule of its own, and others with every
# character that means something in SBPL or a shell.
NASTY = ('")(allow default)(', 'it\'s (a) "folder"', "new\nline; (deny default)", '#"x" \\')


def policy_in(root: Path, *, network: bool = False, names: tuple[str, ...] = ()) -> SandboxPolicy:
    """A policy shaped as fxdesk builds it, with folder names ``names`` (default: plain)."""
    ws, out, data, home = (root / (names[i] if names else n) for i, n in enumerate("wodh"))
    return SandboxPolicy(
        workspace=ws,
        grants=(out / "granted", ws / ".git" / "hooks"),
        protected=(ws / ".git", ws / ".fxdesk"),
        hidden=(home / ".ssh", data, ws / "secret.env"),
        environment=(("PATH", "/usr/bin:/bin"), ("TMPDIR", "/tmp")),
        network=network,
        temp_dir=data / "sandbox-tmp" / "s1",
    )


def meaning(policy: SandboxPolicy) -> Profile:
    profile = seatbelt_profile(policy)
    return Profile(profile.text, dict(profile.parameters))


def test_the_profile_is_closed_by_default_and_opens_only_what_commands_need(
    tmp_path: Path,
) -> None:
    sb = meaning(policy_in(tmp_path))
    assert "(allow default)" not in seatbelt_profile(policy_in(tmp_path)).text
    # A program can run and start others, and reads what it needs about the machine and user.
    assert sb.allows("process-exec") and sb.allows("process-fork")
    assert sb.allows("sysctl-read", sysctl="hw.ncpu")
    assert sb.allows("mach-lookup", global_name="com.apple.system.opendirectoryd.libinfo")
    assert sb.allows("file-write-data", "/dev/null")
    assert sb.allows("file-write-data", "/dev/fd/63")  # bash's >(...)
    # Never: another process's signals or arguments and environment, the services through which
    # a program is started outside the sandbox, the pasteboard, the keychain.
    assert sb.allows("signal", target="same-sandbox")
    assert not sb.allows("signal", target="others")
    assert not sb.allows("process-info-pidinfo", target="others")
    assert not sb.allows("sysctl-read", sysctl="kern.procargs2")
    for service in (
        "com.apple.coreservices.launchservicesd",  # open(1)
        "com.apple.coreservices.appleevents",  # osascript
        "com.apple.pasteboard.1",
        "com.apple.SecurityServer",  # the keychain
    ):
        assert not sb.allows("mach-lookup", global_name=service), service
    assert not sb.allows("process-exec-interpreter-unknown-op")  # deny default holds
    assert not sb.allows("file-write-data", "/dev/disk0")


def test_files_writable_read_only_and_hidden_as_the_policy_says(tmp_path: Path) -> None:
    policy = policy_in(tmp_path)
    ws, out, data, home = (str(tmp_path / n) for n in "wodh")
    sb = meaning(policy)
    temp = str(policy.temp_dir)
    writes = ("file-write-create", "file-write-data", "file-write-unlink", "file-write-mode")
    for op in writes:
        assert sb.allows(op, f"{ws}/src/main.py"), op
        assert sb.allows(op, f"{temp}/build.o"), op  # the session's temp folder
        assert sb.allows(op, f"{out}/granted/notes.txt"), op  # a grant outside
        assert sb.allows(op, f"{ws}/.git/hooks/pre-commit"), op  # a grant into .git
        # Protected: the folder itself (rename, rmdir), and anything in it; .fxdesk too, so a
        # missing one cannot be made.
        for path in (f"{ws}/.git", f"{ws}/.git/config", f"{ws}/.fxdesk", f"{ws}/.fxdesk/a"):
            assert not sb.allows(op, path), (op, path)
        assert not sb.allows(op, f"{out}/file"), op  # outside, not granted
        assert not sb.allows(op, f"{home}/.bashrc"), op
        assert not sb.allows(op, f"{ws}/secret.env"), op  # hidden inside the workspace
        assert not sb.allows(op, f"{data}/fxdesk.sqlite3"), op
        assert not sb.allows(op, f"{data}/sandbox-tmp/s2/x"), op  # another session's temp
    # Reading: everything but the hidden paths, whose own metadata stays (as the empty folder in
    # their place on Linux), and the writable folders inside a hidden one, with their way there.
    assert sb.allows("file-read-data", "/etc/hosts")
    assert sb.allows("file-read-data", f"{ws}/.git/config")
    assert sb.allows("file-read-data", f"{temp}/build.o")
    for secret in (f"{home}/.ssh/id_ed25519", f"{data}/fxdesk.sqlite3", f"{ws}/secret.env"):
        assert not sb.allows("file-read-data", secret), secret
    assert not sb.allows("file-read-metadata", f"{home}/.ssh/id_ed25519")
    assert not sb.allows("file-read-data", f"{home}/.ssh")  # no listing
    assert sb.allows("file-read-metadata", f"{home}/.ssh")
    assert sb.allows("file-read-metadata", f"{data}/sandbox-tmp")  # on the way to the temp
    assert not sb.allows("file-read-data", f"{data}/sandbox-tmp")


def test_network_off_is_loopback_and_the_command_s_own_unix_sockets(tmp_path: Path) -> None:
    ws = str(tmp_path / "w")
    sb = meaning(policy_in(tmp_path))
    connect = {"side": "remote", "socket": "ip"}
    assert sb.allows("network-outbound", ip="127.0.0.1:5173", **connect)
    assert not sb.allows("network-outbound", ip="93.184.215.14:443", **connect)
    assert sb.allows("network-bind", ip="0.0.0.0:5173", side="local", socket="ip")
    assert sb.allows("network-inbound", ip="127.0.0.1:5173", side="local", socket="ip")
    assert not sb.allows("network-inbound", ip="192.168.1.20:5173", side="local", socket="ip")
    unix = {"side": "remote", "socket": "unix-socket"}
    assert sb.allows("network-outbound", f"{ws}/run/app.sock", **unix)
    for host_socket in ("/private/var/run/docker.sock", "/private/var/run/mDNSResponder"):
        assert not sb.allows("network-outbound", host_socket, **unix), host_socket
    assert not sb.allows("mach-lookup", global_name="com.apple.SystemConfiguration.configd")


def test_network_on_is_ip_and_name_resolution_but_no_socket_of_the_host(tmp_path: Path) -> None:
    sb = meaning(policy_in(tmp_path, network=True))
    assert sb.allows("network-outbound", ip="93.184.215.14:443", side="remote", socket="ip")
    assert sb.allows("network-inbound", ip="192.168.1.20:5173", side="local", socket="ip")
    unix = {"side": "remote", "socket": "unix-socket"}
    assert sb.allows("network-outbound", "/private/var/run/mDNSResponder", **unix)
    assert sb.allows("mach-lookup", global_name="com.apple.SystemConfiguration.DNSConfiguration")
    assert sb.allows("mach-lookup", global_name="com.apple.trustd.agent")
    assert not sb.allows("network-outbound", "/private/var/run/docker.sock", **unix)
    assert not sb.allows("mach-lookup", global_name="com.apple.SecurityServer")


def test_no_path_can_change_the_profile(tmp_path: Path) -> None:
    """Paths travel as parameters: with names built to break out of a string, the profile's text
    is the very text plain names give, holds none of them, and still means the same."""
    plain, nasty = policy_in(tmp_path), policy_in(tmp_path, names=NASTY)
    assert seatbelt_profile(nasty).text == seatbelt_profile(plain).text
    text = seatbelt_profile(nasty).text
    for name in NASTY:
        assert name not in text
    assert len(parse(text)) == len(parse(seatbelt_profile(plain).text))
    sb = meaning(nasty)
    ws = str(tmp_path / NASTY[0])
    assert sb.allows("file-write-create", f"{ws}/new.txt")
    assert not sb.allows("file-write-create", f"{ws}/.git/config")
    assert not sb.allows("file-write-create", "/etc/passwd")
    assert not sb.allows("file-read-data", str(tmp_path / NASTY[3] / ".ssh" / "id_rsa"))
    # Each parameter is one argument, its value the path as it is.
    args = seatbelt_arguments(nasty, ["/bin/bash", "-c", "true"])
    defined = [args[i + 1] for i, arg in enumerate(args) if arg == "-D"]
    assert f"WRITABLE_0={ws}" in defined
    assert args[-4:] == ["--", "/bin/bash", "-c", "true"]


def test_a_git_link_and_a_missing_fxdesk_are_protected_by_their_own_path(tmp_path: Path) -> None:
    """What bubblewrap cannot cover, Seatbelt can: the link itself (not only where it points)
    and a .fxdesk that does not exist yet."""
    ws, repo = tmp_path / "ws", tmp_path / "repo.git"
    ws.mkdir()
    repo.mkdir()
    (ws / ".git").symlink_to(repo)
    policy = SandboxPolicy(workspace=ws, protected=(repo,), temp_dir=tmp_path / "t")
    argv, env = seatbelt_launch("/usr/bin/sandbox-exec", policy, ["/bin/bash", "-c", "true"])
    assert argv[:3] == ["/usr/bin/sandbox-exec", "-p", argv[2]]
    defined = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "-D")
    sb = Profile(argv[2], defined)
    assert not sb.allows("file-write-unlink", f"{ws}/.git")  # rm .git; mkdir .git
    assert not sb.allows("file-write-create", f"{ws}/.fxdesk")
    assert sb.allows("file-write-create", f"{ws}/README.md")
    assert env["TMPDIR"] == str(tmp_path / "t")
    # Without the link the same launch leaves .git creatable (git init is the agent's own).
    (ws / ".git").unlink()
    argv, _ = seatbelt_launch("/usr/bin/sandbox-exec", policy, ["true"])
    defined = dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "-D")
    assert Profile(argv[2], defined).allows("file-write-create", f"{ws}/.git")


# A stand-in for /usr/bin/sandbox-exec: it cannot sandbox anything on Linux, but it is a real
# program that records how it was started and runs the command as sandbox-exec would.
FAKE_SANDBOX_EXEC = """\
    #!{python}
    import json, os, sys
    args = sys.argv[1:]
    assert args[0] == "-p", args
    profile, rest, defined = args[1], args[2:], {{}}
    while rest[0] == "-D":
        key, _, value = rest[1].partition("=")
        defined[key] = value
        rest = rest[2:]
    assert rest[0] == "--", rest
    with open({log!r}, "a") as log:
        record = dict(profile=profile, defined=defined, command=rest[1:], env=dict(os.environ))
        log.write(json.dumps(record) + "\\n")
    os.execv(rest[1], rest[1:])
"""


@pytest.fixture
def on_macos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """sandbox_probe believes it runs on macOS, with the stand-in as sandbox-exec; yields the
    log of what the stand-in was asked."""
    log = tmp_path / "sandbox-exec.log"
    program = tmp_path / "sandbox-exec"
    program.write_text(
        textwrap.dedent(FAKE_SANDBOX_EXEC.format(python=sys.executable, log=str(log)))
    )
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sandbox_probe, "sys", types.SimpleNamespace(platform="darwin"))
    monkeypatch.setattr(sandbox_macos, "SANDBOX_EXEC", str(program))
    sandbox_probe.forget_status()
    yield log
    sandbox_probe.forget_status()


def _records(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_on_macos_the_status_is_seatbelt_probed_with_the_real_profile(on_macos: Path) -> None:
    status = sandbox_probe.sandbox_status()
    assert status.available and status.kind == sandbox_probe.SEATBELT
    assert status.bwrap == sandbox_macos.SANDBOX_EXEC
    (probe,) = _records(on_macos)
    assert probe["command"] == ["/usr/bin/true"]
    assert "(deny default)" in str(probe["profile"])


def test_on_macos_fxdesk_doctor_names_seatbelt(on_macos: Path) -> None:
    check = check_sandbox()
    assert check.summary == (
        f"Seatbelt (sandbox-exec) at {sandbox_macos.SANDBOX_EXEC}: commands run sandboxed"
    )


def test_on_macos_without_sandbox_exec_the_status_says_so(
    on_macos: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sandbox_macos, "SANDBOX_EXEC", str(tmp_path / "missing"))
    status = sandbox_probe.sandbox_status()
    assert not status.available
    assert status.reason == f"{tmp_path / 'missing'} is missing"


async def test_run_command_on_macos_runs_bash_under_the_profile(
    on_macos: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, data = tmp_path / "ws", tmp_path / "data"
    ws.mkdir()
    data.mkdir()
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-not-for-commands")
    ctx = ToolContext(ws, "s1", "w", "c", data_dir=data, temp_dir=data / "sandbox-tmp" / "s1")
    result = await RunCommandTool().run({"command": "echo made > out.txt; echo $TMPDIR"}, ctx)
    assert result.ok, result.output
    assert result.data["sandboxed"] is True
    assert (ws / "out.txt").read_text() == "made\n"
    temp = os.path.realpath(data / "sandbox-tmp" / "s1")
    assert temp in result.output
    *_, run = _records(on_macos)
    assert run["command"] == [BASH, "-c", "echo made > out.txt; echo $TMPDIR"]
    expected = seatbelt_profile(replace(command_policy(ctx), protected=(ws / ".fxdesk",)))
    assert run["profile"] == expected.text
    assert run["defined"] == dict(expected.parameters)
    env = run["env"]
    assert isinstance(env, dict)
    assert "GITHUB_TOKEN" not in env and env["TMPDIR"] == temp


async def test_on_macos_a_timeout_stops_the_command_through_its_process_group(
    on_macos: Path, tmp_path: Path
) -> None:
    """No PID namespace: the shell itself gets SIGTERM and its grace, as an unsandboxed command
    does (bubblewrap's way would signal only what runs below the shell)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    tool = RunCommandTool()
    tool.grace_s = 5.0
    line = "trap 'echo stopped-by-TERM; exit 3' TERM; sleep 30 & wait"
    result = await tool.run({"command": line, "timeout_s": 1}, ToolContext(ws, "s", "w", "c"))
    assert result.data["timed_out"] is True
    assert "stopped-by-TERM" in result.output
