"""Logging to a rotating file, crash logs, and the one handler for unexpected exceptions.

- ``setup_logging`` sends every record to ``<data>/logs/fxdesk.log`` (rotated, 5 x 2 MiB) and
  warnings to stderr.
- ``CrashLog`` arms ``faulthandler`` on a fresh file per run. A clean exit deletes it; a hard crash
  (segfault, abort) leaves it non-empty, and the next start offers it to the person. An uncaught
  exception that ends the process writes a report next to it.
- ``register_secret`` / ``register_secret_variable``: API keys in use, masked in every log line
  and kept out of the environment of the agent's commands (``environment_without_secrets``).
- ``install_exception_hooks`` feeds ``sys.excepthook``, ``threading.excepthook`` and the asyncio
  loop's exception handler into one Qt-free function that logs, and tells the person through
  ``messages.error`` with the traceback as details.
"""

from __future__ import annotations

import base64
import faulthandler
import logging
import os
import sys
import threading
import time
import traceback
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from fxdesk import __version__, messages

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

LOG_FORMAT = "%(asctime)s %(levelname)-7s %(threadName)s %(name)s: %(message)s"
_ROTATE_BYTES = 2 * 1024 * 1024
_ROTATE_COUNT = 5


_SECRETS: set[str] = set()
_SECRET_VARIABLES: set[str] = set()
_SECRETS_LOCK = threading.Lock()
_NEEDLES: tuple[_Needle, ...] = ()  # rebuilt under the lock at each register, read lock-free

REDACTED = "[redacted]"
# Whatever cuts a text (the model's output cap, grep's line cap, a command's capture limit)
# may cut through a secret and show its start or its end. A piece of at least this many
# characters at the start or the end of a secret is masked wherever it appears, so at most
# FRAGMENT_CHARS - 1 characters of a key (of real keys: their public prefix) can show.
FRAGMENT_CHARS = 12


def register_secret(value: str) -> None:
    """Never let ``value`` (an API key in use) reach a log record or the agent's model."""
    global _NEEDLES
    if len(value) >= 8:  # shorter strings would mask ordinary words
        with _SECRETS_LOCK:
            if value not in _SECRETS:
                _SECRETS.add(value)
                _NEEDLES = tuple(_Needle.of(secret) for secret in sorted(_SECRETS))


def register_secret_variable(name: str) -> None:
    """``name`` is an environment variable a profile reads its API key from: commands the agent
    runs never inherit it (see ``environment_without_secrets``), even before the key is read."""
    if name:
        with _SECRETS_LOCK:
            _SECRET_VARIABLES.add(name)


def environment_without_secrets(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) without the variables that hold an API key: those
    profiles name, and any whose value carries a key fxdesk has in use. What the agent's commands
    get, so `env` or `echo $OPENAI_API_KEY` cannot hand a key to the model."""
    with _SECRETS_LOCK:
        names = set(_SECRET_VARIABLES)
        secrets = list(_SECRETS)
    source = os.environ if environ is None else environ
    return {
        name: value
        for name, value in source.items()
        if name not in names and not any(secret in value for secret in secrets)
    }


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``[redacted]``.

    Masked: each secret as it is; a piece of it of ``FRAGMENT_CHARS`` or more characters at
    its start or its end (what a cut leaves); its URL encoding; and its base64 encoding (both
    alphabets, at any alignment, so also inside a longer encoded text such as an HTTP
    ``Authorization: Basic`` header). Not masked: encodings the program chose on purpose to
    hide it (hex, rot13, reversed, base64 wrapped over lines); the sandbox keeps keys out of
    reach, this catches what is printed by accident or plainly.
    """
    for needle in _NEEDLES:
        text = needle.mask(text)
    return text


@dataclass(frozen=True)
class _Needle:
    """One secret, in the forms ``redact`` looks for."""

    secret: str
    fragment: int  # the shortest start or end piece that is masked
    encoded: tuple[str, ...]  # URL and base64 forms, longest first

    @classmethod
    def of(cls, secret: str) -> _Needle:
        # Short secrets are matched whole: a few characters would mask ordinary text.
        fragment = min(len(secret), FRAGMENT_CHARS, max(8, len(secret) // 2))
        forms = {urllib.parse.quote(secret, safe=""), *_base64_forms(secret.encode("utf-8"))}
        forms.discard(secret)
        ordered = tuple(sorted((f for f in forms if len(f) >= 8), key=len, reverse=True))
        return cls(secret, fragment, ordered)

    def mask(self, text: str) -> str:
        # Encoded forms first: masking the start of a URL-encoded key would leave the rest of
        # it (after its first %2F) for a shorter end piece to miss.
        for form in self.encoded:
            if form in text:
                text = text.replace(form, REDACTED)
        return self._ends(self._starts(text))

    def _starts(self, text: str) -> str:
        """Mask the secret and every piece of its start of ``fragment`` characters or more."""
        head = self.secret[: self.fragment]
        at = text.find(head)
        if at < 0:
            return text
        pieces, done = [], 0
        while at >= 0:
            length = _common_prefix(text, at, self.secret)
            pieces += [text[done:at], REDACTED]
            done = at + length
            at = text.find(head, done)
        pieces.append(text[done:])
        return "".join(pieces)

    def _ends(self, text: str) -> str:
        """Mask every piece of the secret's end of ``fragment`` characters or more."""
        tail = self.secret[-self.fragment :]
        at = text.find(tail)
        if at < 0:
            return text
        pieces, done = [], 0
        while at >= 0:
            end = at + len(tail)
            start = max(end - _common_suffix(text, end, self.secret), done)
            pieces += [text[done:start], REDACTED]
            done = end
            at = text.find(tail, done)
        pieces.append(text[done:])
        return "".join(pieces)


def _common_prefix(text: str, at: int, secret: str) -> int:
    """How many characters of ``secret``'s start ``text`` holds from ``at`` on."""
    length = 0
    for mine, theirs in zip(secret, text[at : at + len(secret)], strict=False):
        if mine != theirs:
            break
        length += 1
    return length


def _common_suffix(text: str, end: int, secret: str) -> int:
    """How many characters of ``secret``'s end ``text`` holds just before ``end``."""
    length = 0
    for mine, theirs in zip(
        reversed(secret), reversed(text[max(0, end - len(secret)) : end]), strict=False
    ):
        if mine != theirs:
            break
        length += 1
    return length


def _base64_forms(raw: bytes) -> set[str]:
    """The part of base64 every encoding of a text holding ``raw`` contains, for each of the
    three alignments ``raw`` can have in it, in the standard and the URL-safe alphabet.

    Encoded after ``k`` other bytes, the first characters also carry bits of those bytes and
    the last ones bits of what follows: only the characters made of ``raw``'s bits alone are
    the same in every such text.
    """
    forms = set()
    for k in range(3):
        encoded = base64.b64encode(bytes(k) + raw).decode("ascii")
        first = -(-8 * k // 6)  # ceil: the first character free of the k bytes before
        last = 8 * (k + len(raw)) // 6  # the characters made only of raw's bits end here
        stable = encoded[first:last]
        forms.add(stable)
        forms.add(stable.translate(_URLSAFE))
    return forms


_URLSAFE = str.maketrans("+/", "-_")


class RedactingFormatter(logging.Formatter):
    """Masks registered secrets in the finished line, traceback included, whatever logged it
    (an SDK included)."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def setup_logging(
    log_file: Path | None,
    *,
    verbose: bool = False,
    stderr_level: int = logging.WARNING,
    rotate: bool = True,
) -> None:
    """Configure the root logger. Safe to call again (it replaces handlers it installed).

    With ``rotate=False`` the file is appended to without being rotated: the window logs that
    way until its first frame has painted, then calls this again. The rotating handler's module
    (``logging.handlers``, which imports socket, pickle and queue: ~6 ms) comes after the frame;
    a file past its size is rotated at the next record once it is rotating."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_fxdesk", False):
            root.removeHandler(handler)
            handler.close()
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    formatter = RedactingFormatter(LOG_FORMAT)
    if log_file is not None:
        log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        file_handler: logging.FileHandler
        if rotate:
            from logging.handlers import RotatingFileHandler

            file_handler = RotatingFileHandler(
                log_file, maxBytes=_ROTATE_BYTES, backupCount=_ROTATE_COUNT, encoding="utf-8"
            )
        else:
            file_handler = logging.FileHandler(log_file, encoding="utf-8")
        file_handler.setFormatter(formatter)
        file_handler._fxdesk = True  # type: ignore[attr-defined]
        root.addHandler(file_handler)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else stderr_level)
    console.setFormatter(RedactingFormatter("fxdesk: %(levelname)s: %(message)s"))
    console._fxdesk = True  # type: ignore[attr-defined]
    root.addHandler(console)


ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


def format_exception(exc_info: ExcInfo) -> str:
    return "".join(traceback.format_exception(*exc_info))


def report_unexpected(exc_info: ExcInfo, where: str) -> None:
    """The one place an unexpected exception ends up, from any thread or the loop."""
    text = format_exception(exc_info)
    log.error("unexpected error in %s:\n%s", where, text)
    details = f"fxdesk {__version__}, Python {sys.version.split()[0]}\nin {where}\n\n{text}"
    messages.error(
        f"Something went wrong ({exc_info[0].__name__} in {where}). "
        "This is a bug in fxdesk; the details can be copied into a report.",
        key=f"bug:{exc_info[0].__name__}:{where}",
        details=details,
    )


def install_exception_hooks() -> Callable[[], None]:
    """Route uncaught exceptions to ``report_unexpected``. Returns a function undoing it."""
    old_sys, old_thread = sys.excepthook, threading.excepthook

    def sys_hook(
        exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
    ) -> None:
        if issubclass(exc_type, KeyboardInterrupt):
            old_sys(exc_type, exc, tb)
            return
        report_unexpected((exc_type, exc, tb), "main thread")

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_value is None:
            return
        name = args.thread.name if args.thread else "a thread"
        report_unexpected((args.exc_type, args.exc_value, args.exc_traceback), name)

    sys.excepthook = sys_hook
    threading.excepthook = thread_hook

    def undo() -> None:
        sys.excepthook, threading.excepthook = old_sys, old_thread

    return undo


def loop_exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """asyncio loop handler: exceptions go to ``report_unexpected``, the rest is logged."""
    import asyncio  # here: the window's first frame comes before asyncio is imported

    exc = context.get("exception")
    if isinstance(exc, BaseException) and not isinstance(exc, asyncio.CancelledError):
        where = context.get("message") or "the event loop"
        task = context.get("task") or context.get("future")
        if task is not None and hasattr(task, "get_name"):
            where = f"task {task.get_name()}"
        report_unexpected((type(exc), exc, exc.__traceback__), where)
    else:
        log.warning("event loop: %s", context.get("message"))


class CrashLog:
    """Crash logs in ``<data>/crash``: armed per run, offered on the next start.

    Files named ``*.log`` are reports nobody has seen yet; ``mark_seen`` renames them to
    ``*.seen``.
    """

    def __init__(self, crash_dir: Path) -> None:
        self.crash_dir = crash_dir
        self._file: IO[str] | None = None
        self._path: Path | None = None
        self.previous: list[Path] = []  # reports of earlier runs, found by ``arm``

    def previous_reports(self) -> list[Path]:
        """Crash logs left by earlier runs that ended badly, oldest first."""
        if not self.crash_dir.is_dir():
            return []
        reports = []
        for path in sorted(self.crash_dir.glob("*.log")):
            if path == self._path:
                continue
            try:
                if path.stat().st_size > 0:
                    reports.append(path)
                elif not _pid_alive(_pid_of(path)):
                    path.unlink(missing_ok=True)  # an empty file of a run killed with -9
            except OSError:
                continue
        return reports

    def mark_seen(self, path: Path) -> None:
        try:
            path.rename(path.with_suffix(".seen"))
        except OSError:
            log.warning("could not mark crash log %s as seen", path, exc_info=True)

    def arm(self) -> None:
        """Collect earlier runs' reports into ``previous``; point faulthandler at a fresh file."""
        self.previous = self.previous_reports()
        self.crash_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self._path = self.crash_dir / f"fault-{stamp}-pid{os.getpid()}.log"
        self._file = open(self._path, "w", encoding="utf-8")  # noqa: SIM115 - held for the run
        faulthandler.enable(self._file, all_threads=True)

    def write_exception(self, exc_info: ExcInfo) -> Path:
        """Record an exception that ends the process, for the next start to offer."""
        self.crash_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = self.crash_dir / f"exception-{stamp}-pid{os.getpid()}.log"
        path.write_text(
            f"fxdesk {__version__} stopped on an uncaught exception\n\n"
            + format_exception(exc_info),
            encoding="utf-8",
        )
        return path

    def disarm(self) -> None:
        """Clean exit: stop faulthandler and delete this run's file if nothing was written."""
        if self._file is None or self._path is None:
            return
        faulthandler.disable()
        self._file.close()
        self._file = None
        try:
            if self._path.stat().st_size == 0:
                self._path.unlink()
        except OSError:
            pass
        self._path = None


def _pid_of(path: Path) -> int:
    stem = path.stem
    marker = stem.rfind("-pid")
    try:
        return int(stem[marker + 4 :]) if marker >= 0 else -1
    except ValueError:
        return -1


def _pid_alive(pid: int) -> bool:
    if pid <= 0 or pid == os.getpid():
        return pid == os.getpid()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
