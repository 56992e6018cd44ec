"""``fxdesk``: parse the command line and call the chosen command's handler."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from fxdesk import __version__
from fxdesk.cli import window
from fxdesk.cli.exit_codes import EXIT_CODES_HELP, ExitCode
from fxdesk.logs import setup_logging
from fxdesk.paths import resolve


def groups() -> tuple[ModuleType, ...]:
    """The command groups, in the order ``--help`` lists them; each adds its subcommands.

    Imported on first use: opening the window needs none of them, and together they cost
    ~150 ms of imports before its first paint (docs/performance.md)."""
    from fxdesk.cli import (
        agents,
        approvals,
        background,
        doctor,
        mcp,
        profiles,
        run_commands,
        runs,
        sandbox,
        search,
        sessions,
        tasks_start,
        transfer,
        worktree,
    )

    return (
        doctor,
        sessions,
        tasks_start,
        background,
        run_commands,
        profiles,
        approvals,
        agents,
        runs,
        sandbox,
        mcp,
        search,
        transfer,
        worktree,
        window,
    )


def _window_options(argv: Sequence[str]) -> argparse.Namespace | None:
    """The options of ``argv`` when it only opens the window, in the plain spellings of its
    options, read as the parser reads them; None for anything else (abbreviations and ``--help``
    included), which goes through the parser. No parser is built to open the window: argparse
    passes its texts through gettext, which imports ``locale`` and looks for catalogues (~2 ms
    before the first frame)."""
    options = argparse.Namespace(data_dir=None, verbose=False, new_session=False, command=None)
    words = list(argv)
    while words:
        word = words.pop(0)
        if word == "--data-dir" and words and not words[0].startswith("-"):
            options.data_dir = words.pop(0)
        elif word.startswith("--data-dir="):
            options.data_dir = word.removeprefix("--data-dir=")
        elif word in ("-v", "--verbose"):
            options.verbose = True
        elif word == "--new-session":
            options.new_session = True
        else:
            return None
    return options


def _global_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--version", action="version", version=f"fxdesk {__version__}")
    parser.add_argument("--data-dir", metavar="DIR", help="use DIR as the data folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details")
    parser.add_argument(
        "--new-session",
        action="store_true",
        help="open the window with the New session dialog (the desktop menu's action)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fxdesk",
        description="A native desktop control room for AI coding agents. "
        "With no command, opens the window.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _global_options(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in groups():
        group.register(commands)
    # Internal commands (the doctor's Qt probe) are registered but hidden from --help.
    commands._choices_actions = [a for a in commands._choices_actions if not a.dest.startswith("_")]
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _window_options(argv) or build_parser().parse_args(argv)
    if getattr(args, "internal", False):  # runs before any logging or data folder
        return int(args.handler(args, None))
    paths = resolve(args.data_dir)
    if args.command is None:
        return window.open_window(paths, verbose=args.verbose, new_session=args.new_session)
    if args.new_session:
        print("fxdesk: --new-session opens the window; it takes no command", file=sys.stderr)
        return ExitCode.USAGE
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
            return ExitCode.DATA
    try:
        return int(args.handler(args, paths))
    except KeyboardInterrupt:
        return ExitCode.KEYBOARD_INTERRUPT
    except BrokenPipeError:  # `fxdesk ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return ExitCode.BROKEN_PIPE
    except Exception:
        logging.getLogger(__name__).exception("fxdesk %s failed", args.command)
        print(
            f"fxdesk: internal error in '{args.command}'; details are in {paths.log_file}",
            file=sys.stderr,
        )
        return ExitCode.INTERNAL
