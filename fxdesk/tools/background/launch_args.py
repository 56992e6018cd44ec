"""What a background task's wrapper is and how it is started: the script and the command line.

The wrapper is one ``bash`` that (spec §3.3):

1. writes the ready byte ``R`` to stderr (fxdesk's pipe);
2. reads one line from stdin and requires it to be the release byte, else exits 125 having run
   nothing (fxdesk closed the pipe, or died: the pipe's end closed with it);
3. reads the rest of stdin to its end as the command, every byte kept (``read -d ''``: a
   builtin, so no process is made and the trailing line breaks stay);
4. takes stdin from ``/dev/null`` and sends stderr where stdout goes (the log), ignores SIGHUP,
   and turns SIGINT and SIGTERM into ``exit 130``/``exit 143`` so that the exit marker says a
   signal ended it (without a trap, bash's EXIT trap would see ``$?`` 0 and report success);
5. for a process-local task, starts its *guard* (below);
6. runs the command with ``eval`` in the same shell, so the PID whose token was captured is the
   one that runs it; an EXIT trap appends a line break, ``__FX_EXIT_CODE__=<status>`` and a
   line break to the log, however the command ends (``exit 3`` inside it too).

The guard makes a process-local task die with fxdesk even when fxdesk is SIGKILLed, the whole
task and not only its shell (PR_SET_PDEATHSIG on the wrapper would kill bash and leave the dev
server it started running). fxdesk holds the write end of one *lifeline* pipe for as long as it
runs and never writes to it; each process-local wrapper gets the read end. The guard, a small
``bash`` in the task's process group, reads it: end of file means fxdesk is gone (or closed the
provider), and the guard SIGKILLs its process group (``kill -KILL 0``). It is started with
``setpriv --pdeathsig KILL``, so it dies as soon as the wrapper does and never outlives the
task; it ignores SIGTERM, SIGINT and SIGHUP, so stopping the task does not take it first. It is
``disown``-ed: a command's bare ``wait`` does not wait for it. While the guard lives, the group
id cannot be given to another process, so its ``kill`` cannot reach a stranger. Without
``setpriv`` (not util-linux) there is no guard, and only bubblewrap's ``--die-with-parent``
(in the sandbox) ends a process-local task when fxdesk is killed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping

from fxdesk.domain.log_scan import EXIT_MARKER
from fxdesk.domain.sandbox_settings import SHELL_VARIABLES
from fxdesk.tools.background.provider import NOT_RELEASED_STATUS, READY_BYTE, RELEASE_BYTE

BASH = shutil.which("bash", path=os.defpath) or "/bin/bash"
SETPRIV = shutil.which("setpriv", path=os.defpath) or ""
SETSID = shutil.which("setsid", path=os.defpath) or ""

_GUARD = "trap '' TERM INT HUP; while read -r _; do :; done; kill -KILL 0"

# $1: the lifeline's descriptor ('' for none), $2: setpriv.
WRAPPER = f"""\
printf '{READY_BYTE.decode()}' >&2
IFS= read -r __fx_line || exit {NOT_RELEASED_STATUS}
[ "$__fx_line" = $'\\x{RELEASE_BYTE.hex()}' ] || exit {NOT_RELEASED_STATUS}
IFS= read -r -d '' __fx_command
exec </dev/null 2>&1
trap '' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
trap '__fx_status=$?; printf "\\n{EXIT_MARKER.decode()}%s\\n" "$__fx_status"' EXIT
if [ -n "$1" ]; then
  "$2" --pdeathsig KILL {BASH} -c "{_GUARD}" fx-guard <&"$1" >/dev/null 2>&1 &
  disown
  eval "exec $1<&-"
fi
unset __fx_line
set --
eval "$__fx_command"
"""


def wrapper_command(lifeline_fd: int | None) -> list[str]:
    """``bash -c WRAPPER`` with its arguments; ``lifeline_fd`` None: no guard (a durable task,
    or no ``setpriv`` here)."""
    guarded = lifeline_fd is not None and SETPRIV
    return [BASH, "-c", WRAPPER, "bash", str(lifeline_fd) if guarded else "", SETPRIV]


def sandboxed_wrapper_command(lifeline_fd: int | None) -> list[str]:
    """The wrapper as bubblewrap runs it: through ``setsid``, so that it leads a process group
    of its own on the host too (bubblewrap's ``--new-session`` makes its own init the group's
    leader; ``setsid`` in a process that leads no group makes no new process)."""
    if not SETSID:
        raise FileNotFoundError("setsid (util-linux) is not installed")
    return [SETSID, *wrapper_command(lifeline_fd)]


def wrapper_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` without what would make bash run something before the wrapper
    (``BASH_ENV``, ``ENV``, ``SHELLOPTS``, ``BASHOPTS``, exported functions).

    ``PYTHONUNBUFFERED=1`` unless the environment says otherwise: the log is a file, not a
    terminal, so a Python server (``python -m http.server``, Django, Flask) would keep its
    banner in a buffer, and neither the log view nor URL detection would see it for minutes.
    """
    kept = {
        name: value
        for name, value in environment.items()
        if name not in SHELL_VARIABLES and not name.startswith("BASH_FUNC_")
    }
    kept.setdefault("PYTHONUNBUFFERED", "1")
    return kept


def release_message(command: str) -> bytes:
    """What ``release`` writes: the release byte, a line break, the command (UTF-8; a name
    that is not, kept byte for byte with ``surrogateescape``).

    Raises:
        ValueError: The command holds a NUL character (bash cannot hold one; it would be cut
            there).
    """
    if "\x00" in command:
        raise ValueError("a command cannot contain a NUL character")
    return RELEASE_BYTE + b"\n" + command.encode("utf-8", "surrogateescape")
