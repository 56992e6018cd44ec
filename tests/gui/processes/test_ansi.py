"""Colour codes in logs become styled spans; other escapes and control bytes never show raw."""

from __future__ import annotations

from fxdesk.gui.processes.ansi import PLAIN, AnsiParser, Span, Style, apply_sgr, strip, visible


def test_foreground_bright_bold_and_reset() -> None:
    spans = AnsiParser().feed("\x1b[32mok\x1b[0m plain \x1b[1;91mERR\x1b[22m thin\x1b[39m x")
    assert spans == [
        Span("ok", Style(2)),
        Span(" plain ", PLAIN),
        Span("ERR", Style(9, bold=True)),
        Span(" thin", Style(9)),
        Span(" x", PLAIN),
    ]


def test_an_empty_sgr_resets_and_unknown_codes_are_skipped() -> None:
    assert apply_sgr(Style(3, bold=True), "") == PLAIN
    assert apply_sgr(PLAIN, "4;33") == Style(3)  # underline ignored, colour kept
    assert apply_sgr(PLAIN, "38;5;12") == Style(12)
    assert apply_sgr(PLAIN, "38;5;200") == PLAIN  # beyond the 16 colours: default
    assert apply_sgr(PLAIN, "38;2;1;2;3;1") == Style(None, bold=True)


def test_other_escapes_are_dropped_not_shown() -> None:
    text = "\x1b[2K\x1b[1G  VITE v5 ready\x1b]0;title\x07\x1b(B\n"
    assert "".join(s.text for s in AnsiParser().feed(text)) == "  VITE v5 ready\n"


def test_a_sequence_cut_between_two_reads_is_joined() -> None:
    parser = AnsiParser()
    first = parser.feed("before \x1b[3")
    assert first == [Span("before ", PLAIN)]
    assert parser.feed("1mred") == [Span("red", Style(1))]
    assert parser.style == Style(1)  # kept for the next chunk


def test_a_lone_escape_at_the_very_end_shows_when_final() -> None:
    assert AnsiParser().feed("x\x1b", final=True) == [Span("x␛", PLAIN)]


def test_nul_and_control_bytes_are_visible_symbols() -> None:
    assert visible("a\x00b\x07c\td\r\n\x7f") == "a␀b␇c\td\n␡"
    assert strip("\x1b[31mred\x1b[0m\x00") == "red␀"


def test_vite_banner_as_printed() -> None:
    banner = (
        "\x1b[32m\x1b[1mVITE\x1b[22m v5.0.0\x1b[39m  ready in \x1b[1m312\x1b[22m ms\n"
        "  \x1b[32m➜\x1b[39m  \x1b[1mLocal\x1b[22m:   \x1b[36mhttp://localhost:\x1b[1m5173\x1b[22m/\x1b[39m\n"
    )
    text = "".join(s.text for s in AnsiParser().feed(banner))
    assert text == "VITE v5.0.0  ready in 312 ms\n  ➜  Local:   http://localhost:5173/\n"
