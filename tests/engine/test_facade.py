"""The engine facade (``fxdesk.engine.facade.Engine``), as the window and the command line use it.

Every test runs a real ``App`` on a temporary data folder: a real SQLite file, real session
locks, real tools in a real workspace folder. Only the model is scripted (``ScriptedProvider``,
which records each request and can hold a call at its barrier).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from fxdesk.app import App
from fxdesk.domain.approvals import ApprovalStatus, Choice
from fxdesk.domain.conversation import HistoryEntry
from fxdesk.domain.model import (
    EntryKind,
    PermissionMode,
    SessionMode,
    SessionState,
    WorkKind,
    WorkStatus,
)
from fxdesk.domain.permissions import PermissionRule, Scope, Verdict
from fxdesk.engine.facade import (
    Engine,
    ErrorCode,
    InvalidWorkspace,
    Result,
    RunCommand,
    RunCommandError,
    SessionError,
    StartResult,
)
from fxdesk.engine.providers import FixedResolver
from fxdesk.paths import DataPaths
from fxdesk.providers.base import ModelRequest
from fxdesk.providers.scripted import Fault, Reply, ScriptedCall, ScriptedProvider, Stall, Step
from tests.engine.harness import wait_until

WAIT_S = 60.0  # generous: the machine running the tests may be slow and busy


@dataclass
class Desk:
    app: App
    engine: Engine
    provider: ScriptedProvider


@asynccontextmanager
async def desk(
    paths: DataPaths, steps: Sequence[Step] = (), *, store_only: bool = False
) -> AsyncIterator[Desk]:
    """An ``App`` on ``paths`` whose model plays ``steps``; stopped (and the model's barrier
    lifted) at the end."""
    provider = ScriptedProvider(list(steps))
    app = App(paths, providers=FixedResolver(provider))
    await (app.start_store_only() if store_only else app.start())
    try:
        yield Desk(app, app.engine, provider)
    finally:
        provider.release()
        await app.stop()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def call(name: str, **arguments: object) -> Reply:
    return Reply(tool_calls=(ScriptedCall(name, dict(arguments)),))


def user_texts(request: ModelRequest) -> list[str]:
    """What the person (or a parent, or a steer) said, as the model was shown it."""
    return [m.content for m in request.messages if m.role == "user"]


async def finish(engine: Engine, session_id: str) -> Result:
    return await asyncio.wait_for(engine.join(session_id), WAIT_S)


async def eventually(condition: Callable[[], Awaitable[bool]]) -> None:
    """Wait until an async condition holds (the store is read on each look)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not await condition():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


async def statuses(engine: Engine, session_id: str) -> list[WorkStatus]:
    return [item.status for item in await engine.items(session_id)]


# --- send and start --------------------------------------------------------------------------


async def test_send_queues_the_message_and_starts_the_session(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Hello back.")]) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)

        item = await d.engine.send(session.id, "Say hello to the parser")

        assert item.kind == WorkKind.PROMPT and item.content == "Say hello to the parser"
        assert await finish(d.engine, session.id) == Result.IDLE  # no start was called
        (request,) = d.provider.requests
        assert user_texts(request) == ["Say hello to the parser"]
        assert await statuses(d.engine, session.id) == [WorkStatus.COMPLETED]


async def test_an_unnamed_session_is_named_after_its_first_message(
    data_paths: DataPaths, project: Path
) -> None:
    """Made with no name and no message (Ctrl+N, then typing), a session was "New session"
    for ever; it takes its first message's first line, once. A chosen name stays."""
    async with desk(data_paths, [Reply("One."), Reply("Two."), Reply("Three.")]) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)
        assert session.name == "New session"
        await d.engine.send(session.id, "Fix the tokenizer bug\nIt drops the last digit.")
        await finish(d.engine, session.id)
        await d.engine.send(session.id, "And add a test")
        await finish(d.engine, session.id)
        named = await d.engine.session(session.id)
        assert named is not None and named.name == "Fix the tokenizer bug"

        chosen = await d.engine.create_session(project, name="Parser")
        await d.engine.send(chosen.id, "Something else entirely")
        await finish(d.engine, chosen.id)
        kept = await d.engine.session(chosen.id)
        assert kept is not None and kept.name == "Parser"


async def test_send_without_start_only_queues_until_start(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Now it runs.")]) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)

        item = await d.engine.send(session.id, "Wait for me", start=False)

        assert not d.engine.is_running(session.id)
        assert await statuses(d.engine, session.id) == [WorkStatus.PENDING]
        assert d.provider.requests == []
        current = await d.engine.session(session.id)
        assert current is not None and current.state == SessionState.QUEUED

        assert d.engine.start(session.id) == StartResult.STARTED
        assert await finish(d.engine, session.id) == Result.IDLE
        assert [user_texts(r) for r in d.provider.requests] == [["Wait for me"]]
        assert [i.id for i in await d.engine.items(session.id)] == [item.id]
        assert await statuses(d.engine, session.id) == [WorkStatus.COMPLETED]


# --- steer -----------------------------------------------------------------------------------


async def test_steer_goes_into_the_running_turn(data_paths: DataPaths, project: Path) -> None:
    steps = [call("echo", text="looking"), Reply("Done, with the steer.")]
    async with desk(data_paths, steps) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)
        d.provider.hold()
        first = await d.engine.send(session.id, "Look at the parser")
        await wait_until(lambda: d.provider.entered == 1, WAIT_S)  # the turn's first model call
        assert d.engine.is_running(session.id)

        steered = await d.engine.steer(session.id, "Also check the lexer")

        assert steered.kind == WorkKind.STEER and steered.status == WorkStatus.PENDING
        d.provider.release()
        assert await finish(d.engine, session.id) == Result.IDLE
        # One turn, two model calls; the second (after the tool step) carries the steer.
        first_call, second_call = d.provider.requests
        assert "Also check the lexer" not in user_texts(first_call)
        assert user_texts(second_call) == ["Look at the parser", "Also check the lexer"]
        shown = await d.engine.transcript(session.id)
        steer_rows = [e for e in shown.entries if e.data.get("steer_id") == steered.id]
        assert [(e.kind, e.work_id) for e in steer_rows] == [(EntryKind.USER, first.id)]
        by_id = {i.id: i for i in shown.items}
        assert by_id[first.id].status == WorkStatus.COMPLETED
        assert by_id[steered.id].status == WorkStatus.COMPLETED  # delivered, not run on its own


async def test_steer_when_nothing_runs_is_an_ordinary_message(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Ran as a message.")]) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)
        assert not d.engine.is_running(session.id)

        item = await d.engine.steer(session.id, "Check the lexer")

        assert item.kind == WorkKind.PROMPT
        assert await finish(d.engine, session.id) == Result.IDLE
        assert [user_texts(r) for r in d.provider.requests] == [["Check the lexer"]]
        assert await statuses(d.engine, session.id) == [WorkStatus.COMPLETED]


# --- creating sessions -----------------------------------------------------------------------


async def test_create_session_with_a_first_message_starts_it(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Planned.")]) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Plan the parser work"
        )

        assert session.name == "Plan the parser work"
        assert await finish(d.engine, session.id) == Result.IDLE
        assert [user_texts(r) for r in d.provider.requests] == [["Plan the parser work"]]


async def test_create_session_with_start_false_does_not_start_it(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Planned.")]) as d:
        session = await d.engine.create_session(
            project, first_message="Plan the parser work", start=False
        )

        assert not d.engine.is_running(session.id)
        assert await statuses(d.engine, session.id) == [WorkStatus.PENDING]
        assert d.provider.requests == []
        # What the command line does next: listen, then start it itself.
        assert d.engine.start(session.id) == StartResult.STARTED
        assert await finish(d.engine, session.id) == Result.IDLE
        assert len(d.provider.requests) == 1


async def test_create_session_in_an_unusable_folder_raises_invalid_workspace(
    data_paths: DataPaths, project: Path
) -> None:
    a_file = project / "notes.txt"
    a_file.write_text("not a folder\n")
    async with desk(data_paths) as d:
        for folder in (project / "missing", a_file, Path("relative/folder")):
            with pytest.raises(InvalidWorkspace) as refused:
                await d.engine.create_session(folder, first_message="hello")
            assert refused.value.code == ErrorCode.INVALID_ARGUMENT
        assert (await d.engine.catalog()).sessions == []
        assert d.provider.requests == []


async def test_create_child_runs_at_once_in_its_parents_mode_under_its_parent(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Reviewed.")]) as d:
        parent = await d.engine.create_session(project, permission_mode=PermissionMode.ASK)

        child = await d.engine.create_child(
            parent.id, "Review the parser\nLook at error recovery too."
        )

        assert child.name == "Review the parser"
        assert child.permission_mode == PermissionMode.ASK  # the service's own default is yolo
        assert child.mode == SessionMode.ONE_OFF
        assert await finish(d.engine, child.id) == Result.COMPLETED
        assert [user_texts(r) for r in d.provider.requests] == [
            ["Review the parser\nLook at error recovery too."]
        ]
        listed = {s.id: s for s in (await d.engine.catalog()).sessions}
        assert listed[child.id].parent_id == parent.id
        assert listed[child.id].root_id == parent.id


async def test_create_child_keeps_a_permission_mode_it_is_given(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Done.")]) as d:
        parent = await d.engine.create_session(project, permission_mode=PermissionMode.ASK)
        child = await d.engine.create_child(
            parent.id, "Tidy up", name="Tidier", permission_mode=PermissionMode.AUTO
        )
        assert (child.name, child.permission_mode) == ("Tidier", PermissionMode.AUTO)
        assert await finish(d.engine, child.id) == Result.COMPLETED


async def test_create_child_of_an_unknown_parent_is_not_found(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths) as d:
        with pytest.raises(SessionError) as refused:
            await d.engine.create_child("0123456789abcdef", "Review the parser")
        assert refused.value.code == ErrorCode.NOT_FOUND
        assert (await d.engine.catalog()).sessions == []


async def test_create_child_with_an_empty_task_is_refused_as_invalid(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths) as d:
        parent = await d.engine.create_session(project)
        for task in ("", "  \n  "):
            with pytest.raises(SessionError) as refused:
                await d.engine.create_child(parent.id, task)
            assert refused.value.code == ErrorCode.INVALID_ARGUMENT
        assert [s.id for s in (await d.engine.catalog()).sessions] == [parent.id]
        assert d.provider.requests == []


async def test_create_child_is_named_after_the_first_line_with_text(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("Done.")]) as d:
        parent = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)
        child = await d.engine.create_child(parent.id, "\n  Review the parser\nthen more")
        assert child.name == "Review the parser"
        assert await finish(d.engine, child.id) == Result.COMPLETED


# --- resume after a restart ------------------------------------------------------------------


async def test_resume_runs_interrupted_work_without_repeating_committed_steps(
    data_paths: DataPaths, project: Path
) -> None:
    notes = project / "notes.txt"
    first_run = [call("write_file", path="notes.txt", content="one\n", append=True), Stall()]
    async with desk(data_paths, first_run) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Write the notes"
        )
        (item,) = await d.engine.items(session.id)
        # The tool step is committed; the second model call never answers.
        await wait_until(lambda: d.provider.calls == 2, WAIT_S)
        assert notes.read_text() == "one\n"
        before = d.provider
    async with desk(data_paths, store_only=True) as d:  # looks without recovering
        assert await statuses(d.engine, session.id) == [
            WorkStatus.RUNNING
        ]  # shutdown wrote nothing

    async with desk(data_paths, [Reply("Notes written.")]) as d:
        assert d.engine.recovery is not None and d.engine.recovery.work_interrupted == 1
        assert await statuses(d.engine, session.id) == [WorkStatus.INTERRUPTED]
        assert not d.engine.is_running(session.id)  # nothing runs by itself

        assert d.engine.resume(session.id) == StartResult.STARTED
        assert await finish(d.engine, session.id) == Result.IDLE

        assert await statuses(d.engine, session.id) == [WorkStatus.COMPLETED]
        assert before.calls == 2  # the first process's model was not asked again
        (request,) = d.provider.requests  # only the step that was never committed
        assert user_texts(request) == ["Write the notes"]
        assistant = [m for m in request.messages if m.role == "assistant"]
        assert [c.name for m in assistant for c in m.tool_calls] == ["write_file"]
        results = [m for m in request.messages if m.role == "tool"]
        assert len(results) == 1 and "appended 4 characters" in results[0].content
        assert notes.read_text() == "one\n"  # the committed tool call did not run again
        shown = await d.engine.transcript(session.id)
        kinds = [e.kind for e in shown.entries if e.work_id == item.id]
        assert kinds.count(EntryKind.USER) == 1 and kinds.count(EntryKind.TOOL_CALL) == 1
        assert kinds[-1] == EntryKind.TURN_END


async def test_start_without_retry_leaves_interrupted_work_alone(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Stall()]) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Write the notes"
        )
        await wait_until(lambda: d.provider.calls == 1, WAIT_S)

    async with desk(data_paths, [Reply("Notes written.")]) as d:
        assert d.engine.start(session.id) == StartResult.STARTED
        assert await finish(d.engine, session.id) == Result.NO_WORK
        assert await statuses(d.engine, session.id) == [WorkStatus.INTERRUPTED]
        assert d.provider.requests == []


# --- finding sessions and workspaces ---------------------------------------------------------


async def test_find_session_by_id_unique_prefix_unknown_and_ambiguous(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths) as d:
        # Ids are random hex: with 17 sessions, two surely share a first character.
        sessions = []
        while len({s.id[0] for s in sessions}) == len(sessions):
            sessions.append(await d.engine.create_session(project, name=f"s{len(sessions)}"))
        target = sessions[0]

        assert (await d.engine.find_session(target.id)).id == target.id
        prefix = target.id[:8]
        assert [s.id for s in sessions if s.id.startswith(prefix)] == [target.id]
        assert (await d.engine.find_session(prefix)).id == target.id

        with pytest.raises(SessionError) as unknown:
            await d.engine.find_session("zz-no-such")
        assert unknown.value.code == ErrorCode.NOT_FOUND
        assert "zz-no-such" in str(unknown.value)

        shared = sessions[-1].id[0]
        sharing = sum(1 for s in sessions if s.id.startswith(shared))
        assert sharing >= 2
        with pytest.raises(SessionError) as ambiguous:
            await d.engine.find_session(shared)
        assert ambiguous.value.code == ErrorCode.NOT_FOUND
        assert f"matches {sharing} sessions" in str(ambiguous.value)


async def test_find_workspace_by_folder_with_home_and_links_resolved(
    data_paths: DataPaths, isolated_home: Path, tmp_path: Path
) -> None:
    folder = isolated_home / "projects" / "parser"
    folder.mkdir(parents=True)
    link = tmp_path / "parser-link"
    link.symlink_to(folder, target_is_directory=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with desk(data_paths) as d:
        session = await d.engine.create_session(folder)

        for given in (folder, str(folder), "~/projects/parser", link, str(link)):
            found = await d.engine.find_workspace(given)
            assert found.id == session.workspace_id, given
        assert found.path == os.path.realpath(folder)

        with pytest.raises(SessionError) as unknown:
            await d.engine.find_workspace(elsewhere)
        assert unknown.value.code == ErrorCode.NOT_FOUND
        assert str(elsewhere.resolve()) in str(unknown.value)


# --- a store-only engine ---------------------------------------------------------------------


async def _pending_write_approval(paths: DataPaths, project: Path) -> tuple[str, str]:
    """A session in ask mode left waiting for an approval by a stopped fxdesk."""
    steps = [call("write_file", path="out.txt", content="hi\n")]
    async with desk(paths, steps) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Write out.txt"
        )
        await eventually(lambda: _has_pending(d.engine, session.id))
        (approval,) = await d.engine.pending_approvals(session.id)
        return session.id, approval.id


async def _has_pending(engine: Engine, session_id: str) -> bool:
    return bool(await engine.pending_approvals(session_id))


async def test_store_only_engine_reads_and_answers_approvals(
    data_paths: DataPaths, project: Path
) -> None:
    session_id, approval_id = await _pending_write_approval(data_paths, project)

    async with desk(data_paths, store_only=True) as d:
        assert [s.id for s in (await d.engine.catalog()).sessions] == [session_id]
        ((item, reason),) = await d.engine.queue(session_id)
        assert (item.status, reason) == (WorkStatus.AWAITING_APPROVAL, None)
        shown = await d.engine.transcript(session_id)
        assert [e.kind for e in shown.entries][:2] == [EntryKind.USER, EntryKind.ASSISTANT]
        assert any(e.kind == EntryKind.TOOL_CALL for e in shown.entries)
        assert await d.engine.approval_counts() == {session_id: 1}
        found = await d.engine.find_approval(approval_id[:10])
        assert found is not None and found.id == approval_id
        assert not d.engine.is_running(session_id)
        assert d.engine.busy_elsewhere() == {}
        assert d.engine.recovery is None  # a store-only start recovers nothing

        answered = await d.engine.answer_approval(approval_id, Choice.ONCE)

        assert answered.status == ApprovalStatus.ALLOWED_ONCE
        assert await d.engine.pending_approvals() == []
        assert await d.engine.approval_counts() == {}
        assert d.provider.requests == []  # nothing ran


async def test_store_only_engine_refuses_to_run_work_but_queues(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, store_only=True) as d:
        session = await d.engine.create_session(project, first_message="Queued only", start=False)
        refusals: list[tuple[str, Callable[[], object]]] = [
            ("send", lambda: d.engine.send(session.id, "Run this")),
            ("steer", lambda: d.engine.steer(session.id, "And this")),
            ("resume", lambda: d.engine.resume(session.id)),
            ("start", lambda: d.engine.start(session.id)),
            ("join", lambda: d.engine.join(session.id)),
            ("cancel", lambda: d.engine.cancel(session.id)),
            ("create_child", lambda: d.engine.create_child(session.id, "A sub-task")),
            ("create_session", lambda: d.engine.create_session(project, first_message="Go")),
        ]
        for name, attempt in refusals:
            with pytest.raises(RuntimeError, match="runs no sessions") as refused:
                outcome = attempt()
                if asyncio.iscoroutine(outcome):
                    await outcome
            assert not isinstance(refused.value, SessionError), name

        queued = await d.engine.send(session.id, "Queued too", start=False)

        assert queued.status == WorkStatus.PENDING
        items = await d.engine.items(session.id)
        assert [(i.content, i.status) for i in items] == [
            ("Queued only", WorkStatus.PENDING),
            ("Queued too", WorkStatus.PENDING),
        ]
        assert d.provider.requests == []


async def test_store_only_refusals_leave_nothing_behind(
    data_paths: DataPaths, project: Path
) -> None:
    """A refused command must not have half happened: a client that retries it elsewhere
    (or tells the person it failed) would otherwise queue the work twice."""
    async with desk(data_paths, store_only=True) as d:
        session = await d.engine.create_session(project, name="Only this")

        with pytest.raises(RuntimeError):
            await d.engine.send(session.id, "Run this")
        with pytest.raises(RuntimeError):
            await d.engine.create_child(session.id, "A sub-task")
        with pytest.raises(RuntimeError):
            await d.engine.create_session(project, first_message="Go")

        assert await d.engine.items(session.id) == []
        assert [s.id for s in (await d.engine.catalog()).sessions] == [session.id]


# --- cancel ----------------------------------------------------------------------------------


async def test_cancel_stops_the_running_turn_and_what_is_queued_behind_it(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("never"), Reply("never either")]) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)
        d.provider.hold()
        running = await d.engine.send(session.id, "Long job")
        await wait_until(lambda: d.provider.entered == 1, WAIT_S)
        queued = await d.engine.send(session.id, "Next job")
        assert await statuses(d.engine, session.id) == [WorkStatus.RUNNING, WorkStatus.PENDING]

        count = await d.engine.cancel(session.id, "changed my mind")

        assert count == 2
        await asyncio.wait_for(d.engine.join(session.id), WAIT_S)
        assert not d.engine.is_running(session.id)
        queue = {item.id: (item.status, why) for item, why in await d.engine.queue(session.id)}
        assert queue == {
            running.id: (WorkStatus.CANCELLED, "changed my mind"),
            queued.id: (WorkStatus.CANCELLED, "changed my mind"),
        }
        assert d.provider.calls == 0  # the held call never got an answer out
        assert [user_texts(r) for r in d.provider.requests] == [["Long job"]]
        assert await d.engine.cancel(session.id) == 0  # nothing left to cancel


# --- the queue and the session's settings --------------------------------------------------


async def test_a_queued_message_can_be_taken_out_before_it_runs(
    data_paths: DataPaths, project: Path
) -> None:
    async with desk(data_paths, [Reply("First done.")]) as d:
        session = await d.engine.create_session(project, permission_mode=PermissionMode.YOLO)
        d.provider.hold()
        running = await d.engine.send(session.id, "First")
        await wait_until(lambda: d.provider.entered == 1, WAIT_S)
        queued = await d.engine.send(session.id, "Second")
        assert (await d.engine.counts())[session.id] == (1, 2)

        assert await d.engine.remove_queued(session.id, queued.id) is True
        assert await d.engine.remove_queued(session.id, running.id) is False  # it started

        d.provider.release()
        assert await finish(d.engine, session.id) == Result.IDLE
        assert [user_texts(r) for r in d.provider.requests] == [["First"]]
        queue = {item.id: (item.status, why) for item, why in await d.engine.queue(session.id)}
        assert queue == {
            running.id: (WorkStatus.COMPLETED, None),
            queued.id: (WorkStatus.CANCELLED, "removed from the queue"),
        }
        assert (await d.engine.counts()).get(session.id, (0, 0)) == (0, 0)


async def test_rename_configure_and_close(data_paths: DataPaths, project: Path) -> None:
    async with desk(data_paths) as d:
        session = await d.engine.create_session(project, name="Draft")

        assert (await d.engine.rename(session.id, "Parser work")).name == "Parser work"
        configured = await d.engine.configure(session.id, permission_mode=PermissionMode.AUTO)
        assert configured.permission_mode == PermissionMode.AUTO
        assert d.engine.in_use_elsewhere(session.id) is None
        database, schema = d.engine.database()
        assert database == d.app.store.path and database.is_file() and schema > 0

        await d.engine.close(session.id)

        assert (await d.engine.catalog(include_archived=False)).sessions == []
        (archived,) = (await d.engine.catalog()).sessions
        assert (archived.name, archived.state) == ("Parser work", SessionState.ARCHIVED)
        with pytest.raises(SessionError):
            await d.engine.send(session.id, "Too late")


# --- reading: transcript and failures --------------------------------------------------------


async def test_transcript_has_items_with_reasons_and_the_history(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [Fault("server_error", "the model is down"), Reply("Back up.")]
    async with desk(data_paths, steps) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.YOLO, first_message="Try once"
        )
        assert await finish(d.engine, session.id) == Result.FAILED
        await d.engine.send(session.id, "Try again")
        assert await finish(d.engine, session.id) == Result.IDLE

        shown = await d.engine.transcript(session.id)

        assert shown.session.id == session.id
        failed, done = shown.items
        assert (failed.content, failed.status) == ("Try once", WorkStatus.FAILED)
        assert (done.content, done.status) == ("Try again", WorkStatus.COMPLETED)
        assert "the model is down" in (shown.reasons[failed.id] or "")
        assert shown.reasons[done.id] is None
        assert [(e.kind, e.content) for e in shown.entries if e.work_id == done.id] == [
            (EntryKind.USER, "Try again"),
            (EntryKind.ASSISTANT, "Back up."),
            (EntryKind.TURN_END, ""),
        ]
        assert [e.kind for e in shown.entries if e.work_id == failed.id] == [EntryKind.USER]
        assert await d.engine.failure_reason(failed.id) == shown.reasons[failed.id]
        assert await d.engine.failure_reason(done.id) is None
        assert await d.engine.last_failed() == set()  # the newest item completed

        with pytest.raises(SessionError) as unknown:
            await d.engine.transcript("0123456789abcdef")
        assert unknown.value.code == ErrorCode.NOT_FOUND


# --- approvals and rules ---------------------------------------------------------------------


async def test_an_approval_is_seen_and_answered_through_the_facade(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [call("write_file", path="out.txt", content="hi\n"), Reply("Written.")]
    async with desk(data_paths, steps) as d:
        quiet = await d.engine.create_session(project, name="Asks nothing")
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Write out.txt"
        )
        await eventually(lambda: _has_pending(d.engine, session.id))

        (approval,) = await d.engine.pending_approvals()
        assert (approval.session_id, approval.tool) == (session.id, "write_file")
        assert approval.pending
        assert await d.engine.pending_approvals(session.id) == [approval]
        assert await d.engine.pending_approvals(quiet.id) == []
        assert await d.engine.approval_counts() == {session.id: 1}
        found = await d.engine.find_approval(approval.id[:10])
        assert found is not None and found.id == approval.id
        assert await d.engine.find_approval("zzzz") is None
        assert not (project / "out.txt").exists()
        assert d.engine.is_running(session.id)  # the turn waits for the answer

        answered = await d.engine.answer_approval(approval.id, Choice.ONCE, by="the window")

        assert answered.status == ApprovalStatus.ALLOWED_ONCE
        assert answered.resolution["by"] == "the window"  # shown with the call afterwards
        (kept,) = await d.engine.approvals_of(session.id)
        assert (kept.id, kept.status, kept.resolved_at_ms) == (
            approval.id,
            ApprovalStatus.ALLOWED_ONCE,
            answered.resolved_at_ms,
        )
        assert await finish(d.engine, session.id) == Result.IDLE
        assert (project / "out.txt").read_text() == "hi\n"
        assert await d.engine.pending_approvals() == []
        assert await d.engine.approval_counts() == {}
        assert d.provider.calls == 2


async def test_rules_are_added_listed_and_removed_and_decide_approvals(
    data_paths: DataPaths, project: Path
) -> None:
    target = str(project.resolve() / "allowed.txt")
    steps = [
        call("write_file", path="allowed.txt", content="one\n"),
        Reply("First write done."),
        call("write_file", path="allowed.txt", content="two\n"),
        Reply("Second write done."),
    ]
    async with desk(data_paths, steps) as d:
        assert await d.engine.rules() == []
        rule = await d.engine.add_rule(
            PermissionRule("write_file", target, Verdict.ALLOW, Scope.GLOBAL), "from the test"
        )
        assert rule.id is not None
        assert await d.engine.rules() == [rule]
        assert await d.engine.rules(Scope.GLOBAL) == [rule]
        assert await d.engine.rules(Scope.SESSION) == []

        # The rule allows the write: no approval is asked.
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Write allowed.txt"
        )
        assert await finish(d.engine, session.id) == Result.IDLE
        assert (project / "allowed.txt").read_text() == "one\n"
        assert await d.engine.pending_approvals() == []

        assert await d.engine.remove_rule(rule.id) is True
        assert await d.engine.rules() == []
        assert await d.engine.remove_rule(rule.id) is False

        # Without it, the same write asks again.
        await d.engine.send(session.id, "Write it again")
        await eventually(lambda: _has_pending(d.engine, session.id))
        assert (project / "allowed.txt").read_text() == "one\n"
        assert await d.engine.cancel(session.id) == 1


# --- the clock -------------------------------------------------------------------------------


async def test_now_ms_is_the_apps_one_clock(
    data_paths: DataPaths, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with desk(data_paths) as d:
        session = await d.engine.create_session(project)
        monkeypatch.setattr(d.app.clock, "now_ms", lambda: 1_234_567)

        assert d.engine.now_ms() == 1_234_567
        item = await d.engine.send(session.id, "Stamped", start=False)
        assert item.created_at_ms == d.engine.now_ms()  # items are stamped by the same clock


# --- run commands ----------------------------------------------------------------------------


async def test_run_commands_are_kept_per_workspace_and_survive_a_restart(
    data_paths: DataPaths, project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    dev = RunCommand.make("dev server", "npm run dev", "web", expect_url=True, durable=True)
    async with desk(data_paths, store_only=True) as d:
        workspace = await d.engine.ensure_workspace(project)
        elsewhere = await d.engine.ensure_workspace(other)
        assert await d.engine.run_commands(workspace.id) == ()
        await d.engine.set_run_commands(workspace.id, (dev, RunCommand.make("tests", "pytest")))
        twice = (dev, RunCommand("Tests", "x"), RunCommand("tests", "y"))
        with pytest.raises(RunCommandError, match="two run commands are named 'tests'"):
            await d.engine.set_run_commands(workspace.id, twice)
        assert await d.engine.run_commands(elsewhere.id) == ()
        with pytest.raises(SessionError, match="no workspace 999"):
            await d.engine.run_commands(999)
    async with desk(data_paths, store_only=True) as d:
        kept = await d.engine.run_commands(workspace.id)
        assert kept == (dev, RunCommand("tests", "pytest"))  # the refused save changed nothing


# --- honest tool states after a cancel --------------------------------------------------------


async def _results(engine: Engine, session_id: str) -> list[HistoryEntry]:
    page = await engine.history_page(session_id)
    return [e for e in page if e.kind == EntryKind.TOOL_RESULT]


async def test_a_command_cancelled_while_it_runs_is_recorded_as_started_then_stopped(
    data_paths: DataPaths, project: Path
) -> None:
    """Issue 14: a tool call cancelled mid-run showed "running…" forever, even after a restart,
    and the model could not tell "stopped" from "never ran"."""
    steps = [call("run_command", command="echo started > began.txt; sleep 60"), Stall()]
    async with desk(data_paths, steps) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.AUTO, first_message="Run it"
        )
        await eventually(lambda: asyncio.sleep(0, (project / "began.txt").exists()))
        assert await d.engine.cancel(session.id) >= 1
        await eventually(lambda: _has(d.engine, session.id, "cancelled"))
    async with desk(data_paths, store_only=True) as d:  # durable: after a restart too
        (result,) = await _results(d.engine, session.id)
        assert result.data["cancelled"] is True and result.data["ok"] is False
        assert "not_run" not in result.data
        assert result.content.startswith("stopped: the work was cancelled while this tool call")
        assert "It had started" in result.content


async def test_a_call_cancelled_while_it_waits_for_approval_is_recorded_as_not_run(
    data_paths: DataPaths, project: Path
) -> None:
    steps = [call("write_file", path="new.txt", content="x"), Stall()]
    async with desk(data_paths, steps) as d:
        session = await d.engine.create_session(
            project, permission_mode=PermissionMode.ASK, first_message="Write it"
        )
        await eventually(lambda: _has_pending(d.engine, session.id))
        assert await d.engine.cancel(session.id) >= 1
        await eventually(lambda: _has(d.engine, session.id, "cancelled"))
        (result,) = await _results(d.engine, session.id)
        assert result.data == {"ok": False, "cancelled": True, "not_run": True}
        assert result.content.startswith("not run: the work was cancelled while this tool call")
        assert not (project / "new.txt").exists()


async def _has(engine: Engine, session_id: str, flag: str) -> bool:
    return any(r.data.get(flag) for r in await _results(engine, session_id))
