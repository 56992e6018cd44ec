"""The tarball's install.sh, on a fake unpacked tarball and a temporary HOME: what it puts under
~/.local, an upgrade over it, and --uninstall leaving only the data folder."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP_ID = "io.github.fxdesk.Fxdesk"


def _tarball(folder: Path, version: str) -> Path:
    """An unpacked tarball whose program is a script that prints its version."""
    tree = folder / f"fxdesk-{version}"
    program = tree / "fxdesk" / "fxdesk"
    program.parent.mkdir(parents=True)
    program.write_text(f"#!/bin/sh\necho 'fxdesk {version}'\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    (tree / "fxdesk" / "_internal").mkdir()
    (tree / "fxdesk" / "_internal" / f"only-in-{version}").write_text("")
    applications = tree / "share" / "applications"
    applications.mkdir(parents=True)
    shutil.copy(ROOT / "fxdesk" / "resources" / f"{APP_ID}.desktop", applications)
    metainfo = tree / "share" / "metainfo"
    metainfo.mkdir(parents=True)
    shutil.copy(ROOT / "packaging" / "linux" / f"{APP_ID}.metainfo.xml", metainfo)
    for size in ("16x16", "256x256"):
        icon = tree / "share" / "icons" / "hicolor" / size / "apps" / f"{APP_ID}.png"
        icon.parent.mkdir(parents=True)
        icon.write_bytes(b"png")
    shutil.copy(ROOT / "packaging" / "linux" / "install.sh", tree / "install.sh")
    return tree


def _run(script: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    return subprocess.run(
        ["sh", str(script), *args], env=env, capture_output=True, text=True, check=False
    )


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}


def test_install_upgrade_and_uninstall_under_local(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "fxdesk"
    data.mkdir(parents=True)
    (data / "fxdesk.sqlite3").write_text("the person's data")
    local = home / ".local"

    first = _tarball(tmp_path / "one", "1.0.0")
    done = _run(first / "install.sh", home)
    assert done.returncode == 0, done.stderr
    assert "fxdesk 1.0.0 installed in" in done.stdout
    lib = local / "lib" / "fxdesk"
    launcher = local / "bin" / "fxdesk"
    assert launcher.is_symlink() and launcher.resolve() == (lib / "fxdesk").resolve()
    assert subprocess.run([launcher], capture_output=True, text=True).stdout == "fxdesk 1.0.0\n"
    entry = (local / "share" / "applications" / f"{APP_ID}.desktop").read_text()
    assert f"Exec={lib}/fxdesk\n" in entry  # a full path: ~/.local/bin may not be on PATH
    assert f"Exec={lib}/fxdesk --new-session\n" in entry
    assert (local / "share" / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png").exists()
    assert (local / "share" / "metainfo" / f"{APP_ID}.metainfo.xml").exists()

    second = _tarball(tmp_path / "two", "1.1.0")
    done = _run(second / "install.sh", home)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([launcher], capture_output=True, text=True).stdout == "fxdesk 1.1.0\n"
    assert not (lib / "_internal" / "only-in-1.0.0").exists()  # the old program is gone
    assert not list(local.glob("lib/fxdesk.*"))  # no .new/.old folders left

    done = _run(lib / "install.sh", home, "--uninstall")
    assert done.returncode == 0, done.stderr
    left = {name for name in _files(home) if not name.endswith(".cache")}  # menu caches stay
    assert left == {".local/share/fxdesk/fxdesk.sqlite3"}
    assert (data / "fxdesk.sqlite3").read_text() == "the person's data"


def test_uninstall_without_an_install_says_so(tmp_path: Path) -> None:
    tree = _tarball(tmp_path, "1.0.0")
    done = _run(tree / "install.sh", tmp_path / "home", "--uninstall")
    assert done.returncode == 1
    assert "not installed" in done.stdout
