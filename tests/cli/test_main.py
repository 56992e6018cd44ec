"""The fxdesk command as a person runs it: a subprocess on a temporary data folder."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from fxdesk import __version__
from fxdesk.cli.main import _window_options, build_parser
from fxdesk.store import migrations
from tests.helpers import run_fxdesk


def test_version() -> None:
    done = run_fxdesk("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"fxdesk {__version__}"


def test_help_documents_exit_codes() -> None:
    done = run_fxdesk("--help")
    assert done.returncode == 0
    assert "exit codes:" in done.stdout and "doctor" in done.stdout
    assert "_probe-qt" not in done.stdout


def test_doctor_json_on_a_fresh_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    done = run_fxdesk("--data-dir", str(data), "doctor", "--json")
    report = json.loads(done.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["ok"] is True
    assert checks["data_dir"]["data"] == {"path": str(data), "source": "--data-dir"}
    database = checks["database"]
    assert database["status"] == "ok"
    assert database["data"]["path"] == str(data / "fxdesk.sqlite3")
    assert database["data"]["schema_version"] == migrations.LATEST_VERSION
    assert database["data"]["journal_mode"] == "wal"
    assert database["data"]["integrity"] == "ok"
    qt = checks["qt"]
    assert "offscreen" in qt["data"]["loading"]  # the platform the tests run on
    assert qt["status"] == "warn"  # no display in the test environment
    keyring = checks["keyring"]
    assert keyring["data"]["backend"] == "keyring.backends.null.Keyring"
    assert keyring["status"] == "warn" and "--api-key-env" in keyring["fix"]


def test_doctor_fails_with_exit_1_and_says_what_to_do(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    db = data / "fxdesk.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA application_id = {migrations.APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    done = run_fxdesk("--data-dir", str(data), "doctor", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    database = next(c for c in report["checks"] if c["name"] == "database")
    assert report["ok"] is False and database["status"] == "fail"
    assert "created by a newer fxdesk (schema 99)" in database["summary"]
    assert db.read_bytes() == before

    text = run_fxdesk("--data-dir", str(data), "doctor")
    assert text.returncode == 1
    assert "[FAIL] database:" in text.stdout


def test_fxdesk_home_is_honoured(tmp_path: Path) -> None:
    home = tmp_path / "via-env"
    done = run_fxdesk("doctor", "--json", FXDESK_HOME=str(home))
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["data_dir"]["data"] == {"path": str(home), "source": "FXDESK_HOME"}
    assert (home / "fxdesk.sqlite3").exists()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--data-dir", "/tmp/d"],
        ["--data-dir=/tmp/d", "-v"],
        ["--data-dir="],
        ["--verbose", "--new-session", "--data-dir", "a", "--data-dir", "b"],
    ],
)
def test_the_windows_options_are_read_as_the_parser_reads_them(argv: list[str]) -> None:
    """Opening the window builds no parser; what it reads is what the parser would."""
    options = _window_options(argv)
    assert options is not None
    parsed = build_parser().parse_args(argv)
    for name in ("command", "data_dir", "verbose", "new_session"):
        assert getattr(options, name) == getattr(parsed, name), name


@pytest.mark.parametrize(
    "argv", [["--help"], ["--data"], ["-vv"], ["--data-dir", "-v"], ["doctor"], ["--version"]]
)
def test_anything_else_goes_through_the_parser(argv: list[str]) -> None:
    assert _window_options(argv) is None
