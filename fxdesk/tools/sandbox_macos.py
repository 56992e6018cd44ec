"""The sandbox's policy on macOS: a Seatbelt profile, run with ``sandbox-exec``.

Seatbelt checks each operation of a process (and of everything it starts) against a profile
written in SBPL, Apple's Scheme-like profile language. The profile here expresses the same
``SandboxPolicy`` bubblewrap gets on Linux:

- **Closed by default** (``(deny default)``), as Chromium's renderer profile and Codex's are, and
  not ``(allow default)`` with denies: an open profile leaves every Mach service reachable, and
  through launchd, Launch Services or Apple Events (``open``, ``osascript``) a command could have
  a program started *outside* the sandbox, or read the pasteboard and the keychain. Closed, a
  command gets exactly the short list below; what a program needs beyond it fails (and
  docs/sandbox.md lists what is known to).
- **Files**: everything is readable except the hidden paths (their contents and listing; their
  own metadata stays readable, as on Linux an empty folder stands in their place); writable are
  the workspace, the session's temp folder and the granted paths, minus the protected paths in
  them (``.git``, ``.fxdesk`` and, unlike bubblewrap can, a ``.git`` *link*'s own path) and the
  hidden ones. Seatbelt matches paths, not mounts, so a protected path that does not exist yet
  cannot be created either.
- **Network** off: loopback only (the host's: there is no network namespace; a service on the
  host's ``localhost`` is reachable, unlike Linux), and Unix sockets only inside the writable
  folders. On: IP anywhere and the resolver, still no Unix socket of the host (``/var/run``'s
  docker and agent sockets).
- **Processes**: signals and process information only within the sandbox. There is no PID
  namespace: the command sees other processes' names with ``ps`` aside (``ps`` is setuid and
  fails), and what it leaves running with its output redirected outlives it.

Paths never appear in the profile's text: each is passed to ``sandbox-exec`` as a parameter
(``-D KEY=path``) and named ``(param "KEY")`` in the profile, so no quote, parenthesis or newline
in a folder's name can change what the profile says. The profile text depends only on how many
paths of each kind there are.

Not tested on a Mac here (the project has none): the tests check the profile's meaning with a
small SBPL evaluator and the command line ``run_command`` starts; docs/sandbox.md says which
parts of the profile would need a Mac to confirm.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from fxdesk.tools.protected import FXDESK, GIT
from fxdesk.tools.sandbox import SandboxPolicy

# Only this one: a sandbox-exec found on PATH could be anyone's (Codex keeps to it for the same
# reason). Replacing /usr/bin needs root, who needs no sandbox escape.
SANDBOX_EXEC = "/usr/bin/sandbox-exec"

# What any command needs under a closed profile, whatever the policy. Each line says why.
_BASE = """\
(version 1)
(deny default)
; Running programs: bash starts every command. Signals and process information stay within the
; sandbox, so fxdesk and the person's other programs can be neither signalled nor inspected.
(allow process-fork)
(allow process-exec)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
; Output to the null device and to the descriptors the command already holds (`> /dev/stderr`,
; bash's `>(...)`): writing an open descriptor reaches nothing new.
(allow file-write-data
  (literal "/dev/null")
  (literal "/dev/stdout")
  (literal "/dev/stderr")
  (regex #"^/dev/fd/[0-9]+$"))
; What runtimes read about the machine (CPU count, memory, OS version, Rosetta). Not
; kern.procargs2, which holds other processes' arguments and environment.
(allow sysctl-read
  (sysctl-name-prefix "hw.")
  (sysctl-name-prefix "machdep.cpu.")
  (sysctl-name-prefix "kern.proc.pid.")
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.boottime")
  (sysctl-name "kern.hostname")
  (sysctl-name "kern.maxfiles")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.usrstack64")
  (sysctl-name "kern.version")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "sysctl.proc_native")
  (sysctl-name "sysctl.proc_translated")
  (sysctl-name "vm.loadavg")
  (sysctl-name "vm.swapusage"))
; Who the user is (getpwuid: bash, git, ssh, Python) and the preferences many command-line
; tools read. No other Mach service: not launchd's, Launch Services', the pasteboard's or the
; keychain's (com.apple.SecurityServer).
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.cfprefsd.daemon")
  (global-name "com.apple.cfprefsd.agent"))
(allow user-preference-read)
(allow ipc-posix-shm-read* (ipc-posix-name-prefix "apple.cfprefs."))
; Python's multiprocessing locks.
(allow ipc-posix-sem)
; Unix sockets: socketpair and local servers (inside the writable folders, below).
(allow system-socket (socket-domain AF_UNIX))
"""

# With the network off: the host's loopback only. A server may bind any address, but only
# connections to localhost reach it.
_LOOPBACK = """\
(allow network-bind (local ip "*:*"))
(allow network-inbound (local ip "localhost:*"))
(allow network-outbound (remote ip "localhost:*"))
"""

# With the network on: IP anywhere, name resolution (mDNSResponder's socket and configd) and
# certificate checks (trustd), as Chromium's network profile allows; still no Unix socket of the
# host.
_NETWORK = """\
(allow network-bind (local ip "*:*"))
(allow network-inbound (local ip "*:*"))
(allow network-outbound (remote ip "*:*"))
(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
(allow system-socket)
(allow mach-lookup
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd")
  (global-name "com.apple.networkd")
  (global-name "com.apple.dnssd.service")
  (global-name "com.apple.trustd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.ocspd"))
(allow sysctl-read (sysctl-name-prefix "net.routetable."))
"""


@dataclass(frozen=True)
class SeatbeltProfile:
    """A profile and the values of the parameters it names.

    Attributes:
        text: The SBPL profile: no path in it, only ``(param "KEY")``.
        parameters: KEY → path, for ``sandbox-exec -D KEY=path``.
    """

    text: str
    parameters: tuple[tuple[str, str], ...]


@dataclass
class _Parameters:
    """Hands out one parameter name per (role, path), numbered within its role."""

    values: dict[str, str] = field(default_factory=dict)
    names: dict[tuple[str, str], str] = field(default_factory=dict)

    def name(self, role: str, path: Path) -> str:
        key = (role, os.fspath(path))
        if key not in self.names:
            count = sum(1 for known_role, _ in self.names if known_role == role)
            self.names[key] = f"{role}_{count}"
            self.values[self.names[key]] = os.fspath(path)
        return f'(param "{self.names[key]}")'


def seatbelt_profile(policy: SandboxPolicy) -> SeatbeltProfile:
    """``policy`` as a Seatbelt profile (pure: reads nothing).

    The writable folders are the workspace, the granted paths and ``policy.temp_dir``; each is
    writable except the protected and hidden paths inside it. A grant at or inside a protected
    path (an approval for exactly that) is writable whole, as bubblewrap binds it last. Rules
    only allow: none denies, so their order cannot matter.
    """
    params = _Parameters()
    writable = _writable(policy)
    hidden = list(policy.hidden)
    sections = [
        _BASE,
        _reads(params, writable, hidden),
        _writes(params, policy, writable, hidden),
        _unix_sockets(params, writable),
        _NETWORK if policy.network else _LOOPBACK,
    ]
    return SeatbeltProfile("".join(sections), tuple(params.values.items()))


def seatbelt_arguments(policy: SandboxPolicy, command: Sequence[str]) -> list[str]:
    """``sandbox-exec``'s arguments (after the program) to run ``command`` under ``policy``."""
    profile = seatbelt_profile(policy)
    args = ["-p", profile.text]
    for key, value in profile.parameters:
        args += ["-D", f"{key}={value}"]
    return [*args, "--", *command]


def seatbelt_environment(policy: SandboxPolicy) -> dict[str, str]:
    """The command's environment: the policy's, with the session's temp folder as ``TMPDIR``
    (there is no private ``/tmp`` to mount; the host's is read-only)."""
    env = dict(policy.environment)
    if policy.temp_dir is not None:
        env["TMPDIR"] = os.path.realpath(policy.temp_dir)
    return env


def seatbelt_launch(
    program: str, policy: SandboxPolicy, command: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment to run ``command`` under ``policy`` with ``program``
    (``SANDBOX_EXEC``); reads the workspace (blocking).

    Two protected paths are added as named, which bubblewrap cannot cover: a ``.git`` that is a
    symbolic link (``policy.protected`` holds where it points; the link itself, in the writable
    workspace, could be replaced by a folder of the agent's own, and a mount follows the link),
    and ``.fxdesk`` whether it exists or not (Seatbelt matches the path, so it cannot be made).
    """
    named = [policy.workspace / FXDESK]
    if (policy.workspace / GIT).is_symlink():
        named.append(policy.workspace / GIT)
    protected = tuple(dict.fromkeys([*policy.protected, *named]))
    full = replace(policy, protected=protected)
    return [program, *seatbelt_arguments(full, command)], seatbelt_environment(full)


def _writable(policy: SandboxPolicy) -> list[Path]:
    temp = [] if policy.temp_dir is None else [Path(os.path.realpath(policy.temp_dir))]
    return list(dict.fromkeys([*policy.writable, *temp]))


def _reads(params: _Parameters, writable: list[Path], hidden: list[Path]) -> str:
    """Everything but the hidden paths; the writable folders whole (one inside a hidden folder,
    as the workspace inside the data folder, is bound back on Linux too), with the metadata of
    the folders on their way so that resolving their path works."""
    excluded = [("HIDDEN", path) for path in hidden]
    rules = [_allow("file-read*", params, root, excluded) for root in [Path("/"), *writable]]
    on_the_way = {
        folder
        for root in writable
        for folder in root.parents
        if any(_under(folder, path) for path in hidden)
    }
    shown = [*hidden, *sorted(on_the_way)]
    rules += [f"(allow file-read-metadata (literal {params.name('SHOWN', p)}))" for p in shown]
    return "".join(rule + "\n" for rule in rules)


def _writes(
    params: _Parameters, policy: SandboxPolicy, writable: list[Path], hidden: list[Path]
) -> str:
    rules = []
    for root in writable:
        reaching = any(_under(root, path) for path in policy.protected)
        protected = [] if reaching else [("PROTECTED", path) for path in policy.protected]
        hidden_ones = [("HIDDEN", path) for path in hidden]
        rules.append(_allow("file-write*", params, root, [*protected, *hidden_ones]))
    return "".join(rule + "\n" for rule in rules)


def _unix_sockets(params: _Parameters, writable: list[Path]) -> str:
    """Unix sockets a command makes and reaches in the folders it may write (a test server's);
    none of the host's."""
    rules = []
    for root in writable:
        where = f"(subpath {params.name('WRITABLE', root)})"
        rules.append(f"(allow network-bind (local unix-socket {where}))")
        rules.append(f"(allow network-outbound (remote unix-socket {where}))")
    return "".join(rule + "\n" for rule in rules)


def _allow(
    operation: str, params: _Parameters, root: Path, excluded: Sequence[tuple[str, Path]]
) -> str:
    """``(allow operation …)`` for ``root`` and below, except the ``excluded`` (role, path)
    inside it: each path itself and below (``literal`` too, so a missing one cannot be made)."""
    base = "ROOT" if root == Path("/") else "WRITABLE"
    parts = [f"(subpath {params.name(base, root)})"]
    for role, path in excluded:
        if _under(path, root):
            name = params.name(role, path)
            parts.append(f"(require-not (literal {name}))")
            parts.append(f"(require-not (subpath {name}))")
    if len(parts) == 1:
        return f"(allow {operation} {parts[0]})"
    return f"(allow {operation} (require-all {' '.join(parts)}))"


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
