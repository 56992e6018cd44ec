"""URL watchers against real logs written by real children (spec §5.2, scenarios 18, 20, 27).

Servers run as an agent would start them: ``python -m http.server 0`` and a tiny uvicorn app,
their output going straight into a log file as the runtime's wrapper sends it; a Vite-style
coloured banner is replayed by a script that records when it printed it.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxdesk.domain.server_urls import HostReach, ServerUrl
from fxdesk.engine.background.watchers import UrlWatcher, answers_head

VITE_BANNER = (
    "\n  \x1b[32m\x1b[1mVITE\x1b[22m v5.4.2\x1b[39m  \x1b[2mready in\x1b[22m \x1b[1m312\x1b[22m\n\n"
    "  \x1b[32m➜\x1b[39m  \x1b[1mLocal\x1b[22m:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m\n"
    "  \x1b[32m➜\x1b[39m  \x1b[1mNetwork\x1b[22m: \x1b[2muse \x1b[22m\x1b[1m--host\x1b[22m\x1b[2m"
    " to expose\x1b[22m\n"
)

# vercel/next.js app-info-log.ts logStartInfo, with its bold purple title and a docs warning.
NEXT_BANNER = (
    "   \x1b[1m\x1b[35m▲ Next.js 15.1.0\x1b[39m\x1b[22m\n"
    "   - Local:        http://localhost:3000\n"
    "   - Network:      http://192.168.1.23:3000\n\n"
    " \x1b[33m⚠\x1b[39m See more info here: https://nextjs.org/docs/messages/invalid-next-config\n"
    " \x1b[32m✓\x1b[39m Ready in 1843ms\n"
)

# Prints some start-up noise, then (after argv[3] seconds) the banner; writes the moment it
# printed it to argv[2].
REPLAY = """
import sys, time
banner, stamp, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
sys.stdout.write("> my-app@0.0.0 dev\\n> vite\\n\\n")
sys.stdout.flush()
time.sleep(delay)
sys.stdout.write(banner)
sys.stdout.flush()
printed = time.monotonic()
open(stamp, "w").write(repr(printed))
time.sleep(60)
"""

ASGI_APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})
"""


class Calls:
    """What a watcher reported, and when (loop time)."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self.reasons: list[str] = []
        self.at: list[float] = []
        self.event = asyncio.Event()

    def on_url(self, url: str) -> None:
        self.urls.append(url)
        self.at.append(time.monotonic())
        self.event.set()

    def on_give_up(self, reason: str) -> None:
        self.reasons.append(reason)
        self.at.append(time.monotonic())
        self.event.set()

    async def wait(self, timeout: float = 30.0) -> None:
        await asyncio.wait_for(self.event.wait(), timeout)


def watcher(log: Path, calls: Calls, **kwargs: object) -> UrlWatcher:
    return UrlWatcher(log, on_url=calls.on_url, on_give_up=calls.on_give_up, own_names=(), **kwargs)


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=10)


def start_logged(
    children: list[subprocess.Popen[bytes]], argv: list[str], log: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """A child whose stdout and stderr go straight to ``log``, like a background task's."""
    with open(log, "ab") as sink:
        child = subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
        )
    children.append(child)
    return child


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_replayed_coloured_banners_are_detected_within_a_second(tmp_path, children):
    # Banners printed at different moments, so no phase of the polling hides a slow one.
    replays = [(VITE_BANNER, 0.6), (NEXT_BANNER, 1.1), (VITE_BANNER, 1.6), (NEXT_BANNER, 2.1)]
    runs = []
    for n, (banner, delay) in enumerate(replays):
        log, stamp, calls = tmp_path / f"task{n}.log", tmp_path / f"printed{n}", Calls()
        argv = [sys.executable, "-c", REPLAY, banner, str(stamp), str(delay)]
        start_logged(children, argv, log)
        url_watcher = watcher(log, calls)
        url_watcher.start()
        runs.append((url_watcher, calls, stamp))
    for url_watcher, calls, stamp in runs:
        await calls.wait()
        await asyncio.sleep(0)
        assert url_watcher.done and calls.urls == [url_watcher.url]
        assert calls.at[0] - float(stamp.read_text()) < 1.0
    assert [url_watcher.url for url_watcher, _c, _s in runs] == [
        "http://localhost:5173/",
        "http://localhost:3000",
        "http://localhost:5173/",
        "http://localhost:3000",
    ]


async def test_real_http_server_url_is_found_and_confirmed_by_one_head(tmp_path, children):
    log = tmp_path / "task.log"
    calls = Calls()
    start_logged(children, [sys.executable, "-u", "-m", "http.server", "0"], log, cwd=tmp_path)
    url_watcher = watcher(log, calls, confirm=True)
    url_watcher.start()
    await calls.wait()
    port = re.search(r"port (\d+)", log.read_text()).group(1)
    assert calls.urls == [f"http://localhost:{port}/"]
    # The server logged the request: the URL was confirmed by asking it, once.
    await asyncio.sleep(0.3)
    assert log.read_text().count('"HEAD / HTTP/1.1" 200') == 1


async def test_real_uvicorn_app_with_colours_is_found_and_confirmed(tmp_path, children):
    (tmp_path / "tinyapp.py").write_text(ASGI_APP)
    log = tmp_path / "task.log"
    calls = Calls()
    argv = [sys.executable, "-m", "uvicorn", "tinyapp:app", "--port", "0", "--use-colors"]
    start_logged(children, argv, log, cwd=tmp_path)
    url_watcher = watcher(log, calls, confirm=True)
    url_watcher.start()
    await calls.wait()
    text = log.read_text()
    assert "\x1b[1mhttp://127.0.0.1:" in text  # the URL really was coloured in the log
    port = re.search(r"127\.0\.0\.1:(\d+)", text).group(1)
    assert calls.urls == [f"http://127.0.0.1:{port}"]


async def test_confirmation_waits_until_the_server_answers(tmp_path, children) -> None:
    port = free_port()
    script = (
        "import time, http.server\n"
        f"print(' * Running on http://127.0.0.1:{port}', flush=True)\n"
        "time.sleep(1.0)\n"
        "handler = http.server.SimpleHTTPRequestHandler\n"
        f"server = http.server.HTTPServer(('127.0.0.1', {port}), handler)\n"
        "print('BOUND', time.monotonic(), flush=True)\n"
        "server.serve_forever()\n"
    )
    log = tmp_path / "task.log"
    calls = Calls()
    start_logged(children, [sys.executable, "-u", "-c", script], log, cwd=tmp_path)
    url_watcher = watcher(log, calls, confirm=True)
    url_watcher.start()
    await calls.wait()
    bound = float(re.search(r"BOUND ([0-9.]+)", log.read_text()).group(1))
    assert calls.urls == [f"http://127.0.0.1:{port}"]
    assert calls.at[0] >= bound


async def test_a_url_that_never_answers_is_not_published_when_confirming(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_text(f" * Running on http://127.0.0.1:{free_port()}\n")
    confirming, trusting = Calls(), Calls()
    watcher(log, confirming, confirm=True, give_up_s=0.8).start()
    watcher(log, trusting).start()
    await confirming.wait()
    await trusting.wait()
    assert confirming.urls == []
    assert confirming.reasons == ["no answering URL in 0.8 s: the URL printed did not answer"]
    assert trusting.urls and not trusting.reasons


async def test_a_lan_url_is_published_unconfirmed_and_never_requested(tmp_path) -> None:
    log = tmp_path / "task.log"
    # Only a LAN address: were it requested, nothing answers there and it would never publish.
    log.write_text("Server running on http://10.255.255.1:9/\n")
    calls = Calls()
    watcher(log, calls, confirm=True, give_up_s=5.0).start()
    await calls.wait()
    assert calls.urls == ["http://10.255.255.1:9/"]


async def test_head_is_refused_for_anything_but_loopback() -> None:
    lan = ServerUrl("http://192.168.1.5:3000", "192.168.1.5", 3000, HostReach.PRIVATE, 40)
    with pytest.raises(ValueError, match="only loopback"):
        await answers_head(lan)


async def test_a_url_after_megabytes_of_output_is_found(tmp_path, children) -> None:
    log = tmp_path / "task.log"
    script = (
        "import sys\n"
        "line = b'[build] transformed module src/components/Widget.tsx (1234 bytes)\\n'\n"
        "for _ in range(80_000): sys.stdout.buffer.write(line)\n"  # ~5 MiB
        "sys.stdout.buffer.write(b'Starting development server at http://127.0.0.1:8000/\\n')\n"
        "sys.stdout.flush()\n"
        "import time; time.sleep(60)\n"
    )
    calls = Calls()
    start_logged(children, [sys.executable, "-c", script], log)
    watcher(log, calls).start()
    await calls.wait()
    assert calls.urls == ["http://127.0.0.1:8000/"]
    assert log.stat().st_size > 5_000_000


def flooded_log(log: Path, last_line: bytes) -> int:
    """A 64 MiB log of build output ending in ``last_line``; returns its size."""
    with open(log, "wb") as out:
        block = b"[build] compiled module 17 of 99999 in 3 ms, cache hit, no changes\n" * 1024
        for _ in range(64 * 1024 * 1024 // len(block)):
            out.write(block)
        out.write(last_line)
    return log.stat().st_size


def noting_the_scan(log: Path, calls: Calls, **kwargs: object) -> tuple[UrlWatcher, list[int]]:
    """A watcher that notes how far its in-order scan had read when it published."""
    noted: list[int] = []

    def on_url(url: str) -> None:
        noted.append(url_watcher.scanned_bytes)
        calls.on_url(url)

    url_watcher = UrlWatcher(
        log, on_url=on_url, on_give_up=calls.on_give_up, own_names=(), **kwargs
    )
    return url_watcher, noted


async def test_a_banner_after_a_flood_is_published_before_the_scan_reaches_it(tmp_path) -> None:
    """Issue 17 item 6: 200 MB of output, then the server's banner. The in-order scan is
    seconds behind the writer; the banner, a confident URL among the newest lines, is
    published at once, not when the scan gets there."""
    log = tmp_path / "task.log"
    size = flooded_log(log, "  ➜  Local:   http://localhost:5173/\n".encode())
    calls = Calls()
    url_watcher, scanned_when_published = noting_the_scan(log, calls)
    url_watcher.start()
    await calls.wait()
    assert calls.urls == ["http://localhost:5173/"]
    assert scanned_when_published[0] < size // 2, (scanned_when_published, size)


async def test_a_weak_url_after_a_flood_waits_for_the_scan_to_reach_it(tmp_path) -> None:
    """Only a confident URL is taken from the newest lines: a weak one (a proxy target) is
    published once the in-order scan has read up to it and nothing better followed."""
    log = tmp_path / "task.log"
    size = flooded_log(log, b"[HPM] Proxy created: /api  -> http://localhost:3000\n")
    calls = Calls()
    url_watcher, scanned_when_published = noting_the_scan(log, calls, settle_s=0.2)
    url_watcher.start()
    await calls.wait()
    assert calls.urls == ["http://localhost:3000"]
    assert scanned_when_published == [size]


async def test_gives_up_with_a_reason_when_no_url_comes(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_text("watching for file changes...\nsee https://docs.example.com/x\n")
    calls = Calls()
    url_watcher = watcher(log, calls, give_up_s=0.6)
    url_watcher.start()
    await calls.wait()
    assert calls.reasons == ["no URL detected in 0.6 s"]
    assert calls.urls == []
    await asyncio.sleep(0)
    assert url_watcher.done


async def test_stop_returns_within_250_ms_and_reports_nothing(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"")
    calls = Calls()
    url_watcher = watcher(log, calls, poll_s=2.0)
    url_watcher.start()
    await asyncio.sleep(0.35)  # inside its (long) retry wait
    began = time.monotonic()
    await url_watcher.stop()
    assert time.monotonic() - began < 0.25
    assert url_watcher.done
    await asyncio.sleep(0.3)
    assert calls.urls == [] and calls.reasons == []


async def test_stop_while_catching_up_on_a_large_log_is_prompt(tmp_path) -> None:
    log = tmp_path / "task.log"
    with open(log, "wb") as out:
        block = b"x" * 1023 + b"\n"
        for _ in range(256 * 1024 // 4):  # 64 MiB
            out.write(block * 4)
    calls = Calls()
    url_watcher = watcher(log, calls)
    url_watcher.start()
    await asyncio.sleep(0.05)
    began = time.monotonic()
    await url_watcher.stop()
    assert time.monotonic() - began < 0.25
    assert url_watcher.done and calls.urls == [] and calls.reasons == []


async def test_a_weak_url_waits_for_a_better_line(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_text("<i> [webpack-dev-server] [HPM] Proxy created: /api  -> http://localhost:3000\n")
    calls = Calls()
    watcher(log, calls, settle_s=1.5).start()
    await asyncio.sleep(0.5)
    assert calls.urls == []
    with open(log, "a") as out:
        out.write("<i> [webpack-dev-server] Loopback: http://localhost:8080/\n")
    await calls.wait()
    assert calls.urls == ["http://localhost:8080/"]


async def test_a_weak_url_alone_is_published_after_settling(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_text("Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n")
    calls = Calls()
    began = time.monotonic()
    watcher(log, calls, settle_s=0.5).start()
    await calls.wait()
    assert calls.urls == ["http://localhost:8000/"]
    assert calls.at[0] - began >= 0.5


async def test_log_created_late_and_text_before_the_offset_ignored(tmp_path) -> None:
    log = tmp_path / "task.log"
    old = b"Listening on http://127.0.0.1:1111\n"
    calls = Calls()
    watcher(log, calls, start_offset=len(old)).start()
    await asyncio.sleep(0.3)  # the log does not exist yet
    log.write_bytes(old)
    await asyncio.sleep(0.5)
    assert calls.urls == []
    with open(log, "ab") as out:
        out.write(b"Listening on http://127.0.0.1:2222\n")
    await calls.wait()
    assert calls.urls == ["http://127.0.0.1:2222"]


async def test_a_truncated_log_is_read_again_from_its_start(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"noise " * 1000 + b"\nAPI_URL=http://localhost:1111\n")  # weak: settling
    calls = Calls()
    watcher(log, calls, settle_s=1.0).start()
    await asyncio.sleep(0.4)
    # The server restarted and its log began again: only what it prints now counts, even
    # though it scores lower than the old line did.
    log.write_bytes(b"Serving HTTP on 0.0.0.0 port 4444 (http://0.0.0.0:4444/) ...\n")
    await calls.wait()
    assert calls.urls == ["http://localhost:4444/"]


async def test_a_failing_callback_is_logged_and_the_watcher_ends(tmp_path, caplog) -> None:
    log = tmp_path / "task.log"
    log.write_text("ready on http://localhost:4444\n")

    called = asyncio.Event()

    def explode(url: str) -> None:
        called.set()
        raise RuntimeError("callback broke")

    url_watcher = UrlWatcher(log, on_url=explode, on_give_up=lambda _r: None, own_names=())
    url_watcher.start()
    await asyncio.wait_for(called.wait(), 10)
    await asyncio.sleep(0.05)  # the task ends and its done-callback runs
    assert url_watcher.done
    assert "url watcher failed" in caplog.text


async def test_starting_twice_is_refused(tmp_path) -> None:
    url_watcher = watcher(tmp_path / "task.log", Calls())
    url_watcher.start()
    with pytest.raises(RuntimeError, match="already started"):
        url_watcher.start()
    await url_watcher.stop()
