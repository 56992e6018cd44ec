"""Text that can be stored and shown whatever it came from.

Python keeps the bytes of a file name that are not UTF-8 as lone surrogates (``surrogateescape``:
``b"\\xff"`` is ``"\\udcff"``), and a model's JSON may carry a lone ``\\ud800`` too. SQLite, Qt and
the providers take only UTF-8, so such a character reaching the history used to end the turn
with ``UnicodeEncodeError`` (issue 16 item 6). ``storable`` replaces each with U+FFFD, as invalid
bytes in a command's output are shown.

A file name is also something the model must be able to give back: ``shown_name`` writes a
name with a line break, another control character or bytes that are not UTF-8 as a JSON string
(``"new\\nline.txt"``, ``"bad\\udcff.txt"``), which the model passes as the path argument as it
is and which then names the very file (JSON's ``\\udcff`` is Python's surrogate for byte 0xff).
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
_ODD_IN_NAME = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
_ESCAPED = re.compile('[\x00-\x1f\x7f\ud800-\udfff"\\\\]')
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}


def storable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (everything else kept)."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text)


def shown_name(name: str) -> str:
    """``name`` as a tool shows it: unchanged, or as a JSON string when it holds a control
    character or a byte that is not UTF-8 (module docstring)."""
    if _ODD_IN_NAME.search(name) is None:
        return name
    return '"' + _ESCAPED.sub(_escape, name) + '"'


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"
