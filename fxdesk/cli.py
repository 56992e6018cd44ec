"""The ``fxdesk`` command: the window with no subcommand, headless subcommands otherwise."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

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

    run = commands.add_parser(
        "run",
        help="start a session in a workspace and run it to the end",
        description="Create a root session in DIR with PROMPT as its first message, run it, and "
        "stream it here. Exit 0 completed, 1 failed, 3 waiting for an approval, 4 interrupted.",
    )
    run.add_argument("-w", "--workspace", metavar="DIR", required=True, help="the project folder")
    run.add_argument("--profile", metavar="NAME", help="model profile (default: the default one)")
    run.add_argument("--name", help="session name (default: from the prompt)")
    run.add_argument(
        "--mode",
        choices=["ask", "auto", "yolo"],
        default="auto",
        help="permission mode (default: auto)",
    )
    run.add_argument("prompt", help="what the agent should do")
    run.add_argument(
        "--no-input",
        action="store_true",
        help="never ask on the terminal: stop with exit 3 when an approval is needed",
    )

    sessions = commands.add_parser("sessions", help="list sessions")
    sessions.add_argument("--json", action="store_true")
    sessions.add_argument("--all", action="store_true", help="include archived sessions")

    show = commands.add_parser("show", help="a session's queue, transcript and usage")
    show.add_argument("session", metavar="ID", help="session id or unique prefix")
    show.add_argument("--json", action="store_true")

    send = commands.add_parser("send", help="queue a message to a session and run it")
    send.add_argument("session", metavar="ID")
    send.add_argument("message")
    send.add_argument("--no-wait", action="store_true", help="queue it and return")
    send.add_argument("--no-input", action="store_true", help="never ask on the terminal")

    cancel = commands.add_parser("cancel", help="cancel a session's queued and running work")
    cancel.add_argument("session", metavar="ID")
    cancel.add_argument("--reason", default="cancelled by the person")

    resume = commands.add_parser("resume", help="resume interrupted work and run the queue")
    resume.add_argument("session", metavar="ID")
    resume.add_argument("--no-input", action="store_true", help="never ask on the terminal")

    recover = commands.add_parser(
        "recover",
        help="run start-up recovery and report what it did",
        description="Mark work left unfinished by a stopped fxdesk as interrupted (or completed, "
        "when its history proves it), and name sessions busy in another process.",
    )
    recover.add_argument("--json", action="store_true")

    profiles = commands.add_parser("profiles", help="model provider profiles")
    profile_commands = profiles.add_subparsers(dest="profiles_command", metavar="ACTION")
    listing = profile_commands.add_parser("list", help="list profiles")
    listing.add_argument("--json", action="store_true")
    add = profile_commands.add_parser(
        "add",
        help="add or replace a profile",
        description="Add a model provider profile. The API key goes to the OS keyring "
        "(--api-key-stdin), or is read from an environment variable (--api-key-env); it is "
        "never stored in the database. 'openai' covers every OpenAI-compatible server "
        "(OpenAI, OpenRouter, Ollama, vLLM, LM Studio, llama.cpp) through --base-url.",
    )
    add.add_argument("name")
    add.add_argument("--kind", choices=["scripted", "openai", "anthropic"], required=True)
    add.add_argument("--base-url", metavar="URL", help="the API's base URL")
    add.add_argument("--model", help="model name")
    add.add_argument(
        "--script",
        metavar="FILE",
        help="the script of a scripted profile (none: the offline demo agent)",
    )
    add.add_argument("--effort", help="reasoning effort (low, medium, high)")
    add.add_argument("--max-tokens", type=int, metavar="N", help="answer length limit")
    add.add_argument("--connect-timeout", type=float, default=10.0, metavar="S")
    add.add_argument("--read-timeout", type=float, default=120.0, metavar="S")
    add.add_argument("--price-in", type=float, metavar="USD", help="USD per million input tokens")
    add.add_argument("--price-out", type=float, metavar="USD", help="USD per million output tokens")
    key = add.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key-stdin",
        action="store_true",
        help="read the API key from standard input into the keyring",
    )
    key.add_argument("--api-key-env", metavar="VAR", help="take the API key from $VAR")
    key.add_argument("--no-key", action="store_true", help="the server needs no key")
    add.add_argument("--default", action="store_true", help="make it the default profile")
    remove = profile_commands.add_parser("remove", help="remove a profile and its stored key")
    remove.add_argument("name")
    test = profile_commands.add_parser(
        "test", help="make one tiny streamed call and say what happened"
    )
    test.add_argument("name", nargs="?", help="profile (default: the default profile)")

    _permission_parsers(commands)

    probe = commands.add_parser("_probe-qt")  # internal, used by doctor; hidden from help
    probe.add_argument("platform")
    commands._choices_actions = [a for a in commands._choices_actions if a.dest != "_probe-qt"]
    return parser


def _permission_parsers(commands: Any) -> None:
    """``approvals``, ``approve`` and ``rules`` (handled in ``permission_commands``)."""
    approvals = commands.add_parser("approvals", help="pending approvals of every session")
    approvals.add_argument("--json", action="store_true")

    approve = commands.add_parser(
        "approve",
        help="answer a pending approval",
        description="once: this action only; session: allow it for the rest of the session; "
        "always: store a workspace rule allowing exactly this; deny: refuse (the model is told, "
        "with --reason).",
    )
    approve.add_argument("approval", metavar="ID", help="approval id or unique prefix")
    approve.add_argument("choice", choices=["once", "session", "always", "deny"])
    approve.add_argument("--reason", default="", help="why (deny): the model reads it")

    rules = commands.add_parser("rules", help="permission rules")
    actions = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list rules")
    listing.add_argument("--json", action="store_true")
    add = actions.add_parser(
        "add",
        help="add a rule",
        description="Commands match exactly by default: `--match prefix` also allows longer "
        "commands starting with PATTERN, `--match glob` matches * and ? anywhere. File rules "
        "match paths as globs.",
    )
    add.add_argument("action", choices=["allow", "ask", "deny"])
    add.add_argument("tool", help='a tool name (run_command, edit_file, read_file, ...) or "*"')
    add.add_argument("pattern", help="a command, or a path glob for file tools")
    add.add_argument("--match", choices=["exact", "prefix", "glob"], default="exact")
    where = add.add_mutually_exclusive_group()
    where.add_argument("--workspace", metavar="DIR", help="only in this workspace")
    where.add_argument("--session", metavar="ID", help="only in this session")
    remove = actions.add_parser("remove", help="remove a rule by its number")
    remove.add_argument("rule", type=int, metavar="N")


def cmd_doctor(args: argparse.Namespace, paths: DataPaths) -> int:
    from fxdesk import doctor

    checks = doctor.run_checks(paths)
    if args.json:
        print(json.dumps(doctor.as_json(checks), indent=2))
    else:
        print(doctor.as_text(checks))
    return EXIT_OK if all(c.status != doctor.FAIL for c in checks) else EXIT_FAILED


def _engine_command(name: str) -> Handler:
    def handler(args: argparse.Namespace, paths: DataPaths) -> int:
        if name == "profiles":
            from fxdesk.profile_commands import cmd_profiles

            return cmd_profiles(args, paths)
        if name in ("approvals", "approve", "rules"):
            from fxdesk import permission_commands

            code: int = getattr(permission_commands, f"cmd_{name}")(args, paths)
            return code
        from fxdesk import commands

        result: int = getattr(commands, f"cmd_{name}")(args, paths)
        return result

    return handler


COMMANDS: dict[str, Handler] = {
    "doctor": cmd_doctor,
    **{
        name: _engine_command(name)
        for name in (
            "run",
            "sessions",
            "show",
            "send",
            "cancel",
            "resume",
            "recover",
            "profiles",
            "approvals",
            "approve",
            "rules",
        )
    },
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
