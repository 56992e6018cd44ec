"""How long a background task takes to start, to print, to be found serving, and to stop.

Through the whole stack, as the window starts a task: a real ``App`` on a fresh data folder
(SQLite in WAL mode, the record of a durable task written before the command is released), the
real wrapper provider (``bash``, in bubblewrap where the machine has it), the engine facade.
Measured per task, N times:

- *launch*: ``Engine.start_background`` returns (identity captured, record saved, released);
- *first output*: from the call until the command's first line is in its log;
- *URL*: for ``python -m http.server 0``, from the call until the runtime published its URL;
- *stop*: ``Engine.stop_background`` of a running ``sleep`` (SIGTERM, identity confirmed gone).

Run: python -m bench.background_launch [N]   (FXDESK_BENCH_UNSANDBOXED=1: without bubblewrap,
as in unrestricted mode)
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.scripted import ScriptedProvider

SERVER = f"{sys.executable} -m http.server 0 --bind 127.0.0.1"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _row(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"| {name} | {statistics.median(ms):.1f} | {_p(ms, 0.99):.1f} | {min(ms):.1f} | "
        f"{max(ms):.1f} |"
    )


async def _wait(condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(30):
        while not condition():  # noqa: ASYNC110 - a file and a snapshot: no event to await
            await asyncio.sleep(0.001)


async def main(n: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="fxdesk-bench-"))
    project = root / "project"
    project.mkdir()
    app = App(DataPaths(root / "data", "bench"), providers=FixedResolver(ScriptedProvider([])))
    await app.start()
    engine = app.engine
    mode = PermissionMode.UNRESTRICTED if os.environ.get("FXDESK_BENCH_UNSANDBOXED") else None
    session = await engine.create_session(project, start=False)
    if mode is not None:
        await engine.profiles.set_unrestricted_enabled(True)
        session = await engine.configure(session.id, permission_mode=mode)
    launch, first, url, stop = [], [], [], []
    try:
        for _ in range(n):
            began = time.perf_counter()
            task = await engine.start_background(session.id, "echo ready; sleep 600")
            launch.append(time.perf_counter() - began)
            log = Path(task.log_path)
            await _wait(lambda log=log: log.exists() and b"ready" in log.read_bytes())
            first.append(time.perf_counter() - began)
            began = time.perf_counter()
            await engine.stop_background(task.stable_id)
            stop.append(time.perf_counter() - began)
        for _ in range(max(1, n // 4)):
            began = time.perf_counter()
            task = await engine.start_background(session.id, SERVER, expect_url=True)
            ref = task.stable_id
            await _wait(lambda ref=ref: engine.background_task(ref).url is not None)
            url.append(time.perf_counter() - began)
            await engine.stop_background(ref)
        sandboxed = "unsandboxed" if mode is not None else "sandboxed (bubblewrap if available)"
        print(f"N={n}, {sandboxed}, ms")
        print("| step | median | p99 | min | max |")
        print("|---|---|---|---|---|")
        print(_row("start_background returns", launch))
        print(_row("first output in the log", first))
        print(_row(f"http.server URL published (N={len(url)})", url))
        print(_row("stop (SIGTERM, gone confirmed)", stop))
    finally:
        await app.stop()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
