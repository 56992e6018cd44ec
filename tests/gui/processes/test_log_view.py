"""The log view: the tail of a huge log at once, appended lines live, colours, search, odd bytes."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from PySide6.QtGui import QTextCursor

from fxdesk.gui.processes.log_view import JUMP_BYTES, TAIL_BYTES, LogView, read_chunk
from tests.gui.waiting import until

BIG = 200 * 1024 * 1024


def big_log(path: Path) -> Path:
    """A 200 MB log: a sparse start (no time spent writing it), then 2 MB of numbered lines."""
    with open(path, "wb") as file:
        file.truncate(BIG - 2 * 1024 * 1024)
        file.seek(0, 2)
        file.write(b"".join(b"line %07d of the server\n" % n for n in range(87_382)))
    return path


def test_read_chunk_reads_only_the_tail_from_a_whole_line(tmp_path: Path) -> None:
    path = big_log(tmp_path / "big.log")
    chunk = read_chunk(path, None)
    assert len(chunk.data) <= TAIL_BYTES
    assert chunk.data.startswith(b"line ") and chunk.data.endswith(b"of the server\n")
    assert chunk.end == chunk.size == path.stat().st_size
    assert chunk.skipped == chunk.size - len(chunk.data)
    with open(path, "ab") as file:
        file.write(b"appended\n")
    more = read_chunk(path, chunk.end)
    assert (more.data, more.skipped) == (b"appended\n", 0)
    with open(path, "ab") as file:  # a burst larger than JUMP_BYTES: skipped to its tail
        file.write(b"x" * (JUMP_BYTES + 10) + b"\nlast\n")
    jumped = read_chunk(path, more.end)
    assert jumped.skipped > JUMP_BYTES - TAIL_BYTES and jumped.data == b"last\n"


async def test_a_200_mb_log_opens_at_once_and_follows_appended_lines(
    qtbot: object, tmp_path: Path
) -> None:
    path = big_log(tmp_path / "big.log")
    view = LogView()
    view.show()  # a hidden view does not follow (it catches up when shown)
    began = time.perf_counter()
    view.follow(path, "#1 server")
    await until(lambda: view.reads >= 1)
    took_ms = (time.perf_counter() - began) * 1000
    print(f"200 MB log: tail shown in {took_ms:.0f} ms")
    assert took_ms < 1500
    text = view.text.toPlainText()
    assert text.startswith("… 200 MB of earlier output not shown …")
    assert text.rstrip().endswith("line 0087381 of the server")
    with open(path, "ab") as file:
        file.write(b"\x1b[32mready\x1b[0m at http://127.0.0.1:5173/\n")
    await until(lambda: "ready at http://127.0.0.1:5173/" in view.text.toPlainText())
    view.follow(None)
    view.close()
    view.deleteLater()


async def test_colours_are_rendered_and_odd_bytes_are_shown_safely(
    qtbot: object, tmp_path: Path
) -> None:
    path = tmp_path / "odd.log"
    path.write_bytes(b"\x1b[31mred\x1b[0m plain \xff\xfe bin\x00ary \x1b[1mbold\x1b[0m\n")
    view = LogView()
    view.follow(path)
    await until(lambda: view.reads >= 1)
    assert view.text.toPlainText() == "red plain \ufffd\ufffd bin␀ary bold\n"
    cursor = QTextCursor(view.text.document())
    cursor.setPosition(1)
    red = cursor.charFormat().foreground().color()
    assert red.red() > 150 and red.green() < 80
    cursor.setPosition(view.text.toPlainText().index("bold") + 1)
    assert cursor.charFormat().fontWeight() > 500
    view.follow(None)
    view.deleteLater()


async def test_search_finds_next_and_previous_and_wraps(qtbot: object, tmp_path: Path) -> None:
    path = tmp_path / "s.log"
    path.write_text("alpha\nbeta needle 1\ngamma\nneedle 2\n")
    view = LogView()
    view.follow(path)
    await until(lambda: view.reads >= 1)
    view.open_search()
    assert view.search_bar.isVisibleTo(view)
    view.search_edit.setText("needle")
    assert view.find_next()
    assert view.text.textCursor().blockNumber() == 1
    assert view.find_next()
    assert view.text.textCursor().blockNumber() == 3
    assert view.find_next()  # wraps to the first
    assert view.text.textCursor().blockNumber() == 1
    assert view.find_previous()  # wraps back to the last
    assert view.text.textCursor().blockNumber() == 3
    view.search_edit.setText("absent")
    assert not view.find_next()
    assert view.search_status.text() == "Not found"
    view.close_search()
    assert not view.search_bar.isVisibleTo(view)
    view.follow(None)
    view.deleteLater()


async def test_a_missing_log_is_said_once_and_shown_when_it_appears(
    qtbot: object, tmp_path: Path
) -> None:
    path = tmp_path / "later.log"
    view = LogView()
    view.show()
    view.follow(path)
    await until(lambda: "cannot be read" in view.text.toPlainText())
    await asyncio.sleep(0.8)  # several polls
    assert view.text.toPlainText().count("cannot be read") == 1
    path.write_text("here now\n")
    await until(lambda: "here now" in view.text.toPlainText())
    view.follow(None)
    view.close()
