"""The ``fxdesk`` command: the window with no subcommand, headless subcommands otherwise."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence

from fxdesk import __version__
from fxdesk.logs import setup_logging
from fxdesk.paths import ENV_HOME, DataPaths, resolve

EXIT_OK = 0
EXIT_FAILED = 1  # the work failed, or a doctor check failed
EXIT_USAGE = 2  # bad command line (argparse)
EXIT_APPROVAL = 3  # stopped on a pending approval with --no-input
EXIT_INTERRUPTED = 4  # the work was interrupted
EXIT_DATA = 5  # the data folder or database cannot be used
EXIT_INTERNAL = 70  # a bug (EX_SOFTWARE)

EXIT_CODES_HELP = f"""\
exit codes:
  {EXIT_OK}   success
  {EXIT_FAILED}   the work failed, or a doctor check failed
  {EXIT_USAGE}   bad command line
  {EXIT_APPROVAL}   stopped waiting for an approval (--no-input)
  {EXIT_INTERRUPTED}   the work was interrupted
  {EXIT_DATA}   the data folder or database cannot be used (the message says why)
  {EXIT_INTERNAL}  internal error (a bug; see the log in the data folder)

The data folder is --data-dir, else ${ENV_HOME}, else the platform's user data folder.
"""

Handler = Callable[[argparse.Namespace, DataPaths], int]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fxdesk",
        description="A native desktop control room for AI coding agents. "
        "With no command, opens the window.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fxdesk {__version__}")
    parser.add_argument("--data-dir", metavar="DIR", help="use DIR as the data folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    doctor = commands.add_parser(
        "doctor",
        help="check this machine and the data folder",
        description="Check Qt, the keyring, the data folder and the database; say what to do "
        "about each problem. Exits 1 if any check fails.",
    )
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")

    probe = commands.add_parser("_probe-qt")  # internal, used by doctor; hidden from help
    probe.add_argument("platform")
    commands._choices_actions = [a for a in commands._choices_actions if a.dest != "_probe-qt"]
    return parser


def cmd_doctor(args: argparse.Namespace, paths: DataPaths) -> int:
    from fxdesk import doctor

    checks = doctor.run_checks(paths)
    if args.json:
        print(json.dumps(doctor.as_json(checks), indent=2))
    else:
        print(doctor.as_text(checks))
    return EXIT_OK if all(c.status != doctor.FAIL for c in checks) else EXIT_FAILED


COMMANDS: dict[str, Handler] = {
    "doctor": cmd_doctor,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "_probe-qt":
        from fxdesk.gui.probe import run_probe

        return run_probe(args.platform)
    paths = resolve(args.data_dir)
    if args.command is None:
        from fxdesk.app import run_gui

        return run_gui(paths, verbose=args.verbose)
    setup_logging(None, verbose=args.verbose)
    try:
        paths.ensure()
        setup_logging(paths.log_file, verbose=args.verbose)
    except OSError as exc:
        print(
            f"fxdesk: cannot use the data folder {paths.root}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        if args.command != "doctor":
            return EXIT_DATA
    try:
        return COMMANDS[args.command](args, paths)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `fxdesk ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception:
        logging.getLogger(__name__).exception("fxdesk %s failed", args.command)
        print(
            f"fxdesk: internal error in '{args.command}'; details are in {paths.log_file}",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
