"""Which Qt platform plugins load here: used by ``fxdesk doctor``.

A platform plugin that cannot start aborts the whole process (qFatal), so each one is tried in a
child process (``fxdesk _probe-qt NAME``). The child never re-runs the app: even when frozen by
PyInstaller, ``sys.executable`` is called with the explicit hidden subcommand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

PROBE_TIMEOUT_S = 20.0

# Debian packages for libraries Qt's platform plugins commonly miss (STACK-NOTES §2).
_DEBIAN_PACKAGES = {
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libGL.so.1": "libgl1",
    "libEGL.so.1": "libegl1",
    "libOpenGL.so.0": "libopengl0",
}
_MISSING = re.compile(r"(lib[\w.+-]+\.so[.\d]*): cannot open shared object file")


@dataclass(frozen=True)
class PlatformResult:
    name: str
    loads: bool
    detail: str = ""
    missing_libraries: tuple[str, ...] = field(default_factory=tuple)

    @property
    def debian_packages(self) -> tuple[str, ...]:
        return tuple(sorted({debian_package(lib) for lib in self.missing_libraries}))


def debian_package(library: str) -> str:
    """Best guess at the Debian package shipping ``library`` (``libxcb-icccm.so.4``)."""
    if library in _DEBIAN_PACKAGES:
        return _DEBIAN_PACKAGES[library]
    stem, _, version = library.partition(".so")
    version = version.lstrip(".").split(".")[0]
    stem = stem.lower()
    joiner = "-" if stem[-1:].isdigit() else ""
    return f"{stem}{joiner}{version}"


def platform_plugins() -> list[str]:
    """Names of the platform plugins shipped with this PySide6 (``xcb``, ``offscreen``, ...)."""
    from PySide6.QtCore import QLibraryInfo

    folder = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
    names = []
    for lib in sorted(folder.glob("libq*.so")):
        names.append(lib.name[len("libq") : -len(".so")])
    return names


def _probe_command(name: str) -> list[str]:
    if getattr(sys, "frozen", False):
        return [sys.executable, "_probe-qt", name]
    return [sys.executable, "-m", "fxdesk", "_probe-qt", name]


def probe(name: str) -> PlatformResult:
    """Start a QGuiApplication on platform ``name`` in a child process."""
    env = dict(os.environ, QT_QPA_PLATFORM=name, QT_DEBUG_PLUGINS="1")
    try:
        done = subprocess.run(
            _probe_command(name),
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return PlatformResult(name, False, f"did not start within {PROBE_TIMEOUT_S:g} s")
    if done.returncode == 0 and "probe: ok" in done.stdout:
        return PlatformResult(name, True, "loads")
    missing = tuple(sorted(set(_MISSING.findall(done.stderr))))
    if missing:
        return PlatformResult(name, False, "missing libraries: " + ", ".join(missing), missing)
    return PlatformResult(name, False, _reason(done.stderr, done.returncode))


def _reason(stderr: str, returncode: int) -> str:
    for line in stderr.splitlines():
        text = line.strip()
        lowered = text.lower()
        if "could not connect to display" in lowered or "failed to create wl_display" in lowered:
            return "no display to connect to"
    interesting = [
        line.strip()
        for line in stderr.splitlines()
        if line.strip()
        and not line.startswith(
            (
                "Got keys",
                "checking directory",
                "looking at",
                "Found metadata",
                "loaded library",
                "QFactoryLoader",
            )
        )
    ]
    tail = interesting[-1] if interesting else f"exit code {returncode}"
    return tail[:300]


def probe_all(names: list[str] | None = None) -> list[PlatformResult]:
    names = platform_plugins() if names is None else names
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(probe, names))


def run_probe(name: str) -> int:
    """Body of ``fxdesk _probe-qt NAME`` (runs in the child process)."""
    os.environ["QT_QPA_PLATFORM"] = name
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication([sys.argv[0], "-platform", name])
    print(f"probe: ok {app.platformName()}", flush=True)
    return 0
