"""Reasons and diagnostics: the short texts stored on work items and their events.

Fixed strings are the spec's (child-sessions §3.13). Every reason is at most 512 bytes of valid
UTF-8 with no NUL; failure diagnostics are also "model-safe" (no control characters but tab and
newline), because the model may read them back.
"""

from __future__ import annotations

import re

REASON_CAP_BYTES = 512

RESTART_INTERRUPTED = "interrupted by process restart"
PAUSED = "model response recovery paused; resume this subagent to continue"
ADMISSION_FAILED = "admission_failed"

# Failure codes used when a turn fails without a more specific diagnostic.
OUT_OF_MEMORY = "out_of_memory"
PROVIDER_FAILED = "provider_failed"
CANCELLED = "cancelled"
TURN_NOT_COMMITTED = "turn_not_committed"
MAX_ITERATIONS = "max_iterations"
TOOL_FAILED = "tool_failed"


class InvalidReason(ValueError):
    """A reason that is empty, too long, not UTF-8 or contains NUL."""


def validate_reason(reason: str | bytes) -> str:
    """The reason as text, or ``InvalidReason`` (cancel reasons: spec §3.1 refusals)."""
    if isinstance(reason, bytes):
        try:
            reason = reason.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidReason("the reason is not valid UTF-8") from exc
    if not reason:
        raise InvalidReason("the reason is empty")
    if "\x00" in reason:
        raise InvalidReason("the reason contains a NUL byte")
    try:
        size = len(reason.encode("utf-8"))
    except UnicodeEncodeError as exc:  # lone surrogates
        raise InvalidReason("the reason is not valid UTF-8") from exc
    if size > REASON_CAP_BYTES:
        raise InvalidReason(f"the reason is {size} bytes; the limit is {REASON_CAP_BYTES}")
    return reason


def is_model_safe(text: str) -> bool:
    """Text a model may read back: valid UTF-8, no control characters but tab and newline."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return all(ch in "\t\n" or (ord(ch) >= 0x20 and ord(ch) != 0x7F) for ch in text)


def validate_failure_reason(reason: str) -> str:
    validate_reason(reason)
    if not is_model_safe(reason):
        raise InvalidReason("the failure reason contains control characters")
    return reason


def truncate_utf8(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits in ``limit`` bytes."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: max(limit, 0)].decode("utf-8", errors="ignore")


def diagnostic(code: str, detail: str = "") -> str:
    """``"<code>: <detail>"`` cut to the reason cap, or ``code`` alone when the detail is empty
    or not model-safe (spec §2.8 setFailureDiagnostic)."""
    code = truncate_utf8(code, REASON_CAP_BYTES)
    if detail and is_model_safe(detail):
        room = REASON_CAP_BYTES - len(code.encode("utf-8")) - 2
        if room > 0:
            cut = truncate_utf8(detail, room)
            if cut:
                return f"{code}: {cut}"
    return code


# --- plain words for people ------------------------------------------------------------------

_PROVIDER_ADVICE = {
    "rate_limited": "The provider is rate limiting requests. Wait a minute, then Retry.",
    "auth": "The provider refused the API key. Check the profile's key in Settings, then Retry.",
    "connection": "The provider could not be reached. Check the network and the profile's "
    "base URL, then Retry.",
    "unavailable": "The model provider is not available.",
    "timeout": "The provider took too long to answer. Retry, or raise the profile's timeout.",
    "server_error": "The provider had an internal error. Retry in a moment.",
    "context_length": "The conversation is too long for this model. Start a new session, or "
    "pick a model with a larger context.",
    "bad_request": "The provider rejected the request.",
    "malformed_stream": "The provider sent an answer fxdesk could not read. Retry.",
    "stream_ended_early": "The provider's answer stopped part-way. Retry.",
    "malformed_tool_arguments": "The model asked for a tool with unreadable arguments. Retry.",
    "script_exhausted": "The scripted provider has no more answers.",
}


PROVIDER_ADVICE_KINDS = frozenset(_PROVIDER_ADVICE)

# Provider failures a profile's settings can mend (its key, base URL, model, timeout): the
# window offers "Edit profile" beside Retry.
PROFILE_FIXES = frozenset(
    {"auth", "connection", "unavailable", "timeout", "bad_request", "context_length"}
)
_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")


def provider_said(reason: str | None) -> str:
    """What the provider itself said about a failure, without errno numbers ('' when the
    reason is not a provider failure or it said nothing)."""
    code, _, detail = (reason or "").partition(": ")
    if code != PROVIDER_FAILED:
        return ""
    _, _, message = detail.partition(": ")
    return _ERRNO.sub("", message).strip()


def provider_failure_kind(reason: str | None) -> str:
    """``auth``, ``rate_limited``… of a provider failure ('' for anything else)."""
    code, _, detail = (reason or "").partition(": ")
    return detail.partition(": ")[0] if code == PROVIDER_FAILED else ""


# Why work was cancelled, as stored by who cancelled it, and as the window says it.
CANCELLED_BY_PERSON = "cancelled by the person"
STOPPED_BY_PERSON = "stopped by the person"  # Stop all agents
CANCELLED_BY_CALLER = "cancelled by its caller"  # the agent that started a run cancelled it
_CANCEL_WORDS = {
    CANCELLED_BY_PERSON: "You cancelled this.",
    STOPPED_BY_PERSON: "You stopped the session's agents.",
    CANCELLED_BY_CALLER: "The agent that started this one cancelled it.",
}


def explain(reason: str | None) -> str:
    """A stored reason or diagnostic as plain sentences saying what happened and what to do.

    A known provider failure is its advice alone (what the provider said is
    ``provider_said``, shown apart and labelled, so the sentence does not say it twice).

    >>> explain("provider_failed: rate_limited: slow down (HTTP 429)")
    'The provider is rate limiting requests. Wait a minute, then Retry.'
    """
    if not reason:
        return ""
    if reason == RESTART_INTERRUPTED:
        return (
            "fxdesk stopped while this turn was running. Nothing was re-run; Resume continues "
            "from the last saved step."
        )
    if reason in _CANCEL_WORDS:
        return _CANCEL_WORDS[reason]
    if reason == PAUSED:
        return "The turn was paused. Resume continues from the last saved step."
    code, _, detail = reason.partition(": ")
    if code == PROVIDER_FAILED:
        kind = detail.partition(": ")[0]
        advice = _PROVIDER_ADVICE.get(kind)
        if advice is None:
            return f"The model provider failed: {_ERRNO.sub('', detail)}"
        return advice
    if code == TURN_NOT_COMMITTED:
        return (
            "The turn's result could not be saved"
            + (f" ({detail})" if detail else "")
            + ". Resume continues from the last saved step."
        )
    if code == MAX_ITERATIONS:
        return f"The agent stopped after too many steps without an answer ({detail})."
    if code == ADMISSION_FAILED:
        return "The message could not be started" + (f": {detail}" if detail else ".")
    if code == OUT_OF_MEMORY:
        return "The turn ran out of memory."
    return reason
