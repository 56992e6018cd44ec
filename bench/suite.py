"""One command for every benchmark: fxdesk beside its physical reference, in the same run.

Each benchmark alternates fxdesk and its reference (a bare PySide6 window, raw ``sqlite3``
running the same statements, ...) round by round, so a busy moment of a shared machine hits
both alike, and reports the ratio. ``./scripts/bench`` runs it (under Xvfb when there is no
display, so windows really paint); the table goes to stdout and everything to
``bench/results/<time>.json``.

Run: python -m bench.suite [--quick | --full] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import select
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import datasets

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    """One line of the table. ``target`` is one of: ``ratio<=X``, ``ratio>=X``, ``value<=X``,
    ``above<=X`` (fxdesk minus the reference), or empty (shown for information)."""

    what: str
    fxdesk: float
    reference: float | None
    unit: str
    target: str = ""
    note: str = ""
    samples: dict[str, list[float]] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """The median of the rounds' own ratios (each round measured fxdesk and the reference
        back to back, so a busy moment of the machine cancels out); failing rounds, the ratio of
        the medians."""
        ours, theirs = self.samples.get("fxdesk", []), self.samples.get("reference", [])
        if ours and len(ours) == len(theirs) and all(theirs):
            return median([a / b for a, b in zip(ours, theirs, strict=True)])
        if self.reference in (None, 0):
            return None
        return self.fxdesk / self.reference  # type: ignore[operator]

    @property
    def met(self) -> bool | None:
        if not self.target:
            return None
        kind, bound = self.target.split("=")
        limit = float(bound)
        if kind == "ratio<":
            return self.ratio is not None and self.ratio <= limit
        if kind == "ratio>":
            return self.ratio is not None and self.ratio >= limit
        if kind == "value<":
            return self.fxdesk <= limit
        if kind == "above<":
            return self.reference is not None and self.fxdesk - self.reference <= limit
        raise ValueError(self.target)

    def target_text(self) -> str:
        if not self.target:
            return "—"
        kind, bound = self.target.split("=")
        return {
            "ratio<": f"ratio ≤ {bound}",
            "ratio>": f"ratio ≥ {bound}",
            "value<": f"≤ {bound} {self.unit}",
            "above<": f"≤ ref + {bound} {self.unit}",
        }[kind]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def paired(
    what: str,
    ours: list[float],
    theirs: list[float],
    unit: str,
    target: str = "",
    note: str = "",
    summary: Callable[[list[float]], float] = median,
) -> Row:
    """A row from fxdesk's and the reference's samples, each summed up by ``summary``."""
    return Row(
        what,
        summary(ours),
        summary(theirs),
        unit,
        target,
        note,
        {"fxdesk": ours, "reference": theirs},
    )


PYCACHE = Path(tempfile.gettempdir()) / f"fxdesk-bench-pycache-{os.getuid()}"


def child_env(**extra: str) -> dict[str, str]:
    """The environment of every process the bench starts: this checkout first on the path, and
    byte code cached as in an installed fxdesk (pip compiles on install, the frozen bundle
    holds .pyc files) even where the shell sets PYTHONDONTWRITEBYTECODE (this machine does):
    compiling every module at each start would add ~100 ms to fxdesk and to the reference.
    The cache lives outside the checkout."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return env


def child_json(module: str, *args: str, timeout: float) -> Any:
    """Runs ``python -m module args`` (a benchmark in its own process); the JSON line its
    output ends with."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=child_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- start-up and memory: a paint event of the main window --------------------------------


@dataclass
class Paint:
    paint_ms: float
    rss_paint_mib: float
    ready_ms: float | None = None  # the first paint once the window shows its data
    rss_ready_mib: float | None = None


def paint_run(what: list[str], *, wait_ready: bool, timeout: float = 60) -> Paint:
    """Start ``python -m bench.paint_probe WHAT`` and read when its main window painted."""
    read_end, write_end = os.pipe()
    env = child_env(FXDESK_PROBE_FD=str(write_end))
    began = time.monotonic_ns()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.paint_probe", *what],
        env=env,
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    os.close(write_end)
    seen: dict[str, tuple[float, float]] = {}
    buffer = b""
    deadline = time.monotonic() + timeout
    try:
        while "paint" not in seen or (wait_ready and "ready" not in seen):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{' '.join(what)}: no paint within {timeout} s")
            ready, _, _ = select.select([read_end], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_end, 4096)
            if not chunk:
                raise RuntimeError(f"{' '.join(what)} ended before it painted")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                kind, at_ns, rss = line.decode().split()
                seen[kind] = ((int(at_ns) - began) / 1e6, int(rss) / 2**20)
    finally:
        os.close(read_end)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    paint_ms, rss_paint = seen["paint"]
    ready = seen.get("ready")
    return Paint(paint_ms, rss_paint, *(ready if ready else (None, None)))


def startup_data(folder: Path, sessions: int) -> Path:
    data = folder / f"data{sessions}"
    datasets.sessions(data, sessions) if sessions else datasets.data_paths(data)
    return data


def fxdesk_run(data: Path) -> Paint:
    run = paint_run(["fxdesk", "--data-dir", str(data)], wait_ready=True)
    (data / "logs" / "fxdesk.log").unlink(missing_ok=True)
    return run


def bench_startup(rounds: int, folder: Path) -> list[Row]:
    """First paint with 0 and 1,000 sessions, and the bare window, alternating."""
    datas = {n: startup_data(folder, n) for n in (0, 1000)}
    fxdesk_run(datas[0])  # the first start creates the data folder's files; not timed
    paint_run(["bare"], wait_ready=False)  # and byte code is cached for both
    bare: list[Paint] = []
    runs: dict[int, list[Paint]] = {0: [], 1000: []}
    for n in range(rounds):
        jobs: list[Callable[[], None]] = [
            lambda: bare.append(paint_run(["bare"], wait_ready=False)),
            lambda: runs[0].append(fxdesk_run(datas[0])),
            lambda: runs[1000].append(fxdesk_run(datas[1000])),
        ]
        for job in jobs[n % 3 :] + jobs[: n % 3]:
            job()
    bare_paint = [p.paint_ms for p in bare]
    bare_rss = [p.rss_paint_mib for p in bare]
    rows = []
    for sessions, done in runs.items():
        paints = [p.paint_ms for p in done]
        readies = [p.ready_ms for p in done if p.ready_ms is not None]
        label = f"{sessions:,} sessions"
        rows.append(
            paired(
                f"start-up: process start → main window first painted ({label})",
                paints,
                bare_paint,
                "ms",
                "ratio<=1.5",
                "reference: bare PySide6 program, one empty QMainWindow",
            )
        )
        rows.append(
            paired(
                f"start-up: process start → window painted with its data ({label})",
                readies,
                bare_paint,
                "ms",
                note="the first paint after the status bar says Ready",
            )
        )
    rss = [p.rss_ready_mib for p in runs[1000] if p.rss_ready_mib is not None]
    rows.append(
        paired(
            "memory: RSS when ready (1,000 sessions)",
            rss,
            bare_rss,
            "MiB",
            "above<=150",
            "reference: the bare window's RSS when painted",
        )
    )
    return rows


def bench_startup_scale(rounds: int, folder: Path, sizes: list[int]) -> list[Row]:
    """First paint and data shown at 10 / 100 / 1,000 / 10,000 sessions, beside the bare window."""
    datas = {n: startup_data(folder / "scale", n) for n in sizes}
    for data in datas.values():
        fxdesk_run(data)  # warm: the first start migrates and writes its settings
    bare: list[float] = []
    runs: dict[int, list[Paint]] = {n: [] for n in sizes}
    for _ in range(rounds):
        bare.append(paint_run(["bare"], wait_ready=False).paint_ms)
        for n in sizes:
            runs[n].append(fxdesk_run(datas[n]))
    rows = []
    for n in sizes:
        readies = [p.ready_ms for p in runs[n] if p.ready_ms is not None]
        rss = [p.rss_ready_mib for p in runs[n] if p.rss_ready_mib is not None]
        rows.append(
            Row(
                f"scale: window painted with its data, {n:,} sessions (RSS {median(rss):.0f} MiB)",
                median(readies),
                median(bare),
                "ms",
                "",
                "",
                {"fxdesk": readies, "reference": bare, "rss": rss},
            )
        )
    return rows


# --- durable transitions and recovery: the same statements, raw --------------------------


def raw_single_row_commits(path: Path, count: int) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute("PRAGMA synchronous = normal")
    conn.execute("CREATE TABLE IF NOT EXISTS t (k INTEGER, v TEXT)")
    began = time.perf_counter()
    for i in range(count):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (?, ?)", (i, "x" * 64))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - began
    conn.close()
    return count / elapsed


async def _queue_transitions(
    root: Path, sessions: int, items: int, *, traced: bool
) -> tuple[float, int, list[Any], Path]:
    """``sessions`` × ``items`` concurrent sends (one durable transition each); ``traced``
    records the writer's statements (the recording slows fxdesk a little: the timed run is a
    separate, untraced one)."""
    from bench.sql_trace import Trace, snapshot
    from fxdesk.domain.model import PermissionMode
    from fxdesk.engine.bus import EventBus
    from fxdesk.engine.owner import SessionOwner
    from fxdesk.engine.providers import FixedResolver
    from fxdesk.engine.sessions import SessionService
    from fxdesk.engine.turn import TurnRunner
    from fxdesk.providers.scripted import ScriptedProvider
    from fxdesk.store import Store
    from fxdesk.tools.base import ToolRegistry

    store = await Store.aopen(root / "fxdesk.sqlite3")
    bus = EventBus()
    runner = TurnRunner(store, ToolRegistry(), bus)
    owner = SessionOwner(
        store,
        bus,
        lock_dir=root / "locks",
        providers=FixedResolver(ScriptedProvider([])),
        runner=runner,
    )
    service = SessionService(store, bus, owner)
    (root / "ws").mkdir()
    ids = [
        (
            await service.create_root(
                root / "ws", name=f"s{n}", permission_mode=PermissionMode.AUTO
            )
        ).id
        for n in range(sessions)
    ]

    def count() -> int:
        return int(
            store._db.execute_sql(
                "SELECT count(*) FROM control_event WHERE kind = 'work_transition'"
            ).fetchone()[0]
        )

    before = await store.read(count)
    copy = root / "before.sqlite3"
    snapshot(store, copy)
    trace = Trace(store)
    with trace if traced else contextlib.nullcontext():
        began = time.perf_counter()
        await asyncio.gather(
            *(service.send(session_id, f"queued {i}") for session_id in ids for i in range(items))
        )
        elapsed = time.perf_counter() - began
    transitions = await store.read(count) - before
    await owner.shutdown()
    store.close()
    return elapsed, transitions, trace.statements, copy


def bench_transitions(rounds: int, folder: Path, sessions: int, items: int) -> list[Row]:
    from bench.sql_trace import replay

    ours: list[float] = []
    same: list[float] = []
    raw: list[float] = []
    statements_per = 0.0
    for n in range(rounds):
        root = folder / f"transitions{n}"
        (root / "traced").mkdir(parents=True)
        (root / "timed").mkdir()
        _, transitions, statements, copy = asyncio.run(
            _queue_transitions(root / "traced", sessions, items, traced=True)
        )
        elapsed, transitions, _, _ = asyncio.run(
            _queue_transitions(root / "timed", sessions, items, traced=False)
        )
        statements_per = len(statements) / transitions
        # alternate: the reference right after fxdesk, in the other order every other round
        if n % 2:
            raw.append(raw_single_row_commits(root / "raw.sqlite3", 5000))
            same.append(transitions / replay(copy, statements))
        else:
            same.append(transitions / replay(copy, statements))
            raw.append(raw_single_row_commits(root / "raw.sqlite3", 5000))
        ours.append(transitions / elapsed)
        shutil.rmtree(root)
    return [
        paired(
            f"durable transitions ({sessions} sessions × {items} concurrent sends) vs the same "
            "statements raw",
            ours,
            same,
            "/s",
            "ratio>=0.5",
            f"reference: the writer's traced statements ({statements_per:.1f} a transition, "
            "with its BEGIN/COMMITs) replayed through bare sqlite3",
        ),
        paired(
            "durable transitions vs raw single-row commits",
            ours,
            raw,
            "/s",
            note="reference: BEGIN IMMEDIATE; INSERT one row; COMMIT",
        ),
    ]


async def _recover(root: Path) -> tuple[float, list[str], Path]:
    from bench.sql_trace import Trace, snapshot
    from fxdesk.engine.bus import EventBus
    from fxdesk.engine.owner import SessionOwner
    from fxdesk.engine.providers import FixedResolver
    from fxdesk.engine.turn import TurnRunner
    from fxdesk.providers.scripted import ScriptedProvider
    from fxdesk.store import Store
    from fxdesk.tools.base import ToolRegistry

    store = await Store.aopen(root / "fxdesk.sqlite3")
    bus = EventBus()
    owner = SessionOwner(
        store,
        bus,
        lock_dir=root / "locks",
        providers=FixedResolver(ScriptedProvider([])),
        runner=TurnRunner(store, ToolRegistry(), bus),
    )
    copy = root / "before.sqlite3"
    snapshot(store, copy)
    with Trace(store) as trace:
        began = time.perf_counter()
        await owner.recover(publish_sessions=False, exclusive=True)
        elapsed = time.perf_counter() - began
    store.close()
    return elapsed, trace.statements, copy


def bench_recovery(rounds: int, folder: Path, sizes: list[int]) -> list[Row]:
    """Start-up recovery of SESSIONS × 10 unfinished work items vs its statements raw."""
    from bench.recovery import build
    from bench.sql_trace import replay
    from fxdesk.store import Store

    rows = []
    for sessions in sizes:
        ours: list[float] = []
        same: list[float] = []
        for n in range(rounds):
            root = folder / f"recovery{sessions}-{n}"
            root.mkdir()
            store = Store.open(root / "fxdesk.sqlite3")
            build(store, sessions, 10)
            store.close()
            elapsed, statements, copy = asyncio.run(_recover(root))
            ours.append(elapsed * 1000)
            same.append(replay(copy, statements) * 1000)
            shutil.rmtree(root)
        headline = sessions == 1000
        rows.append(
            paired(
                f"{'' if headline else 'scale: '}start-up recovery, {sessions * 10:,} work items "
                f"in {sessions:,} sessions",
                ours,
                same,
                "ms",
                "value<=1000" if headline else "",
                "reference: the same statements replayed through bare sqlite3",
            )
        )
    return rows


# --- the window: a 10,000-message transcript, and 20 sessions streaming -------------------


def bench_transcript(rounds: int, folder: Path) -> list[Row]:
    """Runs ``bench.transcript_open`` (a Qt process) ``rounds`` times; it alternates itself."""
    data = folder / "transcript"
    datasets.sessions(data, 20, child_every=1)  # issue 17 item 2: each with a sub-agent
    datasets.transcript(data, 10_000)
    result = child_json("bench.transcript_open", str(data), "--rounds", str(rounds), timeout=600)
    bare = [paint_run(["bare"], wait_ready=False).rss_paint_mib for _ in range(rounds)]
    return [
        Row(
            "memory: RSS with 20 root sessions (each with a sub-agent), a 10,000-message "
            "transcript shown and scrolled through",
            max(result["rss_mib"]),
            median(bare),
            "MiB",
            "above<=150",
            "the worst of the rounds; reference: the bare window's RSS",
        ),
        paired(
            "transcript: select a 10,000-message session → its first paint",
            result["open_ms"],
            result["ref_open_ms"],
            "ms",
            "value<=150",
            "reference: a plain QListView + QStringListModel of the latest 200 texts, first paint",
        ),
        paired(
            "transcript: scroll to the top of 10,000 messages, worst frame",
            result["scroll_worst_ms"],
            result["ref_scroll_worst_ms"],
            "ms",
            "value<=50",
            f"{result['pages']} pages of 200 read on the way; reference: the QListView holding all "
            "10,000, scrolled to the top in 50 steps",
            summary=max,
        ),
    ]


BIG_ANSWER = 2 * 1024 * 1024
BIG_OUTPUT_LINES = 50_000


def bench_bigtext(
    rounds: int, folder: Path, answer: int = BIG_ANSWER, lines: int = BIG_OUTPUT_LINES
) -> list[Row]:
    """Runs ``bench.transcript_big`` (a Qt process): a 2 MB answer and a 50,000-line command
    output shown in the real window, each beside a plain QPlainTextEdit with the same text."""
    data = folder / "bigtext"
    datasets.sessions(data, 20)
    datasets.big_rows(data, datasets.big_answer(answer), datasets.command_output(lines))
    r = child_json("bench.transcript_big", str(data), "--rounds", str(rounds), timeout=1800)
    size = f"{answer / 2**20:.0f} MB" if answer >= 2**20 else f"{answer // 1024} KB"
    reference = "reference: a plain QPlainTextEdit given the same text"

    def worst(name: str, what: str, target: str, note: str) -> Row:
        return paired(what, r[name], r[f"ref_{name}"], "ms", target, note, summary=max)

    return [
        paired(
            f"transcript: select a session holding a {size} answer → its first paint",
            r["answer_open_ms"],
            r["ref_answer_open_ms"],
            "ms",
            note=f"the transcript renders its first 64 KB; {reference} "
            "(setPlainText → first paint)",
        ),
        worst(
            "answer_open_worst_ms",
            f"transcript: {size} answer, worst frame while it opens",
            "value<=50",
            "5 ms timer on the Qt thread, the worst of the rounds",
        ),
        worst(
            "answer_scroll_worst_ms",
            f"transcript: {size} answer, worst frame scrolling it through (50 steps)",
            "value<=50",
            "",
        ),
        paired(
            f"transcript: {size} answer, Show the whole answer… → its first paint",
            r["answer_whole_ms"],
            r["ref_answer_open_ms"],
            "ms",
            note="the whole text in a window's QPlainTextEdit",
        ),
        paired(
            f"transcript: select a session with a {lines:,}-line command output → first paint",
            r["output_open_ms"],
            r["ref_output_open_ms"],
            "ms",
            note=f"the card shows 40 lines; {reference}",
        ),
        paired(
            f"transcript: {lines:,}-line output, Show full output… → its first paint",
            r["output_full_ms"],
            r["ref_output_open_ms"],
            "ms",
        ),
        worst(
            "output_open_worst_ms",
            f"transcript: {lines:,}-line output, worst frame (select, open the card, full output)",
            "value<=50",
            "",
        ),
        worst(
            "output_scroll_worst_ms",
            f"transcript: {lines:,}-line output, worst frame scrolling it through (50 steps)",
            "value<=50",
            "",
        ),
    ]


def bench_streaming(rounds: int) -> list[Row]:
    """The existing gui_stall (20 sessions streaming, one shown) beside a bare Qt timer."""
    result = child_json(
        "bench.gui_stall", "--runs", str(rounds), "--grab-ms", "0", "--json", timeout=900
    )
    bare = [paint_run(["bare"], wait_ready=False).rss_paint_mib for _ in range(3)]
    result["ref_rss_mib"] = median(bare)
    return [
        Row(
            "streaming: 20 sessions at once, Qt thread gap p99",
            result["gap_p99"],
            result["ref_gap_p99"],
            "ms",
            "value<=16",
            "5 ms timer; reference: the same timer in a bare Qt program for as long",
        ),
        Row(
            "streaming: Qt thread worst gap",
            result["gap_worst"],
            result["ref_gap_worst"],
            "ms",
            "value<=50",
            "",
        ),
        Row(
            "streaming: a delta reaching the GUI → the paint that shows it, p50",
            result["paint_p50"],
            result["ref_paint_p50"],
            "ms",
            "",
            "the shown session's deltas (event filter on the transcript's viewport); reference: "
            "a bare QPlainTextEdit fed the same deltas at the same pace",
        ),
        Row(
            "streaming: delta → its paint, p99",
            result["paint_p99"],
            result["ref_paint_p99"],
            "ms",
            "value<=100",
            "",
        ),
        Row(
            "streaming: delta → its paint, worst",
            result["paint_max"],
            result["ref_paint_max"],
            "ms",
            "",
            "",
        ),
        paired(
            "streaming: CPU of the fxdesk process at 20 sessions × 200 deltas/s",
            result["cpu_nominal_runs"],
            result["ref_cpu_nominal_runs"],
            "% of a core",
            "value<=60",
            "the whole process (engine, bus, window, scripted model): its CPU seconds per delta "
            "× 4,000 deltas/s; reference: the bare program streaming 20 answers, painting one",
        ),
        Row(
            "streaming: CPU time / wall time while streaming, as measured",
            result["cpu_percent"],
            result["ref_cpu_percent"],
            "% of a core",
            "",
            "capped by the share of the cores the process gets on a busy machine",
            {"fxdesk": result["cpu_percent_runs"], "reference": result["ref_cpu_percent_runs"]},
        ),
        Row(
            "memory: peak RSS while 20 sessions stream, one transcript shown",
            result["rss_mib"],
            result["ref_rss_mib"],
            "MiB",
            "above<=150",
            "reference: the bare Qt program's RSS",
        ),
    ]


def bench_flood(rounds: int, megabytes: int = 200) -> list[Row]:
    """Runs ``bench.output_flood`` (a Qt process): a background task writes ``megabytes`` of
    output then its URL, beside the same command writing to a file directly."""
    r = child_json(
        "bench.output_flood", "--megabytes", str(megabytes), "--rounds", str(rounds), timeout=1800
    )
    flood = f"{megabytes} MB output flood"

    def pair(name: str, what: str, unit: str, target: str, note: str, scale: float = 1) -> Row:
        ours = [v * scale for v in r[name]]
        theirs = [v * scale for v in r[f"ref_{name}"]]
        return paired(what, ours, theirs, unit, target, note)

    return [
        pair(
            "banner_s",
            f"{flood}: task started → its URL banner printed",
            "ms",
            "",
            "fxdesk: Engine.start_background (wrapper, sandbox, durable record), the output "
            "straight into its log; reference: the same command started with > file",
            1000,
        ),
        Row(
            f"{flood}: banner printed → URL published",
            median(r["url_ms"]),
            None,
            "ms",
            "value<=1000",
            "the URL watcher reads the whole log (in a worker thread) to the banner",
            {"fxdesk": r["url_ms"]},
        ),
        pair(
            "cpu_percent",
            f"{flood}: fxdesk process CPU while the task runs",
            "% of a core",
            "",
            "from the start to the URL; reference: the same fxdesk idle while the command "
            "writes to a file",
        ),
        pair(
            "rss_grew_mib",
            f"{flood}: fxdesk RSS growth while the task runs",
            "MiB",
            "",
            "peak minus before (sampled every 50 ms)",
        ),
        Row(
            f"{flood}: Qt thread worst gap while the task runs",
            max(r["worst_frame_ms"]),
            None,
            "ms",
            "value<=50",
            "5 ms timer",
            {"fxdesk": r["worst_frame_ms"]},
        ),
        pair(
            "log_open_ms",
            f"{flood}: log view opened on the {megabytes} MB log → first paint",
            "ms",
            "",
            "LogView.follow (reads the last 256 KiB); reference: a QPlainTextEdit given the "
            "same 256 KiB",
        ),
    ]


def bench_soak(minutes: float, reference_minutes: float) -> list[Row]:
    """``bench.gui_stall --soak-minutes``: 20 sessions streaming without a pause; RSS slope."""
    r = child_json(
        "bench.gui_stall",
        "--soak-minutes",
        str(minutes),
        "--soak-reference-minutes",
        str(reference_minutes),
        timeout=int((minutes + reference_minutes) * 60 + 600),
    )
    first, last = r["rss"][0][1], r["rss"][-1][1]
    bare_window = [paint_run(["bare"], wait_ready=False).rss_paint_mib for _ in range(3)]
    return [
        Row(
            f"soak: RSS slope while 20 sessions stream for {r['minutes']:.0f} min "
            f"({r['answers']:,} answers; RSS {first:.0f} → {last:.0f} MiB)",
            r["slope_mib_per_hour"],
            r["ref_slope_mib_per_hour"],
            "MiB/h",
            "",
            "least squares over the samples (every 5 s) after the first quarter; the shown "
            f"session changes every 30 s; reference: the bare program for {r['ref_minutes']:.0f} "
            "min",
            {"fxdesk_rss": [m for _, m in r["rss"]], "reference_rss": [m for _, m in r["ref_rss"]]},
        ),
        Row(
            f"memory: RSS after {r['minutes']:.0f} min of 20 sessions streaming, one shown",
            last,
            median(bare_window),
            "MiB",
            "above<=150",
            "the soak's last sample; reference: the bare window's RSS (the soak's own reference "
            "runs after it in the same process, so its RSS holds fxdesk's)",
        ),
        Row(
            "soak: fxdesk process CPU time / wall time while 20 sessions stream",
            r["cpu_percent"],
            r["ref_cpu_percent"],
            "% of a core",
            "",
            "as measured (capped by the process's share of a busy machine)",
        ),
    ]


# --- the table -----------------------------------------------------------------------------


def fmt(value: float | None, unit: str) -> str:
    if value is None or value != value:
        return "—"
    if unit == "/s" or value >= 1000:
        return f"{value:,.0f} {unit}"
    return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"


def table(rows: list[Row]) -> str:
    lines = [
        "| What | fxdesk | Reference | Ratio | Target | Met? |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = f"{row.ratio:.2f}" if row.ratio is not None else "—"
        met = {True: "yes", False: "**no**", None: "—"}[row.met]
        lines.append(
            f"| {row.what} | {fmt(row.fxdesk, row.unit)} | {fmt(row.reference, row.unit)} | "
            f"{ratio} | {row.target_text()} | {met} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, object]:
    import PySide6

    return {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "pyside6": PySide6.__version__,
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "qt_platform": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
        "load_average": os.getloadavg(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer rounds, no scale curves")
    size.add_argument("--full", action="store_true", help="more rounds, scale curves, streaming")
    parser.add_argument(
        "--only",
        nargs="*",
        choices=[
            "startup",
            "transitions",
            "recovery",
            "transcript",
            "streaming",
            "scale",
            "bigtext",
            "flood",
            "soak",
        ],
        help="run only these",
    )
    parser.add_argument(
        "--soak-minutes",
        type=float,
        help="how long the soak streams (default: 10 with --only soak, 2 in --full)",
    )
    args = parser.parse_args()
    mode = "full" if args.full else "quick" if args.quick else "default"
    rounds = {"quick": 3, "default": 5, "full": 9}[mode]
    wanted = set(args.only or ["startup", "transitions", "recovery", "transcript"])
    if args.full and not args.only:
        wanted |= {"streaming", "scale", "bigtext", "flood", "soak"}
    soak_minutes = args.soak_minutes or (10.0 if args.only else 2.0)
    began = time.time()
    load_before = os.getloadavg()
    rows: list[Row] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fxdesk-bench-") as tmp:
        folder = Path(tmp)
        steps: list[tuple[str, Callable[[], list[Row]]]] = [
            ("startup", lambda: bench_startup(rounds, folder)),
            (
                "transitions",
                lambda: bench_transitions(rounds, folder, 32, 50),
            ),
            ("recovery", lambda: bench_recovery(rounds, folder, [1000])),
            ("transcript", lambda: bench_transcript(rounds, folder)),
            ("streaming", lambda: bench_streaming(1 if mode != "full" else 3)),
            ("bigtext", lambda: bench_bigtext(min(rounds, 3), folder)),
            ("flood", lambda: bench_flood(1 if mode != "full" else 3)),
            ("soak", lambda: bench_soak(soak_minutes, min(soak_minutes, 2.0))),
            (
                "scale",
                lambda: (
                    bench_startup_scale(3, folder, [10, 100, 1000, 10_000])
                    + bench_recovery(3, folder, [10, 100, 10_000])
                ),
            ),
        ]
        for name, step in steps:
            if name not in wanted:
                continue
            step_began = time.perf_counter()
            print(f"== {name} ...", file=sys.stderr, flush=True)
            try:
                new = step()
            except Exception:  # one broken benchmark must not lose the others' numbers
                traceback.print_exc()
                failed.append(name)
                continue
            print(
                f"   {name}: {time.perf_counter() - step_began:.0f} s", file=sys.stderr, flush=True
            )
            rows += new
    info = machine()
    info["load_average_before"] = load_before
    command = "./scripts/bench" + (f" --{mode}" if mode != "default" else "")
    print(
        f"\n`{command}`, {time.strftime('%Y-%m-%d %H:%M')}, {rounds} rounds, medians; "
        f"Qt platform {info['qt_platform']}; load average before {load_before[0]:.2f}, "
        f"after {info['load_average'][0]:.2f} (2-minute-ish figures of the shared machine)\n"
    )  # type: ignore[index]
    print(table(rows))
    if failed:
        print(f"\nFAILED (see above): {', '.join(failed)}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / time.strftime("%Y%m%d-%H%M%S.json", time.localtime(began))
    out.write_text(
        json.dumps(
            {
                "command": command,
                "started": began,
                "seconds": time.time() - began,
                "rounds": rounds,
                "failed": failed,
                "machine": info,
                "rows": [
                    {**asdict(r), "ratio": r.ratio, "met": r.met, "target_text": r.target_text()}
                    for r in rows
                ],
            },
            indent=1,
        )
    )
    print(f"\nJSON: {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
