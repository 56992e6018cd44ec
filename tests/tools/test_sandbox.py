"""The sandbox holds, end to end through run_command with the real bubblewrap.

Every protection is a check (an async function that raises AssertionError when the protection
failed); each check runs twice: as fxdesk builds the sandbox (it must pass), and with the one
hole it guards planted in the bubblewrap arguments (it must fail). So a check that could never
fail shows up here.

The scene lives under /var/tmp, not /tmp: the sandbox's /tmp is private, so anything under the
host's /tmp is out of its sight whatever the rest of the policy says, and would prove nothing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from fxdesk.tools import sandbox, shell
from fxdesk.tools.base import ToolContext, ToolResult
from fxdesk.tools.sandbox_probe import sandbox_status
from fxdesk.tools.shell import RunCommandTool

ORIGINAL = "as the person left it\n"


@dataclass
class Scene:
    root: Path
    workspace: Path
    outside: Path
    home: Path
    data: Path
    host_tmp: Path  # under the host's /tmp
    ssh_secret: str
    data_secret: str
    env_secret: str
    ctx: ToolContext
    tool: RunCommandTool

    async def run(self, command: str, **changes: object) -> ToolResult:
        ctx = replace(self.ctx, **changes)  # type: ignore[arg-type]
        result = await self.tool.run({"command": command, "timeout_s": 30}, ctx)
        assert result.data.get("sandboxed") is True, result.output
        return result


@pytest.fixture
def scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Scene]:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-sandbox-test-", dir="/var/tmp")).resolve()
    workspace, outside, home, data = (root / n for n in ("ws", "outside", "home", "data"))
    for folder in (workspace / ".git", workspace / ".fxdesk", outside, home / ".ssh", data):
        folder.mkdir(parents=True)
    (workspace / ".git" / "config").write_text(ORIGINAL)
    (workspace / ".fxdesk" / "x").write_text(ORIGINAL)
    (outside / "file").write_text(ORIGINAL)
    (home / ".bashrc").write_text(ORIGINAL)
    ssh_secret, data_secret, env_secret = (secrets.token_hex(16) for _ in range(3))
    (home / ".ssh" / f"key-{ssh_secret[:8]}").write_text(ssh_secret)
    (data / "fxdesk.sqlite3").write_text(data_secret)
    (tmp_path / "file").write_text(ORIGINAL)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("FXDESK_TEST_SECRET", env_secret)  # fxdesk's own environment
    monkeypatch.setenv("GITHUB_TOKEN", env_secret)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path=/run/user/0/bus,{env_secret}")
    tool = RunCommandTool()
    tool.grace_s = 0.3
    tool.drain_s = 0.3
    ctx = ToolContext(workspace, "s", "w", "c", data_dir=data)
    yield Scene(
        root, workspace, outside, home, data, tmp_path, ssh_secret, data_secret, env_secret,
        ctx, tool,
    )  # fmt: skip
    shutil.rmtree(root, ignore_errors=True)


def snapshot(*folders: Path) -> dict[str, str]:
    """Every entry under ``folders`` with its content (or link target)."""
    found = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_symlink():
                found[str(path)] = "-> " + os.readlink(path)
            elif path.is_file():
                found[str(path)] = path.read_text(errors="replace")
            else:
                found[str(path)] = "dir"
    return found


# --- the checks ------------------------------------------------------------------------------


def outside_of(s: Scene) -> dict[str, str]:
    return snapshot(s.outside, s.home, s.data, s.host_tmp, s.workspace / ".git")


async def write_outside_fails(line: str, s: Scene) -> None:
    """``line`` (formatted with the scene) tries to write outside the workspace."""
    (s.workspace / "link").symlink_to(s.outside)
    before = outside_of(s)
    result = await s.run(line.format(s=s))
    assert outside_of(s) == before, result.output
    assert any(
        refusal in result.output
        for refusal in ("Read-only file system", "No such file or directory")
    ), result.output


WRITES_OUTSIDE = {
    "absolute path": "echo pwned > {s.outside}/file",
    "home": "echo pwned >> ~/.bashrc",
    "parent": "echo pwned > ../outside/file",
    "symlink out": "echo pwned > link/file",
    "cd then touch": "cd {s.outside} && touch made",
    "tee": "echo pwned | tee {s.outside}/file",
    "python open": "python3 -c \"open('{s.outside}/file', 'w').write('pwned')\"",
    "expansion that runs": "for y in '$(touch {s.outside}/made)'; do <<< ${{y@P}}; done",
    "PWD changed by a loop": "for PWD in {s.outside}; do echo pwned > ~+/file; done",
    "the host's /tmp": "cd {s.host_tmp} && echo pwned > file",
}


def content(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


async def protected_paths_read_only(s: Scene) -> None:
    result = await s.run(
        "cat .git/config .fxdesk/x; git config -f .git/config core.fsmonitor 'touch pwned'; "
        "echo pwned > .fxdesk/x; mv .git moved; rm -rf .fxdesk; echo pwned >> .git/config"
    )
    assert result.output.startswith(ORIGINAL * 2), result.output  # readable
    assert content(s.workspace / ".git" / "config") == ORIGINAL, result.output
    assert content(s.workspace / ".fxdesk" / "x") == ORIGINAL
    assert not (s.workspace / "moved").exists()
    assert "Read-only file system" in result.output


async def secrets_unreadable(s: Scene) -> None:
    result = await s.run(
        f"cat ~/.ssh/* {s.data}/fxdesk.sqlite3; ls -la ~/.ssh {s.data}; "
        f"grep -r . ~/.ssh {s.data}; < {s.data}/fxdesk.sqlite3; head -c 99 ~/.ssh/*; echo end"
    )
    assert result.output.endswith("end\n[exit code 0]"), result.output
    assert s.ssh_secret not in result.output
    assert s.data_secret not in result.output
    assert s.ssh_secret[:8] not in result.output  # not even the names


async def unmounting_does_not_reveal(s: Scene) -> None:
    result = await s.run(f"umount ~/.ssh; umount {s.data}; cat ~/.ssh/* {s.data}/*")
    assert s.ssh_secret not in result.output
    assert s.data_secret not in result.output


async def no_capabilities(s: Scene) -> None:
    result = await s.run("grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status")
    assert (
        result.output
        == "".join(f"Cap{kind}:\t0000000000000000\n" for kind in ("Prm", "Eff", "Bnd"))
        + "[exit code 0]"
    ), result.output


async def no_user_namespaces(s: Scene) -> None:
    """A user namespace of its own would give it every capability there (over a kernel's
    worth of less-trodden code)."""
    result = await s.run("unshare --user true && echo made one")
    assert "made one" not in result.output, result.output


async def other_processes_unreadable(s: Scene) -> None:
    result = await s.run(
        "cat /proc/$PPID/environ; for p in /proc/[0-9]*; do cat $p/environ; done; "
        "echo; echo visible: /proc/[0-9]*"
    )
    assert s.env_secret not in result.output
    assert "visible: /proc/1 /proc/2\n" in result.output  # its own namespace: init, bash


async def environment_allow_listed(s: Scene) -> None:
    result = await s.run("env")
    assert s.env_secret not in result.output
    for name in ("GITHUB_TOKEN", "DBUS_SESSION_BUS_ADDRESS", "FXDESK_TEST_SECRET"):
        assert f"{name}=" not in result.output
    assert f"HOME={s.home}" in result.output
    assert "TMPDIR=/tmp" in result.output


@contextlib.contextmanager
def server(host: str) -> Iterator[int]:
    """A TCP server on the host that answers every connection with "hello"."""
    listener = socket.create_server((host, 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"hello\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def own_address() -> str:
    """This machine's non-loopback address ('' when it has none)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # UDP: no packet is sent, only a route chosen
        return str(probe.getsockname()[0])
    except OSError:
        return ""
    finally:
        probe.close()


def connect(host: str, port: int) -> str:
    return f"timeout 5 bash -c 'exec 3<>/dev/tcp/{host}/{port} && head -1 <&3' && echo reached"


async def network_off(s: Scene) -> None:
    """Off: neither the host's loopback nor its other addresses are reachable; the sandbox's
    own loopback works (a server started inside the command answers)."""
    address = own_address() or "192.0.2.1"
    with server("0.0.0.0") as port:
        result = await s.run(f"{connect('127.0.0.1', port)}; {connect(address, port)}")
    assert "hello" not in result.output and "reached" not in result.output, result.output
    inside = await s.run(
        "python3 -c \"import socket; s = socket.create_server(('127.0.0.1', 0)); "
        "socket.create_connection(s.getsockname(), timeout=5); print('loopback works')\""
    )
    assert inside.output.startswith("loopback works"), inside.output


async def network_on_when_allowed(s: Scene) -> None:
    with server("127.0.0.1") as port:
        result = await s.run(connect("127.0.0.1", port), network=True)
    assert result.output.startswith("hello\nreached"), result.output


async def workspace_and_temp_writable(s: Scene) -> None:
    temp = s.data / "sandbox-tmp" / "s"
    first = await s.run("echo made > made && echo kept > /tmp/kept && cat made", temp_dir=temp)
    assert first.output == "made\n[exit code 0]", first.output
    assert (s.workspace / "made").read_text() == "made\n"
    second = await s.run("cat /tmp/kept", temp_dir=temp)  # kept between the session's commands
    assert second.output == "kept\n[exit code 0]", second.output
    assert (temp / "kept").read_text() == "kept\n"
    assert not Path("/tmp/kept").exists()


async def approved_paths_writable(s: Scene) -> None:
    grants = (s.outside / "file", s.outside / "new.txt")
    result = await s.run(
        f"echo approved > {s.outside}/file && echo new > {s.outside}/new.txt && echo done",
        write_grants=grants,
    )
    assert result.output == "done\n[exit code 0]", result.output
    assert (s.outside / "file").read_text() == "approved\n"
    assert (s.outside / "new.txt").read_text() == "new\n"
    # Only the approved new file is bound, not its folder: a write the approval did not name,
    # in the same line, to a sibling (new or existing) is refused.
    (s.outside / "sibling").write_text(ORIGINAL)
    grant = (s.outside / "fresh.txt",)
    line = f"echo ok > {s.outside}/fresh.txt; echo x > {s.outside}/sibling; echo y > {s.outside}/n2"
    sibling = await s.run(line, write_grants=grant)
    assert (s.outside / "fresh.txt").read_text() == "ok\n"
    assert (s.outside / "sibling").read_text() == ORIGINAL
    assert not (s.outside / "n2").exists()
    assert "Read-only file system" in sibling.output, sibling.output
    # The grant is for those paths only: the home folder stays read-only.
    home = await s.run("echo pwned >> ~/.bashrc", write_grants=grants)
    assert "Read-only file system" in home.output
    assert (s.home / ".bashrc").read_text() == ORIGINAL


async def workspace_writable_paths_writable(s: Scene) -> None:
    """The workspace's writable paths (Settings → Permissions): a missing cache folder under
    the home folder is made, private, and written; the rest of the home folder stays
    read-only."""
    (s.outside / "cache").mkdir()
    result = await s.run(
        f"echo cached > ~/.cache/tool/entry && echo kept > {s.outside}/cache/entry && echo done; "
        "echo pwned >> ~/.bashrc",
        extra_writable=("~/.cache/tool", str(s.outside / "cache")),
    )
    assert result.output.startswith("done\n"), result.output
    assert (s.home / ".cache" / "tool" / "entry").read_text() == "cached\n"
    assert (s.home / ".cache" / "tool").stat().st_mode & 0o777 == 0o700
    assert (s.outside / "cache" / "entry").read_text() == "kept\n"
    assert "Read-only file system" in result.output
    assert (s.home / ".bashrc").read_text() == ORIGINAL


async def protected_inside_a_writable_path_read_only(s: Scene) -> None:
    """A repository in a folder the workspace may write keeps its .git read-only."""
    (s.outside / ".git").mkdir()
    (s.outside / ".git" / "config").write_text(ORIGINAL)
    result = await s.run(
        f"cd {s.outside} && echo ok > out && echo pwned >> .git/config; echo end",
        extra_writable=(str(s.outside),),
    )
    assert (s.outside / "out").read_text() == "ok\n", result.output
    assert content(s.outside / ".git" / "config") == ORIGINAL, result.output


async def hidden_listed_as_writable_stays_hidden(s: Scene) -> None:
    """Hidden paths listed among the workspace's writable paths: one inside ~/.ssh, a missing
    ~/.gnupg, and ~/.config (which holds ~/.config/gh, not made yet) are refused; nothing of
    them is read, made or written."""
    inner = s.home / ".ssh" / "inner"
    inner.mkdir()
    (inner / "id").write_text(s.ssh_secret)
    before = snapshot(s.home)
    result = await s.run(
        "cat ~/.ssh/inner/id; ls ~/.ssh/inner; echo pwned > ~/.ssh/inner/id; "
        "mkdir -p ~/.gnupg ~/.config/gh && echo pwned > ~/.gnupg/x; "
        "echo 'oauth_token: pwned' > ~/.config/gh/hosts.yml; echo end",
        extra_writable=("~/.ssh/inner", "~/.gnupg", "~/.config", "~/.ssh"),
    )
    assert s.ssh_secret not in result.output, result.output
    assert snapshot(s.home) == before, result.output
    assert not (s.home / ".gnupg").exists()
    assert not (s.home / ".config").exists()


async def a_link_a_command_made_is_not_followed(s: Scene) -> None:
    """A command makes a link in a writable folder (~/.cache/pip in ~/.cache, pointing at a
    folder the person runs things from); when the person then lists ~/.cache/pip, the next
    command does not get that folder writable."""
    made = await s.run(f"ln -s {s.outside} ~/.cache/pip", extra_writable=("~/.cache",))
    assert (s.home / ".cache" / "pip").is_symlink(), made.output
    result = await s.run(
        "echo pwned > ~/.cache/pip/file", extra_writable=("~/.cache", "~/.cache/pip")
    )
    assert content(s.outside / "file") == ORIGINAL, result.output


async def run_is_empty(s: Scene) -> None:
    """/run holds the buses, the session's runtime folder and daemons' sockets: only what name
    resolution needs is bound again."""
    kept = {path.parts[2] for path in sandbox.policy_for(s.workspace).kept}
    result = await s.run("ls -A /run")
    shown = set(result.output.splitlines()[:-1]) - {"(no output)"}
    assert shown <= kept, result.output


# --- the holes -------------------------------------------------------------------------------

Hole = Callable[[sandbox.SandboxPolicy, list[str]], list[str]]


def drop(args: list[str], *sequence: str) -> list[str]:
    """``args`` without each occurrence of ``sequence``."""
    found, size, i = [], len(sequence), 0
    while i < len(args):
        if tuple(args[i : i + size]) == sequence:
            i += size
            continue
        found.append(args[i])
        i += 1
    return found


def root_writable(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    args = drop(args, "--tmpfs", "/tmp")
    start = args.index("--ro-bind")
    return [*args[:start], "--bind", *args[start + 1 :]]


def not_hidden(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    for path in map(str, policy.hidden):
        args = drop(args, "--perms", "0500", "--tmpfs", path, "--remount-ro", path)
        args = drop(args, "--ro-bind", "/dev/null", path)
    return args


def not_protected(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    for path in map(str, policy.protected):
        args = drop(args, "--ro-bind", path, path)
    return args


def capabilities_kept(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    return drop(args, "--cap-drop", "ALL")


def mounts_unlocked(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    """Capabilities kept, and no nested user namespace: bubblewrap's --disable-userns runs the
    command one user namespace down, where the mounts above are locked, so either protection
    alone keeps them in place."""
    return drop(capabilities_kept(policy, args), "--disable-userns")


def user_namespaces_allowed(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    return drop(args, "--disable-userns")


def host_pids(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    args = drop(args, "--proc", "/proc")
    start = args.index("--unshare-all")
    namespaces = ["--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    return [*args[:start], *namespaces, *args[start + 1 :]]


def host_network(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    start = args.index("--unshare-all") + 1  # bubblewrap reads them in order
    return [*args[:start], "--share-net", *args[start:]]


def no_network(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    return drop(args, "--share-net")


def grants_ignored(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    for path in map(str, policy.grants):
        args = drop(args, "--bind", path, path)
    return args


def nothing_writable(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    args = drop(args, "--bind", str(policy.workspace), str(policy.workspace))
    return drop(args, "--bind", str(policy.temp_dir), "/tmp")


def host_run(policy: sandbox.SandboxPolicy, args: list[str]) -> list[str]:
    return drop(args, "--tmpfs", "/run")


def hidden_made_writable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace's writable paths taken as listed, hidden or not."""
    monkeypatch.setattr(sandbox, "_not_writable", lambda *args: "")


def links_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace's writable paths resolved wherever a link leads, whoever made it."""
    monkeypatch.setattr(sandbox, "_link_inside", lambda *args: None)


def full_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shell.command_policy

    def leaky(ctx: ToolContext) -> sandbox.SandboxPolicy:
        return replace(real(ctx), environment=tuple(os.environ.items()))

    monkeypatch.setattr(shell, "command_policy", leaky)


Check = Callable[[Scene], Awaitable[None]]
CHECKS: dict[str, tuple[Check, Hole | Callable[[pytest.MonkeyPatch], None]]] = {
    **{
        f"write outside: {name}": (functools.partial(write_outside_fails, line), root_writable)
        for name, line in WRITES_OUTSIDE.items()
    },
    "protected paths read-only": (protected_paths_read_only, not_protected),
    "secrets unreadable": (secrets_unreadable, not_hidden),
    "unmounting does not reveal": (unmounting_does_not_reveal, mounts_unlocked),
    "no capabilities": (no_capabilities, capabilities_kept),
    "no user namespaces": (no_user_namespaces, user_namespaces_allowed),
    "other processes unreadable": (other_processes_unreadable, host_pids),
    "environment allow-listed": (environment_allow_listed, full_environment),
    "network off": (network_off, host_network),
    "network on when allowed": (network_on_when_allowed, no_network),
    "workspace and temp writable": (workspace_and_temp_writable, nothing_writable),
    "approved paths writable": (approved_paths_writable, grants_ignored),
    "/run is empty": (run_is_empty, host_run),
    "workspace writable paths writable": (workspace_writable_paths_writable, grants_ignored),
    "protected inside a writable path read-only": (
        protected_inside_a_writable_path_read_only,
        not_protected,
    ),
    "hidden listed as writable stays hidden": (
        hidden_listed_as_writable_stays_hidden,
        hidden_made_writable,
    ),
    "a link a command made is not followed": (
        a_link_a_command_made_is_not_followed,
        links_followed,
    ),
}
POLICY_HOLES = (
    full_environment,
    hidden_made_writable,
    links_followed,
)  # planted in the policy, not bubblewrap


def test_the_sandbox_is_available_here() -> None:
    """scripts/_setup.sh installs bubblewrap: a machine without it fails here, loudly, rather
    than run every command unconfined."""
    status = sandbox_status()
    assert status.available, f"{status.reason}; {status.fix}"


@pytest.mark.parametrize("name", CHECKS)
async def test_the_sandbox_holds(name: str, scene: Scene) -> None:
    check, _ = CHECKS[name]
    await check(scene)


@pytest.mark.parametrize("name", CHECKS)
async def test_a_planted_hole_is_caught(
    name: str, scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    check, hole = CHECKS[name]
    if hole is mounts_unlocked and os.geteuid() != 0:
        pytest.skip("without --cap-drop only root keeps capabilities in the sandbox")
    if hole in POLICY_HOLES:
        hole(monkeypatch)  # type: ignore[call-arg]
    else:
        real = shell.bwrap_arguments
        plant: Hole = hole  # type: ignore[assignment]

        def holed(policy: sandbox.SandboxPolicy, *args: object, **kwargs: object) -> list[str]:
            return plant(policy, real(policy, *args, **kwargs))  # type: ignore[arg-type]

        monkeypatch.setattr(shell, "bwrap_arguments", holed)
    with pytest.raises(AssertionError):
        await check(scene)


# --- the workspace's writable paths, as the policy takes them ---------------------------------


def test_workspace_writable_paths_refused_each_with_why(scene: Scene) -> None:
    """What cannot be made writable is left out of the binds and named in ``refused``; what can
    is resolved (a link is bound where it leads) and a missing folder under home is made."""
    (s := scene).home.joinpath(".cache").mkdir()
    (s.home / "cache-link").symlink_to(s.outside)
    (s.home / "into-ssh").symlink_to(s.home / ".ssh")
    (s.workspace / "out-link").symlink_to(s.outside)  # a command could have made it
    (s.outside / "sub").mkdir()
    policy = sandbox.policy_for(
        s.workspace,
        data_dir=s.data,
        extra_writable=(
            "~/.cache/new/deeper",  # made
            "~/cache-link",  # bound where it leads
            f"{s.workspace}/sub",  # writable already
            "~/into-ssh",  # a link into a hidden folder
            str(s.data / "logs"),  # inside the data folder
            str(s.root),  # holds the home folder's secrets and the data folder
            f"{s.workspace}/.git",  # protected
            "/tmp/cache",  # the sandbox's own /tmp
            f"{s.outside}/missing",  # missing, outside the home folder
            f"{s.workspace}/out-link/sub",  # through a link in the workspace
        ),
    )
    assert set(policy.grants) == {s.home / ".cache" / "new" / "deeper", s.outside}
    assert (s.home / ".cache" / "new").stat().st_mode & 0o777 == 0o700
    assert [line.split(":")[0] for line in policy.refused] == [
        "~/into-ssh",
        str(s.data / "logs"),
        str(s.root),
        f"{s.workspace}/.git",
        "/tmp/cache",
        f"{s.outside}/missing",
        f"{s.workspace}/out-link/sub",
    ]
    reasons = "\n".join(policy.refused)
    assert "~/.ssh is hidden (SSH keys)" in reasons
    assert "the fxdesk data folder" in reasons and "is hidden" in reasons
    assert "it holds ~/.ssh (SSH keys), which stays hidden" in reasons
    assert ".git is protected" in reasons
    assert "the sandbox has its own /tmp" in reasons
    assert "does not exist (only folders under the home folder are made)" in reasons
    assert not (s.outside / "missing").exists()
    assert f"it leads through {s.workspace}/out-link, a link in a folder commands can write" in (
        reasons
    )
