"""Reasons and diagnostics: the short texts stored on work items and their events.

Fixed strings are the spec's (child-sessions §3.13). Every reason is at most 512 bytes of valid
UTF-8 with no NUL; failure diagnostics are also "model-safe" (no control characters but tab and
newline), because the model may read them back.
"""

from __future__ import annotations

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
