"""Finding a secret in text, independently of how fxdesk masks it: the tests' own detector.

A text *exposes* a key when it holds any piece of it of ``PIECE`` characters or more (a cut that
keeps the start or the end of it counts), its URL encoding, or its base64 encoding at any
alignment in either alphabet (decoded here, not matched against fxdesk's precomputed forms).
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
import string
import urllib.parse

PIECE = 12  # logs.FRAGMENT_CHARS: a shorter piece of a real key is its public prefix at most
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{16,}")  # without "=": padding ends a run
_TO_STANDARD = str.maketrans("-_", "+/")


def make_key() -> str:
    """A 40-character key like an AWS secret key: letters, digits, '/' and '+' (so its URL
    encoding differs from it), different in every test."""
    alphabet = string.ascii_letters + string.digits
    body = "".join(secrets.choice(alphabet) for _ in range(36))
    return f"fx{body[:12]}/{body[12:24]}+{body[24:]}"


def exposed(text: str, key: str) -> list[str]:
    """How ``text`` exposes ``key`` (empty when it does not)."""
    found = [f"piece {key[i : i + PIECE]!r}" for i in range(len(key) - PIECE + 1)]
    found = [piece for i, piece in enumerate(found) if key[i : i + PIECE] in text]
    if key in urllib.parse.unquote(text):
        found.append("URL-encoded")
    raw = key.encode()
    for run in _BASE64_RUN.findall(text):
        run = run.translate(_TO_STANDARD)
        for start in range(4):
            chunk = run[start:]
            if len(chunk) % 4 == 1:  # a lone last character carries no whole byte
                chunk = chunk[:-1]
            try:
                if raw in base64.b64decode(chunk + "=" * (-len(chunk) % 4)):
                    found.append(f"base64 {run[:20]}...")
            except (binascii.Error, ValueError):
                continue
    return found
