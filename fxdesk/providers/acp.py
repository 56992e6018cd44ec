"""An external agent over the Agent Client Protocol (ACP), on the official SDK.

An ACP agent (Claude Code through its adapter, Codex, Gemini CLI, ...) runs its own loop: it
takes one prompt, streams ``session/update`` notifications (message chunks, tool calls and their
status), may ask the client ``session/request_permission``, may ask it to read and write files
and run terminals (served by an ``AcpHost``: fxdesk's tools, ``fxdesk.engine.acp_host``), and
answers the prompt with a stop reason. So it is not a model behind ``Provider.stream``: the
engine starts it (``AcpAgentProvider.start``), keeps it per session (``fxdesk.engine.acp_agents``)
and drives it a turn at a time (``fxdesk.engine.turn_acp``), recording what streams back.

The agent is a child process in the session's workspace, in its own process group (stopped with
SIGTERM to the group, then SIGKILL); its stderr goes to a log file, never to a pipe nobody reads.
The SDK's ``spawn_agent_process`` is not used for that reason: it cannot start a new session
group and pipes stderr. The SDK (pydantic models of the whole protocol) takes most of a second
to import, so it is imported only when an agent starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

from fxdesk.providers.base import ModelRequest, Provider, ProviderError, StreamEvent

log = logging.getLogger(__name__)
T = TypeVar("T")

STOP_TIMEOUT_S = 5.0  # SIGTERM to the agent's group, then SIGKILL after this long


@dataclass(frozen=True)
class AgentText:
    """A chunk of the agent's message (``agent_message_chunk``)."""

    text: str


@dataclass(frozen=True)
class AgentToolCall:
    """A tool call the agent started (``tool_call``) or moved on (``tool_call_update``).

    ``status`` is ACP's: pending, in_progress, completed, failed (None: unchanged).
    """

    call_id: str
    started: bool
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    raw_input: Any = None
    text: str = ""  # the text parts of its content
    diffs: tuple[FileDiff, ...] = ()  # the file edits in its content


@dataclass(frozen=True)
class FileDiff:
    """A file edit a tool call reports (``FileEditToolCallContent``); ``old`` None: new file."""

    path: str
    old: str | None
    new: str


@dataclass(frozen=True)
class AgentThought:
    """A chunk of the agent's reasoning (``agent_thought_chunk``)."""

    text: str


@dataclass(frozen=True)
class PlanStep:
    content: str
    status: str  # pending | in_progress | completed
    priority: str  # high | medium | low


@dataclass(frozen=True)
class AgentPlan:
    """The agent's plan (``plan``): the whole list each time, replacing the one before."""

    steps: tuple[PlanStep, ...]


@dataclass(frozen=True)
class AgentUsage:
    """``usage_update``: tokens in the context, its size, and the session's cumulative cost
    when the agent reports one."""

    used: int
    size: int
    cost: float | None = None
    currency: str | None = None


AgentUpdate = AgentText | AgentToolCall | AgentThought | AgentPlan | AgentUsage


@dataclass(frozen=True)
class PermissionOption:
    option_id: str
    name: str
    kind: str  # allow_once | allow_always | reject_once | reject_always


@dataclass(frozen=True)
class PermissionAsk:
    """The agent's ``session/request_permission``: may it run this tool call?"""

    call: AgentToolCall
    options: tuple[PermissionOption, ...]

    def option(self, allow: bool) -> str | None:
        """The option that says allow (once first) or reject (once first); None if none does."""
        wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
        for kind in wanted:
            for option in self.options:
                if option.kind == kind:
                    return option.option_id
        return None


# What the client answers: an option id, or None for "cancelled" (the prompt turn is ending).
PermissionHandler = Callable[[PermissionAsk], Awaitable[str | None]]
UpdateHandler = Callable[[AgentUpdate], None]


def _text_of(content: Sequence[Any] | None) -> str:
    parts: list[str] = []
    for item in content or ():
        block = getattr(item, "content", None)
        text = getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def _diffs_of(content: Sequence[Any] | None) -> tuple[FileDiff, ...]:
    return tuple(
        FileDiff(item.path, item.old_text, item.new_text)
        for item in content or ()
        if getattr(item, "type", None) == "diff"
    )


def _tool_call(update: Any, started: bool) -> AgentToolCall:
    return AgentToolCall(
        call_id=update.tool_call_id,
        started=started,
        title=update.title,
        kind=update.kind,
        status=update.status,
        raw_input=update.raw_input,
        text=_text_of(update.content),
        diffs=_diffs_of(update.content),
    )


@dataclass(frozen=True)
class AcpLaunch:
    """How to start an agent: a command, its arguments and extra environment (added to
    fxdesk's, or, ``inherit_env`` off, the whole environment: a sandboxed start)."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    inherit_env: bool = True


# How a start is wrapped for a workspace (the sandbox, ``fxdesk.engine.acp_sandbox``):
# blocking, run in a worker thread.
LaunchWrapper = Callable[[AcpLaunch, Path], AcpLaunch]


@dataclass(frozen=True)
class TerminalState:
    """What ``terminal/output`` answers: the output so far (its end, within the agent's byte
    limit), whether it was cut, and how the command ended (None: it still runs)."""

    output: str
    truncated: bool = False
    exited: bool = False
    exit_code: int | None = None
    signal: str | None = None


class HostRefused(Exception):
    """The client will not do what the agent asked (denied, outside the workspace, no such
    terminal...): the agent gets an error with this text."""


class AcpHost(Protocol):
    """Where the agent's file and terminal requests are served: fxdesk's file tools, path
    guard, permissions and background runtime (``fxdesk.engine.acp_host``). Each may raise
    ``HostRefused``."""

    async def read_text_file(self, path: str, line: int | None, limit: int | None) -> str: ...

    async def write_text_file(self, path: str, content: str) -> None: ...

    async def create_terminal(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> str: ...

    async def terminal_output(self, terminal_id: str) -> TerminalState: ...

    async def wait_for_terminal_exit(self, terminal_id: str) -> TerminalState: ...

    async def kill_terminal(self, terminal_id: str) -> None: ...

    async def release_terminal(self, terminal_id: str) -> None: ...


def _drop_update(update: AgentUpdate) -> None:
    """Between turns, and while ``session/load`` replays the history: nothing is recorded."""


async def _refuse_permission(ask: PermissionAsk) -> str | None:
    return None  # "cancelled": no turn is running to ask the person


class _Client:
    """The client side the SDK calls. The running turn plugs in its handlers (``attach``);
    between turns updates are dropped and permission requests answered "cancelled"."""

    def __init__(self) -> None:
        self.on_update: UpdateHandler = _drop_update
        self.on_permission: PermissionHandler = _refuse_permission
        self.replaying = False  # session/load: the agent replays its history as updates
        self.host: AcpHost | None = None  # files and terminals, while a turn runs

    def _host(self, method: str) -> AcpHost:
        import acp

        if self.host is None:  # between turns nobody can check or record the request
            raise acp.RequestError.invalid_request({"reason": f"{method}: no turn is running"})
        return self.host

    async def _serve(self, method: str, work: Callable[[AcpHost], Awaitable[T]]) -> T:
        import acp

        try:
            return await work(self._host(method))
        except HostRefused as exc:
            raise acp.RequestError(-32000, str(exc), {"method": method}) from None

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        from acp import schema

        text = await self._serve("fs/read_text_file", lambda h: h.read_text_file(path, line, limit))
        return schema.ReadTextFileResponse(content=text)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        from acp import schema

        await self._serve("fs/write_text_file", lambda h: h.write_text_file(path, content))
        return schema.WriteTextFileResponse()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> Any:
        from acp import schema

        variables = {v.name: v.value for v in env or ()}
        terminal_id = await self._serve(
            "terminal/create",
            lambda h: h.create_terminal(command, args or [], variables, cwd, output_byte_limit),
        )
        return schema.CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        state = await self._serve("terminal/output", lambda h: h.terminal_output(terminal_id))
        status = (
            schema.TerminalExitStatus(exit_code=state.exit_code, signal=state.signal)
            if state.exited
            else None
        )
        return schema.TerminalOutputResponse(
            output=state.output, truncated=state.truncated, exit_status=status
        )

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        state = await self._serve(
            "terminal/wait_for_exit", lambda h: h.wait_for_terminal_exit(terminal_id)
        )
        return schema.WaitForTerminalExitResponse(exit_code=state.exit_code, signal=state.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        await self._serve("terminal/kill", lambda h: h.kill_terminal(terminal_id))
        return schema.KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        await self._serve("terminal/release", lambda h: h.release_terminal(terminal_id))
        return schema.ReleaseTerminalResponse()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        from acp import schema

        if self.replaying:
            return
        if isinstance(update, schema.AgentMessageChunk):
            text = getattr(update.content, "text", None)
            if isinstance(text, str) and text:
                self.on_update(AgentText(text))
        elif isinstance(update, schema.ToolCallStart):
            self.on_update(_tool_call(update, started=True))
        elif isinstance(update, schema.ToolCallProgress):
            self.on_update(_tool_call(update, started=False))
        elif isinstance(update, schema.AgentThoughtChunk):
            text = getattr(update.content, "text", None)
            if isinstance(text, str) and text:
                self.on_update(AgentThought(text))
        elif isinstance(update, schema.AgentPlanUpdate):
            steps = tuple(
                PlanStep(e.content, str(e.status), str(e.priority)) for e in update.entries
            )
            self.on_update(AgentPlan(steps))
        elif isinstance(update, schema.UsageUpdate):
            cost = update.cost
            self.on_update(
                AgentUsage(
                    update.used,
                    update.size,
                    cost.amount if cost is not None else None,
                    cost.currency if cost is not None else None,
                )
            )
        # Available commands, modes, config options, session info: not shown (docs/acp.md).

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> Any:
        from acp import schema

        ask = PermissionAsk(
            _tool_call(tool_call, started=False),
            tuple(PermissionOption(o.option_id, o.name, o.kind) for o in options),
        )
        chosen = await self.on_permission(ask)
        if chosen is None:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=chosen)
        )


@dataclass(frozen=True)
class PromptEnd:
    """The prompt response: ACP's stop reason and, when the agent reports it, (input, output)
    tokens of the turn."""

    stop_reason: str
    tokens: tuple[int, int] | None = None


_GONE = (ConnectionError, OSError, EOFError)  # the agent's pipe closed: it died
AUTH_REQUIRED = -32000  # ACP's "Authentication required" error code


@dataclass(frozen=True)
class AuthMethod:
    """A way to log in the agent advertised in ``initialize`` (``authMethods``). ``env``: the
    variables an ``env_var`` method reads (Codex: ``OPENAI_API_KEY``); empty for the others
    (a login of the agent's own, a terminal command)."""

    method_id: str
    name: str
    description: str = ""
    env: tuple[str, ...] = ()


def describe_error(exc: BaseException) -> str:
    """An agent's error as a person reads it: real agents put the reason in the error's data
    (Codex: ``Internal error`` with ``data.message``), which ``str`` leaves out."""
    text = str(exc) or type(exc).__name__
    data = getattr(exc, "data", None)
    detail = data.get("message") if isinstance(data, dict) else None
    if isinstance(detail, str) and detail and detail not in text:
        text = f"{text}: {detail}"
    return text


def _quota_tokens(meta: Any) -> tuple[int, int] | None:
    """Gemini CLI's tokens of a prompt: ``_meta.quota.token_count`` of its response (it sends
    no ``usage``)."""
    quota = meta.get("quota") if isinstance(meta, dict) else None
    count = quota.get("token_count") if isinstance(quota, dict) else None
    if not isinstance(count, dict):
        return None
    used = count.get("input_tokens"), count.get("output_tokens")
    if all(isinstance(n, int) and not isinstance(n, bool) for n in used):
        return cast(tuple[int, int], used)
    return None


def _auth_method(method: Any) -> AuthMethod:
    variables = tuple(v.name for v in getattr(method, "vars", None) or ())
    return AuthMethod(method.id, method.name, method.description or "", variables)


@dataclass
class AcpConnection:
    """One running agent process, initialized, and (once ``new_session`` or ``load_session``
    answered) its ACP session. Kept across the turns of one fxdesk session."""

    conn: Any  # acp.ClientSideConnection
    process: asyncio.subprocess.Process
    client: _Client
    launch: AcpLaunch
    session_id: str = ""
    agent_name: str = ""
    can_load: bool = False  # the agent advertised ``loadSession``
    auth_methods: tuple[AuthMethod, ...] = ()  # what ``initialize`` offered
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # the agent's (secrets)
    authenticated: bool = False

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    @property
    def label(self) -> str:
        return self.agent_name or self.launch.command

    async def new_session(self, workspace: Path) -> str:
        """``session/new`` in ``workspace``; its id.

        Raises:
            ProviderError: the agent refused, or died.
        """
        import acp

        for attempt in (1, 2):
            try:
                created = await self.conn.new_session(cwd=str(workspace), mcp_servers=[])
                break
            except acp.RequestError as exc:
                if exc.code == AUTH_REQUIRED and attempt == 1 and await self.authenticate():
                    continue  # logged in with the key in its environment: once more
                raise ProviderError(
                    "unavailable",
                    f"the agent {self.label!r} did not start a session: "
                    f"{describe_error(exc)}{self.login_hint(exc)}",
                ) from None
            except _GONE as exc:
                raise ProviderError(
                    "unavailable", f"the agent {self.label!r} did not start a session: {exc}"
                ) from None
        self.session_id = created.session_id
        return self.session_id

    def usable_auth(self) -> AuthMethod | None:
        """The ``env_var`` login whose variables are all set in the agent's environment."""
        for method in self.auth_methods:
            if method.env and all(self.env.get(name) for name in method.env):
                return method
        return None

    async def authenticate(self) -> bool:
        """``authenticate`` with the first ``env_var`` method whose variables the agent got
        (Codex asks for it before ``session/new``, even with ``OPENAI_API_KEY`` set); False
        when there is none, or the agent refused it."""
        import acp

        method = None if self.authenticated else self.usable_auth()
        if method is None:
            return False
        try:
            await self.conn.authenticate(method_id=method.method_id)
        except acp.RequestError as exc:
            log.info("ACP agent %s refused login %s: %s", self.label, method.method_id, exc)
            return False
        self.authenticated = True
        log.info("ACP agent %s: logged in with %s", self.label, method.method_id)
        return True

    def login_hint(self, exc: Any) -> str:
        """What the person can do when the agent wants a login fxdesk cannot give it."""
        if getattr(exc, "code", None) != AUTH_REQUIRED:
            return ""
        ways = [
            f"{m.name} (set {', '.join(m.env)} in the profile's environment)"
            if m.env
            else f"{m.name}{f': {m.description}' if m.description else ''}"
            for m in self.auth_methods
        ]
        if not ways:
            return " (log the agent in by itself first)"
        return " (it needs a login; it offers: " + "; ".join(ways) + ")"

    async def load_session(self, workspace: Path, session_id: str) -> bool:
        """``session/load``: the agent takes up ``session_id`` again. The history it replays
        is not recorded (fxdesk has its own). False when the agent refused.

        Raises:
            ProviderError: the agent died.
        """
        import acp

        self.client.replaying = True
        try:
            try:
                await self.conn.load_session(
                    cwd=str(workspace), session_id=session_id, mcp_servers=[]
                )
            except acp.RequestError as exc:
                if exc.code != AUTH_REQUIRED or not await self.authenticate():
                    raise
                await self.conn.load_session(
                    cwd=str(workspace), session_id=session_id, mcp_servers=[]
                )
        except acp.RequestError as exc:
            log.info("ACP agent %s could not load session %s: %s", self.label, session_id, exc)
            return False
        except _GONE as exc:
            raise ProviderError(
                "unavailable", f"the agent {self.label!r} died loading its session: {exc}"
            ) from None
        finally:
            self.client.replaying = False
        self.session_id = session_id
        return True

    def attach(
        self,
        on_update: UpdateHandler,
        on_permission: PermissionHandler,
        host: AcpHost | None = None,
    ) -> None:
        """Route updates, permission requests and file and terminal requests to the running
        turn."""
        self.client.on_update = on_update
        self.client.on_permission = on_permission
        self.client.host = host

    def detach(self) -> None:
        self.client.on_update = _drop_update
        self.client.on_permission = _refuse_permission
        self.client.host = None

    async def prompt(self, *texts: str) -> PromptEnd:
        """Send one prompt (one text block each); how the agent ended the turn."""
        import acp

        response = await self.conn.prompt(
            session_id=self.session_id, prompt=[acp.text_block(t) for t in texts]
        )
        used = response.usage
        tokens = (used.input_tokens, used.output_tokens) if used is not None else None
        if tokens is None:
            tokens = _quota_tokens(response.field_meta)
        return PromptEnd(str(response.stop_reason), tokens)

    async def cancel(self) -> None:
        """``session/cancel``: the agent ends the prompt with stop reason ``cancelled``."""
        with contextlib.suppress(Exception):  # the agent may be gone already
            await self.conn.cancel(session_id=self.session_id)

    async def stop(self) -> None:
        """Close the connection and stop the process (its whole group)."""
        with contextlib.suppress(Exception):
            await self.conn.close()
        await stop_process(self.process)


class AcpAgentProvider(Provider):
    """An ACP agent as a profile's provider. ``stream`` is refused: the engine starts the agent
    (``start``) and runs it for whole turns (``fxdesk.engine.turn_acp``)."""

    name = "acp"

    def __init__(
        self,
        launch: AcpLaunch,
        *,
        log_dir: Path | None = None,
        wrap: LaunchWrapper | None = None,
    ) -> None:
        self.launch = launch
        self.log_dir = log_dir
        self.wrap = wrap  # the sandbox around it (None: it runs as it is)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise ProviderError("unavailable", "an ACP agent runs its own loop; it takes whole turns")

    async def start(self, workspace: Path) -> AcpConnection:
        """Start the agent in ``workspace`` and initialize it (no session yet); the caller
        ``stop``s it.

        Raises:
            ProviderError: the command cannot start, or the agent fails to initialize.
        """
        import acp
        from acp import schema

        started = self.launch
        if self.wrap is not None:
            started = await asyncio.to_thread(self.wrap, self.launch, workspace)
        env = dict(os.environ) if started.inherit_env else {}
        env.update(started.env)
        stderr_path = (self.log_dir or workspace) / "acp-agent.stderr.log"
        try:
            stderr = stderr_path.open("ab") if self.log_dir else asyncio.subprocess.DEVNULL
            process = await asyncio.create_subprocess_exec(
                started.command,
                *started.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                cwd=str(workspace),
                env=env,
                start_new_session=True,
                limit=50 * 1024 * 1024,  # the SDK's default for images and large diffs
            )
        except OSError as exc:
            raise ProviderError(
                "unavailable",
                f"the agent command {self.launch.command!r} could not start "
                f"({exc.strerror or exc})",
            ) from None
        finally:
            if self.log_dir and not isinstance(stderr, int):
                stderr.close()  # the child holds its own copy
        assert process.stdin is not None and process.stdout is not None
        client = _Client()
        conn = acp.connect_to_agent(cast(Any, client), process.stdin, process.stdout)
        connection = AcpConnection(conn, process, client, self.launch, env=env)
        try:
            init = await conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=schema.ClientCapabilities(
                    # Served through fxdesk's file tools and background runtime (AcpHost).
                    fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=True,
                ),
                client_info=schema.Implementation(name="fxdesk", version="0"),
            )
        except BaseException as exc:
            await connection.stop()
            if isinstance(exc, (acp.RequestError, *_GONE)):
                raise ProviderError(
                    "unavailable", f"the agent {self.launch.command!r} did not initialize: {exc}"
                ) from None
            raise
        info = init.agent_info
        connection.agent_name = info.name if info is not None else ""
        caps = init.agent_capabilities
        connection.can_load = bool(caps is not None and caps.load_session)
        connection.auth_methods = tuple(_auth_method(m) for m in init.auth_methods or ())
        return connection


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """Close its stdin, SIGTERM its group, wait, then SIGKILL the group."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    if process.returncode is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
            return
        except TimeoutError:
            log.warning("ACP agent %s did not stop on %s", process.pid, sig.name)
