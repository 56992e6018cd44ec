"""What ``fxdesk doctor`` and the window ask of the machine: can the database be opened, is it
whole, can the keyring keep secrets, and can commands run in the sandbox. Plain results, so the
command line and the window import neither the store nor the tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fxdesk.store import Store, StoreError
from fxdesk.store import secrets as secret_store
from fxdesk.store.secrets import KeyringStatus
from fxdesk.tools import sandbox_probe
from fxdesk.tools.sandbox_probe import SandboxStatus

__all__ = [
    "DatabaseHealth",
    "KeyringStatus",
    "SandboxStatus",
    "database_health",
    "keyring_status",
    "notice_text",
    "sandbox_status",
    "status_text",
]


@dataclass(frozen=True)
class DatabaseHealth:
    """The database file as found. ``problem`` is the plain sentence when it cannot be used
    (the file was left untouched); otherwise ``facts`` has schema, journal, integrity, size."""

    problem: str | None
    facts: dict[str, Any] = field(default_factory=dict)
    opened: bool = False

    @property
    def integrity(self) -> str:
        return str(self.facts.get("integrity", ""))


def database_health(path: Path) -> DatabaseHealth:
    """Open the database (refusing newer, foreign or damaged files before writing) and run
    SQLite's quick check."""
    try:
        store = Store.open(path)
    except StoreError as exc:
        return DatabaseHealth(exc.user_message)
    facts: dict[str, Any] = {}
    try:
        facts.update(
            schema_version=store.schema_version,
            journal_mode=store.journal_mode,
            integrity=store.quick_check(),
            size_bytes=path.stat().st_size,
        )
        if store.migrated_from is not None:
            facts["migrated_from"] = store.migrated_from
    except StoreError as exc:
        return DatabaseHealth(exc.user_message, facts, opened=True)
    finally:
        store.close()
    return DatabaseHealth(None, facts, opened=True)


def keyring_status() -> KeyringStatus:
    """Which keyring backend is in use, and whether it can store secrets."""
    return secret_store.status()


def sandbox_status() -> SandboxStatus:
    """Whether commands run in the sandbox here, and if not why and the fix (probed once per
    process; blocking the first time: call it off the event loop)."""
    return sandbox_probe.sandbox_status()


def status_text(status: SandboxStatus) -> str:
    """One line: whether commands run sandboxed, with what, or why not and the fix."""
    if status.available:
        version = f" {status.version}" if status.version else ""
        return f"Commands run in a sandbox: bubblewrap{version} ({status.bwrap})."
    return notice_text(status)


def notice_text(status: SandboxStatus) -> str:
    """The window's one line where there is no sandbox: "Commands run without a sandbox: why.
    The fix." ('' when there is one)."""
    if status.available:
        return ""
    fix = status.fix.strip()
    if fix and not fix.endswith("."):
        fix += "."
    return f"Commands run without a sandbox: {status.reason}. {fix}".strip()
