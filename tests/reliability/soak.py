"""The soak: many sessions with sub-agents and background tasks, for minutes or an hour.

``python -m tests.reliability.soak --minutes 60 --out soak.json [--data DIR]``

One process runs the App headless (as the window runs it) on a fresh data folder with 20 root
sessions in YOLO mode under scripted models. A driver sends, steers, queues and cancels at
random; every ``--restart-every`` seconds it stops the App in order and starts a new one *in the
same process* (so a leak that survives a restart shows, and a restart that loses work shows),
then resumes what was interrupted. The models run commands, write files, delegate to
sub-agents in the foreground and the background, start background tasks that end by
themselves, and stream answers slowly enough to be steered and cancelled.

Every ``--sample`` seconds it records the process's RSS, open file descriptors, threads, child
processes (and zombies among them), the database's size (file and WAL) and how much history
there is. At the end it waits until nothing runs, stops, checks ``PRAGMA integrity_check``,
fits slopes after the warm-up and counts the warnings and errors in the log by kind. The
report is JSON; ``tests/reliability/test_soak.py`` runs a short one in CI and checks what must
hold whatever the length, ``./scripts/torture`` a long one.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import random
import re
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from fxdesk.app import App
from fxdesk.domain.model import PermissionMode, Session
from fxdesk.engine.providers import ProviderResolver, Resolved
from fxdesk.logs import setup_logging
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest, Provider, StreamEvent
from fxdesk.providers.scripted import Reply, ScriptedCall, ScriptedProvider
from tests.reliability.crash_host import busy

log = logging.getLogger("tests.reliability.soak")

ROOTS = 20
ANSWER = (
    "Here is what I found and what I changed, in a few sentences, so the transcript has "
    "something of the size a real answer has. "
) * 6


def _run(command: str) -> ScriptedCall:
    return ScriptedCall("run_command", {"command": command})


@dataclass
class Tally:
    """What the scripted models were asked to do (the report's workload figures)."""

    model_calls: int = 0
    actions: Counter[str] = field(default_factory=Counter)


class SoakModel(Provider):
    """A root's model: after the person speaks, one tool step chosen at random, then an answer.

    The step is chosen from the number of tool results since the last message from the person,
    so a resumed turn asks for what comes next, as a real model would.
    """

    name = "soak-script"

    def __init__(self, rng: random.Random, tally: Tally, *, child: bool) -> None:
        self.rng = rng
        self.tally = tally
        self.child = child

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.tally.model_calls += 1
        since_person = 0
        for message in reversed(request.messages):
            if message.role == "user":
                break
            if message.role == "tool":
                since_person += 1
        if since_person:
            reply = Reply(ANSWER, chunk=24, delay_s=0.01)
        else:
            reply = Reply("Let me look.", (self._step(),), chunk=4)
        async for event in ScriptedProvider([reply]).stream(request):
            yield event

    def _step(self) -> ScriptedCall:
        tag = f"{time.monotonic_ns()}-{self.rng.randrange(1 << 30)}"
        if self.child:
            self.tally.actions["child command"] += 1
            return _run(f"echo child-{tag} >> soak-tags.txt")
        roll = self.rng.random()
        if roll < 0.45:
            self.tally.actions["command"] += 1
            return _run(f"echo {tag} >> soak-tags.txt && ls > /dev/null")
        if roll < 0.60:
            self.tally.actions["file write"] += 1
            return ScriptedCall(
                "write_file", {"path": f"notes/{tag[-3:]}.md", "content": f"# {tag}\n"}
            )
        if roll < 0.75:
            self.tally.actions["foreground sub-agent"] += 1
            return ScriptedCall(
                "delegate",
                {"requests": [{"agent": "general", "task": "fg check"}], "mode": "foreground"},
            )
        if roll < 0.85:
            self.tally.actions["background sub-agent"] += 1
            return ScriptedCall(
                "delegate",
                {"requests": [{"agent": "general", "task": "bg check"}], "mode": "background"},
            )
        self.tally.actions["background task"] += 1
        return ScriptedCall(
            "start_background", {"command": f"sleep 2; echo done-{tag} >> soak-bg.txt"}
        )


class SoakResolver(ProviderResolver):
    def __init__(self, rng: random.Random, tally: Tally) -> None:
        self.rng = rng
        self.tally = tally

    async def resolve(self, session: Session) -> Resolved:
        child = session.parent_id is not None
        return Resolved(SoakModel(self.rng, self.tally, child=child), "scripted")


@dataclass
class Sample:
    t_s: float
    rss_mib: float
    fds: int
    threads: int
    children: int
    zombies: int
    db_bytes: int
    wal_bytes: int
    history_rows: int
    work_items: int
    py_objects: int  # objects the garbage collector tracks: Python's own growth, apart from RSS


@dataclass
class Soak:
    data: Path
    workspace: Path
    minutes: float
    restart_every_s: float
    sample_s: float
    seed: int
    rng: random.Random = field(init=False)
    tally: Tally = field(default_factory=Tally)
    samples: list[Sample] = field(default_factory=list)
    driven: Counter[str] = field(default_factory=Counter)
    restarts: int = 0
    problems: list[str] = field(default_factory=list)
    app: App | None = None
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def paths(self) -> DataPaths:
        return DataPaths(self.data, "--data-dir")

    async def start_app(self) -> App:
        app = App(self.paths, providers=SoakResolver(self.rng, self.tally))
        await app.start()
        self.app = app
        return app

    async def run(self) -> dict[str, Any]:
        self.paths.ensure()
        setup_logging(self.paths.log_file, verbose=False)
        app = await self.start_app()
        roots = []
        for n in range(ROOTS):
            session = await app.engine.create_session(
                str(self.workspace), name=f"soak-{n:02d}", permission_mode=PermissionMode.YOLO
            )
            roots.append(session.id)
        end = self.started + self.minutes * 60
        next_restart = time.monotonic() + self.restart_every_s
        next_sample = time.monotonic()
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_sample:
                await self.sample()
                next_sample = now + self.sample_s
            if now >= next_restart:
                await self.restart(roots)
                next_restart = time.monotonic() + self.restart_every_s
            await self.act(roots)
            await asyncio.sleep(self.rng.uniform(0.05, 0.4))
        return await self.finish()

    async def act(self, roots: list[str]) -> None:
        assert self.app is not None
        engine = self.app.engine
        session_id = self.rng.choice(roots)
        roll = self.rng.random()
        if engine.is_running(session_id):
            if roll < 0.10:
                self.driven["cancel"] += 1
                await engine.cancel(session_id)
            elif roll < 0.30:
                self.driven["steer"] += 1
                await engine.steer(session_id, "Keep it short.")
            elif roll < 0.40:
                self.driven["queued message"] += 1
                await engine.send(session_id, "And then check the notes.")
        elif roll < 0.5:
            self.driven["message"] += 1
            await engine.send(session_id, "Look at the project and do the next step.")

    async def restart(self, roots: list[str]) -> None:
        """Stop in order and start again in this process; resume what the stop interrupted."""
        assert self.app is not None
        await self.app.stop()
        self.app = None
        gc.collect()
        self.restarts += 1
        app = await self.start_app()
        for session in (await app.engine.catalog()).sessions:
            items = await app.engine.items(session.id)
            if any(i.status.value in ("interrupted", "pending") for i in items):
                app.engine.resume(session.id)
        log.info("soak: restart %d done", self.restarts)

    async def sample(self) -> None:
        me = psutil.Process()
        kids = me.children(recursive=True)
        zombies = 0
        for kid in kids:
            try:
                zombies += kid.status() == psutil.STATUS_ZOMBIE
            except psutil.Error:
                continue
        database = self.paths.database
        wal = Path(f"{database}-wal")
        rows, items = await asyncio.to_thread(_counts, database)
        self.samples.append(
            Sample(
                t_s=round(time.monotonic() - self.started, 1),
                rss_mib=round(me.memory_info().rss / 2**20, 1),
                fds=me.num_fds(),
                threads=threading.active_count(),
                children=len(kids),
                zombies=zombies,
                db_bytes=database.stat().st_size if database.exists() else 0,
                wal_bytes=wal.stat().st_size if wal.exists() else 0,
                history_rows=rows,
                work_items=items,
                py_objects=len(gc.get_objects()),
            )
        )

    async def finish(self) -> dict[str, Any]:
        assert self.app is not None
        give_up = time.monotonic() + 120
        while reason := await busy(self.app):
            if time.monotonic() > give_up:
                self.problems.append(f"still busy 120 s after the driver stopped: {reason}")
                break
            await asyncio.sleep(0.2)
        # Background tasks end by themselves within seconds; none may be left running.
        give_up = time.monotonic() + 30
        while running := [t for t in self.app.engine.all_background_tasks() if t.state.running]:
            if time.monotonic() > give_up:
                self.problems.append(f"{len(running)} background tasks still running")
                break
            await asyncio.sleep(0.2)
        tags = (self.workspace / "soak-tags.txt").read_text(encoding="utf-8").split()
        if twice := ran_twice(tags):
            self.problems.append(f"{len(twice)} commands ran twice, e.g. {twice[0]}")
        self.tally.actions["tagged command runs"] = len(tags)
        failed = await self.failed_items()
        if failed:
            self.problems.append(f"{failed} work items failed")
        await self.sample()
        await self.app.stop()
        gc.collect()
        await asyncio.sleep(0.5)
        await self.sample()  # after the stop: no children, files closed
        after = self.samples[-1]
        if after.children:
            left = []
            for kid in psutil.Process().children(recursive=True):
                try:
                    left.append(" ".join(kid.cmdline())[-160:])
                except psutil.Error:
                    continue
            self.problems.append(
                f"{after.children} child processes left after the stop: {left[:6]}"
            )
        integrity = _integrity(self.paths.database)
        if integrity != "ok":
            self.problems.append(f"integrity_check: {integrity}")
        return self.report(integrity)

    async def failed_items(self) -> int:
        assert self.app is not None
        failed = 0
        for session in (await self.app.engine.catalog()).sessions:
            failed += sum(
                i.status.value == "failed" for i in await self.app.engine.items(session.id, 5000)
            )
        return failed

    def report(self, integrity: str) -> dict[str, Any]:
        steady = [s for s in self.samples[:-1] if s.t_s >= 0.2 * self.minutes * 60]
        if len(steady) < 3:
            steady = self.samples[:-1]
        hours = (steady[-1].t_s - steady[0].t_s) / 3600 if len(steady) > 1 else 0.0
        last, first = self.samples[-2], self.samples[0]
        turns = last.work_items
        return {
            "minutes": self.minutes,
            "seed": self.seed,
            "roots": ROOTS,
            "restarts": self.restarts,
            "driven": dict(self.driven),
            "model_calls": self.tally.model_calls,
            "model_actions": dict(self.tally.actions),
            "slopes_per_hour": {
                "rss_mib": _slope(steady, "rss_mib"),
                "fds": _slope(steady, "fds"),
                "threads": _slope(steady, "threads"),
                "children": _slope(steady, "children"),
                "py_objects": _slope(steady, "py_objects"),
            },
            "rss_slope_second_half_per_hour": _slope(steady[len(steady) // 2 :], "rss_mib"),
            "steady_hours": round(hours, 3),
            "range": {
                name: [min(getattr(s, name) for s in steady), max(getattr(s, name) for s in steady)]
                for name in ("rss_mib", "fds", "threads", "children", "zombies", "py_objects")
            },
            "database": {
                "bytes_at_end": last.db_bytes,
                "wal_bytes_max": max(s.wal_bytes for s in self.samples),
                "history_rows": last.history_rows,
                "work_items": turns,
                "bytes_per_work_item": round(
                    (last.db_bytes - first.db_bytes) / max(1, turns - first.work_items)
                ),
            },
            "after_stop": {"children": self.samples[-1].children, "fds": self.samples[-1].fds},
            "integrity": integrity,
            "log": log_kinds(self.paths.log_file),
            "problems": self.problems,
            "samples": [s.__dict__ for s in self.samples],
        }


def ran_twice(tags: list[str]) -> list[str]:
    """The command tags seen more than once: a side effect done twice."""
    return [tag for tag, n in Counter(tags).items() if n > 1]


def _counts(database: Path) -> tuple[int, int]:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=5) as conn:
        rows = conn.execute("SELECT count(*) FROM history_entry").fetchone()[0]
        items = conn.execute("SELECT count(*) FROM work_item").fetchone()[0]
    return int(rows), int(items)


def _integrity(database: Path) -> str:
    with sqlite3.connect(database) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def _slope(samples: list[Sample], name: str) -> float:
    """Least-squares slope of ``name`` against time, per hour."""
    if len(samples) < 2:
        return 0.0
    xs = [s.t_s / 3600 for s in samples]
    ys = [float(getattr(s, name)) for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return round(sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var, 2)


# "2026-12-02 12:40:48,448 WARNING MainThread fxdesk.app: text"
_LEVEL = re.compile(r"\s(WARNING|ERROR|CRITICAL)\s+\S+\s+(\S+?):\s(.*)")
_NUMBERS = re.compile(r"\b[0-9a-f]{6,}\b|\d+")


def log_kinds(path: Path) -> dict[str, int]:
    """Warnings and errors in the log, by level, logger and message with the numbers taken out."""
    kinds: Counter[str] = Counter()
    if not path.exists():
        return {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _LEVEL.search(line)
        if match:
            level, logger, text = match.groups()
            kinds[f"{level} {logger} {_NUMBERS.sub('N', text)[:140]}"] += 1
    return dict(kinds.most_common())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--restart-every", type=float, default=300, help="seconds")
    parser.add_argument("--sample", type=float, default=10, help="seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    base = args.data or Path(os.environ.get("TMPDIR", "/tmp")) / f"fxdesk-soak-{os.getpid()}"
    workspace = base / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    soak = Soak(base / "data", workspace, args.minutes, args.restart_every, args.sample, args.seed)
    report = asyncio.run(soak.run())
    args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")
    summary = {k: v for k, v in report.items() if k != "samples"}
    print(json.dumps(summary, indent=1))
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
