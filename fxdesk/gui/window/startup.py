"""What the window says at start-up: a data folder it cannot use, work the last run left
interrupted (or another fxdesk holds), crash logs of the last run, commands running without a
sandbox on this machine, and where the data lives.

Each function puts one thing on the main window; ``GuiController`` calls them in order while it
starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from fxdesk import APP_NAME, messages
from fxdesk.domain.model import Session, SessionState
from fxdesk.engine.events import RecoveryReport, SessionChanged
from fxdesk.engine.facade import Engine
from fxdesk.engine.health import SandboxStatus, notice_text
from fxdesk.gui.tasks import TaskGroup, alive, run_dialog
from fxdesk.gui.window.banner import Banner
from fxdesk.gui.window.main_window import MainWindow
from fxdesk.gui.window.messages import ErrorDetailsDialog, MessagePresenter
from fxdesk.logs import CrashLog


async def show_data_error(window: MainWindow, text: str, quit_event: asyncio.Event) -> None:
    """Say why the data folder cannot be used; returns when the box is closed or on quit."""
    box = QMessageBox(
        QMessageBox.Icon.Critical, APP_NAME, text, QMessageBox.StandardButton.Close, window
    )
    dialog = asyncio.ensure_future(run_dialog(box))
    quit_wait = asyncio.ensure_future(quit_event.wait())
    await asyncio.wait({dialog, quit_wait}, return_when=asyncio.FIRST_COMPLETED)
    for pending in (dialog, quit_wait):
        pending.cancel()
    box.close()


def offer_recovery(
    window: MainWindow,
    report: RecoveryReport | None,
    sessions: list[Session],
    engine: Engine,
) -> Banner | None:
    """A banner about work the last run left interrupted (with "Resume all" and "Review") and
    sessions another fxdesk holds; None when there is nothing to say."""
    runs = engine.interrupted_runs
    if report is None or (not report.work_interrupted and not report.busy_sessions and not runs):
        return None
    names = {s.id: s.name for s in sessions}
    parts = []
    if report.work_interrupted:
        count = report.work_interrupted
        parts.append(
            f"{count} {'turns were' if count != 1 else 'turn was'} interrupted when fxdesk "
            "last stopped; nothing has been re-run (Resume continues where each stopped)."
        )
    if runs:
        agents = "sub-agent runs were" if len(runs) != 1 else "sub-agent run was"
        parts.append(
            f"{len(runs)} {agents} interrupted; nothing re-ran them, each shows "
            "“interrupted” in the tree and its caller reads that as its result."
        )
    if report.busy_sessions:
        busy = ", ".join(f"“{names.get(i, i)}”" for i in report.busy_sessions[:3])
        more = len(report.busy_sessions) - 3
        parts.append(f"In use by another fxdesk: {busy}{f' and {more} more' if more > 0 else ''}.")
    banner = window.add_banner(" ".join(parts), kind="warning")
    banner.setObjectName("recovery_banner")
    interrupted = list(report.interrupted_sessions)
    if interrupted:

        def resume_all() -> None:
            for session_id in interrupted:
                engine.resume(session_id)
            banner.hide()

        def review() -> None:
            window.select_session(interrupted[0])

        banner.add_action("Resume all", resume_all)
        banner.add_action("Review", review)
        if not report.busy_sessions:  # it says only this: gone once none is interrupted
            _hide_when_resumed(banner, set(interrupted), engine)
    return banner


def _hide_when_resumed(banner: Banner, waiting: set[str], engine: Engine) -> None:
    """The banner goes once every interrupted session moved on (Resume on each, a cancel, a
    close): a banner about interruptions that are over is a stale word."""

    def on_session_changed(event: SessionChanged) -> None:
        session = event.session
        if session.id in waiting and session.state != SessionState.INTERRUPTED:
            waiting.discard(session.id)
            if not waiting:
                stop()
                if alive(banner):
                    banner.hide()

    stop = engine.subscribe(SessionChanged, on_session_changed)
    banner.destroyed.connect(lambda: stop())


def offer_crash_logs(
    window: MainWindow, crash_log: CrashLog, presenter: MessagePresenter, tasks: TaskGroup
) -> Banner | None:
    """A banner offering the crash logs the last run left (the newest one is shown on request;
    dismissing the banner marks them all seen); None when there are none."""
    reports = list(crash_log.previous)
    if not reports:
        return None
    count = "a crash log" if len(reports) == 1 else f"{len(reports)} crash logs"
    banner = window.add_banner(
        f"fxdesk stopped unexpectedly last time and left {count}.", kind="warning"
    )

    def show() -> None:
        tasks.spawn(show_crash_log(reports[-1], window, presenter), "show-crash-log")

    def dismiss() -> None:
        for report in reports:
            crash_log.mark_seen(report)

    banner.add_action("Show crash log", show)
    banner.dismissed.connect(dismiss)
    return banner


async def show_crash_log(path: Path, window: MainWindow, presenter: MessagePresenter) -> None:
    """The crash log at ``path`` in a non-modal details window."""
    text = await asyncio.get_running_loop().run_in_executor(
        None, lambda: path.read_text(encoding="utf-8", errors="replace")
    )
    dialog = ErrorDetailsDialog(
        messages.Message(messages.Level.ERROR, f"Crash log {path.name}:", details=text), window
    )
    dialog.setWindowTitle("Crash log")
    presenter.dialogs.append(dialog)
    dialog.show()


def offer_sandbox_fix(
    window: MainWindow, status: SandboxStatus, details: Callable[[], None]
) -> Banner | None:
    """One line where commands cannot run in the sandbox: "Commands run without a sandbox:
    why. The fix.", with Details (Settings → Permissions); None where they can."""
    text = notice_text(status)
    if not text:
        return None
    banner = window.add_banner(text, kind="warning")
    banner.setObjectName("sandbox_banner")
    banner.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    banner.add_action("&Details", details).setAccessibleName("Sandbox details")
    return banner


def show_data_folder(window: MainWindow, root: Path, database: Path, schema: int) -> None:
    """Where fxdesk keeps its data, at the right of the status bar, in the person's words
    (the database file and its version in the tooltip, for a bug report)."""
    window.status_info.setText(f"Data in {_short(root)}")
    window.status_info.setToolTip(f"Database: {database}\nDatabase version {schema}")


def _short(path: Path) -> str:
    home = Path.home()
    try:
        return "~/" + str(path.relative_to(home))
    except ValueError:
        return str(path)
