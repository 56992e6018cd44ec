"""Who holds a TCP port: for "port 3000 is already taken by PID 1234 (node)".

Only ever read: fxdesk never signals a process it finds here (it did not start it, and has no
token for it). A server that double-forked out of its task's process group shows up here too,
which is how the person learns what still holds the port after the task ended.

The system-wide table (``psutil.net_connections``) names the owner of every socket for root,
and only of the person's own processes otherwise (elsewhere than Linux it may refuse outright);
a socket whose owner it cannot name is looked for process by process among those fxdesk may
inspect. A listener that belongs to another user stays without a PID: it is reported as held
by a process fxdesk cannot see. Blocking (a scan of every process): call it off the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil  # type: ignore[import-untyped]


@dataclass(frozen=True)
class PortHolder:
    """A process listening on the port (``pid`` None: not one fxdesk may look at)."""

    address: str
    pid: int | None
    name: str = ""

    def text(self) -> str:
        if self.pid is None:
            return "a process fxdesk cannot see (another user's?)"
        return f"PID {self.pid} ({self.name})" if self.name else f"PID {self.pid}"


def port_holders(port: int) -> list[PortHolder]:
    """The processes listening on TCP ``port`` (any address, IPv4 or IPv6), each once."""
    if not 0 < port < 65536:
        raise ValueError("a TCP port is 1 to 65535")
    try:
        found = [
            (conn.laddr.ip, conn.pid)
            for conn in psutil.net_connections(kind="tcp")
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
        ]
    except (psutil.AccessDenied, PermissionError):
        found = list(_owners_by_scan(port).items())
    if any(pid is None for _, pid in found):
        owners = _owners_by_scan(port)
        found = [(ip, pid if pid is not None else owners.get(ip)) for ip, pid in found]
    holders: dict[tuple[str, int | None], PortHolder] = {}
    for ip, pid in found:
        holders.setdefault((ip, pid), PortHolder(ip, pid, _name(pid)))
    return list(holders.values())


def port_taken_message(port: int) -> str | None:
    """``port N is already taken by PID P (name)``, or None when nothing listens on it."""
    holders = port_holders(port)
    if not holders:
        return None
    named = list(dict.fromkeys(holder.text() for holder in holders))
    return f"port {port} is already taken by {' and '.join(named)}"


def _owners_by_scan(port: int) -> dict[str, int]:
    """Listening address -> PID, among the processes fxdesk may inspect."""
    owners: dict[str, int] = {}
    for proc in psutil.process_iter():
        try:
            connections = proc.net_connections(kind="tcp")
        except psutil.Error:
            continue
        for conn in connections:
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                owners.setdefault(conn.laddr.ip, proc.pid)
    return owners


def _name(pid: int | None) -> str:
    if pid is None:
        return ""
    try:
        return str(psutil.Process(pid).name())
    except psutil.Error:
        return ""
