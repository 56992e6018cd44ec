"""Who holds a port, with real listening sockets."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import psutil  # type: ignore[import-untyped]
import pytest

from fxdesk.tools.background import ports

LISTENER = """
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""


@pytest.fixture
def listener() -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A child process listening on a loopback port: (the child, the port)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LISTENER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    yield proc, int(proc.stdout.readline())
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait(20)
    proc.stdout.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_process_listening_on_the_port_is_named(
    listener: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = listener
    name = psutil.Process(proc.pid).name()
    assert ports.port_holders(port) == [ports.PortHolder("127.0.0.1", proc.pid, name)]
    assert ports.port_taken_message(port) == (
        f"port {port} is already taken by PID {proc.pid} ({name})"
    )
    assert proc.poll() is None  # looked at, never touched


def test_a_free_port_has_no_holder() -> None:
    port = free_port()
    assert ports.port_holders(port) == []
    assert ports.port_taken_message(port) is None


def test_a_connected_socket_is_not_a_listener(
    listener: tuple[subprocess.Popen[str], int],
) -> None:
    proc, port = listener
    with socket.create_connection(("127.0.0.1", port)):
        holders = ports.port_holders(port)
    assert [holder.pid for holder in holders] == [proc.pid]


def test_without_the_system_table_each_process_is_looked_at(
    listener: tuple[subprocess.Popen[str], int], monkeypatch: pytest.MonkeyPatch
) -> None:
    proc, port = listener
    asked: list[str] = []

    def refused(kind: str) -> list[object]:
        asked.append(kind)
        raise psutil.AccessDenied()

    monkeypatch.setattr(psutil, "net_connections", refused)
    assert [holder.pid for holder in ports.port_holders(port)] == [proc.pid]
    assert asked == ["tcp"]


def test_a_holder_fxdesk_cannot_see_is_said_so() -> None:
    assert "cannot see" in ports.PortHolder("0.0.0.0", None).text()


@pytest.mark.parametrize("port", [0, 65536, -1])
def test_a_port_out_of_range_is_refused(port: int) -> None:
    with pytest.raises(ValueError, match="1 to 65535"):
        ports.port_holders(port)
