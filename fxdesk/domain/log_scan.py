"""Reading a background task's log as it grows: the URL scanner, the exit marker, display text.

The reference read at most the first 64 KiB of a log to find the server URL and failed on every
attempt once a managed log was larger (Appendix A 5): a server that printed a lot before its
banner never got a URL. ``UrlScanner`` is fed the log chunk by chunk instead, for as long as the
watcher runs, with bounded memory whatever the log's size: it keeps only the unfinished last line
(at most ``max_line_bytes``) and the best URL so far. Bytes without ``://`` are passed over at
memory speed (``bytes.find``), so a task writing hundreds of megabytes costs little.

Bytes are decoded per line as UTF-8 with replacement (a line break never falls inside a UTF-8
sequence, so a chunk boundary cannot split a character of a line that is looked at); NUL bytes
are ignored. A line longer than ``max_line_bytes`` is looked at in its first ``max_line_bytes``
only, whichever way the log was cut into chunks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fxdesk.domain.server_urls import SCHEME_MARK, ServerUrl, better, line_candidates

MAX_LINE_BYTES = 16 * 1024

# The wrapper appends a newline, the marker, the exit status and a newline when the command ends
# (spec §8); the last marker in the log's last 4096 bytes is the task's exit code.
EXIT_MARKER = b"__FX_EXIT_CODE__="
EXIT_MARKER_WINDOW = 4096
_EXIT_LINE = re.compile(rb"(?:\r?\n)?" + re.escape(EXIT_MARKER) + rb"[0-9]*\r?\n?")

# How a NUL byte is shown: visibly, so output that contains them is not silently shortened.
NUL_SYMBOL = "\u2400"

_MARK = SCHEME_MARK.encode()

# A line whose every "://" is followed by a public DNS name (a dot, a last label of letters,
# then a character that ends a host) holds no candidate (``server_urls.host_reach``: PUBLIC):
# it is passed over without decoding and parsing it, which cost ~0.2 ms a line, on the GIL: a
# build log with a documentation link every 100 lines kept the scanner seconds behind a 200 MB
# flood (issue 17, bench.output_flood). Lines with control bytes (escape codes, which the full
# parse strips and which could join text into another host) always get the full parse.
_PUBLIC_HOST = re.compile(
    rb"://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,63})(?=[/?#:\t \"'<>)\],;]|$)"
)
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]|\xc2[\x80-\x9f]")


def _last_break(data: bytes) -> int:
    return max(data.rfind(b"\n"), data.rfind(b"\r"))


_BREAK = re.compile(rb"[\r\n]")


def _line_bounds(data: bytes, at: int, floor: int) -> tuple[int, int]:
    """Start and end (before the break) of the complete line around index ``at``.

    ``floor`` is a known line start at or before ``at``, so both searches stay within the
    line: scanning a chunk costs its length once, however many URLs it holds.
    """
    start = max(data.rfind(b"\n", floor, at), data.rfind(b"\r", floor, at)) + 1
    end = _BREAK.search(data, at)
    assert end is not None  # the caller only looks before the chunk's last break
    return max(start, floor), end.start()


class UrlScanner:
    """The best local server URL in a log fed to it in chunks of any size.

    Not thread-safe: one watcher feeds it, from one thread at a time. After ``finish()`` (the end
    of the text) the answer equals ``server_urls.detect_server_url`` on the whole text decoded,
    for lines of at most ``max_line_bytes``.
    """

    def __init__(self, own_names: Iterable[str] = (), *, max_line_bytes: int = MAX_LINE_BYTES):
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be at least 1")
        self._own_names = frozenset(own_names)
        self._max_line = max_line_bytes
        self._carry = b""  # the start of the unfinished last line, at most max_line bytes
        self._overflow = False  # the unfinished line is longer than max_line: skip to its end
        self.best: ServerUrl | None = None
        self.bytes_fed = 0

    @property
    def pending_bytes(self) -> int:
        """Bytes held for the unfinished last line: never more than ``max_line_bytes``."""
        return len(self._carry)

    def feed(self, chunk: bytes) -> ServerUrl | None:
        """Take the next bytes of the log; return the best URL so far."""
        self.bytes_fed += len(chunk)
        last = _last_break(chunk)
        if last == -1:
            self._extend_carry(chunk)
            return self.best
        first = min(i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i != -1)
        self._extend_carry(chunk[:first])
        self._look_at_line(self._carry)
        self._carry, self._overflow = b"", False
        self._scan_complete_lines(chunk, first + 1, last)
        self._extend_carry(chunk[last + 1 :])
        return self.best

    def finish(self) -> ServerUrl | None:
        """The text ended: its last line counts even without a line break."""
        self._look_at_line(self._carry)
        self._carry, self._overflow = b"", False
        return self.best

    def _extend_carry(self, piece: bytes) -> None:
        if self._overflow or not piece:
            return
        room = self._max_line - len(self._carry)
        if len(piece) > room:
            piece, self._overflow = piece[:room], True
        self._carry += piece

    def _scan_complete_lines(self, chunk: bytes, start: int, end: int) -> None:
        """Look at the lines of ``chunk[start:end]`` that contain ``://`` and at no other."""
        at = chunk.find(_MARK, start, end)
        while at != -1:
            line_start, line_end = _line_bounds(chunk, at, start)
            self._look_at_line(chunk[line_start : min(line_end, line_start + self._max_line)])
            start = line_end + 1
            at = chunk.find(_MARK, start, end)

    def _look_at_line(self, raw: bytes) -> None:
        if _MARK not in raw or self._only_public_hosts(raw):
            return
        for candidate in line_candidates(raw.decode("utf-8", "replace"), self._own_names):
            self.best = better(self.best, candidate)

    def _only_public_hosts(self, raw: bytes) -> bool:
        if _CONTROL.search(raw):
            return False
        hosts = [m.group(1).decode().lower() for m in _PUBLIC_HOST.finditer(raw)]
        return len(hosts) == raw.count(_MARK) and not any(
            host.endswith((".local", ".localhost")) or host in self._own_names for host in hosts
        )


def exit_code(tail: bytes) -> int | None:
    """The status after the last exit marker in ``tail`` (the log's last bytes), or None.

    A marker without digits (cut off while being written) gives None, as in the reference.
    """
    at = tail.rfind(EXIT_MARKER)
    if at == -1:
        return None
    digits = re.match(rb"[0-9]+", tail[at + len(EXIT_MARKER) :])
    return int(digits.group(0)) if digits else None


def without_exit_marker(data: bytes) -> bytes:
    """``data`` without the wrapper's exit-marker lines (and the line break written before one)."""
    return _EXIT_LINE.sub(b"", data)


def display_text(data: bytes) -> str:
    """Log bytes as text a person can read: invalid UTF-8 replaced, NUL shown as ``␀``."""
    return data.decode("utf-8", "replace").replace("\x00", NUL_SYMBOL)
