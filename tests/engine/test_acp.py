"""External agents over ACP: a real child process (tests/acp_agent.py) driven through a turn."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from fxdesk.domain.approvals import ApprovalStatus, Choice
from fxdesk.domain.model import EntryKind, PermissionMode, WorkStatus
from fxdesk.domain.rules import PermissionRule, Scope, Verdict
from fxdesk.engine.owner import Result
from fxdesk.providers.acp import AcpAgentProvider, AcpLaunch
from fxdesk.store import history
from tests.engine.acp_support import (
    AGENT,
    failure_reason,
    finished,
    make,
    opened,
    pending_approval,
    rows,
    start,
    until_row,
)


async def test_a_prompt_streams_the_agents_text_into_the_history(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "echo hello there", PermissionMode.ASK)
        result = await finished(engine, sid)
        assert result == Result.IDLE, await failure_reason(engine, sid)
        assert await rows(engine, sid) == [
            ("user", "echo hello there", None),
            ("assistant", "you said: hello there", None),
            ("turn_end", "", None),
        ]
        streamed = [e.text for e in engine.events if type(e).__name__ == "TextStreamed"]
        assert streamed == ["you said: ", "hello there"]
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.COMPLETED
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        assert entries[1].data["usage"] == [12, 5]  # what the agent reported
        assert entries[2].data["usage"] == [12, 5] and "usage_reported" not in entries[2].data


async def test_a_permission_request_is_an_approval_and_allowing_it_lets_the_agent_act(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "write notes.txt", PermissionMode.ASK)
        approval = await pending_approval(engine)
        assert approval.tool == "acp:edit"  # type: ignore[attr-defined]
        # The person reads what the agent said, the call's title and its input.
        assert approval.explanation == (  # type: ignore[attr-defined]
            'I will write notes.txt.\n\nWrite notes.txt · {"path": "notes.txt"}'
        )
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.AWAITING_APPROVAL
        assert not (engine.workspace / "notes.txt").exists()
        assert engine.permissions is not None
        await engine.permissions.resolve(approval.id, Choice.ONCE)  # type: ignore[attr-defined]
        assert await finished(engine, sid) == Result.IDLE
        assert (engine.workspace / "notes.txt").exists()
        call_id = f"acp-{item.id[:12]}-t-write"
        assert await rows(engine, sid) == [
            ("user", "write notes.txt", None),
            ("assistant", "I will write notes.txt.", None),
            ("tool_call", '{"path": "notes.txt"}', "Write notes.txt"),
            ("tool_result", "wrote notes.txt", "Write notes.txt"),
            ("assistant", "Done.", None),
            ("turn_end", "", None),
        ]
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        assert {e.call_id for e in entries if e.kind == EntryKind.TOOL_RESULT} == {call_id}
        assert (await engine.permissions.get(approval.id)).status == (  # type: ignore[union-attr,attr-defined]
            ApprovalStatus.ALLOWED_ONCE
        )


async def test_denying_the_approval_answers_the_agent_with_its_reject_option(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "write secret.txt", PermissionMode.ASK)
        approval = await pending_approval(engine)
        assert engine.permissions is not None
        await engine.permissions.resolve(approval.id, Choice.DENY)  # type: ignore[attr-defined]
        assert await finished(engine, sid) == Result.IDLE
        assert not (engine.workspace / "secret.txt").exists()
        found = await rows(engine, sid)
        assert ("assistant", "Not allowed (no).", None) in found
        assert found[3][0] == "tool_result" and "failed" in found[3][1]


async def test_a_rule_answers_the_agent_without_asking(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        assert engine.permissions is not None
        await engine.permissions.add_rule(
            PermissionRule("acp:edit", "*", Verdict.ALLOW, Scope.GLOBAL)
        )
        sid = await start(engine, "write ruled.txt", PermissionMode.ASK)
        assert await finished(engine, sid) == Result.IDLE
        assert (engine.workspace / "ruled.txt").exists()
        assert await engine.permissions.pending() == []


async def test_cancel_ends_the_turn_as_cancelled(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "wait", PermissionMode.YOLO)
        await until_row(engine, sid, ("tool_call", "{}", "Run sleep 1000"))
        await engine.owner.cancel(sid)
        await finished(engine, sid)
        (item,) = await engine.items(sid)
        assert item.status == WorkStatus.CANCELLED
        found = await rows(engine, sid)
        assert found[-1][0] == "tool_result" and found[-1][1].startswith("cancelled")


async def test_an_acp_profile_resolves_to_the_agent_it_starts(tmp_path: Path) -> None:
    from fxdesk.domain.model import Profile
    from fxdesk.engine.providers import ProfileResolver
    from fxdesk.store import repo

    async with opened(make(tmp_path)) as engine:
        profile = Profile("agent", "acp", command=sys.executable, args=(AGENT,), env=(("A", "b"),))
        await engine.store.write(lambda: repo.save_profile(profile), label="profile")
        stored = await engine.store.read(lambda: repo.get_profile("agent"))
        assert stored is not None and (stored.command, stored.args, stored.env) == (
            sys.executable,
            (AGENT,),
            (("A", "b"),),
        )
        session = await engine.sessions.create_root(engine.workspace, name="x")
        session = await engine.store.read(lambda: repo.get_session(session.id))
        assert session is not None
        resolved = await ProfileResolver(engine.store).resolve(
            dataclasses.replace(session, profile="agent")
        )
        assert isinstance(resolved.provider, AcpAgentProvider)
        assert resolved.provider.launch == AcpLaunch(sys.executable, (AGENT,), {"A": "b"})


async def test_an_agent_that_dies_mid_turn_fails_the_item_with_a_reason(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "crash", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.FAILED
        reason = await failure_reason(engine, sid)
        assert reason is not None and reason.startswith("provider_failed"), reason
        assert "the agent exited (code 3) before ending its turn" in reason


async def test_thoughts_plans_diffs_and_cost_are_kept_as_native_rows(tmp_path: Path) -> None:
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "think", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.IDLE
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        thoughts = [e.data["thought"] for e in entries if "thought" in e.data]
        assert thoughts == ["Let me see. a.txt needs a second line."]
        plans = [e.data["plan"] for e in entries if "plan" in e.data]
        assert [[s["status"] for s in plan] for plan in plans] == [
            ["pending", "pending"],
            ["completed", "pending"],
        ]
        (result,) = [e for e in entries if e.kind == EntryKind.TOOL_RESULT]
        assert result.data["diff"] is True
        assert result.content.splitlines() == [
            "--- a.txt",
            "+++ a.txt",
            "@@ -1 +1,2 @@",
            " one",
            "+two",
        ]
        end = entries[-1]
        assert end.kind == EntryKind.TURN_END
        assert end.data["cost_usd"] == 0.25 and end.data["context_tokens"] == [1200, 200000]

        await engine.sessions.send(sid, "think")  # the agent's total grows to $0.50
        engine.owner.start(sid)
        assert await finished(engine, sid) == Result.IDLE
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        assert entries[-1].data["cost_usd"] == 0.25  # this turn's part of it
        assert entries[-1].data["agent_cost"] == {"amount": 0.5, "currency": "USD"}
        # Each turn is one "model call" in the usage totals (the tree's), with its cost.
        from fxdesk.store import usage

        totals = await engine.store.read(lambda: usage.totals([sid]))
        assert (totals.model_calls, totals.cost_usd, totals.unpriced) == (2, 0.5, 0)


async def test_an_agent_that_wants_a_login_is_logged_in_with_the_key_in_its_environment(
    tmp_path: Path,
) -> None:
    # codex-acp 0.16.0 answers session/new "Authentication required" until the client calls
    # authenticate with its env_var method, even with OPENAI_API_KEY set (seen in a real run).
    async with opened(
        make(tmp_path, extra={"ACP_TEST_AUTH": "1", "TEST_AGENT_KEY": "k-123"})
    ) as engine:
        sid = await start(engine, "echo hello", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.IDLE
        assert ("assistant", "you said: hello", None) in await rows(engine, sid)


async def test_an_agent_wanting_a_login_it_cannot_get_fails_naming_the_ways_it_offers(
    tmp_path: Path,
) -> None:
    async with opened(make(tmp_path, extra={"ACP_TEST_AUTH": "1"})) as engine:  # no TEST_AGENT_KEY
        sid = await start(engine, "echo hello", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.FAILED
        reason = await failure_reason(engine, sid)
        assert reason is not None and reason.startswith("provider_failed"), reason
        assert "Authentication required" in reason
        assert "Login with the agent" in reason
        assert "Use TEST_AGENT_KEY (set TEST_AGENT_KEY in the profile's environment)" in reason


async def test_a_prompt_the_agent_fails_gives_the_reason_in_its_error_data(tmp_path: Path) -> None:
    # codex-acp 0.16.0 without the network: -32603 "Internal error", the cause in data.message.
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "fail stream disconnected: no route", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.FAILED
        reason = await failure_reason(engine, sid)
        assert reason is not None and reason.startswith("provider_failed"), reason
        assert "Internal error: stream disconnected: no route" in reason


async def test_claude_codes_shapes_a_rule_on_the_calls_kind_answers_and_its_input_is_kept(
    tmp_path: Path,
) -> None:
    # claude-code-acp 0.16.2: the tool_call first with an empty input, then again with it; the
    # permission request's tool call has no kind (it was in the tool_call).
    async with opened(make(tmp_path)) as engine:
        assert engine.permissions is not None
        await engine.permissions.add_rule(
            PermissionRule("acp:edit", "*", Verdict.ALLOW, Scope.GLOBAL)
        )
        sid = await start(engine, "ccwrite cc.txt", PermissionMode.ASK)
        assert await finished(engine, sid) == Result.IDLE
        assert (engine.workspace / "cc.txt").read_text() == "by claude\n"
        assert await engine.permissions.pending() == []
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 10_000))
        (result,) = [e for e in entries if e.kind.value == "tool_result"]
        assert result.data["ok"] is True and result.data["diff"] is True
        assert result.data["input"] == {
            "file_path": str(engine.workspace / "cc.txt"),
            "content": "by claude\n",
        }
        assert result.tool_name == f"Write {engine.workspace / 'cc.txt'}"


async def test_tokens_reported_in_the_responses_quota_meta_are_the_turns_usage(
    tmp_path: Path,
) -> None:
    # gemini-cli 0.61 reports a prompt's tokens in _meta.quota.token_count, not in usage.
    async with opened(make(tmp_path)) as engine:
        sid = await start(engine, "quota", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.IDLE
        entries = await engine.store.read(lambda: history.page_history(sid, 0, 100))
        assert [e.kind.value for e in entries] == ["user", "assistant", "turn_end"]
        assert entries[1].data["usage"] == [7, 3]


async def test_a_prompt_refused_for_want_of_a_login_says_how_the_agent_logs_in(
    tmp_path: Path,
) -> None:
    # claude-code-acp 0.16.2 fails the prompt -32000 when Claude Code wants "/login".
    async with opened(
        make(tmp_path, extra={"ACP_TEST_AUTH": "1", "TEST_AGENT_KEY": "k-123"})
    ) as engine:
        sid = await start(engine, "unauth", PermissionMode.YOLO)
        assert await finished(engine, sid) == Result.FAILED
        reason = await failure_reason(engine, sid)
        assert reason is not None and "prompt failed: Authentication required" in reason, reason
        assert "it needs a login; it offers: Login with the agent" in reason
