"""A child process the crash harness SIGKILLs: the window's App, headless, on one data folder.

``python -m tests.reliability.crash_host PHASE DATA WORKSPACE MARKER``

- ``run``: on a fresh folder, start the scenario (a root session that runs commands, writes a
  file, starts a durable server, delegates a foreground and a background task, gets a steer and
  a queued message; a second session whose command waits for an approval nobody gives); on a
  folder that has it, resume every session with interrupted work. Then wait until nothing runs
  and nothing is owed, print ``DONE`` and quit in order.
- ``recover``: start (start-up recovery runs), look for a moment, quit in order. It must make no
  model call and run no tool.

Every commit the process was told is done is printed as ``ACK <table> <id>`` right after the
call that made it returns, so the harness can check it survived the kill. Every model call is
appended to ``<DATA>/../calls.jsonl`` with the phase, so the harness can see recovery made none.

Every tool call the scripted models make leaves a unique tag in ``WORKSPACE/tags.txt``: a tag
seen twice is a side effect done twice. A model's next step is chosen by how many tool results
its conversation has, not by how often it was called, so a resumed turn asks for the next step
(a restart that asks the model again is not, by itself, a repeated side effect).

``FXDESK_CRASH_AT_COMMIT=N`` kills the process itself in the middle of its Nth commit (the
transaction open, nothing committed yet), so kills land inside commits, not only between them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode, Session
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.logs import setup_logging
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider
from fxdesk.store.faults import Fault, FaultInjector

log = logging.getLogger("tests.reliability.crash_host")

PHASE_ENV = "FXDESK_CRASH_PHASE"
KILL_AT_COMMIT_ENV = "FXDESK_CRASH_AT_COMMIT"
ROOT_NAME = "crash-root"
ASKING_NAME = "crash-asks"  # a session in ask mode: its command waits for an approval
TAGS = "tags.txt"
# A server sleeps with the marker in its command line, so the harness finds (and ends) it.
SERVER = "python3 -c 'import sys, time; print(\"up\", flush=True); time.sleep(900)' {marker}"


def tag_command(tag: str) -> str:
    return f"echo {tag} >> {TAGS}"


def run(command: str) -> ScriptedCall:
    return ScriptedCall("run_command", {"command": command})


def root_steps(marker: str) -> list[Reply]:
    return [
        Reply("Looking around.", (run(tag_command("root-0")),), chunk=5),
        Reply("", (ScriptedCall("write_file", {"path": "notes.md", "content": "# notes\n"}),)),
        Reply(
            "",
            (
                ScriptedCall(
                    "start_background",
                    {"command": f"{tag_command('server-2')}; exec {SERVER.format(marker=marker)}"},
                ),
            ),
        ),
        Reply(
            "",
            (
                ScriptedCall(
                    "delegate",
                    {"requests": [{"agent": "general", "task": "fg task"}], "mode": "foreground"},
                ),
            ),
        ),
        Reply(
            "",
            (
                ScriptedCall(
                    "delegate",
                    {"requests": [{"agent": "general", "task": "bg task"}], "mode": "background"},
                ),
            ),
        ),
        Reply("", (run(tag_command("root-5")),)),
        Reply("All done.", chunk=3),
    ]


def child_steps(name: str) -> list[Reply]:
    return [Reply("", (run(tag_command(f"{name}-0")),)), Reply(f"{name} finished.")]


class ByProgress(Provider):
    """Plays the step numbered by the count of tool results in the conversation."""

    name = "crash-script"

    def __init__(self, steps: list[Reply], session: str, calls: Path) -> None:
        self.steps = steps
        self.session = session
        self.calls = calls

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        done = sum(1 for m in request.messages if m.role == "tool")
        line = json.dumps(
            {"phase": os.environ.get(PHASE_ENV, "?"), "session": self.session, "step": done}
        )
        await asyncio.to_thread(_append, self.calls, line)
        step = self.steps[min(done, len(self.steps) - 1)]
        async for event in ScriptedProvider([step]).stream(request):
            yield event


class Resolver(ProviderResolver):
    def __init__(self, marker: str, calls: Path) -> None:
        self.marker = marker
        self.calls = calls

    async def resolve(self, session: Session) -> Resolved:
        if session.name == ASKING_NAME:
            steps = [Reply("", (run(tag_command("unapproved")),)), Reply("Asked.")]
            return Resolved(ByProgress(steps, "asks", self.calls), "scripted")
        for name in ("fg", "bg"):
            if f"{name} task" in session.name:
                return Resolved(ByProgress(child_steps(name), name, self.calls), "scripted")
        return Resolved(ByProgress(root_steps(self.marker), "root", self.calls), "scripted")


class KillAtCommit(FaultInjector):
    """SIGKILLs this process inside its Nth commit: the transaction is open, not committed."""

    def __init__(self, nth: int) -> None:
        super().__init__()
        self.nth = nth

    def on_commit(self, label: str) -> Fault | None:
        chosen = super().on_commit(label)
        if self.commits_seen == self.nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return chosen


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def ack(table: str, ident: str) -> None:
    print(f"ACK {table} {ident}", flush=True)


async def busy(app: App) -> str:
    """What still runs or is owed ("" when nothing: no session runs, nothing is queued to run,
    no run is active, no inbox event waits)."""
    engine = app.engine
    for session in await all_sessions(app):
        items = await engine.items(session.id)
        # A turn that waits for an approval nobody will give is as far as it goes.
        asking = any(i.status.value == "awaiting_approval" for i in items)
        if engine.is_running(session.id) and not asking:
            return f"{session.name} runs"
        for item in items:
            if item.status.value in ("pending", "running"):
                return f"{session.name}: item {item.id} {item.kind.value} is {item.status.value}"
        if session.parent_id is None:
            for agent_run in await engine.runs(session.id):
                if not agent_run.status.terminal:
                    return f"run {agent_run.id} is {agent_run.status.value}"
            view = await engine.inbox(session.id)
            # An interrupted run's completion waits for the person's next message, by design.
            waiting = [
                e for e in view.events if e.requires_continuation and e.status.value == "pending"
            ]
            if waiting:
                return f"{session.name}: {len(waiting)} inbox events wait to continue"
    return ""


async def all_sessions(app: App) -> list[Session]:
    return list((await app.engine.catalog()).sessions)


async def scenario(app: App, workspace: str) -> None:
    engine = app.engine
    sessions = await all_sessions(app)
    if not sessions:
        session = await engine.create_session(
            workspace,
            name=ROOT_NAME,
            permission_mode=PermissionMode.YOLO,
            first_message="Set the project up.",
        )
        ack("session", session.id)
        for item in await engine.items(session.id):
            ack("work_item", item.id)
        asking = await engine.create_session(
            workspace,
            name=ASKING_NAME,
            permission_mode=PermissionMode.ASK,
            first_message="Run something that needs my approval.",
        )
        ack("session", asking.id)
        await asyncio.sleep(0.05)
        steered = await engine.steer(session.id, "Also keep notes short.")
        ack("work_item", steered.id)
        queued = await engine.send(session.id, "Then tell me what you did.")
        ack("work_item", queued.id)
    else:
        # After a kill: the person resumes every session that has interrupted work. Children
        # first, so a parent's resumed turn finds its sub-agents' results.
        for session in sorted(sessions, key=lambda s: s.parent_id is None):
            items = await engine.items(session.id)
            waiting = session.parent_id is None and any(
                e.requires_continuation and e.status.value == "pending"
                for e in (await engine.inbox(session.id)).events
            )
            if waiting or any(i.status.value in ("interrupted", "pending") for i in items):
                engine.resume(session.id)
        inbox_roots = [s for s in sessions if s.parent_id is None]
        for root in inbox_roots:
            if (await engine.inbox(root.id)).counters.pending and not engine.is_running(root.id):
                item = await engine.send(root.id, "What came back?")
                ack("work_item", item.id)
    give_up = asyncio.get_running_loop().time() + 60
    while reason := await busy(app):
        if asyncio.get_running_loop().time() > give_up:
            print(f"STUCK {reason}", flush=True)
            return
        await asyncio.sleep(0.05)
    print("DONE", flush=True)


async def main(phase: str, data: str, workspace: str, marker: str) -> None:
    os.environ[PHASE_ENV] = phase
    kill_at = int(os.environ.get(KILL_AT_COMMIT_ENV, "0") or 0)
    calls = Path(data).parent / "calls.jsonl"
    paths = DataPaths(Path(data), "--data-dir")
    paths.ensure()
    setup_logging(paths.log_file, verbose=False)  # what each phase did, for a failure's reader
    log.info("crash host: %s phase, pid %d", phase, os.getpid())
    app = App(
        paths,
        providers=Resolver(marker, calls),
        faults=KillAtCommit(kill_at),  # 0: never kills, only counts
    )
    print("STARTING", flush=True)
    await app.start()
    print("STARTED", flush=True)
    try:
        if phase == "run":
            await scenario(app, workspace)
        else:
            await asyncio.sleep(0.3)
            print("RECOVERED", flush=True)
    finally:
        await app.stop()
    print(f"COMMITS {app.faults.commits_seen if app.faults else 0}", flush=True)
    print("STOPPED", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
