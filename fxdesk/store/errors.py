"""Store errors the person can act on, each with one plain sentence.

``StoreError.user_message`` is what the GUI's status bar and the CLI print. ``definite`` tells the
engine whether the failed write is known to have left nothing behind (``True``) or may have
committed (``False``: reconcile later, never assume either way; spec child-sessions §5.2).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from fxdesk.store.lock_holder import holder_words


class StoreError(Exception):
    """A database problem with a message for the person."""

    definite = True

    def __init__(self, user_message: str) -> None:
        super().__init__(user_message)
        self.user_message = user_message


class NewerSchemaError(StoreError):
    def __init__(self, path: Path, version: int) -> None:
        super().__init__(
            f"The database {path} was created by a newer fxdesk (schema {version}); "
            "upgrade fxdesk or use --data-dir to start with another data folder."
        )
        self.version = version


class NotADatabaseError(StoreError):
    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"{path} is not an fxdesk database ({why}). It was left untouched; "
            "move it away or use --data-dir to start with another data folder."
        )


class CorruptDatabaseError(StoreError):
    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"The database {path} is damaged ({why}). It was left untouched; restore "
            "it from a backup, or move it away to start fresh."
        )


class ReadOnlyError(StoreError):
    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            f"fxdesk cannot write to {path} ({why}). Make the data folder writable "
            "or use --data-dir to choose another one."
        )


class DiskFullError(StoreError):
    def __init__(self, path: Path) -> None:
        super().__init__(
            f"The disk holding {path} is full; nothing was saved. Free some space and try again."
        )


class DatabaseLockedError(StoreError):
    """The write lock stayed taken past the busy timeout; ``holder`` names who has it
    ("process 1234 (sqlite3, stopped)"), or is "another program" when that is unknown."""

    def __init__(self, path: Path, seconds: float, holder: str = "another program") -> None:
        super().__init__(
            f"The database {path} stayed locked by {holder} for "
            f"{seconds:g} s; nothing was saved. Close other programs using it "
            "(another fxdesk?) and try again."
        )
        self.holder = holder


class CommitFailed(StoreError):
    """A commit that is known to have written nothing."""


class CommitIndeterminate(StoreError):
    """A commit whose outcome is unknown: it may have landed."""

    definite = False


class StoreClosedError(StoreError):
    def __init__(self) -> None:
        super().__init__("The database is closed (fxdesk is shutting down).")


# SQLite primary result codes (https://sqlite.org/rescode.html)
SQLITE_BUSY = 5
SQLITE_LOCKED = 6
SQLITE_READONLY = 8
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26


def sqlite_causes(exc: BaseException) -> list[sqlite3.Error]:
    """The ``sqlite3`` errors behind ``exc``, outermost first.

    peewee wraps the driver error as its first argument; when SQLite has already rolled a
    transaction back (disk full, I/O error) peewee's own ROLLBACK fails too, and the real cause
    is that failure's context.
    """
    found: list[sqlite3.Error] = []
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, sqlite3.Error):
            found.append(seen)
        elif seen.args and isinstance(seen.args[0], sqlite3.Error):
            found.append(seen.args[0])
        seen = seen.__cause__ or seen.__context__
    return found


def translate(
    exc: BaseException, path: Path, *, busy_seconds: float, at_commit: bool = False
) -> StoreError | None:
    """Map a driver error to the store error the person understands, or ``None`` if it is a bug.

    ``at_commit`` marks errors raised by COMMIT itself: an I/O error there leaves the outcome
    unknown, so it becomes ``CommitIndeterminate``.
    """
    for cause in sqlite_causes(exc):
        translated = _translate_one(cause, path, busy_seconds, at_commit)
        if translated is not None:
            return translated
    return None


def _translate_one(
    cause: sqlite3.Error, path: Path, busy_seconds: float, at_commit: bool
) -> StoreError | None:
    code = (getattr(cause, "sqlite_errorcode", 0) or 0) & 0xFF
    text = str(cause)
    if code in (SQLITE_BUSY, SQLITE_LOCKED) or "database is locked" in text:
        return DatabaseLockedError(path, busy_seconds, holder_words(path))
    if code == SQLITE_FULL or "database or disk is full" in text:
        return DiskFullError(path)
    if code == SQLITE_READONLY or "readonly database" in text:
        return ReadOnlyError(path, text)
    if code == SQLITE_NOTADB or "file is not a database" in text:
        return NotADatabaseError(path, text)
    if code == SQLITE_CORRUPT or "malformed" in text:
        return CorruptDatabaseError(path, text)
    if code == SQLITE_CANTOPEN:
        return ReadOnlyError(path, text)
    if code == SQLITE_IOERR:
        if at_commit:
            return CommitIndeterminate(
                f"Saving to {path} failed with an I/O error ({text}); "
                "it is not known whether the change was saved."
            )
        return StoreError(
            f"Reading or writing {path} failed with an I/O error ({text}). "
            "Check the disk, then try again."
        )
    return None


# Failures that waiting does not clear: the file is damaged, foreign, newer than this fxdesk or
# cannot be written, or the store is closed (fxdesk is shutting down). Every other StoreError (a
# busy lock, a full disk, an I/O error, a commit that failed or whose outcome is unknown) may
# clear, so a caller that retries, retries those (spec child-sessions §7.1).
PERMANENT_ERRORS: tuple[type[StoreError], ...] = (
    NewerSchemaError,
    NotADatabaseError,
    CorruptDatabaseError,
    ReadOnlyError,
    StoreClosedError,
)


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is a store failure that may clear when the same work is tried again."""
    return isinstance(exc, StoreError) and not isinstance(exc, PERMANENT_ERRORS)
