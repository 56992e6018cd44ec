"""Reading a background task's log: the agent's summary, the dock's tail and live follow.

A task's output goes straight from the process into its log file (never through fxdesk), so a
log can be hundreds of megabytes and still growing. Everything here reads a bounded amount
whatever the size: ``summary`` the first and last few KiB (spec §8), ``tail`` the last
``max_bytes`` (it seeks from the end: a 200 MB log opens at once), ``LogFollower`` what was
appended since it last looked, skipping ahead when it falls too far behind.

Text is made safe to show: invalid UTF-8 becomes U+FFFD (decoded incrementally while following,
so a character split between two writes arrives whole), NUL bytes are shown as ``␀`` rather than
cutting the text short, and the wrapper's exit-marker line is hidden (the summary reports the
code separately). ``tail`` and the follower keep ANSI colour codes for the dock to render;
``summary``, read by the model, drops them.

All functions block on file I/O: call them through ``asyncio.to_thread`` (``follow`` does).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import io
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.log_scan import (
    EXIT_MARKER,
    EXIT_MARKER_WINDOW,
    NUL_SYMBOL,
    display_text,
    exit_code,
    without_exit_marker,
)
from fxdesk.domain.server_urls import strip_terminal_codes

SUMMARY_HEAD_BYTES = 4 * 1024
SUMMARY_TAIL_BYTES = 12 * 1024
SUMMARY_MAX_LINES = 80
TAIL_BYTES = 64 * 1024
FOLLOW_READ_BYTES = 256 * 1024
FOLLOW_MAX_BEHIND = 1024 * 1024
FOLLOW_POLL_S = 0.25


class LogUnavailable(Exception):
    """The log cannot be read; the message says why in a plain sentence."""


@dataclass(frozen=True)
class LogSummary:
    """The start and the end of a log, and how it ended (spec §8 ``readTaskLogSummaryBody``)."""

    path: str  # as shown to the person and the model
    size: int
    head: str
    tail: str
    omitted_bytes: int  # between the head and the tail
    exit_code: int | None  # from the wrapper's exit marker, when the command has ended

    def text(self) -> str:
        """The spec's summary body, plus ``exit_code=`` and the omitted-bytes line when known."""
        lines = [self.path, f"bytes={self.size}"]
        if self.exit_code is not None:
            lines.append(f"exit_code={self.exit_code}")
        lines += ["<head>", _ended(self.head) + "</head>"]
        if self.omitted_bytes:
            lines.append(f"[… {self.omitted_bytes} bytes omitted …]")
        lines += ["<tail>", _ended(self.tail) + "</tail>"]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LogChunk:
    """Text read from a log: the bytes ``start``..``end`` (offsets in the file)."""

    text: str
    start: int
    end: int
    skipped: int = 0  # bytes passed over because the reader was too far behind
    reset: bool = False  # the log was truncated or replaced: this text starts it afresh


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _open(path: Path, shown: str) -> io.FileIO:
    try:
        return io.FileIO(path, "r")
    except FileNotFoundError:
        raise LogUnavailable(f"the log {shown} no longer exists") from None
    except IsADirectoryError:
        raise LogUnavailable(f"{shown} is a folder, not a log") from None
    except PermissionError:
        raise LogUnavailable(f"the log {shown} cannot be read (permission denied)") from None


def _read_at(file: io.FileIO, offset: int, count: int) -> bytes:
    file.seek(offset)
    parts, left = [], count
    while left > 0:
        block = file.read(left)
        if not block:
            break
        parts.append(block)
        left -= len(block)
    return b"".join(parts)


def _after_first_break(data: bytes) -> tuple[bytes, int]:
    """``data`` from its second line on (its first is cut), and how many bytes were dropped.

    A window with no line break at all is kept whole: a cut line beats nothing.
    """
    cut = data.find(b"\n")
    return (data, 0) if cut == -1 else (data[cut + 1 :], cut + 1)


def _last_lines(data: bytes, count: int) -> tuple[bytes, int]:
    """The last ``count`` lines of ``data`` (a final line break does not start a line)."""
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    start = end
    for _ in range(count):
        start = data.rfind(b"\n", 0, start)
        if start == -1:
            return data, 0
    return data[start + 1 :], start + 1


def _first_lines(data: bytes, count: int) -> bytes:
    """``data`` cut after its ``count``-th line break."""
    end = -1
    for _ in range(count):
        end = data.find(b"\n", end + 1)
        if end == -1:
            return data
    return data[: end + 1]


def _summary_text(data: bytes) -> str:
    text = display_text(without_exit_marker(data))
    return strip_terminal_codes(text.replace("\r\n", "\n").replace("\r", "\n"))


def summary(
    path: Path,
    *,
    display_path: str | None = None,
    max_head_bytes: int = SUMMARY_HEAD_BYTES,
    max_tail_bytes: int = SUMMARY_TAIL_BYTES,
    max_lines: int = SUMMARY_MAX_LINES,
) -> LogSummary:
    """The head and tail of the log, at most ``max_lines`` lines each (spec §8).

    Reads at most ``max_head_bytes + max_tail_bytes`` and the last 4096 bytes (for the exit
    marker), whatever the log's size; the tail starts where the head ended when they overlap,
    so a short log is shown once.
    """
    if min(max_head_bytes, max_tail_bytes, max_lines) < 0:
        raise ValueError("summary limits cannot be negative")
    shown = display_path or str(path)
    with _open(path, shown) as file:
        size = os.fstat(file.fileno()).st_size
        code = exit_code(_read_at(file, max(0, size - EXIT_MARKER_WINDOW), EXIT_MARKER_WINDOW))
        if max_lines == 0:
            return LogSummary(shown, size, "", "", size, code)
        head = _first_lines(_read_at(file, 0, min(size, max_head_bytes)), max_lines)
        tail_start = max(len(head), size - max_tail_bytes)
        tail = _read_at(file, tail_start, size - tail_start)
    if tail_start > len(head):
        tail, dropped = _after_first_break(tail)
        tail_start += dropped
    tail, dropped = _last_lines(without_exit_marker(tail), max_lines)
    omitted = tail_start + dropped - len(head)
    return LogSummary(shown, size, _summary_text(head), _summary_text(tail), omitted, code)


def tail(path: Path, max_bytes: int = TAIL_BYTES, *, display_path: str | None = None) -> LogChunk:
    """The last ``max_bytes`` of the log from a line start, read from the end (instant on any size).

    ``LogFollower(path, chunk.end)`` then continues from where this ended.
    """
    if max_bytes <= 0:
        raise ValueError("max_bytes must be positive")
    with _open(path, display_path or str(path)) as file:
        size = os.fstat(file.fileno()).st_size
        start = max(0, size - max_bytes)
        data = _read_at(file, start, size - start)
    if start > 0:
        data, dropped = _after_first_break(data)
        start += dropped
    return LogChunk(display_text(without_exit_marker(data)), start, size)


@dataclass(frozen=True)
class Appended:
    """Bytes a growing log gained: ``data`` starts at offset ``start``."""

    data: bytes
    start: int
    skipped: int  # bytes passed over before ``start`` (the reader was too far behind)
    reset: bool  # truncated or replaced: ``data`` starts the log afresh


class GrowingFile:
    """A log read from an offset on as it grows: the watcher's and the follower's reading.

    It is opened once it exists. When the file gets shorter (truncated) or its path names another
    file (replaced), reading starts again at the new content's beginning, flagged ``reset``. A
    deleted log is read to its end. Not thread-safe: one reader at a time.
    """

    def __init__(self, path: Path, offset: int = 0) -> None:
        self._path = path
        self._offset = offset
        self._file: io.FileIO | None = None

    @property
    def offset(self) -> int:
        """Where the next read starts."""
        return self._offset

    def read(self, max_bytes: int, *, max_behind: int | None = None) -> Appended | None:
        """Up to ``max_bytes`` appended since the last read, or None when nothing was.

        With ``max_behind``, more unread bytes than that are skipped to the last ``max_behind``.
        """
        reset = self._reopen_if_replaced()
        if self._file is None:
            return None
        size = os.fstat(self._file.fileno()).st_size
        if size < self._offset:
            reset, self._offset = True, 0
        start, skipped = self._offset, 0
        if max_behind is not None and size - start > max_behind:
            skipped, start = size - max_behind - start, size - max_behind
        data = _read_at(self._file, start, min(max_bytes, size - start))
        self._offset = start + len(data)
        if not data and not reset:
            return None
        return Appended(data, start, skipped, reset)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _reopen_if_replaced(self) -> bool:
        """Open the log, or the new file now at its path; True when that replaced another."""
        try:
            current = os.stat(self._path)
        except FileNotFoundError:
            return False
        replaced = False
        if self._file is not None:
            opened = os.fstat(self._file.fileno())
            if (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino):
                return False
            self.close()
            self._offset, replaced = 0, True
        with contextlib.suppress(FileNotFoundError):
            self._file = io.FileIO(self._path, "r")
        return replaced


class LogFollower:
    """What a growing log gained since the last look, as text; the live view, ``logs --follow``.

    Reading starts afresh (``reset``) after truncation or replacement (``GrowingFile``). More
    than ``max_behind`` unread bytes are skipped to the last ``max_behind``, from a line start:
    a task writing hundreds of megabytes costs the view a bounded amount (``None``: never skip).
    Not thread-safe: one reader at a time.
    """

    def __init__(
        self,
        path: Path,
        offset: int = 0,
        *,
        read_bytes: int = FOLLOW_READ_BYTES,
        max_behind: int | None = FOLLOW_MAX_BEHIND,
    ) -> None:
        self._log = GrowingFile(path, offset)
        self._read_bytes = read_bytes
        self._max_behind = max_behind
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = b""  # the start of what may be an exit-marker line, not shown yet

    @property
    def offset(self) -> int:
        return self._log.offset

    def read_new(self) -> LogChunk | None:
        """The text appended since the last call (at most ``read_bytes``), or None if none."""
        got = self._log.read(self._read_bytes, max_behind=self._max_behind)
        if got is None:
            return None
        data, dropped = got.data, 0
        if got.reset or got.skipped:  # what came before is not what this continues
            self._decoder.reset()
            self._held = b""
        if got.skipped:
            data, dropped = _after_first_break(data)
        end = got.start + len(got.data)
        return LogChunk(
            self._decode(data), got.start + dropped, end, got.skipped + dropped, got.reset
        )

    def close(self) -> None:
        self._log.close()

    def _decode(self, data: bytes) -> str:
        """Bytes to text, holding back a line that may still become an exit marker."""
        data = self._held + data
        line_start = data.rfind(b"\n") + 1
        last = data[line_start:]
        self._held = b""
        if last and (EXIT_MARKER.startswith(last) or last.startswith(EXIT_MARKER)):
            data, self._held = data[:line_start], last
        text = self._decoder.decode(without_exit_marker(data))
        return text.replace("\x00", NUL_SYMBOL)


async def follow(
    path: Path,
    offset: int = 0,
    *,
    stop: asyncio.Event,
    poll_s: float = FOLLOW_POLL_S,
    max_behind: int | None = FOLLOW_MAX_BEHIND,
) -> AsyncIterator[LogChunk]:
    """Yield the log's new text as it grows, until ``stop`` is set (checked at least every poll)."""
    follower = LogFollower(path, offset, max_behind=max_behind)
    try:
        while not stop.is_set():
            chunk = await asyncio.to_thread(follower.read_new)
            if chunk is not None:
                yield chunk
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), poll_s)
    finally:
        follower.close()
