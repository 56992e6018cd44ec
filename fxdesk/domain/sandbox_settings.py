"""What the person lets the sandbox of one workspace's commands do beyond the defaults.

Kept per workspace (the store's settings, ``workspace.<id>.sandbox``): folders the agent's
commands may write besides the workspace (a tool's cache, say ``~/.cache/pip``), variable names
passed on beyond the allow-list (``fxdesk.tools.sandbox.ALLOWED_VARIABLES``), and whether
commands get the network without asking in auto mode.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


class SandboxSettingsError(ValueError):
    """A workspace's sandbox settings that cannot be used, with what is wrong."""


# Read by bash before it runs the line (a file to source, options that change how it parses):
# never passed to a command, so what runs is what the permission check read.
SHELL_VARIABLES = frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS"})
# Names a workspace cannot pass on: the sandbox sets them itself, or bash would run something
# else than the line. Listing one would be silently ignored, so it is refused with why.
RESERVED_VARIABLES = {
    "TMPDIR": "the sandbox sets it to its own /tmp",
    **{
        name: "bash reads it before the command, so it is never passed on"
        for name in SHELL_VARIABLES
    },
}
_FUNCTION_PREFIX = "BASH_FUNC_"  # an exported function: replaces a command the check read

# Parts of a variable's name that say it holds a secret, or the way to one (an agent socket,
# the session bus that reaches the keyring).
_SECRET_WORDS = frozenset(
    {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "KEY", "APIKEY", "CREDENTIAL",
     "CREDENTIALS", "AUTH", "COOKIE", "PRIVATE", "DBUS"}
)  # fmt: skip
_SECRET_PARTS = ("SECRET", "TOKEN", "PASSWORD", "APIKEY", "CREDENTIAL")


def secret_like(name: str) -> bool:
    """Whether the variable ``name`` looks like it holds a secret: a word of it is ``TOKEN``,
    ``KEY``, ``AUTH``, ``DBUS``… (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``,
    ``SSH_AUTH_SOCK``, ``DBUS_SESSION_BUS_ADDRESS``), or it contains ``SECRET``, ``TOKEN``,
    ``PASSWORD``… anywhere (``MYTOKEN``)."""
    upper = name.upper()
    return bool(_SECRET_WORDS & set(upper.split("_"))) or any(p in upper for p in _SECRET_PARTS)


def variable_warning(name: str, key_variables: Iterable[str] = ()) -> str:
    """What the person should know before passing ``name`` to commands ('' when nothing).

    Args:
        name: A variable name of ``WorkspaceSandbox.extra_env``.
        key_variables: The variables profiles read their model keys from.
    """
    if name in key_variables:
        return f"{name} holds a model key of a profile: fxdesk never passes it to commands"
    if secret_like(name):
        return f"{name} looks like a secret: commands, and so the model, can read its value"
    return ""


@dataclass(frozen=True)
class WorkspaceSandbox:
    """One workspace's additions to the sandbox.

    Attributes:
        writable: Absolute folders (or files) commands may write besides the workspace; ``~``
            stands for the home folder. Hidden paths stay hidden whatever is listed here.
        extra_env: Variable names passed on to commands beyond the allow-list (their values
            from fxdesk's environment). Never the sandbox's own (``RESERVED_VARIABLES``); a
            profile's key variable is listed but not passed (``variable_warning`` says so).
        network: Commands get the network without asking, in auto mode too.
    """

    writable: tuple[str, ...] = ()
    extra_env: tuple[str, ...] = ()
    network: bool = False

    @classmethod
    def make(
        cls, writable: Iterable[str] = (), extra_env: Iterable[str] = (), network: bool = False
    ) -> WorkspaceSandbox:
        """Checked settings: absolute (or ``~``) paths, variable names of letters, digits and
        underscores; each listed once, in the order given.

        Raises:
            SandboxSettingsError: naming the path or name that cannot be used.
        """
        paths: list[str] = []
        for raw in writable:
            path = raw.strip()
            if not path:
                continue
            if not (path.startswith("/") or path == "~" or path.startswith("~/")):
                raise SandboxSettingsError(
                    f"writable path {path!r} is not absolute: start it with / or ~/"
                )
            if path.rstrip("/") in ("", "~"):
                raise SandboxSettingsError(
                    f"writable path {path!r} would make the whole "
                    + ("file system" if path.startswith("/") else "home folder")
                    + " writable: name the folder the tool writes, e.g. ~/.cache/pip"
                )
            paths.append(path)
        names: list[str] = []
        for raw in extra_env:
            name = raw.strip()
            if not name:
                continue
            if not (name.replace("_", "a").isalnum() and name.isascii() and not name[0].isdigit()):
                raise SandboxSettingsError(
                    f"{name!r} is not a variable name (letters, digits and _, not starting "
                    "with a digit)"
                )
            if name in RESERVED_VARIABLES:
                raise SandboxSettingsError(
                    f"{name} cannot be passed on: {RESERVED_VARIABLES[name]}"
                )
            if name.startswith(_FUNCTION_PREFIX):
                raise SandboxSettingsError(
                    f"{name} cannot be passed on: it is a bash function, which would replace a "
                    "command the permission check read"
                )
            names.append(name)
        return cls(tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(names)), bool(network))

    @classmethod
    def from_value(cls, value: Any) -> WorkspaceSandbox:
        """Settings as the store keeps them (a JSON object); what is missing or unusable there
        counts as not set (the defaults), so a damaged setting never stops a command."""
        if not isinstance(value, dict):
            return cls()
        writable = value.get("writable", [])
        extra_env = value.get("extra_env", [])
        network = value.get("network", False)
        try:
            return cls.make(
                [p for p in writable if isinstance(p, str)] if isinstance(writable, list) else (),
                [n for n in extra_env if isinstance(n, str)] if isinstance(extra_env, list) else (),
                network is True,
            )
        except SandboxSettingsError:
            return cls()

    def to_value(self) -> dict[str, Any]:
        """The JSON object the store keeps."""
        return {
            "writable": list(self.writable),
            "extra_env": list(self.extra_env),
            "network": self.network,
        }


def setting_key(workspace_id: int) -> str:
    """The store setting that holds one workspace's sandbox settings."""
    return f"workspace.{workspace_id}.sandbox"


DEFAULTS = WorkspaceSandbox()  # nothing added: what a workspace has until the person says more
