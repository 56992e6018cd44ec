"""``fxdesk doctor``: what works on this machine, and what to do about what does not.

Each check has a status: ``ok``, ``warn`` (fxdesk works, with less) or ``fail`` (something the
person must fix; the command exits 1).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from fxdesk import __version__
from fxdesk.cli.exit_codes import ExitCode
from fxdesk.logs import CrashLog
from fxdesk.paths import DataPaths

OK, WARN, FAIL = "ok", "warn", "fail"

# Probed in child processes; others (vnc opens a port, eglfs/linuxfb grab the console) are only
# listed.
PROBED_PLATFORMS = ("xcb", "wayland", "wayland-egl", "offscreen", "minimal")


@dataclass
class Check:
    name: str
    status: str
    summary: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def check_environment() -> Check:
    return Check(
        "fxdesk",
        OK,
        f"fxdesk {__version__} on Python {platform.python_version()} ({sys.platform})",
        data={
            "version": __version__,
            "python": platform.python_version(),
            "frozen": bool(getattr(sys, "frozen", False)),
        },
    )


def check_data_dir(paths: DataPaths) -> Check:
    data = {"path": str(paths.root), "source": paths.source}
    try:
        paths.ensure()
    except OSError as exc:
        return Check(
            "data_dir",
            FAIL,
            f"cannot create {paths.root}: {exc.strerror or exc}",
            "Choose a writable folder with --data-dir or FXDESK_HOME.",
            data,
        )
    if not os.access(paths.root, os.W_OK | os.X_OK):
        return Check(
            "data_dir",
            FAIL,
            f"{paths.root} is not writable",
            "Make it writable, or choose another folder with --data-dir.",
            data,
        )
    return Check("data_dir", OK, f"{paths.root} (from {paths.source})", data=data)


def check_database(paths: DataPaths) -> Check:
    from fxdesk.engine.health import database_health  # opens SQLite: only when asked

    data: dict[str, Any] = {"path": str(paths.database)}
    health = database_health(paths.database)
    data.update(health.facts)
    if health.problem is not None:
        fix = "" if health.opened else "See the message; your file was left untouched."
        return Check("database", FAIL, health.problem, fix, data)
    integrity = health.integrity
    summary = (
        f"{paths.database}, schema {data['schema_version']}, "
        f"journal {data['journal_mode']}, integrity {integrity}"
    )
    if integrity != "ok":
        return Check(
            "database",
            FAIL,
            summary,
            "The database is damaged; restore it from a backup or move it away.",
            data,
        )
    if data["journal_mode"] != "wal":
        return Check(
            "database",
            WARN,
            summary,
            "The file system does not support WAL; put the data folder on a local "
            "disk for smooth writes.",
            data,
        )
    return Check("database", OK, summary, data=data)


def display_platforms(environ: dict[str, str] | None = None) -> list[str]:
    """The platform plugins this desktop session would use, most likely first."""
    env = dict(os.environ) if environ is None else environ
    wanted = []
    if env.get("WAYLAND_DISPLAY"):
        wanted.append("wayland")
    if env.get("DISPLAY") or not wanted:
        wanted.append("xcb")  # X11, and Qt's fallback under Wayland
    return wanted


def check_qt() -> Check:
    from fxdesk.gui import probe

    try:
        available = probe.platform_plugins()
    except Exception as exc:  # PySide6 missing or broken
        return Check(
            "qt", FAIL, f"Qt could not be loaded: {exc}", "Reinstall fxdesk (PySide6-Essentials)."
        )
    results = {r.name: r for r in probe.probe_all([n for n in PROBED_PLATFORMS if n in available])}
    loading = [name for name, r in results.items() if r.loads]
    needed = [name for name in display_platforms() if name in results]
    has_display = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    data: dict[str, Any] = {
        "available": available,
        "loading": loading,
        "failing": {name: r.detail for name, r in results.items() if not r.loads},
        "not_probed": [n for n in available if n not in PROBED_PLATFORMS],
        "display_platforms": needed,
        "display": os.environ.get("DISPLAY", ""),
        "wayland_display": os.environ.get("WAYLAND_DISPLAY", ""),
    }
    summary = "platform plugins that load: " + (", ".join(loading) or "none")
    packages = sorted({pkg for name in needed for pkg in results[name].debian_packages})
    if packages:
        return Check(
            "qt",
            FAIL,
            f"{summary}; {', '.join(needed)} misses system libraries",
            "Install them: sudo apt-get install " + " ".join(packages),
            data,
        )
    if not loading:
        return Check("qt", FAIL, summary, "Reinstall fxdesk; no Qt platform plugin starts.", data)
    if not has_display:
        return Check(
            "qt",
            WARN,
            f"{summary}; no display, so only headless commands work",
            "Run fxdesk in a desktop session (DISPLAY or WAYLAND_DISPLAY set).",
            data,
        )
    if not any(name in loading for name in needed):
        return Check(
            "qt",
            FAIL,
            f"{summary}; the display ({', '.join(needed)}) does not start",
            "; ".join(f"{n}: {results[n].detail}" for n in needed),
            data,
        )
    return Check("qt", OK, summary, data=data)


def check_keyring() -> Check:
    from fxdesk.engine.health import keyring_status

    state = keyring_status()
    data = {"backend": state.backend, "usable": state.usable}
    if not state.usable:
        return Check(
            "keyring", WARN, f"backend {state.backend}: no secret storage", state.detail, data
        )
    if not state.encrypted:
        return Check(
            "keyring",
            WARN,
            f"backend {state.backend} stores secrets unencrypted",
            "Use the desktop's Secret Service (gnome-keyring, KWallet) instead.",
            data,
        )
    return Check("keyring", OK, f"backend {state.backend} ({state.detail})", data=data)


def check_sandbox() -> Check:
    """Whether the agent's commands run in the sandbox (bubblewrap, or Seatbelt on macOS) here;
    probed afresh, so a fix shows at once."""
    from fxdesk.tools.sandbox_probe import SEATBELT, probe  # runs the sandbox: only when asked

    status = probe()
    data = {
        "available": status.available,
        "bwrap": status.bwrap,
        "version": status.version,
        "reason": status.reason,
    }
    if status.available:
        what = f"bubblewrap {status.version or '(version unknown)'}"
        if status.kind == SEATBELT:
            what = "Seatbelt (sandbox-exec)"
        summary = f"{what} at {status.bwrap}"
        return Check("sandbox", OK, summary + ": commands run sandboxed", data=data)
    return Check(
        "sandbox", FAIL, f"commands cannot run sandboxed: {status.reason}", status.fix, data
    )


def check_crash_logs(paths: DataPaths) -> Check:
    reports = CrashLog(paths.crash_dir).previous_reports()
    data = {"reports": [str(p) for p in reports]}
    if reports:
        return Check(
            "crash_logs",
            WARN,
            f"{len(reports)} crash log(s) not yet looked at",
            f"Read {reports[-1]} (fxdesk offers it at the next start).",
            data,
        )
    return Check("crash_logs", OK, "no crash logs", data=data)


def check_acp_agents() -> Check:
    """Whether the programs of the ACP presets (Claude Code, Codex, Gemini CLI) are found here.
    A warning at most: external agents are optional. Only whether they can start is checked,
    not that the adapter downloads or logs in (that needs the network)."""
    from fxdesk.domain.acp_presets import PRESETS
    from fxdesk.engine.acp_programs import find_agent_program

    found: dict[str, str | None] = {}
    missing: list[str] = []
    node = shutil.which("node")
    for preset in PRESETS.values():
        program = find_agent_program(preset.command)
        found[preset.name] = program.path
        if not program.found:
            missing.append(f"{preset.title}: {preset.install}")
    data = {"node": node, "presets": found}
    ready = [PRESETS[name].title for name, program in found.items() if program]
    if not missing:
        return Check("acp_agents", OK, f"found the programs of {', '.join(ready)}", data=data)
    summary = (
        f"found the programs of {', '.join(ready)}"
        if ready
        else "found the program of no preset external agent"
    )
    return Check("acp_agents", WARN, summary, " ".join(missing), data)


def run_checks(paths: DataPaths) -> list[Check]:
    checks = [check_environment(), check_data_dir(paths)]
    if checks[-1].status != FAIL:
        checks.append(check_database(paths))
        checks.append(check_crash_logs(paths))
    checks.append(check_qt())
    checks.append(check_keyring())
    checks.append(check_sandbox())
    checks.append(check_acp_agents())
    return checks


def as_json(checks: list[Check]) -> dict[str, Any]:
    return {"ok": all(c.status != FAIL for c in checks), "checks": [asdict(c) for c in checks]}


def as_text(checks: list[Check]) -> str:
    marks = {OK: "ok  ", WARN: "warn", FAIL: "FAIL"}
    lines = []
    for check in checks:
        lines.append(f"[{marks[check.status]}] {check.name}: {check.summary}")
        if check.fix:
            lines.append(f"       fix: {check.fix}")
    return "\n".join(lines)


def register(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check this machine and the data folder",
        description="Check Qt, the keyring, the sandbox, the data folder and the database; say "
        "what to do about each problem. Exits 1 if any check fails.",
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(handler=cmd_doctor)


def cmd_doctor(args: argparse.Namespace, paths: DataPaths) -> int:
    checks = run_checks(paths)
    if args.json:
        print(json.dumps(as_json(checks), indent=2))
    else:
        print(as_text(checks))
    return ExitCode.OK if all(c.status != FAIL for c in checks) else ExitCode.FAILED
