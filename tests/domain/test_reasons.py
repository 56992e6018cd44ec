"""Stored reasons read back as plain sentences with what to do."""

from __future__ import annotations

import pytest

from fxdesk.domain import reasons


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (None, ""),
        (
            "interrupted by process restart",
            "fxdesk stopped while this turn was running. Nothing was re-run; Resume continues "
            "from the last saved step.",
        ),
        (
            "provider_failed: rate_limited: rate limited by the provider (HTTP 429): slow down",
            # The advice alone: what the provider said is shown apart (provider_said).
            "The provider is rate limiting requests. Wait a minute, then Retry.",
        ),
        (
            "provider_failed: auth",
            "The provider refused the API key. Check the profile's key in Settings, then Retry.",
        ),
        ("provider_failed: weird: thing", "The model provider failed: weird: thing"),
        (
            "turn_not_committed: the database is locked",
            "The turn's result could not be saved (the database is locked). Resume continues "
            "from the last saved step.",
        ),
        (
            "max_iterations: 50 model calls",
            "The agent stopped after too many steps without an answer (50 model calls).",
        ),
        ("cancelled by the person", "You cancelled this."),
        ("stopped by the person", "You stopped the session's agents."),
        ("cancelled by its caller", "The agent that started this one cancelled it."),
        ("closed with its parent", "closed with its parent"),  # anything else: as stored
    ],
)
def test_explain(stored: str | None, expected: str) -> None:
    assert reasons.explain(stored) == expected


def test_what_the_provider_said_is_kept_apart_without_errno_numbers() -> None:
    stored = "provider_failed: connection: Connection error: [Errno 111] Connection refused"
    assert reasons.explain(stored).startswith("The provider could not be reached.")
    assert reasons.provider_said(stored) == "Connection error: Connection refused"
    assert reasons.provider_failure_kind(stored) == "connection"
    assert "connection" in reasons.PROFILE_FIXES  # the window offers "Edit profile"
    assert "rate_limited" not in reasons.PROFILE_FIXES  # waiting mends it, not the profile
    assert reasons.provider_said("max_iterations: 50 model calls") == ""


def test_every_provider_code_the_providers_raise_has_advice() -> None:
    for code in (
        "rate_limited",
        "auth",
        "connection",
        "timeout",
        "server_error",
        "context_length",
        "malformed_stream",
        "stream_ended_early",
    ):
        explained = reasons.explain(f"provider_failed: {code}: detail")
        assert not explained.startswith("The model provider failed"), code
        assert "detail" not in explained  # said once, apart
        assert reasons.provider_said(f"provider_failed: {code}: detail") == "detail"
