"""A task writes 200 MB of output, then its server banner; fxdesk watches and follows the log.

A child process writes build-log lines (some coloured, some with public links, a few with NUL
and invalid UTF-8 bytes) straight into a log file, as a background task's wrapper does, then a
Vite banner, and notes when it printed it. Meanwhile this process runs what fxdesk runs for
such a task: a ``UrlWatcher`` (the server URL) and a ``follow()`` reader (the dock's live view).
Printed: the time from banner to URL, this process's CPU time and RSS before, at peak and after,
and the event loop's worst stall (a 10 ms ticker).

Run: python -m bench.background_logs [MEGABYTES]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from fxdesk.engine.background.watchers import UrlWatcher
from fxdesk.tools.background.logs import follow

BANNER = "  \x1b[32m➜\x1b[39m  \x1b[1mLocal\x1b[22m:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m\n"

WRITER = r"""
import sys, time
megabytes, banner = int(sys.argv[1]), sys.argv[2]
lines = [
    b"\x1b[2m12:00:01\x1b[22m [build] transformed src/components/Widget%d.tsx (1234 bytes)\n",
    b"[build] see https://vitejs.dev/guide/troubleshooting.html#item-%d for details\n",
    b"[test] binary noise \x00\x00\xff\xfe in line %d\n",
] + [b"[build] compiled module %d of 99999 in 3 ms, cache hit, no changes\n"] * 97
block = b"".join(line % n for n, line in enumerate(lines))
block = block * (1024 * 1024 // len(block))
out = sys.stdout.buffer
began = time.monotonic()
written = 0
while written < megabytes * 1024 * 1024:
    out.write(block)
    written += len(block)
out.flush()
wrote = time.monotonic() - began
out.write(banner.encode())
out.flush()
sys.stderr.write(f"{time.monotonic()} {written} {wrote}\n")
sys.stderr.flush()
time.sleep(600)
"""


class Sampler:
    """RSS of this process every 50 ms, and the worst gap of a 10 ms loop ticker."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.peak_rss = self.process.memory_info().rss
        self.worst_gap = 0.0

    async def run(self, stop: asyncio.Event) -> None:
        last = time.monotonic()
        ticks = 0
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.worst_gap = max(self.worst_gap, now - last)
            last = now
            ticks += 1
            if ticks % 5 == 0:
                self.peak_rss = max(self.peak_rss, self.process.memory_info().rss)


async def start_writer(log: Path, megabytes: int) -> asyncio.subprocess.Process:
    """The task: its output straight into the log, its stamp on a pipe."""
    sink = await asyncio.to_thread(open, log, "ab")
    try:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WRITER,
            str(megabytes),
            BANNER,
            stdout=sink,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    finally:
        sink.close()


async def follow_all(log: Path, stop: asyncio.Event) -> tuple[int, int]:
    """The dock's live view: count the characters it would show and the bytes it skipped."""
    shown = skipped = 0
    async for chunk in follow(log, stop=stop, poll_s=0.25):
        shown += len(chunk.text)
        skipped += chunk.skipped
    return shown, skipped


async def measure(folder: Path, megabytes: int) -> None:
    log = folder / "task.log"
    log.write_bytes(b"")
    process = psutil.Process()
    rss_before = process.memory_info().rss
    cpu_before = process.cpu_times()
    found = asyncio.Event()
    urls: list[tuple[str, float]] = []

    def on_url(url: str) -> None:
        urls.append((url, time.monotonic()))
        found.set()

    watcher = UrlWatcher(log, on_url=on_url, on_give_up=lambda reason: found.set(), give_up_s=300.0)
    stop = asyncio.Event()
    sampler = Sampler()
    ticker = asyncio.create_task(sampler.run(stop))
    viewer = asyncio.create_task(follow_all(log, stop))
    writer = await start_writer(log, megabytes)
    try:
        began = time.monotonic()
        watcher.start()
        await asyncio.wait_for(found.wait(), 600)
        assert writer.stderr is not None
        printed, written, wrote = (float(x) for x in (await writer.stderr.readline()).split())
        await asyncio.sleep(0.5)  # the viewer catches up
        stop.set()
        shown, skipped = await viewer
        await ticker
    finally:
        writer.kill()
        await writer.wait()
    cpu_after = process.cpu_times()
    rss_after = process.memory_info().rss
    cpu = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    url, at = urls[0] if urls else ("(none)", float("nan"))
    mib = 1024 * 1024
    print(f"log: {written / mib:.0f} MiB written in {wrote:.2f} s, then the banner")
    print(f"url: {url}, {(at - printed) * 1000:.0f} ms after it was printed")
    print(f"     {at - began:.2f} s after the watcher started")
    print(f"cpu: {cpu:.2f} s of this process ({cpu / (written / mib) * 1000:.1f} ms per MiB)")
    print(
        f"rss: {rss_before / mib:.1f} MiB before, {sampler.peak_rss / mib:.1f} MiB peak, "
        f"{rss_after / mib:.1f} MiB after"
    )
    print(f"loop: worst gap of a 10 ms ticker {sampler.worst_gap * 1000:.0f} ms")
    print(f"view: {shown / mib:.1f} MiB of text shown, {skipped / mib:.0f} MiB skipped")


def main() -> None:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(measure(Path(folder), megabytes))


if __name__ == "__main__":
    main()
