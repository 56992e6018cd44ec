"""The process exit codes of every ``fxdesk`` command, in one place."""

from __future__ import annotations

import enum

from fxdesk.paths import ENV_HOME


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1  # the work failed, or a doctor check failed
    USAGE = 2  # bad command line (argparse uses 2 as well)
    APPROVAL = 3  # stopped on a pending approval with --no-input
    INTERRUPTED = 4  # the work was interrupted
    DATA = 5  # the data folder or database cannot be used
    INTERNAL = 70  # a bug (EX_SOFTWARE)
    KEYBOARD_INTERRUPT = 130  # Ctrl+C (128 + SIGINT), as shells report it
    BROKEN_PIPE = 141  # the reader of our output left (128 + SIGPIPE)


_MEANING = {
    ExitCode.OK: "success",
    ExitCode.FAILED: "the work failed, or a doctor check failed",
    ExitCode.USAGE: "bad command line",
    ExitCode.APPROVAL: "stopped waiting for an approval (--no-input)",
    ExitCode.INTERRUPTED: "the work was interrupted",
    ExitCode.DATA: "the data folder or database cannot be used (the message says why)",
    ExitCode.INTERNAL: "internal error (a bug; see the log in the data folder)",
}

EXIT_CODES_HELP = (
    "exit codes:\n"
    + "".join(f"  {int(code):<3} {meaning}\n" for code, meaning in _MEANING.items())
    + f"\nThe data folder is --data-dir, else ${ENV_HOME}, else the platform's user data folder.\n"
)
