"""``logs.redact`` and ``turn_tools.redacted``: every form of a registered key a tool's output
may carry is masked, checked with the tests' own detector (``tests/leaks.py``), and each check
is shown able to fail on the unredacted text."""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterator

import pytest

from fxdesk import logs
from fxdesk.engine.turn_tools import redacted
from fxdesk.tools.base import MODEL_OUTPUT_CAP, ToolResult, bounded
from tests.leaks import PIECE, exposed, make_key


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh key, the only one registered for the test (the registry is put back after)."""
    monkeypatch.setattr(logs, "_SECRETS", set())
    monkeypatch.setattr(logs, "_NEEDLES", ())
    value = make_key()
    logs.register_secret(value)
    yield value


def b64(data: bytes, *, urlsafe: bool = False) -> str:
    encoded = base64.urlsafe_b64encode(data) if urlsafe else base64.b64encode(data)
    return encoded.decode()


# Each way a program may print a key; ``before``/``after`` put it at every alignment.
FORMS = {
    "plain": lambda key, before, after: f"{before}{key}{after}",
    "URL-encoded": lambda key, before, after: before + urllib.parse.quote(key, safe="") + after,
    "base64": lambda key, before, after: b64(f"{before}{key}{after}".encode()),
    "base64 URL-safe": lambda key, before, after: b64(
        f"{before}{key}{after}".encode(), urlsafe=True
    ),
    "HTTP basic auth": lambda key, before, after: (
        "Authorization: Basic " + b64(f"{before}user:{key}".encode())
    ),
}
AROUND = [("", ""), ("a", ""), ("ab", "z"), ("abc", "yz"), ("token=", "\n"), ("é", "✓")]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(("before", "after"), AROUND)
def test_every_form_of_the_key_is_masked(key: str, form: str, before: str, after: str) -> None:
    text = f"output line\n{FORMS[form](key, before, after)}\nmore output\n"
    assert exposed(text, key), "the detector must see the key in the raw text"
    masked = logs.redact(text)
    assert exposed(masked, key) == []
    assert logs.REDACTED in masked
    assert masked.startswith("output line\n") and masked.endswith("\nmore output\n")


@pytest.mark.parametrize("length", range(PIECE, 41))
def test_a_cut_that_keeps_the_start_or_the_end_of_the_key_is_masked(key: str, length: int) -> None:
    start, end = key[:length], key[-length:]
    masked = logs.redact(f"[...]{start}\n{end}[...]")
    assert start not in masked and end not in masked
    assert masked == f"[...]{logs.REDACTED}\n{logs.REDACTED}[...]"


def test_pieces_shorter_than_a_fragment_are_kept(key: str) -> None:
    """The documented limit: fewer than FRAGMENT_CHARS characters of the start or the end may
    show (for a real key, its public prefix); ordinary text is never touched."""
    text = f"{key[: PIECE - 1]} and {key[-(PIECE - 1) :]}; sk- and fx words"
    assert logs.redact(text) == text


def test_a_short_secret_is_masked_only_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "_SECRETS", set())
    monkeypatch.setattr(logs, "_NEEDLES", ())
    logs.register_secret("abcd1234")
    assert logs.redact("abcd1234 abcd123 bcd1234") == "[redacted] abcd123 bcd1234"


@pytest.mark.parametrize("where", ["head cut", "tail cut"])
@pytest.mark.parametrize("inside", [1, PIECE, 20, 39])
def test_the_model_output_cap_cutting_through_the_key_shows_no_piece_of_it(
    key: str, where: str, inside: int
) -> None:
    """``bounded`` keeps the first half of the cap and the last quarter: a key across either
    cut would leave its start (or its end) in the model's output."""
    size = 3 * MODEL_OUTPUT_CAP
    if where == "head cut":
        at = MODEL_OUTPUT_CAP // 2 - inside  # ``inside`` characters of the key before the cut
    else:
        at = size - MODEL_OUTPUT_CAP // 4 - len(key) + inside  # ``inside`` after it
    text = "x" * at + key + "y" * (size - at - len(key))
    output, full = bounded(text)
    assert full == text and key not in output  # the cut went through the key
    result = redacted(ToolResult(True, output, full, {"path": key}))
    assert exposed(result.output, key) == []
    assert result.full_output is not None and exposed(result.full_output, key) == []
    assert exposed(str(result.data), key) == []


def test_redacted_keeps_everything_but_the_key(key: str) -> None:
    result = ToolResult(False, f"error: {key} refused", None, {"exit_code": 2, "list": [key]})
    assert redacted(result) == ToolResult(
        False, "error: [redacted] refused", None, {"exit_code": 2, "list": ["[redacted]"]}
    )
