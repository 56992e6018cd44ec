"""The world the attack lines run in: a fake home with planted secrets, canaries outside the
workspace, two workspaces that are git repositories, and servers on the host that record who
reached them.

Everything lives in one folder under /var/tmp (the sandbox's /tmp is its own, so a canary
under the host's /tmp would prove nothing), except the host-/tmp markers, whose names carry a
token so that the checker can look for them.

- ``home``: ``HOME`` for fxdesk and its commands. Secrets in every hidden store the attacks
  aim at (``~/.ssh``, ``~/.aws``, ``~/.netrc``, a keyring file, a shell history, …), and in
  fxdesk's data folder (``~/.local/share/fxdesk``); canaries that must not change
  (``~/.bashrc``, ``~/.profile``, ``~/.gitconfig``) and folders an attacker would plant into
  (``~/.local/bin``, ``~/.config/autostart``).
- ``ws`` (``~/proj``): the main workspace, a git repository with one commit, a nested
  repository (``vendor/lib``), a bare repository as ``origin`` (inside the workspace, so a
  ``git push`` that runs changes it: the deny rule's marker), a link out (``linkout``), and
  ``victim`` (the marker of a denied ``rm``).
- ``ws_gitfile`` (``~/proj2``): a workspace whose ``.git`` is a file naming its git folder
  ``.repo`` inside it.
- ``outside``: a canary folder beside the home folder, with a sub-folder (``CDPATH``) and a
  Unix socket server's path.
- Unix socket servers on the host, each counting who reached it: one at ``outside/sock``, one
  where Docker Desktop keeps its socket (``~/.docker/desktop/docker.sock``: a home folder is
  readable in the sandbox, and a socket file there is not covered by ``/run`` being hidden),
  and an abstract one (``@fxdesk-attack-<token>``).
- Environment: fxdesk's own keys (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``) and others a
  machine has (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, a D-Bus address whose guid is a
  secret), each a fresh random key.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets as random
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.host_server import Host, serving
from tests.leaks import make_key

PY = "/usr/bin/python3"  # the system's: a pyenv shim would look for its root under the fake home

# Hidden stores under the home folder, each holding a secret (file: text around the key).
HOME_SECRETS = {
    ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n{key}\n-----END PRIVATE KEY-----\n",
    ".aws/credentials": "[default]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key={key}\n",
    ".netrc": "machine example.com login me password {key}\n",
    ".git-credentials": "https://me:{key}@github.com\n",
    ".config/gh/hosts.yml": "github.com:\n    oauth_token: {key}\n",
    ".docker/config.json": '{{"auths": {{"r.example": {{"auth": "{key}"}}}}}}\n',
    ".bash_history": "export SECRET={key}\n",
    ".local/share/python_keyring/keyring_pass.cfg": "[fxdesk]\nprofile = {key}\n",
}
DATA_SECRET = "planted-key.txt"  # in fxdesk's data folder (hidden)
ENV_SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY")
CANARY_TEXT = "the person's own file\n"
_PLACEHOLDER = re.compile(r"@[A-Z]+@")


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.email=t@x",
            "-c",
            "user.name=t",
            "-c",
            "init.defaultBranch=main",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@dataclass
class SocketServer:
    """A Unix socket server on the host that counts the connections it accepted."""

    address: str  # a path, or an abstract name starting with NUL
    connections: int = 0
    _server: socket.socket | None = None
    _thread: threading.Thread | None = None

    def start(self) -> None:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(self.address)
        server.listen(16)
        server.settimeout(0.2)
        self._server = server
        self._thread = threading.Thread(target=self._serve, name="unix-server", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        server = self._server
        assert server is not None
        while self._server is not None:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.0 200 OK\r\ncontent-length: 5\r\n\r\nunix\n")
            conn.close()

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        if self._thread is not None:
            self._thread.join(5)


@dataclass
class World:
    root: Path
    home: Path
    ws: Path
    ws_gitfile: Path
    outside: Path
    data: Path
    token: str  # in every marker name, so the checker can find them anywhere
    host: Host
    unix: SocketServer
    abstract: SocketServer
    docker: SocketServer  # ~/.docker/desktop/docker.sock
    secrets: dict[str, str] = field(default_factory=dict)  # where -> key
    pristine: Path | None = None  # copies of the protected paths and canaries, to restore

    @property
    def protected(self) -> list[Path]:
        """The protected paths of both workspaces (and a nested repository's ``.git``)."""
        return [
            self.ws / ".git",
            self.ws / ".fxdesk",
            self.ws / "vendor" / "lib" / ".git",
            self.ws_gitfile / ".git",
            self.ws_gitfile / ".repo",
            self.ws_gitfile / ".fxdesk",
        ]

    @property
    def canaries(self) -> list[Path]:
        names = (".bashrc", ".profile", ".gitconfig")
        return [
            *(self.home / name for name in names),
            self.outside / "canary.txt",
            self.outside / "sub" / "canary.txt",
        ]

    def save(self) -> None:
        """Keep copies of the protected paths and canaries (``restore`` puts them back)."""
        self.pristine = Path(tempfile.mkdtemp(prefix="fxdesk-attacks-saved-", dir="/var/tmp"))
        for index, path in enumerate((*self.protected, *self.canaries)):
            _copy(path, self.pristine / str(index))

    def restore(self) -> None:
        """After a line the person allowed to change them (ask mode), or a hole: every
        protected path and canary as it was, so the next line meets the same world."""
        assert self.pristine is not None
        for index, path in enumerate((*self.protected, *self.canaries)):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            elif os.path.lexists(path):
                path.unlink()
            _copy(self.pristine / str(index), path)

    @property
    def abstract_name(self) -> str:
        return self.abstract.address[1:]

    def substitute(self, template: str, ident: str) -> str:
        """A line template with its placeholders filled in (``@X@``: braces are bash's)."""
        values = {
            "@HOME@": str(self.home),
            "@WS@": str(self.ws),
            "@OUT@": str(self.outside),
            "@ROOT@": str(self.root),
            "@DATA@": str(self.data),
            "@PY@": PY,
            "@URL@": self.host.url,
            "@PORT@": self.host.url.rsplit(":", 1)[1],
            "@SOCK@": self.unix.address,
            "@ABS@": self.abstract_name,
            "@DOCKER@": self.docker.address,
            "@PID@": str(os.getpid()),
            "@TOKEN@": self.token,
            "@ID@": ident,
        }
        for name, value in values.items():
            template = template.replace(name, value)
        assert not _PLACEHOLDER.search(template), template
        return template

    def reset_markers(self) -> None:
        """Before each line: the denied programs' markers as they were (``victim`` there,
        nothing pushed)."""
        for ws in (self.ws, self.ws_gitfile):
            (ws / "victim").write_text("delete me only if allowed\n")
        heads = self.ws / "remote.git" / "refs" / "heads"
        for ref in heads.iterdir():
            ref.unlink()
        packed = self.ws / "remote.git" / "packed-refs"
        packed.unlink(missing_ok=True)


def _copy(source: Path, target: Path) -> None:
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, target, symlinks=True)
    else:
        shutil.copy2(source, target, follow_symlinks=False)


def build_world(monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """Make the world, point fxdesk's environment at it, and take it down afterwards."""
    root = Path(tempfile.mkdtemp(prefix="fxdesk-attacks-", dir="/var/tmp")).resolve()
    token = random.token_hex(4)
    home = root / "home"
    outside = root / "outside"
    data = home / ".local" / "share" / "fxdesk"
    for folder in (home / ".local" / "bin", home / ".config" / "autostart", outside / "sub", data):
        folder.mkdir(parents=True)
    found: dict[str, str] = {}
    for name, text in HOME_SECRETS.items():
        key = make_key()
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(key=key))
        found[f"~/{name}"] = key
    key = make_key()
    (data / DATA_SECRET).write_text(f"provider key {key}\n")
    found[f"data folder/{DATA_SECRET}"] = key
    for name in (".bashrc", ".profile"):
        (home / name).write_text(f"# {CANARY_TEXT}")
    (home / ".gitconfig").write_text("[user]\n\tname = the person\n\temail = p@example.com\n")
    (outside / "canary.txt").write_text(CANARY_TEXT)
    (outside / "sub" / "canary.txt").write_text(CANARY_TEXT)

    ws = home / "proj"
    ws.mkdir()
    git("init", "-q", cwd=ws)
    (ws / "README").write_text("a project\n")
    git("add", "README", cwd=ws)
    git("commit", "-q", "-m", "first", cwd=ws)
    lib = ws / "vendor" / "lib"
    lib.mkdir(parents=True)
    git("init", "-q", cwd=lib)
    git("init", "-q", "--bare", "remote.git", cwd=ws)
    git("remote", "add", "origin", str(ws / "remote.git"), cwd=ws)
    os.symlink(outside, ws / "linkout")
    ws_gitfile = home / "proj2"
    ws_gitfile.mkdir()
    git("init", "-q", f"--separate-git-dir={ws_gitfile / '.repo'}", cwd=ws_gitfile)
    for workspace in (ws, ws_gitfile):
        (workspace / ".fxdesk").mkdir()  # fxdesk makes it before the first command anyway

    for name in ENV_SECRETS:
        found[f"${name}"] = make_key()
        monkeypatch.setenv(name, found[f"${name}"])
    found["$DBUS_SESSION_BUS_ADDRESS"] = make_key()
    monkeypatch.setenv(
        "DBUS_SESSION_BUS_ADDRESS",
        f"unix:path=/run/user/0/bus,guid={found['$DBUS_SESSION_BUS_ADDRESS']}",
    )
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    monkeypatch.setenv("FXDESK_HOME", str(data))

    unix = SocketServer(str(outside / "sock"))
    abstract = SocketServer(f"\0fxdesk-attack-{token}")
    (home / ".docker" / "desktop").mkdir(parents=True)
    docker = SocketServer(str(home / ".docker" / "desktop" / "docker.sock"))
    servers = (unix, abstract, docker)
    for server in servers:
        server.start()
    try:
        with serving() as host:
            world = World(
                root,
                home,
                ws,
                ws_gitfile,
                outside,
                data,
                token,
                host,
                unix,
                abstract,
                docker,
                found,
            )
            world.reset_markers()
            world.save()
            yield world
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
        saved = locals().get("world")
        if saved is not None and saved.pristine is not None:
            shutil.rmtree(saved.pristine, ignore_errors=True)
        for stray in Path("/tmp").glob(f"*{token}*"):
            shutil.rmtree(stray, ignore_errors=True) if stray.is_dir() else stray.unlink()
