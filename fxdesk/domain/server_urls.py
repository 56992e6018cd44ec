"""Which URL a dev server's output says it serves on (spec background-processes §5.4, improved).

The reference scored every ``http(s)://`` in the text and returned the winner exactly as written,
ANSI codes, trailing commas and all, and any documentation link could win (Appendix A 4). Here:

- Terminal codes are removed first (CSI colours, OSC titles; an OSC 8 hyperlink's target counts
  as a candidate, its visible text as well). Vite colours the *port* inside the URL, so removing
  them after cutting the URL out would be too late.
- A URL ends at a space, a quote, an angle bracket or anything outside printable ASCII, and
  loses its trailing punctuation (``.,;:!?``) and unbalanced closing brackets.
- Only hosts on this machine or its networks are candidates: loopback (``localhost``,
  ``*.localhost``, ``127.0.0.0/8``, ``[::1]``), any-address (``0.0.0.0``, ``[::]``: shown as
  ``localhost``, the address the person's browser can open), this machine's own names,
  ``*.local`` and single-label names, and private addresses. A public host (say
  ``https://nextjs.org/docs/...``) is never returned: a dev server runs here, a public link in
  its output is documentation.
- ``tcp://`` (Puma before 5) reads as ``http://``, ``ssl://`` as ``https://`` without its query.

Scores follow the reference (host: loopback 100, any-address 80, private 40; line: ``local``
+20, ``url`` +6, a "ready/listening/..." word +10, ``network`` -15, ``error``/``warn`` -25),
with three changes: ``[::1]`` scores 98 so Puma's ``127.0.0.1`` line wins over its ``[::1]``
line; a forwarding target (``proxy``, ``->``) scores -30, so webpack's ``[HPM] Proxy created:
/api -> http://localhost:3000`` never beats its ``Loopback:`` line; and the words are looked for
in the line *without its URLs* (``localhost`` itself is not "local" context). On a tie the
*earlier* candidate wins (the reference took the later): servers print their main address first.

Only lines that contain ``://`` in their raw text are looked at. That is what lets the log
scanner (``domain/log_scan.py``) skip megabytes of output at memory speed; a scheme split by an
escape code (``http:ESC[0m//``), which no known server prints, is therefore not recognised.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

# A candidate this good is published at once; a weaker one only once nothing better followed
# for a short while (``engine/background/watchers.py``). 110 = a loopback host on a line that
# says it is ready, listening, running, serving or local.
CONFIDENT_SCORE = 110

SCHEME_MARK = "://"


class HostReach(enum.Enum):
    """How far a URL's host is from this machine, best first."""

    LOOPBACK = "loopback"
    ANY_ADDRESS = "any_address"  # 0.0.0.0 / [::]: bound everywhere, opened as localhost
    OWN_NAME = "own_name"  # this machine's host name (or a *.local mDNS name)
    PRIVATE = "private"  # a LAN address or a single-label name: maybe another machine
    PUBLIC = "public"  # never a candidate


_HOST_SCORES = {
    HostReach.LOOPBACK: 100,
    HostReach.ANY_ADDRESS: 80,
    HostReach.OWN_NAME: 60,
    HostReach.PRIVATE: 40,
}
_IPV6_LOOPBACK_PENALTY = 2

# (words, bonus): each group counts once, looked for case-insensitively in the line minus its URLs.
_CONTEXT: tuple[tuple[tuple[str, ...], int], ...] = (
    (("local", "loopback"), 20),
    (("url",), 6),
    (
        ("ready", "started", "starting", "listening", "running", "serving", "server", "available"),
        10,
    ),
    (("network",), -15),
    (("error", "warn", "fail"), -25),
    (("proxy", "->", "→"), -30),
)


@dataclasses.dataclass(frozen=True)
class ServerUrl:
    """A URL found in a server's output, as it will be shown and opened."""

    url: str
    host: str  # lower case, without brackets; "localhost" for an any-address
    port: int | None
    reach: HostReach
    score: int

    @property
    def confident(self) -> bool:
        """Good enough to publish without waiting for a better line."""
        return self.score >= CONFIDENT_SCORE

    @property
    def is_loopback(self) -> bool:
        """Served on this machine's loopback: the only URLs fxdesk itself may request."""
        return self.reach in (HostReach.LOOPBACK, HostReach.ANY_ADDRESS)


# --- terminal codes -------------------------------------------------------------------------

_OSC8_OPEN = r"(?:\x1b\]|\x9d)8;[^;\x07\x1b]*;(?P<target>[^\x07\x1b]*)(?:\x07|\x1b\\|$)"
_TERMINAL_CODE = re.compile(
    "|".join(
        (
            _OSC8_OPEN,
            r"(?:\x1b\]|\x9d)[^\x07\x1b]*(?:\x07|\x1b\\|$)",  # other OSC (titles, ...)
            r"(?:\x1b\[|\x9b)[0-?]*[ -/]*(?:[@-~]|$)",  # CSI: colours, cursor moves
            r"\x1b[P^_X][^\x07\x1b]*(?:\x07|\x1b\\|$)",  # DCS, PM, APC, SOS strings
            r"\x1b[()*+#%][ -~]?",  # character set selection
            r"\x1b[ -~]?",  # any other escape, and a lone ESC
            r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]",  # other control characters
        )
    )
)


def _replace_code(match: re.Match[str]) -> str:
    target = match.group("target")
    return f" {target} " if target else ""


def strip_terminal_codes(text: str) -> str:
    """``text`` without escape sequences and control characters (tab, LF and CR are kept).

    An OSC 8 hyperlink's target is kept as words of its own, so a link whose visible text is
    not the URL is still found.
    """
    return _TERMINAL_CODE.sub(_replace_code, text)


# --- candidates -----------------------------------------------------------------------------

# Printable ASCII except what ends a URL in running text: quotes, angle brackets, braces, '|',
# backslash, '^', backtick (and space, control and non-ASCII characters by omission).
_URL = re.compile(r"(?<![A-Za-z0-9])(https?|tcp|ssl)://[!#-&(-;=?-\[\]_a-z~]+", re.IGNORECASE)
_TRAILING = ".,;:!?"
_LINE_BREAK = re.compile(r"[\r\n]")  # as the scanner: a CR ends a line too (progress bars)
_SCHEMES = {"http": "http", "https": "https", "tcp": "http", "ssl": "https"}
_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.?")


def _trim(url: str) -> str:
    """Drop trailing punctuation and closing brackets that the URL did not open."""
    while url:
        last = url[-1]
        if last in _TRAILING or (
            (last == ")" and url.count("(") < url.count(")"))
            or (last == "]" and url.count("[") < url.count("]"))
        ):
            url = url[:-1]
        else:
            break
    return url


def host_reach(host: str, own_names: Iterable[str] = ()) -> HostReach:
    """Classify a lower-case host name or address (IPv6 without brackets)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = host.rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return HostReach.LOOPBACK
        if name in own_names or name.endswith(".local"):
            return HostReach.OWN_NAME
        return HostReach.PRIVATE if "." not in name else HostReach.PUBLIC
    if address.is_loopback:
        return HostReach.LOOPBACK
    if address.is_unspecified:
        return HostReach.ANY_ADDRESS
    if address.is_private or address.is_link_local:
        return HostReach.PRIVATE
    return HostReach.PUBLIC


def _valid_host(host: str) -> bool:
    """An IP address or a DNS-shaped name (not a template such as ``%s`` or ``${HOST}``)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return bool(_NAME.fullmatch(host)) and not host.replace(".", "").isdigit()
    return True


@functools.lru_cache(maxsize=1024)
def _reach_of_valid(host: str, own_names: frozenset[str]) -> HostReach | None:
    """``host_reach`` for a valid host, None for an invalid one; cached (logs repeat hosts)."""
    return host_reach(host, own_names) if _valid_host(host) else None


def _candidate(raw: str, own_names: frozenset[str]) -> ServerUrl | None:
    """The URL as it will be shown, or None when it is not a local server address."""
    written, _, rest = _trim(raw).partition("://")
    scheme = _SCHEMES[written.lower()]
    if scheme != written.lower():  # tcp:// or ssl:// (Puma): only the address counts
        rest = _trim(re.split(r"[/?#]", rest, maxsplit=1)[0])
    try:
        parts = urlsplit(f"{scheme}://{rest}")
        host, port = parts.hostname, parts.port
    except ValueError:  # a bad port or bracket: a template such as http://[your-ip]:5000
        return None
    if not host:
        return None
    reach = _reach_of_valid(host, own_names)
    if reach is None or reach is HostReach.PUBLIC:
        return None
    if reach is HostReach.ANY_ADDRESS:
        host = "localhost"
        rest = (f"localhost:{port}" if port is not None else host) + rest[len(parts.netloc) :]
    score = _HOST_SCORES[reach]
    if reach is HostReach.LOOPBACK and ":" in host:
        score -= _IPV6_LOOPBACK_PENALTY
    return ServerUrl(f"{scheme}://{rest}", host, port, reach, score)


def line_candidates(raw_line: str, own_names: Iterable[str] = ()) -> list[ServerUrl]:
    """The local server URLs in one line of output, scored with the line's words.

    ``raw_line`` is the line as the program wrote it (escape codes included) without its line
    break. A line with no ``://`` in it has none, whatever its escape codes would make of it.
    """
    if SCHEME_MARK not in raw_line:
        return []
    line = strip_terminal_codes(raw_line)
    names = frozenset(own_names)
    found = [
        candidate
        for match in _URL.finditer(line)
        if (candidate := _candidate(match.group(0), names)) is not None
    ]
    if not found:
        return []
    words = _URL.sub(" ", line).lower()
    context = sum(bonus for group, bonus in _CONTEXT if any(word in words for word in group))
    return [dataclasses.replace(c, score=c.score + context) for c in found]


def better(current: ServerUrl | None, challenger: ServerUrl) -> ServerUrl:
    """The one to keep: the higher score; on a tie the one seen first (``current``)."""
    if current is None or challenger.score > current.score:
        return challenger
    return current


def detect_server_url(text: str, own_names: Iterable[str] = ()) -> ServerUrl | None:
    """The best local server URL in a whole text, or None.

    ``own_names`` are this machine's host names in lower case (the caller looks them up: the
    domain does no I/O). For a growing log use ``log_scan.UrlScanner``, which gives the same
    answer chunk by chunk.
    """
    best: ServerUrl | None = None
    for line in _LINE_BREAK.split(text):
        for candidate in line_candidates(line, own_names):
            best = better(best, candidate)
    return best
