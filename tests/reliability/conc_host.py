"""One of several fxdesk processes on one data folder: the window's ``App``, headless, driven
line by line on stdin by ``test_concurrency.py``.

``python -m tests.reliability.conc_host DATA WORKSPACE CALLS [CLOCK]``

It runs handed-off work as the window does (``run_handed_off``). Commands, one a line; each
answers with one line (``ERROR <command>: <why>`` when it raised):

- ``create NAME TEXT`` → ``SESSION NAME <id>`` (a yolo session whose first message is TEXT;
  it starts at once);
- ``send SID TEXT`` → ``QUEUED SID <item>`` (queued and started here);
- ``join SID`` → ``RESULT SID <result> <holder pid or ->`` once this process's slot ends;
- ``cancel SID`` → ``CANCELLED SID <count>``;
- ``quit`` → ``STOPPED`` after an orderly stop.

Models are scripted by the message itself: ``LABEL steps=N sleep=S gate=F`` makes N model
steps that each run ``echo LABEL-k >> tags.txt; sleep S`` (then wait for the file F in the
workspace, with ``gate``) and then a last one that answers. A step is
chosen by the number of tool results after the message, so a resumed turn asks for the next
step. Every model call is appended to CALLS as ``{"pid", "label", "step"}``: the same label and
step twice is one turn asked twice, and a tag twice in ``tags.txt`` a side effect done twice.

With CLOCK, the engine's clock is the system's plus the milliseconds written in that file,
read at every use: the test moves one process's time by hours while it runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode, Session
from fxdesk.engine.clock import Clock
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.logs import setup_logging
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider

log = logging.getLogger("tests.reliability.conc_host")
TAGS = "tags.txt"


class OffsetClock(Clock):
    """The system clock plus the offset (ms) a test writes into ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def now_ms(self) -> int:
        try:
            offset = int(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            offset = 0
        return time.time_ns() // 1_000_000 + offset


def command_of(text: str, step: int) -> str | None:
    """The command of model step ``step`` for the message ``LABEL steps=N sleep=S gate=F``
    (None: the step that answers)."""
    words = text.split()
    options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    if step >= int(options.get("steps", 1)):
        return None
    command = f"echo {words[0]}-{step} >> {TAGS}; sleep {float(options.get('sleep', 0))}"
    if "gate" in options:  # held until the test creates the file in the workspace
        command += f"; until [ -e {options['gate']} ]; do sleep 0.05; done"
    return command


class ByMessage(Provider):
    """Plays the step of the newest user message numbered by the tool results after it."""

    name = "conc-script"

    def __init__(self, calls: Path) -> None:
        self.calls = calls

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
        text = request.messages[last_user].content
        label = text.split()[0] if text.split() else "?"
        done = sum(1 for m in request.messages[last_user:] if m.role == "tool")
        line = json.dumps({"pid": os.getpid(), "label": label, "step": done})
        await asyncio.to_thread(_append, self.calls, line)
        command = command_of(text, done)
        if command is not None:
            reply = Reply("", (ScriptedCall("run_command", {"command": command}),))
        else:
            reply = Reply(f"done {label}")
        async for event in ScriptedProvider([reply]).stream(request):
            yield event


class Resolver(ProviderResolver):
    def __init__(self, calls: Path) -> None:
        self.calls = calls

    async def resolve(self, session: Session) -> Resolved:
        return Resolved(ByMessage(self.calls), "scripted")


def _append(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def say(line: str) -> None:
    print(line, flush=True)


async def handle(app: App, workspace: str, words: list[str]) -> bool:
    """Run one command; False once told to quit."""
    engine = app.engine
    command = words[0]
    if command == "create":
        session = await engine.create_session(
            workspace,
            name=words[1],
            permission_mode=PermissionMode.YOLO,
            first_message=" ".join(words[2:]),
        )
        say(f"SESSION {words[1]} {session.id}")
    elif command == "send":
        item = await engine.send(words[1], " ".join(words[2:]))
        say(f"QUEUED {words[1]} {item.id}")
    elif command == "join":
        result = await engine.join(words[1])
        holder = engine.busy_elsewhere().get(words[1])
        say(f"RESULT {words[1]} {result.value} {holder or '-'}")
    elif command == "cancel":
        count = await engine.cancel(words[1])
        say(f"CANCELLED {words[1]} {count}")
    elif command == "quit":
        return False
    else:
        say(f"ERROR {command}: unknown command")
    return True


async def main(data: str, workspace: str, calls: str, clock: str = "") -> None:
    paths = DataPaths(Path(data), "--data-dir")
    paths.ensure()
    setup_logging(paths.log_file, verbose=False)
    log.info("concurrency host: pid %d", os.getpid())
    app = App(
        paths,
        providers=Resolver(Path(calls)),
        clock=OffsetClock(Path(clock)) if clock else None,
    )
    lines: asyncio.Queue[str] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def read() -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, "quit\n")

    await app.start()
    say(f"STARTED {os.getpid()}")
    threading.Thread(target=read, daemon=True).start()
    running: set[asyncio.Task[bool]] = set()
    try:
        while True:
            words = (await lines.get()).split()
            if not words:
                continue
            if words[0] == "quit":
                break
            # Each command on its own task: a join waits while the next line is served.
            task = asyncio.create_task(_guarded(app, workspace, words))
            running.add(task)
            task.add_done_callback(running.discard)
    finally:
        for task in running:
            task.cancel()
        await app.stop()
    say("STOPPED")


async def _guarded(app: App, workspace: str, words: list[str]) -> bool:
    try:
        return await handle(app, workspace, words)
    except Exception as exc:  # the test reads the refusal
        log.info("command %s refused: %r", words, exc)
        say(f"ERROR {words[0]}: {type(exc).__name__}: {exc}")
        return True


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
