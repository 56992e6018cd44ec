"""The modes and the sandbox through the whole engine: real store, real bubblewrap, real
commands, a real HTTP server on the host's loopback, a scripted model.

- auto: a command that needs the network asks "needs the network"; allowed, it reaches the
  host; denied, it never runs; the workspace's network setting or an allow rule naming the
  program lets it through without asking. A command the table does not know fails without
  the network, and its result tells the model how to ask.
- An approval of a command says what its sandbox would let through.
- "Run outside the sandbox, once": that call sees what the sandbox hides; the next one asks
  again and runs inside.
- unrestricted: refused while its setting is off; on, commands run outside the sandbox;
  turned off again, the session runs as yolo, in the sandbox.
- No sandbox on this machine: auto asks before ``ls``; yolo runs it and says so.

Everything lives under /var/tmp: the sandbox's /tmp is its own, so a file under the host's
/tmp would prove nothing.
"""

from __future__ import annotations

import asyncio
import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fxdesk import messages
from fxdesk.domain.approvals import Approval, ApprovalStatus, Choice, ChoiceNotOffered
from fxdesk.domain.authority import LiveAuthority
from fxdesk.domain.model import UNRESTRICTED_SETTING, EntryKind, PermissionMode, Session
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.domain.sandbox_settings import WorkspaceSandbox
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.errors import SessionError
from fxdesk.engine.events import ApprovalChanged
from fxdesk.engine.owner import Result
from fxdesk.providers.scripted import Reply
from fxdesk.store import history, repo
from fxdesk.tools import sandbox_probe
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.registry import all_tools
from fxdesk.tools.sandbox_probe import SandboxStatus
from fxdesk.tools.shell import NETWORK_HINT
from tests.engine.harness import Engine, call, say, wait_until
from tests.host_server import GREETING, Host, serving

AUTO, ASK, YOLO = PermissionMode.AUTO, PermissionMode.ASK, PermissionMode.YOLO
UNRESTRICTED = PermissionMode.UNRESTRICTED
NEEDS_NETWORK = "needs the network (auto mode runs commands without it)"
PYTHON = "/usr/bin/python3"  # the system's: a venv or pyenv shim may live where HOME is faked

pytestmark = pytest.mark.skipif(
    not sandbox_probe.sandbox_status().available, reason="needs a working bubblewrap"
)


@pytest.fixture
def host() -> Iterator[Host]:
    with serving() as found:
        yield found


@pytest.fixture
def place(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder under /var/tmp with a fake home holding ``~/.ssh/marker`` (hidden in the
    sandbox) and a workspace."""
    root = Path(tempfile.mkdtemp(prefix="fxdesk-modes-", dir="/var/tmp")).resolve()
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "marker").write_text("only outside the sandbox\n")
    (root / "ws").mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield root
    shutil.rmtree(root, ignore_errors=True)


Answer = Callable[[Approval], Choice]


@dataclass
class Run:
    asked: list[Approval] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    answered: list[Approval] = field(default_factory=list)
    refused: list[Exception] = field(default_factory=list)  # answers tried and refused


async def run_turn(
    place: Path,
    steps: list[Reply],
    mode: PermissionMode,
    answer: Answer | Choice = Choice.DENY,
    *,
    rules: tuple[PermissionRule, ...] = (),
    sandbox: WorkspaceSandbox | None = None,
    unrestricted: bool | None = None,
    first_try: Choice | None = None,
) -> Run:
    """One turn making ``steps``' calls in ``mode``; each approval is answered by ``answer``
    (after ``first_try``, when given, was refused)."""
    engine = await Engine.create(
        place / "data", [*steps, say("done")], permissions=True, tools=ToolRegistry(all_tools())
    )
    service = engine.permissions
    assert service is not None
    run = Run()
    try:
        for rule in rules:
            await service.add_rule(rule)
        if unrestricted is not None:
            await engine.store.write(lambda: repo.set_setting(UNRESTRICTED_SETTING, unrestricted))
        created = await engine.sessions.create_root(
            place / "ws", name="modes", permission_mode=mode, first_message="go"
        )
        if unrestricted is False and mode is UNRESTRICTED:
            pytest.fail("created an unrestricted session while the setting is off")
        if sandbox is not None:
            settings = sandbox
            await engine.store.write(
                lambda: repo.set_workspace_sandbox(created.workspace_id, settings)
            )
        engine.owner.start(created.id)
        done = asyncio.ensure_future(engine.owner.join(created.id))
        deadline = asyncio.get_running_loop().time() + 60
        while not done.done():
            for approval in await service.pending(created.id):
                run.asked.append(approval)
                if first_try is not None:
                    with pytest.raises(ChoiceNotOffered) as refused:
                        await service.resolve(approval.id, first_try)
                    run.refused.append(refused.value)
                    assert (await service.get(approval.id)) == approval  # unchanged, pending
                choice = answer(approval) if callable(answer) else answer
                run.answered.append(await service.resolve(approval.id, choice))
            await asyncio.wait({done}, timeout=0.01)
            assert asyncio.get_running_loop().time() < deadline, "the turn did not end"
        assert done.result() == Result.IDLE
        rows = await engine.store.read(lambda: history.page_history(created.id, 0, 10_000))
        run.results = [r.content for r in rows if r.kind is EntryKind.TOOL_RESULT]
    finally:
        await engine.close()
    return run


def command(line: str, **more: object) -> Reply:
    return call("run_command", command=line, **more)


def curl(host: Host) -> str:
    return f"curl -sS --max-time 5 {host.url}/curl"


def allow(pattern: str) -> PermissionRule:
    return PermissionRule("run_command", pattern, Verdict.ALLOW, Scope.GLOBAL, Match.GLOB)


# --- the network in auto mode -------------------------------------------------------------------


async def test_auto_asks_before_curl_and_allowed_once_it_reaches_the_host(
    place: Path, host: Host
) -> None:
    run = await run_turn(place, [command(curl(host))], AUTO, Choice.ONCE)
    (approval,) = run.asked
    assert approval.detail["reason"] == f"`{curl(host)}` {NEEDS_NETWORK}"
    assert approval.detail["network"] == [curl(host)]
    assert GREETING in run.results[0], run.results
    assert host.seen == ["/curl"]


async def test_denied_it_never_runs(place: Path, host: Host) -> None:
    run = await run_turn(place, [command(curl(host))], AUTO, Choice.DENY)
    assert len(run.asked) == 1
    assert run.results == ["The person denied this action."]
    assert host.seen == []


async def test_a_workspace_that_gives_the_network_does_not_ask(place: Path, host: Host) -> None:
    settings = WorkspaceSandbox(network=True)
    run = await run_turn(place, [command(curl(host))], AUTO, sandbox=settings)
    assert run.asked == []
    assert GREETING in run.results[0]
    assert host.seen == ["/curl"]


async def test_an_allow_rule_naming_curl_does_not_ask(place: Path, host: Host) -> None:
    run = await run_turn(place, [command(curl(host))], AUTO, rules=(allow("curl *"),))
    assert run.asked == []
    assert GREETING in run.results[0]
    assert host.seen == ["/curl"]


async def test_a_rule_for_every_command_still_asks_for_the_network(place: Path, host: Host) -> None:
    run = await run_turn(place, [command(curl(host))], AUTO, Choice.DENY, rules=(allow("*"),))
    assert [a.detail["reason"] for a in run.asked] == [f"`{curl(host)}` {NEEDS_NETWORK}"]
    assert host.seen == []


async def test_a_command_the_table_does_not_know_fails_with_the_hint(
    place: Path, host: Host
) -> None:
    """Not in the table: it runs without asking and without the network. Its failure (the
    host's loopback is not the sandbox's; no name resolves) carries the hint; asked again with
    ``network: true``, it asks and, allowed, reaches the host."""
    fetch = f"{PYTHON} -c \"import urllib.request as u; print(u.urlopen('{host.url}/py').read())\""
    resolve = f"{PYTHON} -c \"import socket; socket.getaddrinfo('example.org', 80)\""
    steps = [command(fetch), command(resolve), command(fetch, network=True)]
    run = await run_turn(place, steps, AUTO, Choice.ONCE)
    refused, unresolved, reached = run.results
    for failed in (refused, unresolved):
        assert failed.endswith(NETWORK_HINT), failed
        assert GREETING not in failed
    assert "Connection refused" in refused
    assert "name resolution" in unresolved or "Name or service" in unresolved, unresolved
    (approval,) = run.asked
    assert "the agent says it needs the network" in approval.detail["reason"]
    assert GREETING in reached and NETWORK_HINT not in reached
    assert host.seen == ["/py"]


async def test_a_command_that_succeeds_or_has_the_network_gets_no_hint(
    place: Path, host: Host
) -> None:
    steps = [command("echo 'Could not resolve host: in a file'"), command(curl(host))]
    run = await run_turn(place, steps, YOLO)
    assert all(NETWORK_HINT not in result for result in run.results), run.results


# --- what the approval says the sandbox lets through --------------------------------------------


def summary_of(approval: Approval) -> list[str]:
    assert approval.sandbox is not None, approval.detail
    return approval.sandbox.lines()


async def test_the_approval_says_what_the_sandbox_lets_through(place: Path, host: Host) -> None:
    outside = place / "out"
    outside.mkdir()
    repo_dir = place / "ws"
    for args in (["init", "-q"], ["-c", "user.email=t@x", "-c", "user.name=t", "commit",
                                   "-q", "--allow-empty", "-m", "first"]):  # fmt: skip
        proc = await asyncio.create_subprocess_exec("git", *args, cwd=repo_dir)
        assert await proc.wait() == 0
    plain = await run_turn(place, [command("ls")], ASK)
    written = await run_turn(place, [command(f"echo x > {outside}/new.txt")], AUTO)
    git = await run_turn(place, [command("git -c user.email=t@x -c user.name=t commit "
                                         "-q --allow-empty -m second")], AUTO)  # fmt: skip
    network = await run_turn(place, [command(curl(host))], AUTO)
    assert summary_of(plain.asked[0]) == [
        "Sandbox: may write the workspace and /tmp; network on"  # ask mode: on, as before
    ]
    assert summary_of(written.asked[0]) == [
        f"Sandbox: may write the workspace, /tmp and {outside / 'new.txt'}; network off"
    ]
    assert summary_of(git.asked[0]) == [
        f"Sandbox: may write the workspace, /tmp and {repo_dir / '.git'} (protected); network off"
    ]
    assert summary_of(network.asked[0]) == ["Sandbox: may write the workspace and /tmp; network on"]
    # A file tool's approval has no sandbox, and no "run outside" choice.
    edit = await run_turn(place, [call("write_file", path=f"{outside}/f", content="x")], AUTO)
    assert edit.asked[0].sandbox is None and not edit.asked[0].offers_outside


# --- run outside the sandbox, once --------------------------------------------------------------


async def test_run_outside_the_sandbox_sees_what_it_hides_once_only(place: Path) -> None:
    marker = place / "home" / ".ssh" / "marker"
    line = f"cat {marker}; cat /proc/$PPID/comm"
    answers = iter([Choice.ONCE_UNSANDBOXED, Choice.ONCE])
    run = await run_turn(place, [command(line), command(line)], ASK, lambda _: next(answers))
    first, second = run.asked  # the same command asks again: that answer was used up
    assert first.offers_outside and second.offers_outside
    outside, inside = run.results
    assert "only outside the sandbox" in outside
    assert "bwrap" not in outside  # its parent is fxdesk's bash, not bubblewrap's init
    assert outside.rstrip().endswith(
        "[ran outside the sandbox: the person allowed this one command outside the sandbox]"
    )
    assert "only outside the sandbox" not in inside and "bwrap" in inside
    assert "ran outside the sandbox" not in inside
    unsandboxed, once = run.answered
    assert unsandboxed.status is ApprovalStatus.ALLOWED_ONCE
    assert unsandboxed.resolution == {"choice": "unsandboxed", "unsandboxed": True}
    assert unsandboxed.unsandboxed and not once.unsandboxed


@dataclass
class ChangesAfterTheAnswer(HostAuthority):
    """Changes (a new generation, the same rights) right after the first resolve once armed:
    the call allowed just now is decided again before it starts."""

    armed: bool = False

    def resolve(self, session: Session, mode: PermissionMode) -> LiveAuthority:
        live = super().resolve(session, mode)
        if self.armed:
            self.armed = False
            asyncio.get_running_loop().call_soon(functools.partial(self.update, grants=()))
        return live


async def test_run_outside_holds_when_the_call_is_decided_again(place: Path) -> None:
    """The host's authority changes between the answer and the start: the call is decided
    again, and what the person chose for it, running outside the sandbox, still holds."""
    authority = ChangesAfterTheAnswer(tool_names=tuple(tool.name for tool in all_tools()))
    line = f"cat {place / 'home' / '.ssh' / 'marker'}"
    engine = await Engine.create(
        place / "data",
        [command(line), say("done")],
        authority=authority,
        permissions=True,
        tools=ToolRegistry(all_tools()),
    )
    service = engine.permissions
    assert service is not None
    try:
        created = await engine.sessions.create_root(
            place / "ws", name="again", permission_mode=ASK, first_message="go"
        )
        engine.owner.start(created.id)
        await wait_until(lambda: engine.events and any(
            isinstance(e, ApprovalChanged) for e in engine.events))  # fmt: skip
        (approval,) = await service.pending(created.id)
        before = authority.generation
        authority.armed = True
        await service.resolve(approval.id, Choice.ONCE_UNSANDBOXED)
        assert await asyncio.wait_for(engine.owner.join(created.id), 30) == Result.IDLE
        rows = await engine.store.read(lambda: history.page_history(created.id, 0, 10_000))
    finally:
        await engine.close()
    assert authority.generation == before + 1  # it did change in between
    (result,) = [r.content for r in rows if r.kind is EntryKind.TOOL_RESULT]
    assert "only outside the sandbox" in result and "[ran outside the sandbox:" in result


async def test_run_outside_is_not_offered_for_a_file_edit(place: Path) -> None:
    step = call("write_file", path="a.txt", content="x")
    run = await run_turn(place, [step], ASK, Choice.DENY, first_try=Choice.ONCE_UNSANDBOXED)
    (error,) = run.refused
    assert "is not a command that would run in the sandbox" in str(error)
    assert not (place / "ws" / "a.txt").exists()


# --- unrestricted --------------------------------------------------------------------------------


async def test_unrestricted_is_refused_while_its_setting_is_off(place: Path) -> None:
    engine = await Engine.create(place / "data", [], permissions=True)
    try:
        with pytest.raises(SessionError, match=UNRESTRICTED_SETTING):
            await engine.sessions.create_root(place / "ws", permission_mode=UNRESTRICTED)
        asked = await engine.sessions.create_root(place / "ws", permission_mode=ASK)
        with pytest.raises(SessionError, match=UNRESTRICTED_SETTING):
            await engine.sessions.configure(asked.id, permission_mode=UNRESTRICTED)
        assert (await engine.session(asked.id)).permission_mode is ASK
    finally:
        await engine.close()


async def test_unrestricted_runs_outside_the_sandbox_without_asking(place: Path) -> None:
    marker = place / "home" / ".ssh" / "marker"
    run = await run_turn(place, [command(f"cat {marker}")], UNRESTRICTED, unrestricted=True)
    assert run.asked == []
    (result,) = run.results
    assert "only outside the sandbox" in result
    assert result.rstrip().endswith("[ran outside the sandbox: unrestricted mode]")


async def test_unrestricted_turned_off_runs_as_yolo_in_the_sandbox_and_says_so_once(
    place: Path,
) -> None:
    marker = place / "home" / ".ssh" / "marker"
    engine = await Engine.create(
        place / "data",
        [command(f"cat {marker}"), command(f"cat {marker}"), say("done")],
        permissions=True,
        tools=ToolRegistry(all_tools()),
    )
    told: list[messages.Message] = []
    detach = messages.hub.attach(told.append)
    try:
        await engine.store.write(lambda: repo.set_setting(UNRESTRICTED_SETTING, True))
        created = await engine.sessions.create_root(
            place / "ws", name="was free", permission_mode=UNRESTRICTED, first_message="go"
        )
        await engine.store.write(lambda: repo.set_setting(UNRESTRICTED_SETTING, False))
        assert await engine.run(created.id) == Result.IDLE
        rows = await engine.store.read(lambda: history.page_history(created.id, 0, 10_000))
    finally:
        detach()
        await engine.close()
    results = [r.content for r in rows if r.kind is EntryKind.TOOL_RESULT]
    assert len(results) == 2
    for result in results:
        assert "only outside the sandbox" not in result and "No such file" in result
        assert "ran outside the sandbox" not in result
    said = [m.text for m in told if "unrestricted mode" in m.text]
    assert said == [
        "Session “was free” is in unrestricted mode, which is turned off in Settings → General: "
        "it runs as yolo, in the sandbox."
    ]


# --- no sandbox on this machine ------------------------------------------------------------------


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    missing = SandboxStatus(False, reason="bubblewrap is not installed", fix="apt install it")
    monkeypatch.setattr(sandbox_probe, "probe", lambda: missing)
    sandbox_probe.forget_status()
    yield
    sandbox_probe.forget_status()


async def test_without_a_sandbox_auto_asks_before_ls(place: Path, no_sandbox: None) -> None:
    run = await run_turn(place, [command("ls")], AUTO, Choice.ONCE)
    (approval,) = run.asked
    assert approval.detail["reason"] == (
        "no sandbox on this machine: bubblewrap is not installed; "
        "auto mode asks before each command"
    )
    assert summary_of(approval) == [
        "Outside the sandbox: no sandbox on this machine (bubblewrap is not installed)"
    ]
    assert not approval.offers_outside  # it would run outside anyway
    assert (
        run.results[0]
        .rstrip()
        .endswith(
            "[ran outside the sandbox: no sandbox on this machine (bubblewrap is not installed)]"
        )
    )


async def test_without_a_sandbox_yolo_runs_and_says_it_ran_unconfined(
    place: Path, no_sandbox: None
) -> None:
    marker = place / "home" / ".ssh" / "marker"
    run = await run_turn(place, [command(f"cat {marker}")], YOLO)
    assert run.asked == []
    (result,) = run.results
    assert "only outside the sandbox" in result  # nothing hides it: said plainly below
    assert result.rstrip().endswith(
        "[ran outside the sandbox: no sandbox on this machine (bubblewrap is not installed)]"
    )
