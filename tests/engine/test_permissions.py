"""Permissions through the whole engine: real store, real tools, scripted model.

Spec child-sessions §6 and scenarios 30, 31, 35, 36, 37, 57, 58 and 59 (by number below); the
pure decision table lives in tests/domain/test_permissions.py.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fxdesk.domain.approvals import Approval, ApprovalNotPending, ApprovalStatus, Choice
from fxdesk.domain.authority import Rule as HostRule
from fxdesk.domain.authority import ToolDecision, tool_decision
from fxdesk.domain.conversation import ToolCall
from fxdesk.domain.model import PermissionMode, SessionState, WorkStatus
from fxdesk.domain.permissions import Decision, Match, PermissionRule, Scope, Verdict
from fxdesk.engine.authority import HostAuthority
from fxdesk.engine.errors import ErrorCode, RegistryClosed
from fxdesk.engine.owner import Result
from fxdesk.engine.permissions import Check, PermissionService, edit_preview
from fxdesk.store import approvals as approvals_store
from fxdesk.tools.base import (
    Tool,
    ToolAccess,
    ToolContext,
    ToolFacts,
    ToolRegistry,
    ToolResult,
    schema,
)
from fxdesk.tools.registry import all_tools
from tests.engine.harness import Engine, call, say, wait_until

FXDESK = [sys.executable, "-m", "fxdesk"]


async def make(tmp_path: Path, steps: list[object], **kwargs: object) -> Engine:
    return await Engine.create(
        tmp_path,
        steps,
        permissions=True,
        tools=ToolRegistry(all_tools()),
        **kwargs,  # type: ignore[arg-type]
    )


def service(engine: Engine) -> PermissionService:
    assert engine.permissions is not None
    return engine.permissions


async def session(engine: Engine, mode: PermissionMode, message: str = "go") -> str:
    created = await engine.sessions.create_root(
        engine.workspace, name="perm", permission_mode=mode, first_message=message
    )
    return created.id


async def pending(engine: Engine, count: int = 1) -> list[Approval]:
    found: list[Approval] = []

    async def look() -> bool:
        found[:] = await service(engine).pending()
        return len(found) >= count

    deadline = asyncio.get_running_loop().time() + 20
    while not await look():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"expected {count} pending approval(s), found {found}")
        await asyncio.sleep(0.01)
    return found


def tool_results(engine: Engine) -> list[str]:
    """What the model was told about its tool calls, in order, as of its latest call."""
    if not engine.provider.requests:
        return []
    return [m.content for m in engine.provider.requests[-1].messages if m.role == "tool"]


async def approval_status(engine: Engine, approval_id: str) -> ApprovalStatus:
    found = await service(engine).get(approval_id)
    assert found is not None
    return found.status


# --- asking, answering ---------------------------------------------------------------------------


async def test_ask_waits_durably_and_allow_once_runs_the_action_once(tmp_path: Path) -> None:
    engine = await make(tmp_path, [call("write_file", path="notes.txt", content="hi"), say("done")])
    try:
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert approval.tool == "write_file" and approval.label.endswith("/notes.txt")
        assert "write" in approval.detail["reason"]
        # Durable: the item and the session wait for the person, nothing was written.
        assert [i.status for i in await engine.items(sid)] == [WorkStatus.AWAITING_APPROVAL]
        assert (await engine.session(sid)).state == SessionState.AWAITING_APPROVAL
        assert not (engine.workspace / "notes.txt").exists()

        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert (engine.workspace / "notes.txt").read_text() == "hi"
        assert await approval_status(engine, approval.id) == ApprovalStatus.ALLOWED_ONCE
        with pytest.raises(ApprovalNotPending, match="no longer pending"):
            await service(engine).resolve(approval.id, Choice.ONCE)
    finally:
        await engine.close()


async def test_deny_tells_the_model_why_and_nothing_runs(tmp_path: Path) -> None:
    engine = await make(
        tmp_path, [call("write_file", path="x.txt", content="x"), say("understood")]
    )
    try:
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        await service(engine).resolve(approval.id, Choice.DENY, reason="not this file")
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert not (engine.workspace / "x.txt").exists()
        assert tool_results(engine) == ["The person denied this action: not this file"]
    finally:
        await engine.close()


async def test_allow_for_this_session_stops_the_same_question(tmp_path: Path) -> None:
    step = call("run_command", command="ls -a")
    engine = await make(tmp_path, [step, step, say("done"), step, say("again")])
    try:
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert approval.detail["uncovered"] == ["ls -a"]
        answered = await service(engine).resolve(approval.id, Choice.SESSION)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        (rule,) = await service(engine).rules()
        assert (rule.tool, rule.pattern, rule.match, rule.scope, rule.scope_key) == (
            "run_command",
            "ls -a",
            Match.EXACT,
            Scope.SESSION,
            sid,
        )
        assert answered.resolution["rules"] == [rule.id]
        # The second call and a later turn ran without asking.
        await engine.sessions.send(sid, "again")
        assert await engine.run(sid) == Result.IDLE
        assert await service(engine).pending() == []
        assert len(tool_results(engine)) == 3
    finally:
        await engine.close()


async def test_always_allow_stores_a_workspace_rule_others_sessions_use(tmp_path: Path) -> None:
    step = call("run_command", command="git status")
    engine = await make(tmp_path, [step, say("one"), step, say("two")])
    try:
        first = await session(engine, PermissionMode.ASK)
        engine.owner.start(first)
        (approval,) = await pending(engine)
        await service(engine).resolve(approval.id, Choice.ALWAYS)
        assert await asyncio.wait_for(engine.owner.join(first), 20) == Result.IDLE
        (rule,) = await service(engine).rules()
        assert (rule.scope, rule.pattern, rule.action) == (
            Scope.WORKSPACE,
            "git status",
            Verdict.ALLOW,
        )
        second = await session(engine, PermissionMode.ASK)
        assert await engine.run(second) == Result.IDLE
        assert await service(engine).pending() == []
    finally:
        await engine.close()


async def test_rules_are_re_read_for_every_action(tmp_path: Path) -> None:
    step = call("run_command", command="ls")
    engine = await make(tmp_path, [step, step, say("done")])
    try:
        rule = await service(engine).add_rule(
            PermissionRule("run_command", "ls", Verdict.ALLOW, Scope.GLOBAL)
        )
        sid = await session(engine, PermissionMode.ASK)
        await engine.start_blocked(sid)  # the first model call waits
        engine.provider.release()
        engine.provider.hold()  # ... and so will the second, after the first ls ran
        await wait_until(
            lambda: engine.provider.entered == 1 and len(engine.provider.requests) == 2
        )
        assert len(tool_results(engine)) == 1  # the first ls ran: the rule allowed it
        # Revoked mid-turn: the next action sees it.
        assert rule.id is not None and await service(engine).remove_rule(rule.id)
        engine.provider.release()
        (approval,) = await pending(engine)
        assert approval.label == "ls"
        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
    finally:
        await engine.close()


async def test_a_child_never_has_more_authority_than_its_parent(tmp_path: Path) -> None:
    engine = await make(tmp_path, [call("write_file", path="c.txt", content="c"), say("ok")])
    try:
        parent = await engine.sessions.create_root(
            engine.workspace, name="parent", permission_mode=PermissionMode.ASK
        )
        child = await engine.sessions.create_child(
            parent.id, name="child", first_message="write", permission_mode=PermissionMode.YOLO
        )
        engine.owner.start(child.id)
        (approval,) = await pending(engine)
        assert approval.session_id == child.id and approval.detail["mode"] == "ask"
        await service(engine).resolve(approval.id, Choice.ONCE)
        await asyncio.wait_for(engine.owner.join(child.id), 20)
        assert (engine.workspace / "c.txt").read_text() == "c"
    finally:
        await engine.close()


# --- the workspace boundary with real file tools -----------------------------------------------


@pytest.mark.parametrize("how", ["traversal", "symlink"])
async def test_leaving_the_workspace_asks_in_auto_and_a_deny_rule_wins_in_yolo(
    tmp_path: Path, how: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    engine = await make(tmp_path / "e", [])
    (engine.workspace / "link").symlink_to(outside)
    path = "../../outside/secret.txt" if how == "traversal" else "link/secret.txt"
    step = call("read_file", path=path)
    engine.provider.steps[:] = [step, say("auto done"), step, say("yolo done")]
    try:
        sid = await session(engine, PermissionMode.AUTO)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert approval.label == str((outside / "secret.txt").resolve())
        assert approval.detail["outside"] is True
        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert "top secret" in tool_results(engine)[0]  # approved: the tool may reach it

        await service(engine).add_rule(
            PermissionRule("*", str(outside) + "/*", Verdict.DENY, Scope.GLOBAL, Match.GLOB)
        )
        yolo = await session(engine, PermissionMode.YOLO)
        assert await engine.run(yolo) == Result.IDLE
        assert await service(engine).pending() == []
        told = tool_results(engine)[-1]
        assert told.startswith("Not allowed:") and "top secret" not in told
    finally:
        await engine.close()


# --- spec scenarios ---------------------------------------------------------------------------


async def test_scenario_30_cancel_releases_a_waiting_turn_as_cancelled(tmp_path: Path) -> None:
    """Scenario 30: a child's turn blocks on a real, durable approval ("mkdir blocked"). Once
    it is pending (item and session awaiting approval, one waiting route), cancel -> 1; the
    waiter is released at once (join -> cancelled within 5 s, no route left) and the action
    never runs; the approval is cancelled and answering it afterwards is refused."""
    engine = await make(tmp_path, [call("run_command", command="mkdir blocked"), say("never")])
    try:
        root = await engine.sessions.create_root(
            engine.workspace, name="parent", permission_mode=PermissionMode.ASK
        )
        child = await engine.sessions.create_child(
            root.id, name="child", first_message="go", permission_mode=PermissionMode.ASK
        )
        sid = child.id
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert approval.session_id == sid
        await wait_until(lambda: service(engine).routes == 1)  # the turn waits for the answer
        assert (await engine.session(sid)).state == SessionState.AWAITING_APPROVAL
        assert [i.status for i in await engine.items(sid)] == [WorkStatus.AWAITING_APPROVAL]
        assert await engine.owner.cancel(sid, "user cancelled") == 1
        assert await asyncio.wait_for(engine.owner.join(sid), 5) == Result.CANCELLED
        assert service(engine).routes == 0
        assert await approval_status(engine, approval.id) == ApprovalStatus.CANCELLED
        with pytest.raises(ApprovalNotPending):
            await service(engine).resolve(approval.id, Choice.ONCE)
        assert [(i.status, i.reason) for i in await engine.items(sid)] == [
            (WorkStatus.CANCELLED, "user cancelled")
        ]
        assert not (engine.workspace / "blocked").exists()
        assert len(engine.provider.requests) == 1
    finally:
        await engine.close()


async def test_scenario_31_shutdown_releases_the_waiter_restart_marks_it_stale_resume_asks(
    tmp_path: Path,
) -> None:
    steps = [call("run_command", command="mkdir made"), say("done")]
    engine = await make(tmp_path, steps)
    sid = await session(engine, PermissionMode.ASK)
    engine.owner.start(sid)
    (approval,) = await pending(engine)
    await wait_until(lambda: service(engine).routes == 1)  # the turn waits for the answer
    commits = engine.faults.commits_seen
    await asyncio.wait_for(engine.owner.shutdown(), 5)
    # The waiter was released before the join (the slot ended), no route is left, and the
    # closed registry refuses both an answer and a new registration, writing nothing.
    assert engine.owner.last_result(sid) == Result.OWNER_STOPPED
    assert service(engine).routes == 0
    with pytest.raises(RegistryClosed) as refused:
        await service(engine).resolve(approval.id, Choice.ONCE)
    assert refused.value.code == ErrorCode.CLOSED
    check = Check(Decision(Verdict.ASK, "asks", ("mkdir other",)), "mkdir other", False, {})
    s = await engine.session(sid)
    with pytest.raises(RegistryClosed):
        await service(engine).ask(s, approval.work_id, "call_x", "run_command", "{}", check)
    assert engine.faults.commits_seen == commits  # shutdown wrote nothing durable
    await engine.close()
    reopened = await engine.reopen(steps[1:], tools=ToolRegistry(all_tools()))
    try:
        assert await approval_status(reopened, approval.id) == ApprovalStatus.PENDING
        report = await reopened.owner.recover()
        assert report.work_interrupted == 1
        assert await approval_status(reopened, approval.id) == ApprovalStatus.STALE
        assert [i.status for i in await reopened.items(sid)] == [WorkStatus.INTERRUPTED]
        with pytest.raises(ApprovalNotPending, match="stale"):
            await service(reopened).resolve(approval.id, Choice.ONCE)
        assert reopened.provider.requests == []  # recovery never asks the model

        # Resuming asks again (the same stable id, pending again), and then runs once.
        reopened.owner.start(sid, retry=True)
        (again,) = await pending(reopened)
        assert again.id == approval.id
        await service(reopened).resolve(again.id, Choice.ONCE)
        assert await asyncio.wait_for(reopened.owner.join(sid), 20) == Result.IDLE
        assert (reopened.workspace / "made").is_dir(), tool_results(reopened)
        assert len(reopened.provider.requests) == 1  # the answer after the tool, no replay
    finally:
        await reopened.close()


async def test_scenario_35_restart_reconciles_approvals_by_work_identity(tmp_path: Path) -> None:
    """One session, two items, each with a pending approval: item 1 awaits its approval when
    the process stops; item 2 was cancelled before the restart and its approval was left
    pending (the reference builds this state by hand; so does this test, with SQL). Recovery
    interrupts item 1 only, with no model call; by work identity, item 1's approval goes
    stale and item 2's is cancelled, though both belong to the same session."""
    engine = await make(tmp_path, [call("run_command", command="touch a")])
    sid = await session(engine, PermissionMode.ASK, "first")
    await engine.sessions.send(sid, "second")
    engine.owner.start(sid)
    (restart,) = await pending(engine)
    first, second = await engine.items(sid)
    assert (restart.work_id, first.status) == (first.id, WorkStatus.AWAITING_APPROVAL)
    await engine.close()
    engine.store = await type(engine.store).aopen(tmp_path / "fxdesk.sqlite3")
    await asyncio.to_thread(
        engine.store.execute_for_tests,
        "UPDATE work_item SET status = 'cancelled', reason = 'cancelled before restart' "
        "WHERE id = ?",
        (second.id,),
    )
    await asyncio.to_thread(
        engine.store.execute_for_tests,
        "INSERT INTO approval (id, session_id, root_id, work_id, call_id, fingerprint, tool, "
        "label, explanation, detail_json, status, resolution_json, created_at_ms) "
        "SELECT 'approval-cancelled-before-restart', session_id, root_id, ?, call_id, "
        "fingerprint, tool, label, explanation, detail_json, status, resolution_json, "
        "created_at_ms FROM approval WHERE id = ?",
        (second.id, restart.id),
    )
    await asyncio.to_thread(engine.store.close)
    reopened = await engine.reopen([])
    try:
        assert {a.work_id for a in await service(reopened).pending()} == {first.id, second.id}
        report = await reopened.owner.recover()
        assert report.work_interrupted == 1
        assert reopened.provider.requests == []
        assert [i.status for i in await reopened.items(sid)] == [
            WorkStatus.INTERRUPTED,
            WorkStatus.CANCELLED,
        ]
        assert await approval_status(reopened, restart.id) == ApprovalStatus.STALE
        assert (
            await approval_status(reopened, "approval-cancelled-before-restart")
            == ApprovalStatus.CANCELLED
        )
    finally:
        await reopened.close()


async def test_scenario_36_restart_finishes_cancelled_approval_cleanup_without_replay(
    tmp_path: Path,
) -> None:
    engine = await make(tmp_path, [call("run_command", command="touch b")])
    sid = await session(engine, PermissionMode.ASK)
    engine.owner.start(sid)
    (approval,) = await pending(engine)
    await engine.close()
    engine.store = await type(engine.store).aopen(tmp_path / "fxdesk.sqlite3")
    await asyncio.to_thread(
        engine.store.execute_for_tests,
        "UPDATE work_item SET status = 'cancelled', reason = 'cancelled before cleanup'",
    )
    await asyncio.to_thread(engine.store.close)
    reopened = await engine.reopen([])
    try:
        report = await reopened.owner.recover()
        assert report.work_interrupted == 0
        assert reopened.provider.requests == []
        assert await approval_status(reopened, approval.id) == ApprovalStatus.CANCELLED
        # Invalidating again is idempotent.
        again = await reopened.store.write(
            lambda: approvals_store.cancel_pending(sid, 1), label="test"
        )
        assert again == []
        assert await approval_status(reopened, approval.id) == ApprovalStatus.CANCELLED
    finally:
        await reopened.close()


async def test_scenario_37_a_waiting_approval_blocks_relationship_changes_and_resolves_once(
    tmp_path: Path,
) -> None:
    """The host grants run_command (sandbox macos) and a host rule says run_command * → ask.
    A child's command asks in auto mode; a detach racing it is refused. The host then revokes
    (a new generation: no tools, sandbox none) while the approval waits; the answer "once" is
    accepted and a reparent racing it refused. The live authority decides the action
    ``unavailable``: the approved command never runs, and the model is told so."""
    from fxdesk.engine.owner import WorkActive

    authority = HostAuthority(
        tool_names=tuple(all_tool_names()),
        sandbox="macos",
        rules=(HostRule("run_command", "*", "ask"),),
    )
    engine = await make(
        tmp_path, [call("run_command", command="touch made"), say("ok")], authority=authority
    )
    try:
        root = await engine.sessions.create_root(engine.workspace, name="root")
        other = await engine.sessions.create_child(root.id, name="other")
        child = await engine.sessions.create_child(
            root.id, name="child", first_message="status", permission_mode=PermissionMode.AUTO
        )
        engine.owner.start(child.id)
        (approval,) = await pending(engine)
        assert approval.detail["generation"] == authority.generation
        assert (await engine.session(child.id)).state == SessionState.AWAITING_APPROVAL
        assert [i.status for i in await engine.items(child.id)] == [WorkStatus.AWAITING_APPROVAL]
        with pytest.raises(WorkActive) as refused:
            await engine.sessions.detach(child.id)
        assert refused.value.code == ErrorCode.INVALID_STATE

        before = authority.generation
        authority.update(tool_names=(), sandbox="none")  # revoked while the approval waits
        answered = await service(engine).resolve(approval.id, Choice.ONCE)
        with pytest.raises(WorkActive) as refused:
            await engine.sessions.reparent(child.id, other.id)
        assert refused.value.code == ErrorCode.INVALID_STATE
        assert answered.status == ApprovalStatus.ALLOWED_ONCE
        assert await asyncio.wait_for(engine.owner.join(child.id), 20) == Result.COMPLETED

        live = authority.resolve(await engine.session(child.id), PermissionMode.AUTO)
        assert live.generation != before and live.tools == () and live.sandbox == "none"
        assert tool_decision(live, "run_command", ("run_command",), Verdict.ALLOW) == (
            ToolDecision.UNAVAILABLE
        )
        assert not (engine.workspace / "made").exists()  # approved, but revoked: never ran
        assert tool_results(engine) == [
            "Not run: the tool 'run_command' is not available to this session now."
        ]
        assert ("tool_activity", "denied") in await engine.deliveries(child.id)
        assert service(engine).routes == 0
        with pytest.raises(ApprovalNotPending):
            await service(engine).resolve(approval.id, Choice.ONCE)
        (only,) = await approvals_of(engine, child.id)
        assert only.status == ApprovalStatus.ALLOWED_ONCE
    finally:
        await engine.close()


def all_tool_names() -> list[str]:
    return [tool.name for tool in all_tools()]


async def approvals_of(engine: Engine, session_id: str) -> list[Approval]:
    return await engine.store.read(lambda: approvals_store.approvals_of(session_id))


@pytest.mark.parametrize(
    ("added", "choice", "effects", "status"),
    [
        (Verdict.ASK, Choice.ALWAYS, 1, ApprovalStatus.ALLOWED_ALWAYS),  # the spec's rename
        (Verdict.ASK, Choice.ONCE, 1, ApprovalStatus.ALLOWED_ONCE),  # the spec's copy
        (Verdict.DENY, Choice.ONCE, 0, ApprovalStatus.ALLOWED_ONCE),
    ],
)
async def test_scenario_57_an_approved_action_is_rechecked_against_rules_added_meanwhile(
    tmp_path: Path, added: Verdict, choice: Choice, effects: int, status: ApprovalStatus
) -> None:
    """No copy or rename tool here: write_file to a destination outside the workspace asks;
    meanwhile a rule for that destination is added. Ask: the answer stands (1 effect); deny:
    the re-check refuses it (0 effects). One approval either way, with the answer given."""
    destination = tmp_path / "elsewhere" / "copy.txt"
    destination.parent.mkdir()
    engine = await make(
        tmp_path / "e", [call("write_file", path=str(destination), content="copied"), say("end")]
    )
    try:
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert not destination.exists()
        await service(engine).add_rule(
            PermissionRule("*", str(destination), added, Scope.GLOBAL, Match.GLOB)
        )
        await service(engine).resolve(approval.id, choice)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert destination.exists() == bool(effects)
        (only,) = await approvals_of(engine, sid)  # one approval either way
        assert only.status == status
        if not effects:
            assert tool_results(engine)[0].startswith("Approved, but a rule added since denies it")
    finally:
        await engine.close()


@pytest.mark.parametrize(
    ("added", "choice", "effects"),
    [(Verdict.ASK, Choice.ALWAYS, 1), (Verdict.DENY, Choice.ONCE, 0)],
)
async def test_scenario_58_broader_access_is_rechecked_against_rules_added_meanwhile(
    tmp_path: Path, added: Verdict, choice: Choice, effects: int
) -> None:
    """The reference's sandbox widening has no sandbox here (it arrives with issue 11); its
    nearest case is a command a rule allows whose redirection writes outside the workspace:
    that write is what asks. A rule for it added meanwhile: ask → the answer stands (1
    effect, allowed_always); deny → refused at the re-check (0 effects, allowed_once)."""
    # Under /var/tmp: a sandboxed command's /tmp is its own, so a file there asks nothing.
    outside = Path(tempfile.mkdtemp(prefix="fxdesk-s58-", dir="/var/tmp"))
    target = outside / "report.txt"
    engine = await make(
        tmp_path / "e", [call("run_command", command=f"echo ok > {target}"), say("end")]
    )
    try:
        await service(engine).add_rule(
            PermissionRule("run_command", "echo ok", Verdict.ALLOW, Scope.GLOBAL)
        )
        sid = await session(engine, PermissionMode.AUTO)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert approval.detail["uncovered"] == [f"writes {target}"]
        await service(engine).add_rule(
            PermissionRule("*", str(target), added, Scope.GLOBAL, Match.GLOB)
        )
        await service(engine).resolve(approval.id, choice)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert target.exists() == bool(effects)
        (only,) = await approvals_of(engine, sid)
        expected = (
            ApprovalStatus.ALLOWED_ALWAYS
            if choice == Choice.ALWAYS
            else (ApprovalStatus.ALLOWED_ONCE)
        )
        assert only.status == expected
    finally:
        await engine.close()
        shutil.rmtree(outside, ignore_errors=True)


async def test_scenario_59_access_revoked_meanwhile_needs_a_separate_approval(
    tmp_path: Path,
) -> None:
    """Allowed once for what was asked; meanwhile the rule that covered the rest of the command
    is gone, so a second, distinct approval asks for that part before anything runs. (The
    reference's revoked sandbox grant; the sandbox arrives with issue 11.)"""
    engine = await make(
        tmp_path, [call("run_command", command="npm --version; mkdir built"), say("end")]
    )
    try:
        mkdir_rule = await service(engine).add_rule(
            PermissionRule("run_command", "mkdir built", Verdict.ALLOW, Scope.GLOBAL)
        )
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (first,) = await pending(engine)
        assert first.detail["uncovered"] == ["npm --version"]
        assert mkdir_rule.id is not None
        await service(engine).remove_rule(mkdir_rule.id)
        await service(engine).resolve(first.id, Choice.ONCE)
        second = next(a for a in await pending(engine) if a.id != first.id)
        assert second.status == ApprovalStatus.PENDING
        assert await approval_status(engine, first.id) == ApprovalStatus.ALLOWED_ONCE
        assert second.detail["uncovered"] == ["mkdir built", "npm --version"] or (
            "mkdir built" in second.detail["uncovered"]
        )
        assert not (engine.workspace / "built").exists()
        await service(engine).resolve(second.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert (engine.workspace / "built").is_dir()
        assert {a.id for a in await approvals_of(engine, sid)} == {first.id, second.id}
    finally:
        await engine.close()


async def test_an_approval_answered_from_another_process_reaches_the_waiting_turn(
    tmp_path: Path,
) -> None:
    engine = await make(tmp_path, [call("run_command", command="mkdir x"), say("done")])
    try:
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        # Another process answers: `fxdesk approve` on the same data folder.
        answered = await asyncio.to_thread(
            subprocess.run,
            [*FXDESK, "--data-dir", str(tmp_path), "approve", approval.id[:12], "once"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert answered.returncode == 0, answered.stderr
        assert "allowed once" in answered.stdout
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert (engine.workspace / "x").is_dir()
    finally:
        await engine.close()


# --- what the check and the preview learn from the tool ------------------------------------------

AMBIGUOUS = "old_text occurs 2 times in t.txt; include more context so it matches once"


async def test_the_preview_of_an_overlapping_edit_is_the_refusal_the_edit_then_gives(
    tmp_path: Path,
) -> None:
    # 'aa' is in 'aaa' twice (overlapping); str.count says once, and an approval used to show
    # a diff that edit_file then refused to make.
    step = call("edit_file", path="t.txt", old_text="aa", new_text="b")
    engine = await make(tmp_path, [step, say("done")])
    try:
        (engine.workspace / "t.txt").write_text("aaa\n")
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        assert approval.detail["preview"] == f"edit_file will refuse this call: {AMBIGUOUS}"
        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert tool_results(engine) == [AMBIGUOUS]
        assert (engine.workspace / "t.txt").read_text() == "aaa\n"
    finally:
        await engine.close()


async def test_the_preview_of_an_edit_is_the_diff_the_edit_then_reports(tmp_path: Path) -> None:
    step = call("edit_file", path="src/t.txt", old_text="two", new_text="2")
    engine = await make(tmp_path, [step, say("done")])
    try:
        (engine.workspace / "src").mkdir()
        (engine.workspace / "src" / "t.txt").write_text("one\ntwo\n")
        sid = await session(engine, PermissionMode.ASK)
        engine.owner.start(sid)
        (approval,) = await pending(engine)
        preview = approval.detail["preview"]
        assert preview.startswith("--- a/src/t.txt\n+++ b/src/t.txt\n")
        assert (engine.workspace / "src" / "t.txt").read_text() == "one\ntwo\n"
        await service(engine).resolve(approval.id, Choice.ONCE)
        assert await asyncio.wait_for(engine.owner.join(sid), 20) == Result.IDLE
        assert tool_results(engine) == [preview]
        assert (engine.workspace / "src" / "t.txt").read_text() == "one\n2\n"
    finally:
        await engine.close()


async def test_edit_preview_runs_the_tools_dry_run(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "t.txt").write_text("aaa\n")
    (tmp_path / "outside.txt").write_text("far\n")
    tools = ToolRegistry(all_tools())
    ctx = ToolContext(workspace, "s", "w", "c")

    def edit(path: str, old: str, new: str) -> ToolCall:
        arguments = {"path": path, "old_text": old, "new_text": new}
        return ToolCall("c", "edit_file", json.dumps(arguments))

    refused = await edit_preview(edit("t.txt", "aa", "b"), ctx, tools)
    assert refused == f"edit_file will refuse this call: {AMBIGUOUS}"
    assert (await tools.invoke("edit_file", edit("t.txt", "aa", "b").arguments, ctx)).output == (
        AMBIGUOUS
    )
    assert await edit_preview(edit("t.txt", "aaa", "b"), ctx, tools) == (
        "--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-aaa\n+b\n"
    )
    # Reaching out: refused as the tool refuses it, unless the check found it may.
    outside = edit("../outside.txt", "far", "near")
    assert "is outside the workspace" in await edit_preview(outside, ctx, tools)
    reaching = ToolContext(workspace, "s", "w", "c", outside_ok=True)
    assert "+near" in await edit_preview(outside, reaching, tools)
    # Tools with nothing to show, and unknown ones.
    assert await edit_preview(ToolCall("c", "read_file", '{"path": "t.txt"}'), ctx, tools) == ""
    assert await edit_preview(ToolCall("c", "nothing", "{}"), ctx, tools) == ""
    # A long diff is cut for the approval.
    (workspace / "long.txt").write_text("".join(f"{n}\n" for n in range(1000)))
    write = json.dumps({"path": "long.txt", "content": ""})
    long = await edit_preview(ToolCall("c", "write_file", write), ctx, tools)
    assert len(long.splitlines()) == 401
    assert long.endswith("\n... 603 more lines\n")
    assert (workspace / "t.txt").read_text() == "aaa\n"
    assert (workspace / "long.txt").stat().st_size > 0


class StampTool(Tool):
    """A tool the permission check has never heard of: all it knows is what it declares."""

    name = "stamp"
    description = "Stamp a file."
    parameters = schema(
        {
            "target": {"type": "string", "description": "The file to stamp."},
            "path": {"type": "string", "description": "Not the path: a decoy."},
        },
        ["target"],
    )
    facts = ToolFacts(ToolAccess.WRITE, path_argument="target")

    async def run(self, args: dict[str, object], ctx: ToolContext) -> ToolResult:
        return ToolResult(True, "stamped")


class ReadingStampTool(StampTool):
    facts = ToolFacts(ToolAccess.READ, path_argument="target")


class ScriptStampTool(StampTool):
    facts = ToolFacts(ToolAccess.EXECUTE, command_argument="target")


class NoteTool(StampTool):
    """A tool added later that touches nothing outside the conversation."""

    name = "note"
    facts = ToolFacts(ToolAccess.NONE)


async def test_the_check_judges_a_tool_by_its_declared_access_and_path_argument(
    tmp_path: Path,
) -> None:
    engine = await make(tmp_path, [])
    try:
        s = await engine.session(await session(engine, PermissionMode.ASK))
        root = engine.workspace.resolve()
        tools = ToolRegistry([*all_tools(), StampTool()])

        async def check(
            mode: PermissionMode, args: dict[str, str], registry: ToolRegistry
        ) -> Check:
            return await service(engine).check(
                s, mode, engine.workspace, "stamp", json.dumps(args), tools=registry
            )

        inside = {"target": "out.txt", "path": "../decoy"}
        asked = await check(PermissionMode.ASK, inside, tools)
        assert asked.decision.verdict == Verdict.ASK
        assert asked.decision.reason.endswith("ask mode asks before every write")
        assert asked.label == str(root / "out.txt")
        assert asked.detail["targets"] == [str(root / "out.txt")]
        assert asked.outside is False
        assert (await check(PermissionMode.AUTO, inside, tools)).decision.verdict == Verdict.ALLOW

        leaving = await check(PermissionMode.AUTO, {"target": "../x"}, tools)
        assert leaving.decision.verdict == Verdict.ASK
        assert leaving.label == str(root.parent / "x") and leaving.outside is True

        # A path rule for the tools that write (write_file) covers it: it declares a write.
        await service(engine).add_rule(
            PermissionRule("write_file", "out.txt", Verdict.DENY, Scope.GLOBAL, Match.GLOB)
        )
        denied = await check(PermissionMode.YOLO, inside, tools)
        assert denied.decision.verdict == Verdict.DENY

        # Declared as a read instead, the same call is a read of the same path.
        reads = ToolRegistry([*all_tools(), ReadingStampTool()])
        read = await check(PermissionMode.ASK, inside, reads)
        assert read.decision.verdict == Verdict.ALLOW
        assert read.detail["targets"] == [str(root / "out.txt")]

        # A tool the registry does not hold is judged by its name alone.
        unknown = await check(PermissionMode.AUTO, inside, ToolRegistry())
        assert unknown.decision.verdict == Verdict.ASK
        assert (unknown.label, unknown.detail["targets"]) == ("stamp", [])
    finally:
        await engine.close()


async def test_the_check_reads_an_execute_tool_s_command_argument(tmp_path: Path) -> None:
    engine = await make(tmp_path, [])
    try:
        s = await engine.session(await session(engine, PermissionMode.ASK))
        root = engine.workspace.resolve()
        checked = await service(engine).check(
            s,
            PermissionMode.ASK,
            engine.workspace,
            "stamp",
            json.dumps({"target": "echo hi > made.txt"}),
            tools=ToolRegistry([ScriptStampTool()]),
        )
        assert checked.label == "echo hi > made.txt"
        assert checked.detail["targets"] == [str(root / "made.txt")]
        assert checked.decision.verdict == Verdict.ASK
    finally:
        await engine.close()


async def test_path_rules_cover_every_registered_tool_of_the_same_access(tmp_path: Path) -> None:
    """Which tools a path rule covers comes from what the registered tools declare: a rule for
    a newly registered writing tool, or for `*`, covers its calls; a rule for edit_file or for
    the new tool covers a command's redirection to that path too."""
    engine = await make(tmp_path, [])
    try:
        s = await engine.session(await session(engine, PermissionMode.YOLO))
        stamping = ToolRegistry([*all_tools(), StampTool()])

        async def verdict(tool: str, args: dict[str, str], registry: ToolRegistry) -> Verdict:
            checked = await service(engine).check(
                s, PermissionMode.YOLO, engine.workspace, tool, json.dumps(args), tools=registry
            )
            return checked.decision.verdict

        async def deny(tool: str, pattern: str) -> None:
            rule = PermissionRule(tool, pattern, Verdict.DENY, Scope.GLOBAL, Match.GLOB)
            await service(engine).add_rule(rule)

        assert await verdict("stamp", {"target": "any.txt"}, stamping) == Verdict.ALLOW
        await deny("*", "secret/*")
        assert await verdict("stamp", {"target": "secret/a"}, stamping) == Verdict.DENY

        await deny("stamp", "stamped.txt")
        assert await verdict("stamp", {"target": "stamped.txt"}, stamping) == Verdict.DENY
        shell_write = {"command": "echo hi > stamped.txt"}
        assert await verdict("run_command", shell_write, stamping) == Verdict.DENY
        edit = {"path": "stamped.txt", "old_text": "a", "new_text": "b"}
        assert await verdict("edit_file", edit, stamping) == Verdict.DENY
        assert await verdict("read_file", {"path": "stamped.txt"}, stamping) == Verdict.ALLOW
        # Without stamp registered, its rule covers no other tool.
        today = ToolRegistry(all_tools())
        assert await verdict("run_command", shell_write, today) == Verdict.ALLOW

        await deny("edit_file", "build.log")
        make_log = {"command": "make > build.log"}
        for registry in (today, stamping):
            assert await verdict("run_command", make_log, registry) == Verdict.DENY
        assert await verdict("stamp", {"target": "build.log"}, stamping) == Verdict.DENY
    finally:
        await engine.close()


async def test_a_registered_tool_that_touches_nothing_is_always_allowed(tmp_path: Path) -> None:
    engine = await make(tmp_path, [])
    try:
        s = await engine.session(await session(engine, PermissionMode.ASK))
        noting = ToolRegistry([*all_tools(), NoteTool()])

        async def check(tool: str, mode: PermissionMode, registry: ToolRegistry) -> Check:
            return await service(engine).check(
                s, mode, engine.workspace, tool, json.dumps({"target": "x"}), tools=registry
            )

        for mode in PermissionMode:
            for tool in ("note", "echo"):
                allowed = await check(tool, mode, noting)
                assert allowed.decision.verdict == Verdict.ALLOW
                assert allowed.decision.reason == f"`{tool}` is always allowed"
                assert (allowed.label, allowed.detail["targets"]) == (tool, [])
        # Not registered, the same name is judged by rules and mode alone.
        unknown = await check("note", PermissionMode.AUTO, ToolRegistry(all_tools()))
        assert unknown.decision.verdict == Verdict.ASK
        assert unknown.decision.reason == "`note` is not covered by any rule"
        await service(engine).add_rule(
            PermissionRule("note", "*", Verdict.DENY, Scope.GLOBAL, Match.GLOB)
        )
        denied = await check("note", PermissionMode.YOLO, noting)
        assert denied.decision.verdict == Verdict.DENY
    finally:
        await engine.close()
