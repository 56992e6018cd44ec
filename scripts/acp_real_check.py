"""Drive the real ACP adapters with fxdesk's client, offline (docs/acp.md, "Checked against the
real adapters").

Not a test: it needs the adapters installed from npm, which CI does not download. Install them
in a scratch folder first:

    mkdir -p /tmp/acp-real && cd /tmp/acp-real && npm init -y >/dev/null
    npm install @zed-industries/claude-code-acp @zed-industries/codex-acp @google/gemini-cli

then, from the repository (the main venv's Python; the model APIs need not be reachable):

    PYTHONPATH=. .venv/bin/python scripts/acp_real_check.py /tmp/acp-real [--agents codex] \\
        [--turn-timeout 300] [--out /tmp/acp-check] [--npx [--sandbox]]

``--npx`` starts the Claude Code and Codex adapters with their presets' own command lines
(``npx -y @zed-industries/...``: npx downloads them into the scratch ``HOME``'s ``~/.npm``; the
npm registry must be reachable), and ``--sandbox`` does so in fxdesk's sandbox with the preset's
``SandboxNeeds`` (``fxdesk/engine/acp_sandbox.py``; bubblewrap needed).

For each agent (claude-code, codex, gemini: the presets of ``fxdesk/domain/acp_presets.py``, with
the installed program in place of ``npx -y <package>``) it runs, with ``HOME`` in a scratch
folder (nothing of this machine's home is read or written) and fake API keys:

1. the protocol, through ``AcpAgentProvider``/``AcpConnection``: ``initialize`` (what it
   advertises), ``session/new`` (with fxdesk's login through an ``env_var`` method when the
   agent asks), a ``session/prompt`` cancelled after a few seconds with ``session/cancel``
   (does the agent end it ``cancelled``?);
2. a whole fxdesk turn (the engine of the tests, ``tests/engine/harness.py``, yolo mode): the
   prompt "say hi" and how the item ends (with no network: failed, and the reason fxdesk
   records), within ``--turn-timeout`` seconds.

Every JSON-RPC line both ways is logged to ``OUT/<agent>.wire.log`` (the script starts the agent
through itself as a pass-through, ``--tee``), the agent's stderr to ``OUT/<agent>/``. It prints
one JSON summary per agent: the advertised capabilities, which methods the agent called on the
client (``fs/*``, ``terminal/*``, ``session/request_permission``) and the update kinds it sent.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fxdesk.providers.acp import AcpLaunch as AcpLaunchT

# agent -> (its program in <install>/node_modules/.bin, its arguments)
AGENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "claude-code": ("claude-code-acp", ()),
    "codex": ("codex-acp", ()),
    "gemini": ("gemini", ("--acp",)),
}
FAKE_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-fake-offline-check",
    "OPENAI_API_KEY": "sk-fake-offline-check",
    "GEMINI_API_KEY": "fake-offline-check",
}
CANCEL_AFTER_S = 5.0
CANCEL_GRACE_S = 20.0
SELF = str(Path(__file__).resolve())  # the pass-through that logs the wire (--tee)


def tee(log_path: str, command: list[str]) -> int:
    """Run ``command`` passing stdin and stdout through, each line logged with its time."""
    log = open(log_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    t0 = time.monotonic()
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    to_child, from_child = child.stdin, child.stdout

    def up() -> None:
        for line in sys.stdin.buffer:
            log.write(f"{time.monotonic() - t0:8.2f} >> {line.decode(errors='replace').rstrip()}\n")
            to_child.write(line)
            to_child.flush()
        to_child.close()

    threading.Thread(target=up, daemon=True).start()
    for line in from_child:
        log.write(f"{time.monotonic() - t0:8.2f} << {line.decode(errors='replace').rstrip()}\n")
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return child.wait()


def wire(log_path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The logged messages: (direction, message), ``>>`` fxdesk to the agent."""
    found: list[tuple[str, dict[str, Any]]] = []
    for line in log_path.read_text().splitlines() if log_path.exists() else ():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in (">>", "<<"):
            with contextlib.suppress(ValueError):
                found.append((parts[1], json.loads(parts[2])))
    return found


def summary_of(messages: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    init = next(
        (m.get("result") for d, m in messages if d == "<<" and m.get("id") == 0 and "result" in m),
        None,
    )
    asked = sorted({m["method"] for d, m in messages if d == "<<" and "method" in m})
    kinds = sorted(
        {
            m["params"]["update"].get("sessionUpdate")
            for d, m in messages
            if d == "<<" and m.get("method") == "session/update"
        }
    )
    errors = [m["error"] for d, m in messages if d == "<<" and "error" in m]
    return {
        "initialize": init,
        "agent_called": asked,
        "update_kinds": kinds,
        "errors": errors,
    }


def launch_of(agent: str, install: Path, home: Path, log: Path, npx: bool) -> AcpLaunchT:
    """How the agent starts: the installed program, or (``npx``) its preset's command line;
    through this script's ``--tee`` either way."""
    from fxdesk.domain.acp_presets import PRESETS
    from fxdesk.providers.acp import AcpLaunch

    if npx:
        preset = PRESETS[agent]
        command = [preset.command, *preset.args]
    else:
        program, args = AGENTS[agent]
        command = [str(install / "node_modules" / ".bin" / program), *args]
    return AcpLaunch(
        sys.executable,
        (SELF, "--tee", str(log), "--", *command),
        environment(home, install),
        inherit_env=False,
    )


def sandbox_of(agent: str, home: Path, data: Path) -> Any:
    """fxdesk's sandbox for the agent's preset, with the scratch ``HOME``; the tee runs
    outside it (around bubblewrap), so the wire is still logged."""
    from fxdesk.domain.acp_presets import needs_of
    from fxdesk.engine.acp_sandbox import AgentSandbox
    from fxdesk.providers.acp import AcpLaunch

    sandbox = AgentSandbox(agent, needs_of(agent), data, home=home)

    def wrap(launch: AcpLaunchT, workspace: Path) -> AcpLaunchT:
        tee_args, inner = launch.args[:4], launch.args[4:]
        inside = sandbox(AcpLaunch(inner[0], tuple(inner[1:]), launch.env, False), workspace)
        return AcpLaunch(
            launch.command, (*tee_args, inside.command, *inside.args), inside.env, False
        )

    return wrap


def environment(home: Path, install: Path) -> dict[str, str]:
    bins = [str(install / "node_modules" / ".bin"), os.path.dirname(sys.executable)]
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([*bins, os.environ.get("PATH", "")]),
        "LANG": "C.UTF-8",
        **FAKE_KEYS,
    }


async def check_protocol(agent: str, install: Path, out: Path, opts: Any) -> dict[str, Any]:
    from fxdesk.providers.acp import AcpAgentProvider, ProviderError

    home, workspace = out / agent / "home", out / agent / "ws"
    for folder in (home, workspace):
        folder.mkdir(parents=True, exist_ok=True)
    launch = launch_of(agent, install, home, out / f"{agent}.wire.log", opts.npx)
    result: dict[str, Any] = {"agent": agent, "command": list(launch.args[4:])}
    wrap = sandbox_of(agent, home, out / agent / "data") if opts.sandbox else None
    result["sandbox"] = bool(wrap)
    provider = AcpAgentProvider(launch, log_dir=out / agent, wrap=wrap)
    started = time.monotonic()
    try:
        connection = await provider.start(workspace)
    except ProviderError as exc:
        result["start"] = f"failed: {exc}"
        return result
    result["start"] = f"initialized in {time.monotonic() - started:.1f} s"
    result["can_load"] = connection.can_load
    updates: list[str] = []
    connection.attach(lambda u: updates.append(type(u).__name__), _no_permission)
    try:
        try:
            session = await asyncio.wait_for(connection.new_session(workspace), 120)
            result["session_new"] = f"ok {session}" + (
                " (after authenticate)" if connection.authenticated else ""
            )
        except (ProviderError, TimeoutError) as exc:
            result["session_new"] = f"failed: {exc}"
            return result
        prompt = asyncio.ensure_future(connection.prompt("say hi"))
        done, _ = await asyncio.wait({prompt}, timeout=CANCEL_AFTER_S)
        if not done:
            await connection.cancel()
            done, _ = await asyncio.wait({prompt}, timeout=CANCEL_GRACE_S)
            result["cancel"] = "sent session/cancel"
        if not done:
            prompt.cancel()
            result["prompt"] = f"no answer {CANCEL_GRACE_S:.0f} s after session/cancel"
        elif prompt.exception() is not None:
            result["prompt"] = f"error: {prompt.exception()!r}"
        else:
            result["prompt"] = f"ended: {prompt.result().stop_reason}"
        result["updates_to_fxdesk"] = sorted(set(updates))
    finally:
        await connection.stop()
    return result


async def _no_permission(ask: Any) -> str | None:
    return None


async def check_turn(agent: str, install: Path, out: Path, opts: Any) -> dict[str, Any]:
    """One whole fxdesk turn: how the item ends and why."""
    from fxdesk.domain.model import PermissionMode
    from fxdesk.providers.acp import AcpAgentProvider
    from fxdesk.store import control, history
    from fxdesk.tools.base import ToolRegistry
    from fxdesk.tools.registry import all_tools
    from tests.engine.harness import Engine

    limit_s = opts.turn_timeout
    root = out / agent / "turn"
    home = out / agent / "home"
    root.mkdir(parents=True, exist_ok=True)
    launch = launch_of(agent, install, home, out / f"{agent}.turn.wire.log", opts.npx)
    wrap = sandbox_of(agent, home, out / agent / "data") if opts.sandbox else None
    provider = AcpAgentProvider(launch, log_dir=root, wrap=wrap)
    engine = await Engine.create(
        root, provider=provider, permissions=True, tools=ToolRegistry(all_tools())
    )
    result: dict[str, Any] = {}
    try:
        created = await engine.sessions.create_root(
            engine.workspace, name=agent, permission_mode=PermissionMode.YOLO, first_message="hi"
        )
        started = time.monotonic()
        engine.owner.start(created.id)
        try:
            ended = await asyncio.wait_for(engine.owner.join(created.id), limit_s)
            result["turn"] = f"{ended.value} after {time.monotonic() - started:.0f} s"
        except TimeoutError:
            result["turn"] = f"still running after {limit_s:.0f} s (the agent retries)"
            return result
        (item,) = await engine.items(created.id)
        result["reason"] = await engine.store.read(lambda: control.failure_reason(item.id))
        entries = await engine.store.read(lambda: history.page_history(created.id, 0, 1000))
        result["rows"] = [(e.kind.value, e.content[:160]) for e in entries]
    finally:
        await engine.close()
    return result


async def main(args: argparse.Namespace) -> None:
    out = Path(args.out)
    for agent in args.agents.split(","):
        program, _ = AGENTS[agent]
        if args.npx and agent == "gemini":
            print(json.dumps({"agent": agent, "skipped": "its preset is no npx command"}))
            continue
        if not args.npx and not (Path(args.install) / "node_modules" / ".bin" / program).exists():
            print(json.dumps({"agent": agent, "skipped": f"{program} not installed"}))
            continue
        result = await check_protocol(agent, Path(args.install), out, args)
        result.update(summary_of(wire(out / f"{agent}.wire.log")))
        if args.turn_timeout > 0:
            result["fxdesk_turn"] = await check_turn(agent, Path(args.install), out, args)
            turn_wire = summary_of(wire(out / f"{agent}.turn.wire.log"))
            result["fxdesk_turn"]["agent_called"] = turn_wire["agent_called"]
            result["fxdesk_turn"]["errors"] = turn_wire["errors"]
        print(json.dumps(result, indent=1, default=str), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--tee" and sys.argv[3] == "--":
        sys.exit(tee(sys.argv[2], sys.argv[4:]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("install", help="the folder npm installed the adapters in")
    parser.add_argument("--agents", default="claude-code,codex,gemini")
    parser.add_argument("--out", default="/tmp/acp-check")
    parser.add_argument(
        "--turn-timeout",
        type=float,
        default=300.0,
        help="how long the whole turn may take (0: skip it)",
    )
    parser.add_argument("--npx", action="store_true", help="the presets' npx command lines")
    parser.add_argument("--sandbox", action="store_true", help="in fxdesk's sandbox (--npx)")
    parsed = parser.parse_args()
    Path(parsed.out).mkdir(parents=True, exist_ok=True)
    asyncio.run(main(parsed))
