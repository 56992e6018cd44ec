"""Which process a PID names: instance tokens and how a PID compares with one (spec §2.13-2.14, §4).

PIDs are recycled. A background task is identified by a *token* made of the platform, the boot id
and the process's start time, captured right after launch; nothing is ever signalled unless the
PID's current token is exactly the stored one at that moment. ``UNAVAILABLE`` (the identity could
not be read) never counts as gone: it means "do not act".

Forms (lower case, 1-128 ASCII characters, no white space or control characters):

- Linux: ``linux:<boot id, 32 hex>:<start ticks, canonical decimal>``
- elsewhere: ``psutil:<32 hex of the boot time>:<create time in microseconds, canonical decimal>``

"Canonical decimal": digits only, no leading zero unless the number is 0, fits in 64 bits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

MAX_TOKEN_CHARS = 128
_HEX32 = r"[0-9a-f]{32}"
_DECIMAL = r"(?:0|[1-9][0-9]*)"
_FORMS = (
    re.compile(rf"linux:({_HEX32}):({_DECIMAL})"),
    re.compile(rf"psutil:({_HEX32}):({_DECIMAL})"),
)
_U64_MAX = 2**64 - 1


class TokenMatch(StrEnum):
    """How a PID's current identity compares with an expected token."""

    MATCHED = "matched"  # the PID exists and is that very process instance
    MISSING = "missing"  # no process has that PID
    MISMATCHED = "mismatched"  # a process has that PID, but another instance (PID reused)
    UNAVAILABLE = "unavailable"  # could not tell: never act on it, never call it gone

    @property
    def gone(self) -> bool:
        """The process the token named is certainly no longer there."""
        return self in (TokenMatch.MISSING, TokenMatch.MISMATCHED)


class InvalidToken(ValueError):
    """A token's text is not one of the accepted forms."""


@dataclass(frozen=True)
class ProcessToken:
    """One process instance: compare with ``==`` (equal only if the text is identical)."""

    text: str

    def __post_init__(self) -> None:
        check_token(self.text)

    def __str__(self) -> str:
        return self.text


def check_token(text: str) -> str:
    """``text`` if it is a valid token, else ``InvalidToken`` saying why."""
    if not 1 <= len(text) <= MAX_TOKEN_CHARS:
        raise InvalidToken(f"a process token has 1 to {MAX_TOKEN_CHARS} characters")
    for form in _FORMS:
        match = form.fullmatch(text)
        if match is not None:
            if int(match.group(2)) > _U64_MAX:
                raise InvalidToken("a process token's start time must fit in 64 bits")
            return text
    raise InvalidToken("not a process token (linux:<boot id>:<start ticks>)")


def parse_token(text: str | None) -> ProcessToken | None:
    """A stored token back, or None when there is none or it is not valid (never acted on)."""
    if not text:
        return None
    try:
        return ProcessToken(text)
    except InvalidToken:
        return None
