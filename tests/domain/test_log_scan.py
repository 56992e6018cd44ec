"""The incremental URL scanner and the log-byte helpers (spec §5.2, §8; Appendix A 5)."""

from __future__ import annotations

import pytest

from fxdesk.domain.log_scan import (
    EXIT_MARKER,
    NUL_SYMBOL,
    UrlScanner,
    display_text,
    exit_code,
    without_exit_marker,
)

BANNER = b"  \x1b[32m\xe2\x9e\x9c\x1b[39m  \x1b[1mLocal\x1b[22m:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m\n"


def feed_in_blocks(scanner: UrlScanner, data: bytes, block: int) -> None:
    for start in range(0, len(data), block):
        scanner.feed(data[start : start + block])


def test_a_url_printed_after_far_more_than_64_kib_is_found() -> None:
    scanner = UrlScanner()
    noise = b"compiling module 12345 of 99999 ... done\n" * 6000  # ~250 KiB
    feed_in_blocks(scanner, noise + BANNER, 4096)
    assert scanner.best is not None
    assert scanner.best.url == "http://localhost:5173/"
    assert scanner.bytes_fed == len(noise + BANNER)


def test_a_url_split_across_many_tiny_chunks_is_found_once_its_line_ends() -> None:
    scanner = UrlScanner()
    line = b"Starting development server at http://127.0.0.1:8000/\n"
    for i in range(len(line) - 1):
        assert scanner.feed(line[i : i + 1]) is None
    assert scanner.feed(line[-1:]).url == "http://127.0.0.1:8000/"


def test_a_huge_line_without_break_keeps_memory_bounded_and_the_next_line_counts() -> None:
    scanner = UrlScanner(max_line_bytes=1024)
    for _ in range(256):  # 4 MiB of one line, with URLs in it past its first KiB
        scanner.feed(b"x" * 8192 + b" http://localhost:1111 ")
        assert scanner.pending_bytes <= 1024
    assert scanner.best is None  # the URLs lie beyond the part of the line looked at
    scanner.feed(b"\n * Running on http://127.0.0.1:5000\n")
    assert scanner.best.url == "http://127.0.0.1:5000"
    assert scanner.pending_bytes == 0


def test_non_utf8_and_nul_bytes_do_not_hide_the_url() -> None:
    scanner = UrlScanner()
    scanner.feed(b"\xff\xfe\x00garbage \xc3\x28 \x00\x00\n")
    scanner.feed(b"\x00 * Running on http://127.0.0.1:\x005000\x00 \xe2\x82\n")
    assert scanner.best.url == "http://127.0.0.1:5000"


def test_carriage_returns_end_lines_like_newlines() -> None:
    scanner = UrlScanner()
    scanner.feed(b"[=====>     ] 50%\r[==========] 100%\rready on http://localhost:3000\r\n")
    assert scanner.best.url == "http://localhost:3000"


def test_the_last_line_counts_only_when_the_text_ends() -> None:
    scanner = UrlScanner()
    assert scanner.feed(b"listening on http://localhost:4000") is None
    assert scanner.finish().url == "http://localhost:4000"


def test_a_better_line_later_replaces_a_weaker_one() -> None:
    scanner = UrlScanner()
    scanner.feed(b"[HPM] Proxy created: /api -> http://localhost:3000\n")
    weak = scanner.best
    scanner.feed(b"<i> [webpack-dev-server] Loopback: http://localhost:8080/\n")
    assert (weak.url, weak.confident) == ("http://localhost:3000", False)
    assert (scanner.best.url, scanner.best.confident) == ("http://localhost:8080/", True)


def test_max_line_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        UrlScanner(max_line_bytes=0)


@pytest.mark.parametrize(
    ("tail", "code"),
    [
        (b"out\n" + EXIT_MARKER + b"0\n", 0),
        (b"out\n" + EXIT_MARKER + b"3\nmore\n" + EXIT_MARKER + b"137\n", 137),
        (b"out\n" + EXIT_MARKER, None),  # cut off while being written
        (b"no marker at all\n", None),
    ],
)
def test_exit_code_is_the_last_marker(tail: bytes, code: int | None) -> None:
    assert exit_code(tail) == code


def test_exit_marker_lines_are_removed_from_text() -> None:
    assert without_exit_marker(b"a\nb\n\n" + EXIT_MARKER + b"0\n") == b"a\nb\n"
    assert without_exit_marker(b"a\nb" + b"\n" + EXIT_MARKER + b"2\n") == b"a\nb"


def test_display_text_replaces_bad_bytes_and_shows_nul() -> None:
    assert display_text(b"ok\x00\xffend") == f"ok{NUL_SYMBOL}\ufffdend"


def test_lines_with_only_public_links_are_passed_over_and_local_ones_still_count() -> None:
    """Issue 17: a build log with a documentation link every 100 lines kept the scanner
    seconds behind a 200 MB flood; such lines are now passed over without parsing. A line is
    still parsed when any of its hosts may be local or it holds escape codes."""
    scanner = UrlScanner(["devbox.example.com"])
    public = b"[build] see https://vitejs.dev/guide/troubleshooting.html#item-7 for details\n"
    assert scanner._only_public_hosts(public.rstrip())
    feed_in_blocks(scanner, public * 1000, 4096)
    assert scanner.best is None
    for line, url in [
        (b"docs at https://vitejs.dev/ and the app at http://localhost:3000/", "localhost:3000"),
        (b"open http://web.localhost:8080/ now", "web.localhost:8080"),
        (b"mdns http://printer.local:631/", "printer.local:631"),
        (b"served at http://devbox.example.com:8000/", "devbox.example.com:8000"),
        (b"see https://nextjs.org/docs \x1b[1mhttp:\x1b[0m//localhost:5000", "localhost:5000"),
    ]:
        fresh = UrlScanner(["devbox.example.com"])
        fresh.feed(line + b"\n")
        assert fresh.best is not None and url in fresh.best.url, line
