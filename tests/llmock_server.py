"""A real local fault server (llmock), one per test session, for provider and CLI tests."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LLMock:
    """Drives llmock through its control API; every call is plain HTTP."""

    def __init__(self, base: str) -> None:
        self.base = base

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def scenario(self, *behaviors: dict[str, Any]) -> None:
        self._call("POST", "/_llmock/scenario", {"behaviors": list(behaviors)})

    def requests(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/_llmock/requests")["requests"])

    def reset(self) -> None:
        self._call("POST", "/_llmock/reset", {})


@pytest.fixture(scope="session")
def llmock_server() -> Iterator[LLMock]:
    port = free_port()
    binary = Path(sys.executable).parent / "llmock"
    process = subprocess.Popen(
        [
            str(binary),
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--tool-mode",
            "off",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = LLMock(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 60
    while True:
        try:
            server.requests()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"llmock did not start: {process.communicate()[1]}") from None
            time.sleep(0.1)
    try:
        yield server
    finally:
        process.terminate()
        process.wait(30)


@pytest.fixture
def llmock(llmock_server: LLMock) -> LLMock:
    llmock_server.reset()
    return llmock_server
