"""Terminal colour codes in a log, turned into styled spans (pure: no Qt).

Handles the SGR codes dev servers print: 0 (reset), 1 (bold), 22 (normal), 30–37 and 90–97
(foreground), 39 (default foreground), 38;5;N (256 colours: the first 16 kept, the others
ignored) and skips the rest of each SGR list. Every other escape sequence (cursor moves, erase
line, window titles) is dropped, so none of it shows as garbage. Control characters that are not
line breaks or tabs are shown as their visible symbols (NUL as ␀), so a binary byte cannot hide
text or confuse the view. A sequence cut in two by a read is held back until its end arrives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ESC = "\x1b"
_SEQUENCE = re.compile(
    r"\x1b(?:"
    r"\[(?P<params>[0-?]*)(?P<inter>[ -/]*)(?P<final>[@-~])"  # CSI
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, ended by BEL or ST
    r"|[ -/]*[0-Z\\^-~]"  # two-character and nF escapes (not the CSI and OSC openers)
    r")"
)
_HOLD_BACK = 256  # an escape this close to the end of a chunk may be cut: wait for the rest
_CONTROLS: dict[int, str | None] = {
    c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)
}
_CONTROLS[0x0D] = None  # carriage returns: lines end with \n, progress bars redraw with \r
_CONTROLS[0x7F] = "␡"
_TRANSLATE = str.maketrans(_CONTROLS)


@dataclass(frozen=True)
class Style:
    """How a span looks: a colour index 0–15 (None: the view's text colour) and boldness."""

    colour: int | None = None
    bold: bool = False


PLAIN = Style()


@dataclass(frozen=True)
class Span:
    text: str
    style: Style


def visible(text: str) -> str:
    """``text`` with control characters (other than \\n and \\t) shown as symbols, \\r dropped."""
    return text.translate(_TRANSLATE)


def apply_sgr(style: Style, params: str) -> Style:
    """``style`` after the SGR parameter list ``params`` ("1;32", "" = reset)."""
    codes = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else [0]
    colour, bold = style.colour, style.bold
    i = 0
    while i < len(codes):
        code = codes[i]
        if code == 0:
            colour, bold = None, False
        elif code == 1:
            bold = True
        elif code == 22:
            bold = False
        elif 30 <= code <= 37:
            colour = code - 30
        elif 90 <= code <= 97:
            colour = code - 90 + 8
        elif code == 39:
            colour = None
        elif code in (38, 48):  # extended colour: 5;N or 2;R;G;B
            if i + 2 < len(codes) and codes[i + 1] == 5:
                if code == 38:
                    colour = codes[i + 2] if codes[i + 2] < 16 else None
                i += 2
            elif i + 4 < len(codes) and codes[i + 1] == 2:
                i += 4
        i += 1
    return Style(colour, bold)


class AnsiParser:
    """Feeds decoded text in chunks, returns styled spans; keeps the style across chunks."""

    def __init__(self) -> None:
        self.style = PLAIN
        self._pending = ""

    def reset(self) -> None:
        self.style = PLAIN
        self._pending = ""

    def feed(self, text: str, *, final: bool = False) -> list[Span]:
        """The spans of ``text`` (with whatever an earlier chunk held back); ``final``: no more
        text follows, so a cut escape is shown as it is."""
        text = self._pending + text
        self._pending = ""
        if not final:
            cut = text.rfind(ESC, max(0, len(text) - _HOLD_BACK))
            if cut >= 0 and not _SEQUENCE.match(text, cut):
                text, self._pending = text[:cut], text[cut:]
        spans: list[Span] = []
        at = 0
        for match in _SEQUENCE.finditer(text):
            self._add(spans, text[at : match.start()])
            at = match.end()
            if match.group("final") == "m" and not match.group("inter"):
                self.style = apply_sgr(self.style, match.group("params"))
        self._add(spans, text[at:])
        return spans

    def _add(self, spans: list[Span], text: str) -> None:
        text = visible(text)
        if not text:
            return
        if spans and spans[-1].style == self.style:
            spans[-1] = Span(spans[-1].text + text, self.style)
        else:
            spans.append(Span(text, self.style))


def strip(text: str) -> str:
    """``text`` without escape sequences, control characters shown (for copying a line)."""
    return visible(_SEQUENCE.sub("", text))
