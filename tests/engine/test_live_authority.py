"""Live authority: resolved for every tool action, revocable mid-turn (spec §2.7, §6.1; issue 10
item 5). Scenario 37 itself (revocation while an approval waits) is in test_permissions.py.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from pathlib import Path

from fxdesk.domain.approvals import Approval, Choice
from fxdesk.domain.authority import (
    Grant,
    LiveAuthority,
    Rule,
    ToolDecision,
    tool_decision,
)
from fxdesk.domain.model import PermissionMode, Session
from fxdesk.domain.permissions import Match, PermissionRule, Scope, Verdict
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.owner import Result
from fxdesk.tools.base import ToolRegistry
from fxdesk.tools.basic import basic_tools
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine, append_line, call, say, wait_until

UNAVAILABLE = "Not run: the tool 'write_file' is not available to this session now."


def told(engine: Engine) -> list[str]:
    """What the model was told about its tool calls, as of its latest request."""
    return [m.content for m in engine.provider.requests[-1].messages if m.role == "tool"]


def offered(engine: Engine, request: int) -> set[str]:
    return {tool.name for tool in engine.provider.requests[request].tools}


async def first_pending(engine: Engine) -> Approval:
    assert engine.permissions is not None
    deadline = asyncio.get_running_loop().time() + 20
    while not (found := await engine.permissions.pending()):
        assert asyncio.get_running_loop().time() < deadline, "no approval was raised"
        await asyncio.sleep(0.01)
    return found[0]


async def next_model_call(engine: Engine, count: int) -> None:
    """Let the held turn go on until its ``count``-th model call waits."""
    engine.provider.release()
    engine.provider.hold()
    await wait_until(lambda: len(engine.provider.requests) == count and engine.provider.entered)


async def test_a_tool_revoked_mid_turn_is_unavailable_at_the_next_action_and_can_come_back(
    tmp_path: Path,
) -> None:
    names = tuple(tool.name for tool in basic_tools())
    authority = HostAuthority(tool_names=names)
    steps = [append_line(f"{n}.txt", n) for n in "abc"] + [say("done")]
    engine = await Engine.create(tmp_path, steps, authority=authority)
    try:
        session = await engine.root_session("write three files")
        await engine.start_blocked(session.id)
        await next_model_call(engine, 2)  # a.txt written
        assert "write_file" in offered(engine, 1)

        authority.update(tool_names=tuple(n for n in names if n != "write_file"))
        await next_model_call(engine, 3)  # b.txt: the live authority says unavailable
        assert told(engine)[-1] == UNAVAILABLE
        assert "write_file" not in offered(engine, 2)  # no longer offered to the model

        authority.update(tool_names=names)  # back (a tool that comes and goes)
        engine.provider.release()
        assert await asyncio.wait_for(engine.owner.join(session.id), 20) == Result.IDLE
        assert "write_file" in offered(engine, 3)
        assert [(engine.workspace / f"{n}.txt").exists() for n in "abc"] == [True, False, True]
        phases = [p for kind, p in await engine.deliveries(session.id) if kind == "tool_activity"]
        assert phases == ["started", "succeeded", "denied", "started", "succeeded"]
    finally:
        await engine.close()


@dataclass
class RevokesRightAfterDeciding(HostAuthority):
    """Revokes every tool just after the next action's authority is resolved: the decision is
    made under the old generation, the action would start under the new one."""

    revoke_next: bool = False

    def resolve(self, session: Session, mode: PermissionMode) -> LiveAuthority:
        live = super().resolve(session, mode)
        if self.revoke_next:
            self.revoke_next = False
            revoke = functools.partial(self.update, tool_names=())
            asyncio.get_running_loop().call_soon(revoke)  # runs inside the permission check
        return live


async def test_an_action_decided_under_a_generation_since_replaced_is_decided_again(
    tmp_path: Path,
) -> None:
    names = tuple(tool.name for tool in all_tools())
    authority = RevokesRightAfterDeciding(tool_names=names)
    engine = await Engine.create(
        tmp_path,
        [append_line("x.txt", "x"), say("done")],
        authority=authority,
        permissions=True,
        tools=ToolRegistry(all_tools()),
    )
    try:
        session = await engine.root_session("write")  # yolo: the check allows it
        await engine.start_blocked(session.id)
        before = authority.generation
        authority.revoke_next = True
        engine.provider.release()
        assert await asyncio.wait_for(engine.owner.join(session.id), 20) == Result.IDLE
        assert authority.generation == before + 1
        assert not (engine.workspace / "x.txt").exists()  # never started under the new rights
        assert told(engine) == [UNAVAILABLE]
        assert await engine.deliveries(session.id) == [
            ("tool_activity", "denied"),  # no "started": the stale start was rolled back
            ("terminal", "completed"),
        ]
    finally:
        await engine.close()


async def test_a_host_grant_counts_while_it_is_there_and_a_grant_revoked_mid_turn_asks(
    tmp_path: Path,
) -> None:
    names = tuple(tool.name for tool in all_tools())
    authority = HostAuthority(tool_names=names, grants=(Grant("run_command", "ls"),))
    step = call("run_command", command="ls")
    engine = await Engine.create(
        tmp_path,
        [step, step, say("done")],
        authority=authority,
        permissions=True,
        tools=ToolRegistry(all_tools()),
    )
    assert engine.permissions is not None
    try:
        created = await engine.sessions.create_root(
            engine.workspace, name="ask", permission_mode=PermissionMode.ASK, first_message="a"
        )
        await engine.start_blocked(created.id)
        await next_model_call(engine, 2)  # the first ls ran: granted, nothing asked
        assert await engine.permissions.pending() == []
        assert len(told(engine)) == 1

        authority.update(grants=())  # the admission snapshot still holds the grant
        engine.provider.release()
        approval = await first_pending(engine)
        assert approval.label == "ls" and approval.detail["generation"] == authority.generation
        await engine.permissions.resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(created.id), 20) == Result.IDLE
        assert len(told(engine)) == 2
    finally:
        await engine.close()


def test_the_live_decision_is_unavailable_first_then_the_check() -> None:
    live = LiveAuthority(
        generation=3,
        root_id="root",
        tools=("read_file", "run_command"),
        sandbox="none",
        integrations=(),
        rules=(Rule("run_command", "git *", "deny"),),
        grants=(Grant("read_file", "/w/a.txt"),),
        permission_mode=PermissionMode.AUTO,
    )
    admitted = ("read_file", "write_file", "run_command")
    assert tool_decision(live, "write_file", admitted, Verdict.ALLOW) == ToolDecision.UNAVAILABLE
    assert tool_decision(live, "run_command", ("read_file",), Verdict.ALLOW) == (
        ToolDecision.UNAVAILABLE  # added by the host after admission: joins at the next one
    )
    assert tool_decision(live, "read_file", admitted, Verdict.ASK) == ToolDecision.ASK
    assert live.permission_rules("s1") == (
        PermissionRule("run_command", "git *", Verdict.DENY, Scope.GLOBAL, Match.GLOB),
        PermissionRule(
            "read_file", "/w/a.txt", Verdict.ALLOW, Scope.SESSION, Match.EXACT, scope_key="s1"
        ),
    )
