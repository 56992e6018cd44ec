"""A tiny MCP server built with the official SDK, run as a real child process by the tests.

``python tiny_server.py stdio`` serves over stdin/stdout; ``python tiny_server.py http PORTFILE``
serves streamable HTTP on a free local port and writes that port to PORTFILE once it listens.
It writes its pid to ``$TINY_PID_FILE`` (when set) so a test can kill it mid-turn, and prints a
line to stderr at start so the server log has something to show.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("tiny")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def hang(seconds: float = 600.0) -> str:
    """Wait (for a test that kills the server while a call runs)."""
    marker = os.environ.get("TINY_HANG_FILE")
    if marker:
        Path(marker).write_text(str(os.getpid()))
    time.sleep(seconds)
    return "woke up"


def main() -> None:
    pid_file = os.environ.get("TINY_PID_FILE")
    if pid_file:
        with open(pid_file, "a") as out:
            out.write(f"{os.getpid()}\n")
    print(f"tiny MCP server starting, pid {os.getpid()}", file=sys.stderr, flush=True)
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    srv = uvicorn.Server(config)
    Path(sys.argv[2] + ".tmp").write_text(str(port))
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
    srv.run(sockets=[sock])


if __name__ == "__main__":
    main()
