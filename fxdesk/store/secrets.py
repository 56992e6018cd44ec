"""Secrets live only in the OS keyring, behind this small interface.

Nothing else in fxdesk imports ``keyring``. The backend is whatever ``keyring`` picks (the Secret
Service on a Linux desktop); ``PYTHON_KEYRING_BACKEND`` chooses another, and tests force a file or
null backend so no OS prompt appears.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keyring.backend

SERVICE = "fxdesk"

NO_BACKEND_HELP = (
    "No usable keyring (OS secret store) was found. Install and unlock a Secret "
    "Service such as gnome-keyring or KWallet, or give keys through an environment "
    "variable (--api-key-env)."
)


@dataclass(frozen=True)
class KeyringStatus:
    backend: str  # the class, for diagnostics (doctor)
    usable: bool
    detail: str
    encrypted: bool = True
    label: str = ""  # what the person knows it as: "GNOME Keyring or KWallet", "a file"…


# keyring's backend modules, as a person knows what they store in.
_LABELS = {
    "SecretService": "GNOME Keyring or another Secret Service",
    "libsecret": "GNOME Keyring or another Secret Service",
    "kwallet": "KWallet",
    "macOS": "the macOS Keychain",
    "Windows": "the Windows Credential Manager",
    "file": "a file in your home folder",
}


def _keyring() -> ModuleType:
    """``keyring``, imported at the first secret asked for: it costs ~30 ms of imports (and
    more to find its backend) that start-up does not need (docs/performance.md)."""
    import keyring
    import keyring.errors

    return keyring


def _describe(backend: keyring.backend.KeyringBackend) -> str:
    cls = type(backend)
    return f"{cls.__module__}.{cls.__qualname__}"


def _label(backend: keyring.backend.KeyringBackend) -> str:
    module = type(backend).__module__.rsplit(".", 1)[-1]
    return _LABELS.get(module, str(getattr(backend, "name", "") or type(backend).__name__))


def status() -> KeyringStatus:
    """Which backend is in use, and whether it can store secrets."""
    keyring = _keyring()
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
    return KeyringStatus(
        name, True, f"priority {priority}", encrypted=not plaintext, label=_label(backend)
    )


class SecretsUnavailable(Exception):
    """No keyring can store or give secrets here; ``user_message`` says what to do."""

    def __init__(self, detail: str = "") -> None:
        message = NO_BACKEND_HELP + (f" ({detail})" if detail else "")
        super().__init__(message)
        self.user_message = message


def _username(profile: str) -> str:
    return f"profile:{profile}"


def _usable() -> None:
    state = status()
    if not state.usable:
        raise SecretsUnavailable()


def set_secret(profile: str, secret: str) -> None:
    """Store the API key of ``profile`` in the OS keyring (blocking: call from a thread)."""
    keyring = _keyring()
    _usable()
    try:
        keyring.set_password(SERVICE, _username(profile), secret)
    except keyring.errors.KeyringError as exc:
        raise SecretsUnavailable(type(exc).__name__) from None


def get_secret(profile: str) -> str | None:
    """The API key of ``profile``, or None if none is stored (blocking)."""
    keyring = _keyring()
    _usable()
    try:
        return keyring.get_password(SERVICE, _username(profile))
    except keyring.errors.KeyringError as exc:
        raise SecretsUnavailable(type(exc).__name__) from None


def delete_secret(profile: str) -> bool:
    """Forget the API key of ``profile``; False if there was none (blocking)."""
    keyring = _keyring()
    _usable()
    try:
        keyring.delete_password(SERVICE, _username(profile))
    except keyring.errors.PasswordDeleteError:
        return False
    except keyring.errors.KeyringError as exc:
        raise SecretsUnavailable(type(exc).__name__) from None
    return True
