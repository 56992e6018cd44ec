"""The seccomp filter of every sandboxed command: no Unix socket of its own, so none of the
host's sockets can be reached, abstract ones (X11's, D-Bus's: with the network on) nor socket
files the sandbox shows (``~/.docker/desktop/docker.sock``: with the network on or off);
socketpair and IP still work.

End to end through run_command with the real bubblewrap; the filter's decisions on the other
architecture (aarch64) and for 32-bit callers by a small classic-BPF interpreter, since this
machine can run neither.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.tools.base import ToolContext, ToolResult
from fxdesk.tools.sandbox_seccomp import filter_for
from fxdesk.tools.shell import RunCommandTool

ALLOW, EPERM, KILL = 0x7FFF0000, 0x00050001, 0x80000000
X86_64, AARCH64, I386, ARM = 0xC000003E, 0xC00000B7, 0x40000003, 0x40000028
AF_UNIX, AF_INET = 1, 2


@pytest.fixture
def workspace() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-seccomp-", dir="/var/tmp")).resolve()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def abstract_listener() -> Iterator[tuple[str, socket.socket]]:
    """A host program's abstract socket, as X11's ``@/tmp/.X11-unix/X0``."""
    name = f"fxdesk-test-{secrets.token_hex(6)}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)
    listener.listen(8)
    listener.setblocking(False)
    yield name, listener
    listener.close()


async def run(workspace: Path, script: str, *, network: bool) -> ToolResult:
    ctx = ToolContext(workspace, "s", "w", "c", network=network)
    line = f"python3 -c '{script}'"
    result = await RunCommandTool().run({"command": line, "timeout_s": 60}, ctx)
    assert result.data.get("sandboxed") is True, result.output
    return result


CONNECT = """
import socket
try:
    socket.socket(socket.AF_UNIX).connect("\\0{name}")
    print("connected")
except OSError as e:
    print("refused:", e)
"""


def _pending(listener: socket.socket) -> bool:
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return False
    return True


async def test_with_the_network_no_abstract_socket_of_the_host_is_reachable(
    workspace: Path, abstract_listener: tuple[str, socket.socket]
) -> None:
    name, listener = abstract_listener
    result = await run(workspace, CONNECT.format(name=name), network=True)
    assert "refused: [Errno 1] Operation not permitted" in result.output
    assert not _pending(listener)


async def test_with_the_network_socketpair_ip_and_io_uring_as_measured(workspace: Path) -> None:
    """What keeps working (socketpair: Node, cargo, subprocess pipes; IP sockets), and io_uring,
    which would make a socket without the socket call, refused."""
    script = """
import ctypes, os, socket
a, b = socket.socketpair()
a.sendall(b"ping")
print("socketpair", b.recv(4).decode())
server = socket.socket(socket.AF_INET)
server.bind(("127.0.0.1", 0))
server.listen()
client = socket.create_connection(server.getsockname())
print("tcp", server.accept()[0].getsockname() == client.getpeername())
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 1, params)
print("io_uring", fd, os.strerror(ctypes.get_errno()) if fd < 0 else "made")
"""
    result = await run(workspace, script, network=True)
    assert "socketpair ping" in result.output
    assert "tcp True" in result.output
    assert "io_uring -1 Operation not permitted" in result.output


@pytest.fixture
def path_listener() -> Iterator[tuple[str, socket.socket]]:
    """A host program's socket file outside ``/run`` and ``/tmp`` (Docker Desktop's
    ``~/.docker/desktop/docker.sock``, 1Password's agent): the sandbox shows it, read only."""
    folder = Path(tempfile.mkdtemp(prefix="fxdesk-sock-", dir="/var/tmp"))
    path = str(folder / "docker.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    listener.setblocking(False)
    yield path, listener
    listener.close()
    shutil.rmtree(folder, ignore_errors=True)


CONNECT_PATH = """
import socket
try:
    socket.socket(socket.AF_UNIX).connect("{path}")
    print("connected")
except OSError as e:
    print("refused:", e)
"""


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
async def test_no_socket_file_of_the_host_is_reachable(
    workspace: Path, path_listener: tuple[str, socket.socket], network: bool
) -> None:
    """The hole the attack suite found: with the network off the command had a network
    namespace of its own, but a socket bound at a path is reached through the file system
    (a read-only mount does not stop connect), so the filter applies either way."""
    path, listener = path_listener
    result = await run(workspace, CONNECT_PATH.format(path=path), network=network)
    assert "refused: [Errno 1] Operation not permitted" in result.output
    assert not _pending(listener)


async def test_without_the_network_socketpair_and_pools_work_own_unix_sockets_do_not(
    workspace: Path,
) -> None:
    """What the filter costs with the network off, as measured: pipes between processes and
    multiprocessing's fork and spawn keep working; a Unix socket of the command's own (Python's
    forkserver, a server on a socket file) is refused like any other."""
    script = """
import multiprocessing, socket
a, b = socket.socketpair()
a.sendall(b"ping")
print("socketpair", b.recv(4).decode())
for method in ("fork", "spawn"):
    with multiprocessing.get_context(method).Pool(1) as pool:
        print(method, pool.map(abs, [-2]))
try:
    socket.socket(socket.AF_UNIX).bind("\\0own")
    print("own unix socket made")
except OSError as e:
    print("own unix socket refused:", e)
"""
    result = await run(workspace, script, network=False)
    assert "socketpair ping" in result.output
    assert "fork [2]" in result.output
    assert "spawn [2]" in result.output
    assert "own unix socket refused: [Errno 1] Operation not permitted" in result.output


def _decide(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """Classic BPF, the instructions the filter uses, run on one seccomp_data."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:
            accumulator = struct.unpack_from("=I", data, k)[0]
        elif op in (0x15, 0x35):
            taken = accumulator == k if op == 0x15 else accumulator >= k
            pc += jt if taken else jf
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"an instruction the filter should not use: {op:#x}")
        pc += 1


@pytest.mark.parametrize(
    ("machine", "arch", "socket_nr", "socketpair_nr", "foreign"),
    [("x86_64", X86_64, 41, 53, I386), ("aarch64", AARCH64, 198, 199, ARM)],
)
def test_the_filter_decides_per_architecture(
    machine: str, arch: int, socket_nr: int, socketpair_nr: int, foreign: int
) -> None:
    program = filter_for(machine)
    assert program is not None
    assert _decide(program, socket_nr, arch, AF_UNIX) == EPERM
    assert _decide(program, socket_nr, arch, AF_UNIX | 1 << 32) == EPERM  # high bits ignored
    assert _decide(program, socket_nr, arch, AF_INET) == ALLOW
    assert _decide(program, socketpair_nr, arch, AF_UNIX) == ALLOW
    for io_uring in (425, 426, 427):
        assert _decide(program, io_uring, arch) == EPERM
    assert _decide(program, 0, arch) == ALLOW  # read / io_setup: anything else
    # Another ABI: a 32-bit program's socketcall hides its arguments from any filter.
    assert _decide(program, 102, foreign, AF_UNIX) == KILL


def test_x32_calls_end_the_process_and_other_machines_get_no_filter() -> None:
    program = filter_for("x86_64")
    assert program is not None
    assert _decide(program, 0x40000000 + 41, X86_64, AF_UNIX) == KILL
    assert filter_for("riscv64") is None
