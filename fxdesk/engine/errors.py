"""Errors the engine raises to its clients, each with a machine-readable ``code``.

Clients (the window, the CLI, an agent's tool call) branch on ``exc.code`` and show ``str(exc)``
to people; the code never hides inside the message text. The concrete classes also keep the
builtin base they always had (``ValueError``, ``LookupError``, ``RuntimeError``) so callers that
catch those still do.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.StrEnum):
    """Why the engine refused a command (the spec's error codes where it names them)."""

    INVALID_STATE = "invalid_state"  # the command does not apply to the session as it is now
    INVALID_ARGUMENT = "invalid_argument"  # an empty message or name, a folder that cannot be used
    NOT_FOUND = "not_found"  # no such session
    NOT_ACTIVE = "not_active"  # nothing running and nothing cached to join
    OPERATION_CONFLICT = "operation_conflict"  # an operation id reused for something else
    CHILD_UNAVAILABLE = "child_unavailable"  # the caller is not above that session
    CLOSED = "closed"  # the session owner is shut down


class EngineError(Exception):
    """Base of the engine's refusals.

    Attributes:
        code: What kind of refusal this is; subclasses set a default, a raise may override it.
    """

    code: ErrorCode = ErrorCode.INVALID_STATE

    def __init__(self, message: str, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class SessionError(EngineError, ValueError):
    """A command that does not apply to the session (closed, unknown, empty input...)."""


class InvalidWorkspace(EngineError, ValueError):
    """The chosen workspace folder cannot be used."""

    code = ErrorCode.INVALID_ARGUMENT


class WorktreeError(SessionError):
    """A worktree action that cannot be done (not a git repository, no commits, a merge that
    cannot fast-forward...), with what git said."""


class WorktreeDirty(WorktreeError):
    """Closing a session whose worktree holds uncommitted changes, without ``force``."""


class OperationConflict(SessionError):
    """The operation id was already used by another actor or for another command."""

    code = ErrorCode.OPERATION_CONFLICT


class WorkActive(EngineError, RuntimeError):
    """Refused: the session has active work (detach, reparent)."""

    def __init__(self, message: str = "the session has active work") -> None:
        super().__init__(message, code=ErrorCode.INVALID_STATE)


class SessionNotFound(EngineError, LookupError):
    """No session with that id."""

    code = ErrorCode.NOT_FOUND

    def __init__(self, session_id: str) -> None:
        # LookupError's str() of a single argument is the argument: keep the bare id, as before.
        super().__init__(session_id)
        self.session_id = session_id


class SessionNotActive(EngineError, LookupError):
    """``join`` on a session with no running slot and no cached result."""

    code = ErrorCode.NOT_ACTIVE

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class OwnerClosed(EngineError, RuntimeError):
    """The session owner is shut down."""

    code = ErrorCode.CLOSED


class RegistryClosed(EngineError, RuntimeError):
    """The approval registry is closed (fxdesk is shutting down): nothing more is asked or
    answered, and nothing is written; restart recovery settles what was pending."""

    code = ErrorCode.CLOSED


class UnknownAgent(EngineError, LookupError):
    """No named agent with that id in the workspace (nor the person's folder, nor built in)."""

    code = ErrorCode.NOT_FOUND


class BrokenAgent(EngineError, ValueError):
    """The agent's definition file cannot be used; the message names the file, line and field."""

    code = ErrorCode.INVALID_ARGUMENT
