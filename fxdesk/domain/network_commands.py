"""Which commands need the network, in one table.

In auto mode a command runs in the sandbox without the network (its own network namespace,
loopback only). A command this table knows to need the network asks first, so the person can
let that one call out ("needs the network"), instead of failing with "Could not resolve host".
``needs_network`` reads one simple command's words, behind wrappers (``sudo``, ``timeout``,
``env``, ...) as the deny rules do, past git's global options, and ``python -m pip``.

What counts: programs that only talk to other machines (``curl``, ``ssh``, ``gh``, ...);
subcommands that download or upload (``git fetch``, ``pip install``, ``npm ci``, ``cargo
fetch``, ``go get``, ``apt-get install``, ``docker pull``, ...); ``scp`` and ``rsync`` when an
operand is on another host. An offline flag (``--offline``, ``pip --no-index``, ``cargo
--frozen``) turns the need off.

What does not: builds that download only what their cache lacks (``cargo build``, ``go build``,
``mvn``, ``gradle``, ``docker build``, ``uv run``): most runs need no network, and asking before
each build would train the person to click through. When one does reach out, it fails inside
the sandbox, and the tool result's hint tells the model how to ask for the network
(``run_command``'s ``network`` argument). The same hint covers any program this table does not
know, and options that hide a subcommand (``npm --prefix dir install``: the value ``dir`` reads
as the subcommand).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fxdesk.domain.shell_programs import git_subcommand, program_starts

REASON = "needs the network (auto mode runs commands without it)"


@dataclass(frozen=True)
class Uses:
    """How a program uses the network.

    Attributes:
        always: every use of the program does (``curl``).
        subcommands: the subcommands that do: one word (``install``) or two (``pip install``).
        bare: the program without a subcommand does (``yarn`` installs).
        offline: flags that make it work offline.
        remote: it does when an operand names another host (``host:path``, ``rsync://``).
    """

    always: bool = False
    subcommands: frozenset[str] = frozenset()
    bare: bool = False
    offline: frozenset[str] = frozenset()
    remote: bool = False


ALWAYS = Uses(always=True)
_OFFLINE = frozenset({"--offline"})


def _sub(names: str, *, bare: bool = False, offline: frozenset[str] = _OFFLINE) -> Uses:
    """Subcommands separated by commas (a subcommand may have two words)."""
    return Uses(
        subcommands=frozenset(n.strip() for n in names.split(",")), bare=bare, offline=offline
    )


_NPM = (
    "install, i, in, ins, inst, insta, instal, isnt, isntall, add, ci, clean-install, "
    "install-clean, install-test, it, install-ci-test, cit, update, up, upgrade, publish, view, "
    "info, show, v, search, s, find, audit, outdated, login, adduser, exec, x, create, dist-tag, "
    "deprecate, owner, access, token, whoami, ping, unpublish"
)
_APT = "update, install, upgrade, dist-upgrade, full-upgrade, download, source, build-dep"
_DNF = "install, update, upgrade, makecache, download, reinstall, distro-sync, check-update"

_ALWAYS_NAMES = (
    "curl curlie wget wget2 aria2c http https xh xhs httpie ssh sftp mosh sshfs telnet ftp lftp "
    "nc ncat netcat socat ping ping6 traceroute tracepath mtr dig nslookup host whois gh hub "
    "glab aws az gcloud gsutil kubectl helm npx pnpx bunx uvx"
)

TABLE: dict[str, Uses] = {
    # Programs that only talk to other machines.
    **dict.fromkeys(_ALWAYS_NAMES.split(), ALWAYS),
    "scp": Uses(remote=True),
    "rsync": Uses(remote=True),
    "git": _sub(
        "clone, fetch, pull, push, ls-remote, remote update, remote prune, submodule update, "
        "submodule add, lfs fetch, lfs pull, lfs push, lfs clone, request-pull",
        offline=frozenset(),
    ),
    "pip": _sub("install, download, wheel, index, search", offline=frozenset({"--no-index"})),
    "uv": _sub(
        "add, remove, sync, lock, publish, pip install, pip compile, pip sync, tool install, "
        "tool run, tool upgrade, python install, self update"
    ),
    "poetry": _sub("install, add, update, lock, remove, publish, self update"),
    "pipx": _sub("install, run, upgrade, upgrade-all, inject, reinstall, reinstall-all"),
    **dict.fromkeys(
        ("conda", "mamba", "micromamba"),
        _sub("install, create, update, upgrade, search, env create, env update"),
    ),
    "npm": _sub(_NPM),
    "yarn": _sub(
        "install, add, up, upgrade, upgrade-interactive, dlx, publish, npm, create, info, "
        "outdated, audit",
        bare=True,
    ),
    "pnpm": _sub(
        "install, i, add, update, up, upgrade, dlx, publish, create, fetch, outdated, audit, "
        "info, view, install-test, it"
    ),
    "bun": _sub("install, i, add, a, update, x, create, upgrade, publish, outdated"),
    "deno": _sub("install, add, upgrade, cache, outdated"),
    "cargo": _sub(
        "install, fetch, update, publish, search, add, login, generate-lockfile, yank, owner, "
        "vendor",
        offline=frozenset({"--offline", "--frozen"}),
    ),
    "rustup": _sub("install, update, toolchain install, target add, component add, self update"),
    "go": _sub("get, install, mod download, mod tidy, work sync"),
    "gem": _sub("install, update, push, fetch, search, sources"),
    **dict.fromkeys(("bundle", "bundler"), _sub("install, update, add, outdated", bare=True)),
    "composer": _sub(
        "install, update, upgrade, require, create-project, outdated, search, self-update"
    ),
    **dict.fromkeys(("apt", "apt-get", "aptitude"), _sub(_APT)),
    **dict.fromkeys(("dnf", "yum", "microdnf"), _sub(_DNF)),
    "zypper": _sub("install, in, update, up, refresh, ref, dist-upgrade, dup"),
    "apk": _sub("add, update, upgrade, fetch"),
    "brew": _sub("install, update, upgrade, fetch, tap, reinstall, search"),
    "snap": _sub("install, refresh, download"),
    "flatpak": _sub("install, update, remote-add"),
    **dict.fromkeys(("docker", "podman", "nerdctl"), _sub("pull, push, login, search")),
    **dict.fromkeys(("hf", "huggingface-cli"), _sub("download, upload, login")),
    "ollama": _sub("pull, push"),
    "terraform": _sub("init, plan, apply, destroy, refresh, import, get"),
    "openssl": _sub("s_client"),
}

_VERSIONED = re.compile(r"(pip|python)[0-9.]*")
# scp/rsync operands on another host: user@host:path, host:path (not a path holding ':'),
# rsync://host/..., host::module.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[^/:]+::?)", re.IGNORECASE)


def needs_network(words: Sequence[str]) -> str:
    """What in the simple command ``words`` needs the network, as the table names it
    ("curl", "git fetch", "pip install", "scp to another host"); "" when nothing does.

    Args:
        words: The command's words after quote removal (leading assignments included).
    """
    for start in program_starts(words):
        found = _program(words[start:])
        if found:
            return found
    return ""


def _program(words: Sequence[str]) -> str:
    if not words:
        return ""
    name, args = _name(words[0]), list(words[1:])
    if name == "python" and args[:1] == ["-m"] and len(args) > 1:
        name, args = _name(args[1]), args[2:]
    if name == "git":
        stripped = git_subcommand(words)
        args = list(stripped[1:]) if stripped is not None else args
    uses = TABLE.get(name)
    if uses is None or any(arg in uses.offline for arg in args):
        return ""
    if uses.always:
        return name
    if uses.remote:
        remote = any(_REMOTE.match(arg) for arg in args if not arg.startswith("-"))
        return f"{name} to another host" if remote else ""
    operands = [arg for arg in args if not arg.startswith(("-", "+"))]
    if not operands:
        return name if uses.bare else ""
    for wanted in (" ".join(operands[:2]), operands[0]):
        if wanted in uses.subcommands:
            return f"{name} {wanted}"
    return ""


def _name(program: str) -> str:
    """The program's base name, without a version (``pip3.11`` → ``pip``)."""
    base = posixpath.basename(program)
    versioned = _VERSIONED.fullmatch(base)
    return versioned.group(1) if versioned else base
