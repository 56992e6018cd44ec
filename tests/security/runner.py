"""Runs attack lines end to end: a real ``App`` (real SQLite in WAL, the real permission check,
real bubblewrap), one session per mode and kind, and a model faked at its edge that emits one
``run_command`` call per line and records what it was sent.

Between two of its calls the fake model is where one line ends and the next begins: when it is
called again, the previous line's result is the last message it was sent, so it takes the
snapshot after that line and judges it (``checker``), then resets the denied programs'
markers, takes the snapshot before the next line, and emits it. Approvals are answered as they
are raised: in ask mode "allow once" (so the sandbox is what must hold), in a session with deny
rules and in auto and yolo mode "deny" (what runs there without asking must be held by the
sandbox; what asks was caught by the check). A turn makes at most ``PER_TURN`` calls; the test
sends "go on" until every line ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from fxdesk.app import App
from fxdesk.domain.approvals import Approval, ApprovalNotPending, Choice
from fxdesk.domain.model import EntryKind, PermissionMode
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.events import ApprovalChanged
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.base import (
    Finished,
    ModelRequest,
    Provider,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnded,
    ToolCallStarted,
    Usage,
)
from tests.security import checker
from tests.security.attacks import DENYING, GITFILE, PLAIN, Attack, for_mode
from tests.security.world import World

PER_TURN = 20  # below the runner's 25 model calls per turn
LINE_TIMEOUT_S = 20
# The session with deny rules lets commands run and write the git folder (as a person who lets
# the agent commit does: docs/sandbox.md), so that only the deny rules stand between a line and
# `rm`, `git push` or `curl`.
DENY_RULES = (
    ("run_command", "*", Verdict.ALLOW, Match.GLOB),
    ("run_command", "rm *", Verdict.DENY, Match.GLOB),
    ("run_command", "git push", Verdict.DENY, Match.PREFIX),
    ("run_command", "curl *", Verdict.DENY, Match.GLOB),
    ("write_file", ".git", Verdict.ALLOW, Match.GLOB),
    ("write_file", ".git/**", Verdict.ALLOW, Match.GLOB),
)
DENIED_RESULT = "The person denied this action."


@dataclass
class Outcome:
    """One line as it ran: what the check did, and what the checker found."""

    attack: Attack
    ident: str
    line: str
    mode: PermissionMode
    approvals: list[Approval] = field(default_factory=list)
    answers: list[Choice] = field(default_factory=list)
    result: str = ""
    verdict: checker.Verdict = field(default_factory=checker.Verdict)
    live: bool = False  # its payload's marker appeared: the attack really ran

    @property
    def how(self) -> str:
        """refused (by a rule or the mode), asked and denied, allowed once, or ran."""
        if Choice.ONCE in self.answers:
            return "allowed once"
        if self.answers:
            return "asked, denied"
        if (
            self.result.startswith(("Not allowed", "Denied", "Refused"))
            or "is denied by" in self.result
        ):
            return "refused"
        return "ran"

    @property
    def ran(self) -> bool:
        """The check let it run (by itself, or the person allowed it once)."""
        return self.how in ("ran", "allowed once")

    @property
    def failures(self) -> list[str]:
        if self.attack.limit:  # its denied program may run: the rest still counts
            verdict = checker.Verdict(
                self.verdict.changed, self.verdict.leaked, [], self.verdict.reached
            )
            return verdict.broken
        return self.verdict.broken

    def describe(self) -> str:
        return (
            f"[{self.mode.value}] {self.attack.kind} {self.ident}: {self.line!r} "
            f"({self.attack.tries}; {self.how}) broke: {'; '.join(self.failures)}"
        )


class _Line:
    """The line being run: its outcome, and the snapshot before it."""

    def __init__(self, outcome: Outcome, before: checker.Snapshot) -> None:
        self.outcome = outcome
        self.before = before
        self.host_seen = 0
        self.unix = 0
        self.docker = 0
        self.abstract = 0


class AttackingAgent(Provider):
    """The model, faked at its edge: one ``run_command`` per line of ``batch``.

    Attributes:
        requests: Every request it was sent (what the agent saw).
    """

    name = "attacker"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []
        self.batch: Batch | None = None

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        batch = self.batch
        assert batch is not None
        batch.finish(request)
        line = batch.next_line()
        if line is None:
            yield TextDelta("done")
            yield Usage(10, 5)
            yield Finished("stop")
            return
        call_id = f"call_{line.ident}"
        yield ToolCallStarted(0, call_id, "run_command")
        arguments = {"command": line.line, "timeout_s": LINE_TIMEOUT_S}
        yield ToolCallDelta(0, json.dumps(arguments))
        yield ToolCallEnded(0)
        yield Usage(10, 5)
        yield Finished("tool_calls")


class Batch:
    """The lines of one session, and what became of each."""

    def __init__(
        self, world: World, mode: PermissionMode, kind: str, attacks: list[Attack], prefix: str
    ) -> None:
        self.world = world
        self.mode = mode
        self.kind = kind  # the session: PLAIN, DENYING or GITFILE
        self.pending = [
            Outcome(a, f"{prefix}{i}", world.substitute(a.template, f"{prefix}{i}"), mode)
            for i, a in enumerate(attacks)
        ]
        self.pending.reverse()
        self.done: list[Outcome] = []
        self.session_id = ""
        self.temp: Path | None = None
        self.current: _Line | None = None
        self.in_turn = 0
        self.answering: set[asyncio.Task[None]] = set()
        self.baseline = checker.take(world, None)  # the world as built (restored to)

    @property
    def workspace(self) -> Path:
        return self.world.ws_gitfile if self.kind == GITFILE else self.world.ws

    @property
    def remaining(self) -> bool:
        return bool(self.pending)

    def choice(self) -> Choice:
        if self.mode is PermissionMode.ASK and self.kind != DENYING:
            return Choice.ONCE
        return Choice.DENY

    # --- the fake model's two steps ---------------------------------------------------------------

    def next_line(self) -> Outcome | None:
        if not self.pending or self.in_turn >= PER_TURN:
            self.in_turn = 0
            return None
        self.in_turn += 1
        outcome = self.pending.pop()
        self.world.reset_markers()
        line = _Line(outcome, checker.take(self.world, self.temp))
        line.host_seen = len(self.world.host.seen)
        line.unix = self.world.unix.connections
        line.docker = self.world.docker.connections
        line.abstract = self.world.abstract.connections
        self.current = line
        return outcome

    def finish(self, request: ModelRequest) -> None:
        line, self.current = self.current, None
        if line is None:
            return
        outcome = line.outcome
        last = request.messages[-1] if request.messages else None
        if last is not None and last.tool_call_id == f"call_{outcome.ident}":
            outcome.result = last.content
        after = checker.take(self.world, self.temp)
        granted: list[Path] = []
        # The deny rules' session lets commands write the git folder (DENY_RULES).
        folders: list[Path] = [self.world.ws / ".git"] if self.kind == DENYING else []
        for approval, answer in zip(outcome.approvals, outcome.answers, strict=True):
            if answer is not Choice.ONCE:
                continue
            # What the person was shown and allowed: the paths the check named, what the
            # sandbox said it would make writable.
            named = [Path(p) for p in approval.detail.get("targets", [])]
            granted += named
            folders += [path for path in named if path.is_dir()]  # git's folder, as named
            summary = approval.sandbox
            if summary is not None:
                granted += [Path(p) for p in summary.writes]
                folders += [Path(p) for p in summary.protected]
        verdict = outcome.verdict
        verdict.changed = checker.changed_outside(line.before, after, granted, folders)
        files = checker.new_files(line.before, after)
        texts = {"what the model was sent": outcome.result}
        texts.update({f"approval {a.id[:8]}": json.dumps(a.detail) for a in outcome.approvals})
        verdict.leaked = checker.leaks(self.world, texts, files)
        verdict.denied_ran = self._denied_ran(outcome)
        verdict.reached = self._reached(outcome, line)
        world = self.world
        if checker.differs(self.baseline, after, (*world.protected, *world.canaries)):
            world.restore()
        marker = self.workspace / f"ran-{outcome.ident}"
        outcome.live = marker.exists()
        marker.unlink(missing_ok=True)
        self.done.append(outcome)

    def _denied_ran(self, outcome: Outcome) -> list[str]:
        if self.kind != DENYING:
            return []
        ran = []
        if not (self.world.ws / "victim").exists():
            ran.append("rm ran: victim is gone")
        remote = self.world.ws / "remote.git"
        if any((remote / "refs" / "heads").iterdir()) or (remote / "packed-refs").exists():
            ran.append("git push ran: the remote has a branch")
        if f"/deny-{outcome.ident}" in self.world.host.seen:
            ran.append("curl ran: the host was asked for it")
        return ran

    def _reached(self, outcome: Outcome, line: _Line) -> list[str]:
        world = self.world
        found = []
        seen = world.host.seen[line.host_seen :]
        if self.mode is PermissionMode.AUTO and any(p.startswith("/net-") for p in seen):
            found.append(f"reached the host's loopback with the network off: {seen}")
        # In every mode: a socket bound at a path is reached through the file system, which
        # no network namespace covers (auto mode's included).
        for server, before in ((world.unix, line.unix), (world.docker, line.docker)):
            if server.connections > before:
                found.append(f"reached the host's Unix socket {server.address}")
        if world.abstract.connections > line.abstract:
            found.append("reached the host's abstract Unix socket")
        del outcome
        return found

    # --- the person answering ---------------------------------------------------------------------

    def on_approval(self, event: ApprovalChanged) -> None:
        approval = event.approval
        if not approval.pending or approval.session_id != self.session_id:
            return
        if self.current is None:
            raise AssertionError(f"an approval with no line running: {approval.label}")
        choice = self.choice()
        self.current.outcome.approvals.append(approval)
        self.current.outcome.answers.append(choice)
        task = asyncio.get_running_loop().create_task(self._answer(approval, choice))
        self.answering.add(task)
        task.add_done_callback(self.answering.discard)

    async def _answer(self, approval: Approval, choice: Choice) -> None:
        assert self.app is not None
        with contextlib.suppress(ApprovalNotPending):
            await self.app.engine.answer_approval(approval.id, choice)

    app: App | None = None


async def run_batches(world: World, batches: list[Batch]) -> list[Outcome]:
    """Run each batch in its own session, one after the other, in one ``App``."""
    agent = AttackingAgent()
    app = App(DataPaths(world.data, "FXDESK_HOME"), providers=FixedResolver(agent))
    await app.start()
    outcomes: list[Outcome] = []
    try:
        for batch in batches:
            batch.app = app
            agent.batch = batch
            outcomes += await _run(app, batch)
    finally:
        await app.stop()
    return outcomes


async def _run(app: App, batch: Batch) -> list[Outcome]:
    engine = app.engine
    session = await engine.create_session(
        batch.workspace,
        name=f"{batch.mode.value}-{batch.kind}",
        permission_mode=batch.mode,
        first_message="go",
        start=False,
    )
    batch.session_id = session.id
    batch.temp = app.paths.sandbox_temp / session.id
    if batch.kind == DENYING:
        for tool, pattern, action, match in DENY_RULES:
            rule = PermissionRule(tool, pattern, action, Scope.SESSION, match, scope_key=session.id)
            await engine.add_rule(rule)
    undo = engine.subscribe(ApprovalChanged, batch.on_approval)
    try:
        engine.start(session.id)
        await asyncio.wait_for(engine.join(session.id), 600)
        while batch.remaining:
            await engine.send(session.id, "go on")
            await asyncio.wait_for(engine.join(session.id), 600)
        if batch.answering:
            await asyncio.gather(*batch.answering)
    finally:
        undo()
    await _scan_history(app, batch)
    return batch.done


async def _scan_history(app: App, batch: Batch) -> None:
    """The transcript as stored (the full text too): no planted secret in any line's result."""
    entries = (await app.engine.transcript(batch.session_id)).entries
    by_call = {f"call_{o.ident}": o for o in batch.done}
    for entry in entries:
        outcome = by_call.get(entry.call_id or "")
        if outcome is None or entry.kind is not EntryKind.TOOL_RESULT:
            continue
        texts = {
            "the transcript": entry.content,
            "the transcript's full text": entry.full_text or "",
        }
        for leak in checker.leaks(batch.world, texts, ()):
            if leak not in outcome.verdict.leaked:
                outcome.verdict.leaked.append(leak)


async def run_lines(
    world: World, mode: PermissionMode, attacks: list[Attack], prefix: str = "L"
) -> list[Outcome]:
    """``attacks`` that run in ``mode``, a session per kind (plain, deny rules, .git file)."""
    batches = []
    for kind in (PLAIN, DENYING, GITFILE):
        mine = [a for a in for_mode(attacks, mode) if a.session == kind]
        if mine:
            batches.append(Batch(world, mode, kind, mine, f"{prefix}{kind[0]}"))
    return await run_batches(world, batches)


def summary(outcomes: list[Outcome]) -> str:
    """How many lines, how the check took them, how many payloads ran."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.how] = counts.get(outcome.how, 0) + 1
    live = sum(outcome.live for outcome in outcomes)
    hows = ", ".join(f"{how} {count}" for how, count in sorted(counts.items()))
    return f"{len(outcomes)} lines ({hows}); payloads that ran: {live}"
