"""A real HTTP server on the host's loopback that records what it was asked: the target of
commands that need the network (the sandbox without the network has a loopback of its own, so
a request that arrives here proves the command had the host's network)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

GREETING = "hello from the host"


@dataclass
class Host:
    """The server's URL, and the paths it was asked for, in order."""

    url: str
    seen: list[str]


class _Recording(http.server.BaseHTTPRequestHandler):
    seen: list[str]

    def do_GET(self) -> None:
        self.seen.append(self.path)
        body = f"{GREETING}\n".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def serving() -> Iterator[Host]:
    """A recording server on 127.0.0.1 (a free port) for the length of the block."""
    seen: list[str] = []
    handler = type("Recording", (_Recording,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="host-server", daemon=True)
    thread.start()
    try:
        yield Host(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
