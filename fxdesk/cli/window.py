"""Opening the window: ``fxdesk`` with no command; and the hidden Qt probe ``doctor`` runs.

The launcher prepares the process around the GUI: logging into the data folder, the crash log
armed (faulthandler), and the exception hooks; the window itself is ``fxdesk.gui``'s.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from fxdesk import __version__
from fxdesk.cli.exit_codes import ExitCode
from fxdesk.logs import CrashLog, install_exception_hooks, setup_logging
from fxdesk.paths import DataPaths

log = logging.getLogger(__name__)


def register(commands: Any) -> None:
    probe = commands.add_parser("_probe-qt")  # internal, used by doctor; hidden from help
    probe.add_argument("platform")
    probe.set_defaults(handler=_probe_qt, internal=True)


def _probe_qt(args: argparse.Namespace, paths: DataPaths | None) -> int:
    from fxdesk.gui.probe import run_probe

    return run_probe(args.platform)


def open_window(
    paths: DataPaths,
    *,
    verbose: bool = False,
    argv: list[str] | None = None,
    new_session: bool = False,
) -> int:
    """``fxdesk`` with no command: log to the data folder, arm the crash log, open the window
    (asking for a new session at once with ``new_session``: the desktop entry's action).

    The window paints its first frame before the App, asyncio and the engine are imported
    (``gui.launch``); then ``gui.application.run`` takes it over (docs/performance.md)."""
    from fxdesk.gui.launch import first_frame

    try:
        paths.ensure()
    except OSError as exc:
        print(
            f"fxdesk: cannot use the data folder {paths.root}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return ExitCode.DATA
    setup_logging(paths.log_file, verbose=verbose, rotate=False)  # rotating after the frame
    log.info("fxdesk %s starting (data folder %s, pid %d)", __version__, paths.root, os.getpid())
    crash_log = CrashLog(paths.crash_dir)
    crash_log.arm()
    undo_hooks = install_exception_hooks()
    argv = argv if argv is not None else sys.argv
    try:
        window = first_frame(argv)
        setup_logging(paths.log_file, verbose=verbose)
        from fxdesk.app import App  # after the first frame: asyncio and the engine's facade
        from fxdesk.gui.application import Outcome, run

        app = App(paths, crash_log=crash_log)
        outcome = run(app, argv, new_session=new_session, window=window)
    except BaseException as exc:
        report = crash_log.write_exception((type(exc), exc, exc.__traceback__))
        log.critical("fxdesk stopped on an uncaught exception; report: %s", report, exc_info=True)
        raise
    finally:
        undo_hooks()
        crash_log.disarm()
    code = ExitCode.DATA if outcome is Outcome.DATA_UNUSABLE else ExitCode.OK
    log.info("fxdesk exited with code %d", code)
    if outcome is Outcome.DISPLAY_LOST:
        # Everything is stopped and saved. Tearing Qt down without its display aborts (its
        # X event reader thread cannot be joined), which would leave a crash log: end here.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
