"""MCP tool servers as fxdesk sees them: their configuration, its trust, their state (issue 18 §3).

The configuration is the common ``mcpServers`` shape other tools read too (Claude Code's
``.mcp.json``, Cursor's ``mcp.json``)::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "some-server"], "env": {"A": "b"}},
        "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {...}}}}

A server with a ``command`` speaks stdio; one with a ``url`` streamable HTTP (``type`` may say
``http`` or ``streamable-http``; ``sse``, the older transport, is refused with a sentence).
Per workspace it is read from ``.fxdesk/mcp.json`` and ``.mcp.json`` (the former wins for a
name both define); globally from ``mcp.json`` in the person's config folder.

A workspace's configuration comes with the repository, so a clone could start any program:
its servers start only once the person trusted *that* configuration, remembered as the sha256
of its canonical form (``config_hash``): any change asks again.

Tools are offered to agents as ``mcp__<server>__<tool>`` (``tool_name``), names the providers
accept (letters, digits, ``_`` and ``-``, at most 64 characters).
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PREFIX = "mcp__"
SEPARATOR = "__"
NAME_LIMIT = 64  # the longest tool name OpenAI's and Anthropic's APIs accept
WORKSPACE_FILES = (".fxdesk/mcp.json", ".mcp.json")  # the first wins for a name in both
GLOBAL_FILE = "mcp.json"
# Pauses before restarting a server that stopped (seconds), the last repeated; a server that
# ran for ``HEALTHY_S`` starts the schedule over.
BACKOFF_S = (1.0, 2.0, 5.0, 15.0, 60.0)
HEALTHY_S = 60.0
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class Transport(enum.StrEnum):
    STDIO = "stdio"
    HTTP = "http"  # streamable HTTP


class Origin(enum.StrEnum):
    GLOBAL = "global"  # the person's config folder: trusted, it is their own
    WORKSPACE = "workspace"  # came with the folder: runs only once trusted


class ServerState(enum.StrEnum):
    UNTRUSTED = "untrusted"  # a workspace configuration nobody trusted (yet, or since it changed)
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"  # stopped; waiting out the backoff before the next start
    FAILED = "failed"  # its configuration is wrong: not started until it changes
    STOPPED = "stopped"  # fxdesk stopped it (shutdown)


@dataclass(frozen=True)
class ServerConfig:
    """One configured server.

    Attributes:
        name: Its key in ``mcpServers`` (as written; ``tool_name`` makes it safe).
        transport: stdio (``command``) or streamable HTTP (``url``).
        command: The program (stdio).
        args: Its arguments (stdio).
        env: Variables it gets besides the sandbox's allow-list (stdio).
        cwd: Where it starts, relative to the workspace (stdio; '' for the workspace).
        url: The endpoint (HTTP).
        headers: Sent with every request (HTTP), e.g. an Authorization header.
        problem: Why it cannot start ('' when it can).
    """

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class McpConfig:
    """The servers of one place (a workspace or the global file), and where they came from."""

    origin: Origin
    servers: tuple[ServerConfig, ...] = ()
    files: tuple[str, ...] = ()  # the files read, for messages
    problems: tuple[str, ...] = ()  # files that could not be read, in a sentence each
    raw: Mapping[str, Any] = field(default_factory=dict)  # what was read, for the hash

    @property
    def hash(self) -> str:
        return config_hash(self.raw)


@dataclass(frozen=True)
class ToolInfo:
    """One tool a server offers: its name there, the name agents see, and its schema."""

    name: str
    qualified: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class ServerStatus:
    """A server's state at one moment, for Settings → Tools and ``fxdesk mcp list``."""

    name: str
    origin: Origin
    workspace: str  # the workspace folder ('' for a global server)
    transport: Transport
    state: ServerState
    target: str  # the command line or URL, as the person wrote it
    tools: tuple[ToolInfo, ...] = ()
    detail: str = ""  # why it is in that state, in a sentence ('' when running)
    restarts: int = 0
    log_path: str = ""  # its stderr (stdio) and fxdesk's notes about it
    sandboxed: bool = False
    # An untrusted server's: the hash of the configuration shown, which ``trust`` checks (so
    # a file changed after it was shown is never trusted unseen).
    config_hash: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": self.origin.value,
            "workspace": self.workspace,
            "transport": self.transport.value,
            "state": self.state.value,
            "target": self.target,
            "tools": [t.qualified for t in self.tools],
            "detail": self.detail,
            "restarts": self.restarts,
            "log": self.log_path,
            "sandboxed": self.sandboxed,
        }


def safe_name(name: str) -> str:
    """``name`` with every character a provider refuses in a tool name replaced by ``_``."""
    return _UNSAFE.sub("_", name) or "_"


def tool_name(server: str, tool: str) -> str:
    """The name agents see for ``tool`` of ``server``: ``mcp__<server>__<tool>``, made safe and
    cut to the providers' limit (a cut name keeps a short hash, so two long names stay apart)."""
    full = f"{PREFIX}{safe_name(server)}{SEPARATOR}{safe_name(tool)}"
    if len(full) <= NAME_LIMIT:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: NAME_LIMIT - 9]}_{digest}"


def is_mcp_tool(name: str) -> bool:
    return name.startswith(PREFIX)


def config_hash(raw: Mapping[str, Any]) -> str:
    """sha256 of the configuration's canonical JSON (key order and spacing do not count)."""
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def parse_servers(document: Any, where: str) -> tuple[list[ServerConfig], list[str]]:
    """The servers of one file's JSON, and the problems found (each a sentence naming ``where``).

    A server that is wrong is kept with its ``problem`` (so the person sees it listed, failed),
    unless it has no usable name."""
    if not isinstance(document, dict):
        return [], [f"{where}: expected a JSON object with “mcpServers”"]
    servers = document.get("mcpServers", {})
    if not isinstance(servers, dict):
        return [], [f"{where}: “mcpServers” must be an object of servers by name"]
    found: list[ServerConfig] = []
    for name, spec in servers.items():
        if not isinstance(name, str) or not name.strip():
            continue
        found.append(_server(name, spec, where))
    return found, []


def _server(name: str, spec: Any, where: str) -> ServerConfig:
    def bad(problem: str) -> ServerConfig:
        return ServerConfig(name, Transport.STDIO, problem=f"{where}, server “{name}”: {problem}")

    if not isinstance(spec, dict):
        return bad("expected an object")
    kind = str(spec.get("type", spec.get("transport", ""))).lower()
    if kind == "sse":
        return bad("the SSE transport is not supported; use streamable HTTP (“type”: “http”)")
    url, command = spec.get("url"), spec.get("command")
    if url is not None or kind in ("http", "streamable-http", "streamable_http"):
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return bad("“url” must be an http:// or https:// address")
        headers = spec.get("headers", {})
        if not _strings(headers):
            return bad("“headers” must map names to text")
        return ServerConfig(name, Transport.HTTP, url=url, headers=tuple(sorted(headers.items())))
    if not isinstance(command, str) or not command.strip():
        return bad("give a “command” (stdio) or a “url” (streamable HTTP)")
    args, env, cwd = spec.get("args", []), spec.get("env", {}), spec.get("cwd", "")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return bad("“args” must be a list of text")
    if not _strings(env):
        return bad("“env” must map names to text")
    if not isinstance(cwd, str):
        return bad("“cwd” must be text")
    return ServerConfig(
        name,
        Transport.STDIO,
        command=command,
        args=tuple(args),
        env=tuple(sorted(env.items())),
        cwd=cwd,
    )


def _strings(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def merge(origin: Origin, documents: Sequence[tuple[str, Any]]) -> McpConfig:
    """One place's configuration from its files' JSON (``(file, document)``, first wins for a
    server name); a document that is an ``Exception`` is a file that could not be read."""
    servers: dict[str, ServerConfig] = {}
    problems: list[str] = []
    raw: dict[str, Any] = {}
    for where, document in documents:
        if isinstance(document, Exception):
            problems.append(f"{where}: {document}")
            raw[where] = {"unreadable": str(document)}
            continue
        raw[where] = document
        found, trouble = parse_servers(document, where)
        problems += trouble
        for server in found:
            servers.setdefault(server.name, server)
    return McpConfig(
        origin,
        tuple(servers.values()),
        tuple(where for where, _ in documents),
        tuple(problems),
        raw,
    )


def target(server: ServerConfig) -> str:
    """What the server runs or reaches, as the person wrote it."""
    if server.transport is Transport.HTTP:
        return server.url
    return " ".join([server.command, *server.args])


def backoff(attempt: int, schedule: Sequence[float] = BACKOFF_S) -> float:
    """The pause before restart number ``attempt`` (1 for the first)."""
    if not schedule:
        return 0.0
    return schedule[min(max(attempt, 1), len(schedule)) - 1]
