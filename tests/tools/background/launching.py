"""What the launch tests share: a provider, specs for both modes, and waiting on logs."""

from __future__ import annotations

import os
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from fxdesk.domain.log_scan import EXIT_MARKER
from fxdesk.tools.background.launch import WrapperProvider
from fxdesk.tools.background.log_files import new_log_file
from fxdesk.tools.background.provider import LaunchSpec
from fxdesk.tools.sandbox import policy_for
from fxdesk.tools.sandbox_probe import sandbox_status
from tests.helpers import wait_for

MODES = ["bare", "bwrap"]
HOST_PATH = os.environ.get("PATH", os.defpath)


def require_bwrap() -> None:
    """The machine's sandbox must work (scripts/_setup.sh installs it): fail loudly if not."""
    status = sandbox_status()
    assert status.available, f"bubblewrap cannot make namespaces here: {status.reason}"


def make_spec(
    mode: str,
    workspace: Path,
    logs: Path,
    *,
    survives: bool = False,
    environment: dict[str, str] | None = None,
    data_dir: Path | None = None,
    environ: dict[str, str] | None = None,
    network: bool = True,
) -> LaunchSpec:
    """A spec for ``mode`` (``bare``: unsandboxed with ``environment``; ``bwrap``: the policy
    run_command would use, network on as for a server unless ``network`` is False)."""
    sandbox = None
    if mode == "bwrap":
        require_bwrap()
        sandbox = policy_for(
            workspace,
            data_dir=data_dir,
            network=network,
            environ=environ if environ is not None else {"PATH": HOST_PATH, "HOME": "/root"},
        )
    return LaunchSpec(
        cwd=workspace,
        log_path=new_log_file(logs),
        sandbox=sandbox,
        environment=environment if environment is not None else {"PATH": HOST_PATH},
        survives_fxdesk=survives,
    )


def log_has(path: Path, text: bytes, timeout: float = 20.0) -> bytes:
    """The log once it holds ``text``."""
    wait_for(lambda: text in path.read_bytes(), timeout=timeout, what=f"{text!r} in the log")
    return path.read_bytes()


def finished(path: Path, timeout: float = 20.0) -> bytes:
    """The log once the wrapper wrote its exit marker."""
    return log_has(path, EXIT_MARKER, timeout)


def descendants(pid: int) -> list[int]:
    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def gone(pid: int) -> bool:
    """Not running any more: no such process, or a zombie."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def all_gone(pids: list[int]) -> bool:
    return all(gone(pid) for pid in pids)


__all__ = [
    "MODES",
    "WrapperProvider",
    "all_gone",
    "descendants",
    "finished",
    "gone",
    "log_has",
    "make_spec",
    "require_bwrap",
]
