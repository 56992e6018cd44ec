"""The .deb's ``Depends``: the Debian packages of the system libraries the bundle loads.

``python3 packaging/deb_depends.py BUNDLE_DIR`` reads the libraries every ELF file of the bundle
links directly (``readelf -d``: NEEDED), finds where each resolves with ``ldd`` (with
``LD_LIBRARY_PATH`` at the bundle's ``_internal``, as the bootloader sets it), keeps those
outside the bundle, and asks ``dpkg -S`` which package ships each. Libraries those need in turn
are their packages' dependencies, as in any Debian package. It prints ``pkg1, pkg2, ...`` on
stdout and, on stderr, each package with its libraries. Nothing is guessed: a library no
package owns, or one that ldd cannot find for a required file, stops the build.

Optional plugins are Qt's GTK theme (``libqgtk3.so``: Qt loads it only on a GTK desktop, which
has GTK and its libraries; elsewhere Qt uses its own style): their libraries are reported, not
required.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

OPTIONAL = ("platformthemes/libqgtk3.so",)
_FOUND = re.compile(r"^\s*(\S+) => (/\S+) \(0x[0-9a-f]+\)$")
_MISSING = re.compile(r"^\s*(\S+) => not found$")
_DIRECT = re.compile(r"^\s*(/\S+) \(0x[0-9a-f]+\)$")


def elf_files(bundle: Path) -> list[Path]:
    found = []
    for path in sorted(bundle.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as file:
                if file.read(4) == b"\x7fELF":
                    found.append(path)
    return found


def needed(path: Path) -> set[str]:
    """The sonames ``path`` links directly."""
    done = subprocess.run(
        ["readelf", "-d", str(path)], capture_output=True, text=True, check=False,
        env=dict(os.environ, LC_ALL="C"),
    )  # fmt: skip
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", done.stdout))


def ldd(path: Path, internal: Path) -> tuple[set[str], set[str]]:
    """(system library paths, missing sonames) of one ELF file's direct links."""
    direct = needed(path)
    env = dict(os.environ, LD_LIBRARY_PATH=str(internal), LC_ALL="C")
    done = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env, check=False)
    system: set[str] = set()
    missing: set[str] = set()
    for line in done.stdout.splitlines():
        if (match := _FOUND.match(line)) and match.group(1) in direct:
            target = match.group(2)
            if not Path(target).resolve().is_relative_to(internal.resolve()):
                system.add(target)
        elif (match := _MISSING.match(line)) and match.group(1) in direct:
            missing.add(match.group(1))
        elif match := _DIRECT.match(line):  # the dynamic loader: libc6
            system.add(match.group(1))
    return system, missing


def owner(library: str) -> str | None:
    """The package shipping ``library`` (tries the path, its real path, and /lib vs /usr/lib:
    Debian 12 is usr-merged but packages still list the paths they were built with)."""
    real = os.path.realpath(library)
    candidates = []
    for path in (library, real):
        candidates.append(path)
        if path.startswith("/usr/lib/"):
            candidates.append(path[len("/usr") :])
        elif path.startswith("/lib/"):
            candidates.append("/usr" + path)
    for path in dict.fromkeys(candidates):
        done = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return done.stdout.split(":", 1)[0].strip()
    return None


def main(bundle: Path) -> int:
    internal = bundle / "_internal"
    libraries: dict[str, set[str]] = {}
    problems = []
    for path in elf_files(bundle):
        system, missing = ldd(path, internal)
        name = path.relative_to(bundle).as_posix()
        if any(name.endswith(part) for part in OPTIONAL):
            for library in sorted(system | missing):
                print(f"optional: {Path(library).name} (for {name})", file=sys.stderr)
            continue
        for library in system:
            libraries.setdefault(library, set()).add(name)
        for soname in sorted(missing):
            problems.append(f"{soname} (needed by {name}) is not installed here")
    packages: dict[str, list[str]] = {}
    for library in sorted(libraries):
        package = owner(library)
        if package is None:
            problems.append(f"no Debian package owns {library}")
            continue
        packages.setdefault(package, []).append(library)
    for package, found in sorted(packages.items()):
        print(f"{package}: {', '.join(Path(lib).name for lib in found)}", file=sys.stderr)
    if problems:
        for problem in problems:
            print(f"deb_depends: {problem}", file=sys.stderr)
        return 1
    print(", ".join(sorted(packages)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: deb_depends.py BUNDLE_DIR")
    raise SystemExit(main(Path(sys.argv[1])))
