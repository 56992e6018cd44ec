"""A tiny ACP agent for tests, on the SDK's agent side, run as a real child process.

What it does with a prompt depends on the prompt's first word:

- ``echo <text>``: streams "you said: " and <text> as two message chunks, ends the turn
  reporting 12 input and 5 output tokens.
- ``write <name>``: starts an ``edit`` tool call, asks permission; allowed, it writes <name>
  in its working directory (the session's workspace) and completes the call; rejected, it fails
  the call. Then it says what happened.
- ``crash``: says so, then exits without answering the prompt.
- ``wait``: starts an ``execute`` tool call and waits until the client cancels, then ends the
  turn with stop reason ``cancelled``.
- ``whoami``: says its session id, process id, how many prompts the session has had (across
  loads) and whether this process loaded the session.
- ``hang``: in a session this process created, starts an ``execute`` tool call and waits until
  cancelled (fxdesk is killed meanwhile); in a session it loaded, says "picked up after reload"
  and how many blocks the prompt had.

- ``fswrite <name>``: asks permission for an ``edit`` call (as ``write``); allowed, writes
  <name> through the client (``fs/write_text_file``), reads it back (``fs/read_text_file``),
  completes the call with the write as a diff and says what it read.
- ``fsput <name>``: writes <name> through the client without asking permission first (the
  client's own checks decide), then says "wrote" or what the client refused.
- ``term <shell line>``: runs it in a client terminal (``terminal/create`` of ``bash -c``),
  waits for its exit, says the exit code and the output, releases it.
- ``serve``: opens a client terminal running ``sleep 300`` and ends its turn leaving it running;
  says its terminal id.
- ``stopterm <id>``: kills that terminal, says how it ended, releases it.
- ``rawwrite <path>`` / ``rawread <path>``: writes (or reads) <path> itself, not through the
  client, and says "wrote <path>" ("read <path>: <content>") or "cannot write <path>: <error>"
  (the sandbox test: what the agent's own process may touch).
- ``think``: streams two thought chunks, a plan, then the same plan with its first step done,
  edits ``a.txt`` in a tool call whose content is the edit as a diff, reports usage (the
  session's cumulative cost grows by $0.25 each ``think``), says "thought it through".

The command is the last text block of the prompt (a resumed turn puts a note before it).
Sessions are kept as JSON files in ``$ACP_TEST_STATE`` (else a temporary folder), so
``session/load`` works across processes; a load replays what the agent said before as message
chunks, as real agents do. With ``ACP_TEST_NO_LOAD=1`` the agent does not offer
``loadSession``.

- ``ccwrite <name>``: writes <name> with the message shapes claude-code-acp 0.16.2 sends: a
  ``tool_call`` with an empty input (from the stream's first event), the same ``tool_call`` again
  with its input and title, a permission request whose tool call has no ``kind``
  (options ``allow_always``/``allow``/``reject``), then ``completed`` with the diff.
- ``quota``: says "counted" and ends the turn reporting its tokens as gemini-cli 0.61 does, in
  the response's ``_meta.quota.token_count`` (7 input, 3 output), not in ``usage``.
- ``unauth``: fails the prompt -32000 "Authentication required", as claude-code-acp 0.16.2
  does when Claude Code says "Please run /login".
- ``fail <text>``: fails the prompt as codex-acp 0.16 does when the model API is unreachable:
  error -32603 "Internal error" with the reason in ``data.message``.

With ``ACP_TEST_AUTH=1`` it wants a login as codex-acp 0.16 does: ``initialize`` offers a login
of its own and an ``env_var`` method reading ``TEST_AGENT_KEY``; ``session/new`` and
``session/load`` answer -32000 "Authentication required" until the client called
``authenticate`` with that method (refused when the variable is not set).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import acp
from acp import schema

STATE = Path(os.environ.get("ACP_TEST_STATE") or tempfile.gettempdir()) / "fxdesk-acp-test"


def _state(session_id: str) -> Path:
    return STATE / f"{session_id}.json"


def _load_state(session_id: str) -> dict[str, Any]:
    path = _state(session_id)
    return json.loads(path.read_text()) if path.exists() else {"prompts": 0, "said": []}


class TestAgent:
    def __init__(self) -> None:
        self.conn: Any = None
        self.cancelled: dict[str, asyncio.Event] = {}
        self.loaded: set[str] = set()
        self.logged_in = False

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> schema.InitializeResponse:
        load = os.environ.get("ACP_TEST_NO_LOAD") != "1"
        methods: list[Any] = []
        if os.environ.get("ACP_TEST_AUTH") == "1":  # the shape codex-acp 0.16.0 sends
            methods = [
                schema.AuthMethodAgent(id="own-login", name="Login with the agent"),
                schema.EnvVarAuthMethod(
                    type="env_var",
                    id="test-key",
                    name="Use TEST_AGENT_KEY",
                    vars=[schema.AuthEnvVar(name="TEST_AGENT_KEY")],
                ),
            ]
        return schema.InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_info=schema.Implementation(name="fxdesk-test-agent", version="1"),
            agent_capabilities=schema.AgentCapabilities(load_session=load),
            auth_methods=methods,
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> schema.AuthenticateResponse:
        if method_id != "test-key" or not os.environ.get("TEST_AGENT_KEY"):
            raise acp.RequestError.invalid_params({"methodId": method_id})
        self.logged_in = True
        return schema.AuthenticateResponse()

    def _check_login(self) -> None:
        if os.environ.get("ACP_TEST_AUTH") == "1" and not self.logged_in:
            raise acp.RequestError.auth_required()

    async def new_session(self, cwd: str, **kwargs: Any) -> schema.NewSessionResponse:
        self._check_login()
        os.chdir(cwd)
        session_id = f"test-{uuid.uuid4().hex[:12]}"
        STATE.mkdir(parents=True, exist_ok=True)
        _state(session_id).write_text(json.dumps({"prompts": 0, "said": []}))
        return schema.NewSessionResponse(session_id=session_id)

    async def load_session(
        self, cwd: str, session_id: str, **kwargs: Any
    ) -> schema.LoadSessionResponse:
        self._check_login()
        if not _state(session_id).exists():
            raise acp.RequestError.invalid_params({"sessionId": session_id})
        os.chdir(cwd)
        for text in _load_state(session_id)["said"]:  # the history, replayed
            await self.conn.session_update(session_id, acp.update_agent_message_text(text))
        self.loaded.add(session_id)
        return schema.LoadSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def say(self, session_id: str, text: str) -> None:
        state = _load_state(session_id)
        state["said"].append(text)
        _state(session_id).write_text(json.dumps(state))
        await self.conn.session_update(session_id, acp.update_agent_message_text(text))

    async def prompt(
        self, prompt: list[Any], session_id: str, **kwargs: Any
    ) -> schema.PromptResponse:
        texts = [getattr(block, "text", "") for block in prompt]
        state = _load_state(session_id)
        state["prompts"] += 1
        _state(session_id).write_text(json.dumps(state))
        word, _, rest = texts[-1].partition(" ")
        if word == "whoami":
            await self.say(
                session_id,
                f"session {session_id} pid {os.getpid()} prompt {state['prompts']} "
                f"loaded {session_id in self.loaded}",
            )
        elif word == "hang":
            if session_id in self.loaded:
                await self.say(session_id, f"picked up after reload ({len(texts)} blocks)")
                return schema.PromptResponse(stop_reason="end_turn")
            await self.say(session_id, "working on it")
            await self.conn.session_update(
                session_id,
                acp.start_tool_call("t-hang", "Run a long job", kind="execute", status="pending"),
            )
            await self.cancelled.setdefault(session_id, asyncio.Event()).wait()
            return schema.PromptResponse(stop_reason="cancelled")
        elif word == "quota":
            await self.say(session_id, "counted")
            tokens = {"input_tokens": 7, "output_tokens": 3}
            quota = {"token_count": tokens, "model_usage": []}
            return schema.PromptResponse(stop_reason="end_turn", field_meta={"quota": quota})
        elif word == "unauth":
            raise acp.RequestError.auth_required()
        elif word == "fail":
            raise acp.RequestError(-32603, "Internal error", {"message": rest})
        elif word == "echo":
            await self.say(session_id, "you said: ")
            await self.say(session_id, rest)
            usage = schema.Usage(input_tokens=12, output_tokens=5, total_tokens=17)
            return schema.PromptResponse(stop_reason="end_turn", usage=usage)
        elif word == "write":
            await self.write(session_id, rest.strip())
        elif word == "ccwrite":
            await self.cc_write(session_id, rest.strip())
        elif word == "crash":
            await self.say(session_id, "about to crash")
            os._exit(3)
        elif word == "wait":
            await self.conn.session_update(
                session_id,
                acp.start_tool_call(
                    "t-wait", "Run sleep 1000", kind="execute", status="in_progress"
                ),
            )
            await self.cancelled.setdefault(session_id, asyncio.Event()).wait()
            return schema.PromptResponse(stop_reason="cancelled")
        elif word == "think":
            await self.think(session_id)
        elif word in ("rawwrite", "rawread"):
            target = rest.strip()
            try:
                if word == "rawwrite":
                    Path(target).write_text("written by the agent itself\n")
                    said = f"wrote {target}"
                else:
                    said = f"read {target}: {Path(target).read_text().strip()}"
            except OSError as exc:
                said = f"cannot {word[3:]} {target}: {exc.strerror}"
            await self.say(session_id, said)
        elif word == "fswrite":
            await self.fs_write(session_id, rest.strip(), ask=True)
        elif word == "fsput":
            await self.fs_write(session_id, rest.strip(), ask=False)
        elif word == "term":
            await self.term(session_id, rest)
        elif word == "serve":
            made = await self.conn.create_terminal(
                session_id=session_id, command="sleep", args=["300"]
            )
            await self.say(session_id, f"terminal {made.terminal_id}")
        elif word == "stopterm":
            terminal_id = rest.strip()
            await self.conn.kill_terminal(session_id=session_id, terminal_id=terminal_id)
            done = await self.conn.wait_for_terminal_exit(
                session_id=session_id, terminal_id=terminal_id
            )
            await self.conn.release_terminal(session_id=session_id, terminal_id=terminal_id)
            await self.say(session_id, f"stopped: code {done.exit_code} signal {done.signal}")
        return schema.PromptResponse(stop_reason="end_turn")

    async def think(self, session_id: str) -> None:
        send = self.conn.session_update
        await send(session_id, acp.update_agent_thought_text("Let me see. "))
        await send(session_id, acp.update_agent_thought_text("a.txt needs a second line."))
        steps = ["Read a.txt", "Add the line"]
        await send(session_id, acp.update_plan([acp.plan_entry(s) for s in steps]))
        done = [acp.plan_entry(steps[0], status="completed"), acp.plan_entry(steps[1])]
        await send(session_id, acp.update_plan(done))
        diff = acp.tool_diff_content("a.txt", "one\ntwo\n", "one\n")
        await send(session_id, acp.start_tool_call("t-edit", "Edit a.txt", kind="edit"))
        await send(session_id, acp.update_tool_call("t-edit", status="completed", content=[diff]))
        state = _load_state(session_id)
        state["thinks"] = state.get("thinks", 0) + 1
        _state(session_id).write_text(json.dumps(state))
        cost = schema.Cost(amount=0.25 * state["thinks"], currency="USD")
        await send(
            session_id,
            schema.UsageUpdate(session_update="usage_update", used=1200, size=200000, cost=cost),
        )
        await self.say(session_id, "thought it through")

    async def ask(self, session_id: str, call_id: str, title: str) -> bool:
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=schema.ToolCallUpdate(tool_call_id=call_id, title=title, kind="edit"),
            options=[
                schema.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                schema.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        return isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "yes"

    async def fs_write(self, session_id: str, name: str, *, ask: bool) -> None:
        path = str(Path(os.getcwd()) / name)  # the session's workspace (new_session chdir)
        content = f"{name} written through the client\n"
        title = f"Edit {name}"
        await self.conn.session_update(
            session_id,
            acp.start_tool_call(
                "t-fs", title, kind="edit", status="pending", raw_input={"path": name}
            ),
        )
        if ask and not await self.ask(session_id, "t-fs", title):
            await self.conn.session_update(
                session_id, acp.update_tool_call("t-fs", status="failed")
            )
            await self.say(session_id, "Not allowed.")
            return
        try:
            await self.conn.write_text_file(session_id=session_id, path=path, content=content)
            read = await self.conn.read_text_file(session_id=session_id, path=path)
        except acp.RequestError as exc:
            await self.conn.session_update(
                session_id, acp.update_tool_call("t-fs", status="failed")
            )
            await self.say(session_id, f"fxdesk refused: {exc}")
            return
        diff = acp.tool_diff_content(path, content, None)
        await self.conn.session_update(
            session_id, acp.update_tool_call("t-fs", status="completed", content=[diff])
        )
        await self.say(session_id, f"read back: {read.content!r}")

    async def term(self, session_id: str, line: str) -> None:
        made = await self.conn.create_terminal(
            session_id=session_id, command="bash", args=["-c", line]
        )
        done = await self.conn.wait_for_terminal_exit(
            session_id=session_id, terminal_id=made.terminal_id
        )
        out = await self.conn.terminal_output(session_id=session_id, terminal_id=made.terminal_id)
        await self.conn.release_terminal(session_id=session_id, terminal_id=made.terminal_id)
        await self.say(session_id, f"exit {done.exit_code}: {out.output.strip()}")

    async def write(self, session_id: str, name: str) -> None:
        await self.say(session_id, f"I will write {name}.")
        call = acp.start_tool_call(
            "t-write", f"Write {name}", kind="edit", status="pending", raw_input={"path": name}
        )
        await self.conn.session_update(session_id, call)
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=schema.ToolCallUpdate(
                tool_call_id="t-write", title=f"Write {name}", kind="edit"
            ),
            options=[
                schema.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
                schema.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "yes":
            Path(name).write_text("written by the test agent\n")
            update = acp.update_tool_call(
                "t-write",
                status="completed",
                content=[acp.tool_content(acp.text_block(f"wrote {name}"))],
            )
            await self.conn.session_update(session_id, update)
            await self.say(session_id, "Done.")
        else:
            chosen = getattr(outcome, "option_id", outcome.outcome)
            await self.conn.session_update(
                session_id, acp.update_tool_call("t-write", status="failed")
            )
            await self.say(session_id, f"Not allowed ({chosen}).")

    async def cc_write(self, session_id: str, name: str) -> None:
        meta = {"claudeCode": {"toolName": "Write"}}
        first = acp.start_tool_call("toolu_1", "Write", kind="edit", status="pending", raw_input={})
        await self.conn.session_update(session_id, first.model_copy(update={"field_meta": meta}))
        path = str(Path(name).absolute())
        full = {"file_path": path, "content": "by claude\n"}
        again = acp.start_tool_call(
            "toolu_1", f"Write {path}", kind="edit", status="pending", raw_input=full
        )
        await self.conn.session_update(session_id, again)
        answer = await self.conn.request_permission(
            session_id=session_id,
            tool_call=schema.ToolCallUpdate(
                tool_call_id="toolu_1", title=f"Write {path}", raw_input=full
            ),
            options=[
                schema.PermissionOption(
                    option_id="allow_always", name="Always Allow", kind="allow_always"
                ),
                schema.PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                schema.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ],
        )
        outcome = answer.outcome
        if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id == "allow":
            Path(name).write_text("by claude\n")
            done = acp.update_tool_call(
                "toolu_1",
                status="completed",
                content=[acp.tool_diff_content(path, "by claude\n")],
            )
            await self.conn.session_update(session_id, done)
            await self.say(session_id, "Done.")
        else:
            chosen = getattr(outcome, "option_id", outcome.outcome)
            await self.conn.session_update(
                session_id, acp.update_tool_call("toolu_1", status="failed")
            )
            await self.say(session_id, f"Not allowed ({chosen}).")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(TestAgent()))
