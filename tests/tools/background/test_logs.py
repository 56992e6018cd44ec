"""Reading background logs (spec §8): the agent's summary, the dock's tail, live follow.

Real files throughout, a 200 MB one included (sparse: its size is real, its middle a hole). How
much a call read is measured with the kernel's own count of bytes this process read
(``rchar`` in /proc/self/io), not with a clock.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from fxdesk.domain.log_scan import EXIT_MARKER, NUL_SYMBOL
from fxdesk.tools.background.logs import (
    LogFollower,
    LogUnavailable,
    follow,
    summary,
    tail,
)

MB = 1024 * 1024
PROC_IO = Path("/proc/self/io")
needs_proc_io = pytest.mark.skipif(not PROC_IO.exists(), reason="needs Linux /proc/self/io")


def bytes_read() -> int:
    for line in PROC_IO.read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def numbered(first: int, last: int) -> bytes:
    return b"".join(b"line %d\n" % n for n in range(first, last + 1))


@pytest.fixture
def huge_log(tmp_path: Path) -> Path:
    """200 MB: real lines at the start, a hole, real lines and the exit marker at the end."""
    log = tmp_path / "huge.log"
    with open(log, "wb") as out:
        out.write(numbered(1, 100))
        out.truncate(200 * MB)
        out.seek(200 * MB)
        out.write(b"\nbin\x00ary \xff\n" + numbered(900, 1000) + b"\n" + EXIT_MARKER + b"3\n")
    return log


def test_summary_of_a_short_log_shows_it_once_and_reports_the_exit_code(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"compiling\nready\n\n" + EXIT_MARKER + b"0\n")
    found = summary(log, display_path="/data/logs/fx-cmd-1.log")
    assert (found.head, found.tail, found.omitted_bytes, found.exit_code) == (
        "compiling\nready\n",
        "",
        0,
        0,
    )
    assert found.text() == (
        "/data/logs/fx-cmd-1.log\nbytes=36\nexit_code=0\n"
        "<head>\ncompiling\nready\n</head>\n<tail>\n</tail>\n"
    )


def test_summary_of_a_long_log_keeps_head_and_tail_lines_and_counts_the_rest(tmp_path):
    log = tmp_path / "task.log"
    data = numbered(1, 1000)
    log.write_bytes(data)
    found = summary(log, max_head_bytes=200, max_tail_bytes=300, max_lines=5)
    assert found.head == "line 1\nline 2\nline 3\nline 4\nline 5\n"
    assert found.tail == "line 996\nline 997\nline 998\nline 999\nline 1000\n"
    assert found.omitted_bytes == len(data) - len(found.head) - len(found.tail)
    assert found.exit_code is None
    assert f"[… {found.omitted_bytes} bytes omitted …]\n<tail>\nline 996\n" in found.text()


def test_summary_drops_the_cut_first_line_of_the_tail_window(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"head line\n" + b"x" * 5000 + b"\nlast one\n")
    found = summary(log, max_head_bytes=10, max_tail_bytes=100, max_lines=10)
    assert found.head == "head line\n"
    assert found.tail == "last one\n"


@needs_proc_io
def test_summary_of_a_200_mb_log_reads_a_few_kib(huge_log: Path) -> None:
    before = bytes_read()
    found = summary(huge_log, max_head_bytes=4096, max_tail_bytes=8192, max_lines=3)
    read = bytes_read() - before
    assert found.size == huge_log.stat().st_size > 200 * MB
    assert found.head == "line 1\nline 2\nline 3\n"
    assert found.tail == "line 998\nline 999\nline 1000\n"
    assert found.exit_code == 3
    assert read < 64 * 1024


def test_summary_shows_bad_bytes_and_nul_and_drops_colours(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"\x1b[32mok\x1b[0m \xff\xfe bytes\x00\x00 end\r\n50%\r100%\n")
    found = summary(log)
    assert found.head == f"ok \ufffd\ufffd bytes{NUL_SYMBOL}{NUL_SYMBOL} end\n50%\n100%\n"


def test_summary_limits(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(numbered(1, 3))
    empty = summary(log, max_lines=0)
    assert (empty.head, empty.tail, empty.omitted_bytes) == ("", "", log.stat().st_size)
    with pytest.raises(ValueError, match="negative"):
        summary(log, max_tail_bytes=-1)


def test_a_missing_log_is_said_plainly(tmp_path) -> None:
    with pytest.raises(LogUnavailable, match=r"the log /shown/x\.log no longer exists"):
        summary(tmp_path / "gone.log", display_path="/shown/x.log")
    with pytest.raises(LogUnavailable, match="is a folder"):
        tail(tmp_path)


@needs_proc_io
def test_tail_of_a_200_mb_log_reads_only_its_end(huge_log: Path) -> None:
    before = bytes_read()
    chunk = tail(huge_log, max_bytes=64 * 1024)
    read = bytes_read() - before
    assert read <= 64 * 1024 + 4096
    assert chunk.end == huge_log.stat().st_size
    assert chunk.text.endswith("line 999\nline 1000\n")  # the exit marker is hidden
    assert EXIT_MARKER.decode() not in chunk.text
    # From a line start: the hole's NULs end in a line cut by the window, left out.
    assert chunk.text.startswith(f"bin{NUL_SYMBOL}ary \ufffd\nline 900\n")


def test_tail_keeps_colours_and_starts_at_a_line(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"x" * 100 + b"\n\x1b[31merror\x1b[0m \xc3\x28\n")
    chunk = tail(log, max_bytes=20)
    assert chunk.text == "\x1b[31merror\x1b[0m \ufffd(\n"
    assert chunk.start == 101


def test_follower_gives_appended_text_and_joins_a_split_character(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"old\n")
    follower = LogFollower(log, offset=tail(log).end)
    assert follower.read_new() is None
    snowman = "☃".encode()
    with open(log, "ab") as out:
        out.write(b"new " + snowman[:1])
        out.flush()
        first = follower.read_new()
        out.write(snowman[1:] + b"\x00\n")
    second = follower.read_new()
    assert first.text + second.text == f"new ☃{NUL_SYMBOL}\n"
    assert (first.start, second.end) == (4, log.stat().st_size)


def test_follower_starts_afresh_after_truncation(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(numbered(1, 50))
    follower = LogFollower(log)
    follower.read_new()
    log.write_bytes(b"restarted\n")
    chunk = follower.read_new()
    assert (chunk.text, chunk.reset, chunk.start) == ("restarted\n", True, 0)


def test_follower_moves_to_a_replacing_file(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"first file, long enough to be past the new one\n")
    follower = LogFollower(log)
    follower.read_new()
    log.rename(tmp_path / "task.log.1")
    log.write_bytes(b"second\n")
    chunk = follower.read_new()
    assert (chunk.text, chunk.reset) == ("second\n", True)


def test_follower_hides_the_exit_marker_even_when_written_in_pieces(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"")
    follower = LogFollower(log)
    texts = []
    with open(log, "ab") as out:
        for piece in (b"done\n", b"\n__FX_EXI", b"T_CODE__=", b"0", b"\n"):
            out.write(piece)
            out.flush()
            chunk = follower.read_new()
            texts.append(chunk.text if chunk else "")
    assert "".join(texts).rstrip("\n") == "done"
    assert "__FX" not in "".join(texts)


def test_follower_reads_a_deleted_log_to_its_end(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"a\n")
    follower = LogFollower(log)
    follower.read_new()
    with open(log, "ab") as out:
        out.write(b"b\n")
    log.unlink()
    assert follower.read_new().text == "b\n"
    assert follower.read_new() is None


def test_follower_far_behind_skips_to_the_last_part(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"half a snowman \xe2\x98")
    follower = LogFollower(log, max_behind=4096, read_bytes=64 * 1024)
    assert follower.read_new().text == "half a snowman "  # the decoder holds two bytes
    with open(log, "ab") as out:
        out.write(b"\n" + numbered(1, 100_000))
    chunk = follower.read_new()
    size = log.stat().st_size
    assert chunk.start - chunk.skipped == len(b"half a snowman \xe2\x98")  # skipped from there
    assert (chunk.end, chunk.start >= size - 4096) == (size, True)
    assert chunk.text.endswith("line 100000\n")
    assert chunk.text.startswith("line ")  # from a line start, nothing held from before
    assert len(chunk.text) <= 4096
    assert follower.read_new() is None


async def test_follow_yields_a_real_childs_lines_as_they_come_and_stops(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"")
    script = (
        "import sys, time\n"
        "for n in range(5):\n"
        "    sys.stdout.write(f'tick {n}\\n'); sys.stdout.flush(); time.sleep(0.1)\n"
        "time.sleep(30)\n"
    )
    with open(log, "ab") as sink:
        child = await asyncio.create_subprocess_exec(sys.executable, "-c", script, stdout=sink)
    stop = asyncio.Event()
    seen = ""
    try:
        async with asyncio.timeout(20):
            async for chunk in follow(log, stop=stop, poll_s=0.05):
                seen += chunk.text
                if "tick 4\n" in seen:
                    stop.set()
    finally:
        child.kill()
        await child.wait()
    assert seen == "".join(f"tick {n}\n" for n in range(5))


async def test_follow_ends_promptly_when_stopped_while_idle(tmp_path) -> None:
    log = tmp_path / "task.log"
    log.write_bytes(b"quiet\n")
    stop = asyncio.Event()
    chunks = []

    async def consume() -> None:
        async for chunk in follow(log, os.path.getsize(log), stop=stop, poll_s=5.0):
            chunks.append(chunk)

    reader = asyncio.create_task(consume())
    await asyncio.sleep(0.2)
    stop.set()
    await asyncio.wait_for(reader, 0.5)
    assert chunks == []
