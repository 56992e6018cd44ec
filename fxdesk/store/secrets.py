"""Secrets live only in the OS keyring, behind this small interface.

Nothing else in fxdesk imports ``keyring``. The backend is whatever ``keyring`` picks (the Secret
Service on a Linux desktop); ``PYTHON_KEYRING_BACKEND`` chooses another, and tests force a file or
null backend so no OS prompt appears.
"""

from __future__ import annotations

from dataclasses import dataclass

import keyring
import keyring.backend
import keyring.errors

SERVICE = "fxdesk"

NO_BACKEND_HELP = (
    "No usable keyring (OS secret store) was found. Install and unlock a Secret "
    "Service such as gnome-keyring or KWallet, or give keys through an environment "
    "variable (--api-key-env)."
)


@dataclass(frozen=True)
class KeyringStatus:
    backend: str
    usable: bool
    detail: str
    encrypted: bool = True


def _describe(backend: keyring.backend.KeyringBackend) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


def status() -> KeyringStatus:
    """Which backend is in use, and whether it can store secrets."""
    try:
        backend = keyring.get_keyring()
    except Exception as exc:  # a broken backend configuration
        return KeyringStatus("unknown", False, f"{NO_BACKEND_HELP} ({exc})")
    name = _describe(backend)
    module = type(backend).__module__
    if module.startswith(("keyring.backends.fail", "keyring.backends.null")):
        return KeyringStatus(name, False, NO_BACKEND_HELP)
    priority = getattr(backend, "priority", None)
    plaintext = "Plaintext" in type(backend).__name__
    return KeyringStatus(name, True, f"priority {priority}", encrypted=not plaintext)
