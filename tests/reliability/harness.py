"""Run ``crash_host`` in child processes, SIGKILL them at random moments, check the invariants.

A *trial* is one data folder taken through several kills: run (killed), recover (sometimes
killed too, until one recovery finishes), check; again; then a last run with no kill that must
finish the work, and a last check. A kill lands either at a time drawn uniformly over the run
(from the process's start, so start-up and recovery are hit too) or inside a commit drawn
uniformly over the commits a whole run makes (``FXDESK_CRASH_AT_COMMIT``).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from tests.helpers import child_env, fxdesk_command
from tests.reliability import invariants
from tests.reliability.crash_host import KILL_AT_COMMIT_ENV
from tests.reliability.invariants import Observed

REPO = Path(__file__).resolve().parents[2]
PHASE_TIMEOUT_S = 150.0


@dataclass
class Outcome:
    lines: list[str]
    killed: bool
    returncode: int
    stderr: str

    @property
    def done(self) -> bool:
        return "DONE" in self.lines

    @property
    def stuck(self) -> str:
        return next((line for line in self.lines if line.startswith("STUCK")), "")

    def commits(self) -> int:
        return next((int(x.split()[1]) for x in self.lines if x.startswith("COMMITS ")), 0)


@dataclass
class Figures:
    kill_points: int = 0
    by_time: int = 0
    in_commit: int = 0
    in_recovery: int = 0
    checks: int = 0
    cli_sends: int = 0  # `fxdesk send --no-wait` run beside a running fxdesk
    cli_acknowledged: int = 0  # ... that said "queued message <id>" (checked ever after)
    cli_killed: int = 0
    cli_refused: list[str] = field(default_factory=list)  # non-zero exits, with their words
    violations: list[str] = field(default_factory=list)


def spawn(obs: Observed, phase: str, kill_at_commit: int = 0) -> Outcome:
    return run_phase(obs, phase, None, kill_at_commit)


def run_phase(
    obs: Observed, phase: str, kill_after_s: float | None, kill_at_commit: int = 0
) -> Outcome:
    env = child_env(**{KILL_AT_COMMIT_ENV: str(kill_at_commit)})
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reliability.crash_host",
            phase,
            str(obs.data),
            str(obs.workspace),
            obs.marker,
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    errors: list[str] = []
    readers = [
        threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True),
        threading.Thread(target=_drain, args=(process.stderr, errors), daemon=True),
    ]
    for reader in readers:
        reader.start()
    killed = False
    began = time.monotonic()
    try:
        process.wait(kill_after_s if kill_after_s is not None else PHASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # Like kill -9 of fxdesk alone: what it started (servers, commands) lives on.
        process.send_signal(signal.SIGKILL)
        process.wait(30)
        killed = kill_after_s is not None
    # Grandchildren (a server) may hold the pipes: read what there is, do not wait for EOF.
    for reader in readers:
        reader.join(5)
    killed = killed or process.returncode == -signal.SIGKILL
    if killed:
        _settle(obs)
    if os.environ.get("FXDESK_CRASH_VERBOSE"):
        print(
            f"  {phase} kill_after={kill_after_s} commit={kill_at_commit} "
            f"{time.monotonic() - began:.1f}s -> {lines[-3:]}"
        )
    for line in lines:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ACK":
            obs.acks.add((parts[1], parts[2]))
            if parts[1] == "session" and parts[2] not in obs.sessions:
                obs.sessions.append(parts[2])
    return Outcome(lines, killed, process.returncode, "\n".join(errors))


def _settle(obs: Observed) -> None:
    """Wait for the commands the killed process had running to end. They are not fxdesk:
    bubblewrap's --die-with-parent ends them a moment after it, and a tag one writes in that
    moment is its own side effect (once), not something the next recovery ran."""
    workspaces = {str(obs.workspace), os.path.realpath(obs.workspace)}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        alive = False
        for found in psutil.process_iter(["cmdline"]):
            cmdline = found.info.get("cmdline") or []
            if "--die-with-parent" in cmdline and workspaces & set(cmdline):
                alive = True
                break
        if not alive:
            break
        time.sleep(0.02)
    time.sleep(0.2)  # the sandbox's own children die right after it


def _drain(stream: object, into: list[str]) -> None:
    assert stream is not None
    for line in stream:  # type: ignore[attr-defined]
        into.append(line.rstrip("\n"))


@dataclass
class Reference:
    """How long and how many commits a whole run takes on this machine."""

    run_s: float
    recover_s: float
    commits: int


def measure(base: Path) -> Reference:
    obs = new_observed(base, "ref")
    began = time.monotonic()
    outcome = spawn(obs, "run")
    run_s = time.monotonic() - began
    assert outcome.done, f"the scenario did not finish:\n{outcome.lines}\n{outcome.stderr}"
    began = time.monotonic()
    recovered = spawn(obs, "recover")
    assert "RECOVERED" in recovered.lines, recovered.stderr
    recover_s = time.monotonic() - began
    problems = invariants.after_recovery(obs)
    invariants.end_servers([obs.marker])
    assert problems == [], problems
    return Reference(run_s, recover_s, outcome.commits())


def new_observed(base: Path, name: str) -> Observed:
    root = base / name
    workspace = root / "workspace"
    workspace.mkdir(parents=True)
    marker = f"fxdesk-crash-{os.getpid()}-{name}-{time.monotonic_ns()}"
    return Observed(root / "data", workspace, marker)


def trial(base: Path, name: str, seed: int, ref: Reference, figures: Figures) -> None:
    """One data folder: a run killed at a random moment, recovery (itself killed at times),
    a check; the resumed run, killed half the time, recovery, a check; a last run that must
    finish the work, a last check. Appends violations to ``figures``."""
    rng = random.Random(seed)
    obs = new_observed(base, name)
    try:
        _killed_run(obs, rng, ref.run_s, ref.commits, figures, name)
        _recover(obs, rng, ref, figures, name)
        if rng.random() < 0.5:  # the resumed run is shorter: kill it sooner
            beside = _cli_beside(obs, rng, figures)
            _killed_run(obs, rng, ref.run_s / 2, ref.commits // 2, figures, name)
            if beside is not None:
                beside.join(PHASE_TIMEOUT_S)
            _recover(obs, rng, ref, figures, name)
        final = spawn(obs, "run")
        _expect_clean_or_killed(final, figures, name)
        if not final.done:
            figures.violations.append(
                f"{name}: the last run did not finish: {final.lines[-3:]} {final.stderr[-800:]}"
            )
        _recover(obs, rng, ref, figures, name, kill=False)
    finally:
        invariants.end_servers([obs.marker])


def _killed_run(
    obs: Observed, rng: random.Random, within_s: float, commits: int, figures: Figures, name: str
) -> None:
    by_time = rng.random() < 0.5
    if by_time:
        outcome = run_phase(obs, "run", rng.uniform(0, within_s))
    else:
        outcome = spawn(obs, "run", kill_at_commit=rng.randint(1, max(commits, 1)))
    if outcome.killed:
        figures.kill_points += 1
        figures.by_time += by_time
        figures.in_commit += not by_time
    _expect_clean_or_killed(outcome, figures, name)


def _cli_beside(obs: Observed, rng: random.Random, figures: Figures) -> threading.Thread | None:
    """``fxdesk send --no-wait`` to the root session while the next phase runs, killed half
    the time; a message it acknowledged must survive everything after."""
    if not obs.sessions:
        return None
    delay = rng.uniform(0, 1.0)
    kill_after = rng.uniform(0, 0.8) if rng.random() < 0.5 else None

    def send() -> None:
        time.sleep(delay)
        figures.cli_sends += 1
        process = subprocess.Popen(
            fxdesk_command(
                "--data-dir", str(obs.data), "send", obs.sessions[0], "From the CLI.", "--no-wait"
            ),
            env=child_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = process.communicate(timeout=kill_after or PHASE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            figures.cli_killed += 1
            return
        queued = re.search(r"queued message (\w+)", out)
        if process.returncode == 0 and queued:
            obs.acks.add(("work_item", queued[1]))
            figures.cli_acknowledged += 1
        else:
            figures.cli_refused.append(f"exit {process.returncode}: {err.strip()[-300:]}")

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def _recover(
    obs: Observed,
    rng: random.Random,
    ref: Reference,
    figures: Figures,
    name: str,
    kill: bool = True,
) -> None:
    tags_before = invariants.tag_count(obs)
    while kill and rng.random() < 0.3:  # a kill during recovery itself
        outcome = run_phase(obs, "recover", rng.uniform(0, ref.recover_s))
        figures.kill_points += outcome.killed
        figures.in_recovery += outcome.killed
        _expect_clean_or_killed(outcome, figures, name)
    outcome = spawn(obs, "recover")
    if "RECOVERED" not in outcome.lines:
        figures.violations.append(f"{name}: recovery did not finish: {outcome.stderr[-800:]}")
    figures.checks += 1
    problems = invariants.after_recovery(obs) + invariants.no_tool_ran(obs, tags_before)
    figures.violations.extend(f"{name}: {problem}" for problem in problems)


def _expect_clean_or_killed(outcome: Outcome, figures: Figures, name: str) -> None:
    if outcome.stuck:
        figures.violations.append(f"{name}: work never finished after a resume: {outcome.stuck}")
    if not outcome.killed and outcome.returncode != 0:
        figures.violations.append(
            f"{name}: exit {outcome.returncode} without a kill: {outcome.stderr[-800:]}"
        )
