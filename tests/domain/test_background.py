"""Pure decisions of background tasks (spec §3.7, §3.14, §10)."""

from __future__ import annotations

import pytest

from fxdesk.domain.background import (
    StopOutcome,
    StopResult,
    TaskState,
    completion_notice,
    explicit_port,
    is_inside,
    parse_ref,
    refreshed_state,
    same_command,
)
from fxdesk.domain.process_identity import TokenMatch


def test_exit_marker_decides_before_the_identity() -> None:
    """Scenario 26 (decision part): a marker 0 is `exited` even without a token."""
    assert refreshed_state(log_missing=False, exit_code=0, has_token=False, match=None) == (
        TaskState.EXITED
    )
    assert refreshed_state(log_missing=False, exit_code=3, has_token=True, match=None) == (
        TaskState.FAILED
    )


@pytest.mark.parametrize(
    ("has_token", "match", "expected"),
    [
        (False, None, TaskState.STALE),
        (True, TokenMatch.MATCHED, None),
        (True, TokenMatch.UNAVAILABLE, None),
        (True, TokenMatch.MISSING, TaskState.DEAD),
        (True, TokenMatch.MISMATCHED, TaskState.DEAD),
    ],
)
def test_without_marker_the_identity_decides(
    has_token: bool, match: TokenMatch | None, expected: TaskState | None
) -> None:
    assert (
        refreshed_state(log_missing=False, exit_code=None, has_token=has_token, match=match)
        == expected
    )


def test_a_missing_log_is_stale() -> None:
    assert refreshed_state(log_missing=True, exit_code=None, has_token=True, match=None) == (
        TaskState.STALE
    )


def test_every_stop_outcome_has_its_own_message() -> None:
    messages = {StopOutcome(4, "s", result).message for result in StopResult}
    assert len(messages) == len(StopResult)
    assert StopOutcome(4, "s", StopResult.ALREADY_GONE).message == (
        "Command #4 was no longer running (marked stale)."
    )
    assert (
        "permission denied"
        in StopOutcome(1, "s", StopResult.SIGNAL_ERROR, "permission denied").message
    )


def test_completion_notices() -> None:
    assert completion_notice(2, TaskState.EXITED, 0) == "Command #2 completed successfully."
    assert completion_notice(2, TaskState.FAILED, 7) == "Command #2 failed (exit 7)."
    assert completion_notice(2, TaskState.DEAD, None) == "Command #2 is no longer running."


def test_reuse_compares_trimmed_commands_only() -> None:
    assert same_command(" npm run dev\n", "npm run dev")
    assert not same_command("env X=1 sh -lc 'npm run dev'", "npm run dev")


def test_inside_is_by_path_component() -> None:
    assert is_inside("/w/app", "/w/app")
    assert is_inside("/w/app", "/w/app/web")
    assert not is_inside("/w/app", "/w/application")
    assert is_inside("/", "/x")


def test_refs() -> None:
    assert parse_ref("#3") == 3
    assert parse_ref("12") == 12
    assert parse_ref("AB" * 16) == "ab" * 16
    with pytest.raises(ValueError, match="reference"):
        parse_ref("#0")


@pytest.mark.parametrize(
    ("command", "port"),
    [
        ("npm run dev -- --port 5174", 5174),
        ("vite --port=3000", 3000),
        ("python -m http.server 8000", 8000),
        ("PORT=4000 node server.js", 4000),
        ("uvicorn app:app --bind 127.0.0.1:9000", 9000),
        ("npm run dev", None),
    ],
)
def test_explicit_port(command: str, port: int | None) -> None:
    assert explicit_port(command) == port
