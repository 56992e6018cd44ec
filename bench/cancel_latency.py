"""How long a cancel takes to close a streaming HTTP call (against a local llmock server).

Starts ``llmock serve``, makes it stall a streamed answer, cancels the turn through the engine's
cancel token, and reports the time from the cancel to the model call having ended and its HTTP
stream being closed, for both SDK providers.

Run: python -m bench.cancel_latency [RUNS]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from fxdesk.domain.conversation import ChatMessage
from fxdesk.engine.cancel import Cancelled, CancelToken
from fxdesk.providers.anthropic_provider import AnthropicProvider
from fxdesk.providers.base import ModelRequest, Provider, collect
from fxdesk.providers.openai_compat import OpenAICompatProvider


def _post(base: str, path: str, body: object) -> None:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).read()


async def once(provider: Provider, kind: str, base: str) -> float:
    _post(
        base,
        "/_llmock/scenario",
        {
            "behaviors": [
                {
                    "type": "stream_fault",
                    "kind": "stall",
                    "after_chunks": 1,
                    "stall_seconds": 30,
                    "match": {"provider": kind},
                }
            ]
        },
    )
    token = CancelToken()
    request = ModelRequest(model="m", messages=(ChatMessage("user", "hi"),))
    call = asyncio.ensure_future(token.race(collect(provider.stream(request))))
    await asyncio.sleep(0.5)  # streaming, then stalled
    began = time.perf_counter()
    token.cancel("bench")
    with contextlib.suppress(Cancelled):
        await call
    return (time.perf_counter() - began) * 1000


async def measure(base: str, runs: int) -> dict[str, list[float]]:
    providers: dict[str, Provider] = {
        "openai": OpenAICompatProvider(base_url=f"{base}/v1", api_key="k"),
        "anthropic": AnthropicProvider(base_url=f"{base}/anthropic", api_key="k"),
    }
    return {kind: [await once(p, kind, base) for _ in range(runs)] for kind, p in providers.items()}


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "llmock"),
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
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/_llmock/requests", timeout=1).read()
                break
            except OSError:
                time.sleep(0.1)
        results = asyncio.run(measure(base, runs))
    finally:
        server.terminate()
        server.wait(10)
    for kind, times in results.items():
        print(
            f"{kind:9}: cancel to closed stream, {runs} runs: median "
            f"{statistics.median(times):.1f} ms, worst {max(times):.1f} ms"
        )


if __name__ == "__main__":
    main()
