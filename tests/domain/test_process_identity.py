import pytest

from fxdesk.domain.process_identity import (
    InvalidToken,
    ProcessToken,
    TokenMatch,
    check_token,
    parse_token,
)

SPEC_TOKEN = "linux:00112233445566778899aabbccddeeff:12345"


def test_the_spec_token_is_valid_and_equal_only_to_the_same_text():
    assert ProcessToken(SPEC_TOKEN) == ProcessToken(SPEC_TOKEN)
    assert ProcessToken(SPEC_TOKEN) != ProcessToken(SPEC_TOKEN[:-1] + "6")


@pytest.mark.parametrize(
    "text",
    [
        SPEC_TOKEN.upper(),
        "linux:00112233445566778899AABBCCDDEEFF:12345",  # upper-case hex (spec §2.14)
        "linux:00112233445566778899aabbccddeeff:012345",  # leading zero
        "linux:00112233445566778899aabbccddeeff:18446744073709551616",  # 2**64
        "linux:0011:12345",
        "linux:00112233445566778899aabbccddeeff:",
        "linux:00112233445566778899aabbccddeeff:12 345",
        "",
        "x" * 129,
    ],
)
def test_malformed_tokens_are_refused(text):
    with pytest.raises(InvalidToken):
        check_token(text)
    assert parse_token(text) is None


def test_zero_and_the_largest_start_time_are_valid():
    check_token("linux:00112233445566778899aabbccddeeff:0")
    check_token("psutil:00112233445566778899aabbccddeeff:18446744073709551615")


def test_only_missing_and_mismatched_count_as_gone():
    assert {m for m in TokenMatch if m.gone} == {TokenMatch.MISSING, TokenMatch.MISMATCHED}


def test_no_stored_token_parses_to_none():
    assert parse_token(None) is None
    assert parse_token(SPEC_TOKEN) == ProcessToken(SPEC_TOKEN)
