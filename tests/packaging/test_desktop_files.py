"""The menu entry and the AppStream metainfo the packages install: valid, and in step with the
code (the action's flag exists, the newest release is this version)."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fxdesk import APP_ID, __version__
from fxdesk.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DESKTOP = ROOT / "fxdesk" / "resources" / f"{APP_ID}.desktop"
METAINFO = ROOT / "packaging" / "linux" / f"{APP_ID}.metainfo.xml"


def _desktop() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read(DESKTOP, encoding="utf-8")
    return parser


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils")
def test_the_desktop_entry_validates() -> None:
    done = subprocess.run(
        ["desktop-file-validate", str(DESKTOP)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("appstreamcli") is None, reason="appstream")
def test_the_metainfo_validates() -> None:
    done = subprocess.run(
        ["appstreamcli", "validate", "--no-net", str(METAINFO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_new_session_action_runs_a_flag_fxdesk_has() -> None:
    entry = _desktop()
    assert entry["Desktop Entry"]["Actions"] == "new-session;"
    action = entry["Desktop Action new-session"]
    assert action["Name"] == "New session"
    program, *arguments = action["Exec"].split()
    assert program == "fxdesk" and arguments == ["--new-session"]
    assert build_parser().parse_args(arguments).new_session is True


def test_the_entry_names_the_icon_and_the_window_class() -> None:
    entry = _desktop()["Desktop Entry"]
    assert entry["Icon"] == APP_ID
    assert (ROOT / "fxdesk" / "resources" / f"{APP_ID}.svg").is_file()
    assert entry["StartupWMClass"] == "fxdesk"


def test_the_metainfo_describes_this_version_with_existing_screenshots() -> None:
    root = ET.parse(METAINFO).getroot()
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == f"{APP_ID}.desktop"  # type: ignore[union-attr]
    newest = root.find("releases/release")
    assert newest is not None and newest.get("version") == __version__, (
        "add the release notes of this version to the metainfo"
    )
    images = [image.text or "" for image in root.iter("image")]
    assert images
    for url in images:
        name = url.rsplit("/docs/screenshots/", 1)[1]
        assert (ROOT / "docs" / "screenshots" / name).is_file(), url
