"""run_command with real child processes: output, exit codes, timeouts and cancellation, each
in the sandbox (bubblewrap) and without it (where a machine has none)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import re
import signal
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from fxdesk.tools.base import MODEL_OUTPUT_CAP, ToolContext, ToolResult
from fxdesk.tools.shell import RunCommandTool
from tests.helpers import wait_for


@pytest.fixture(params=["sandboxed", "bare"])
def tool(request: pytest.FixtureRequest) -> Iterator[RunCommandTool]:
    tool = RunCommandTool()
    tool.use_sandbox = request.param == "sandboxed"
    tool.grace_s = 0.3
    tool.drain_s = 0.3
    yield tool


async def run(tool: RunCommandTool, ctx: ToolContext, command: str, **extra: object) -> ToolResult:
    return await tool.run({"command": command, **extra}, ctx)


def live_members(pgid: int) -> list[psutil.Process]:
    """Processes of group ``pgid`` that still run. Zombies are dead already: whether they are
    reaped is up to their parent (init, once we are gone), not to the tool."""
    members = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                members.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def sleeper() -> str:
    """A ``sleep`` found again by its command line: inside the sandbox, ``$$`` is a pid of
    its own namespace, so the tests look for their processes by what they run."""
    return f"sleep {60 + random.random():.6f}"


def running(command: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if proc.info["cmdline"] == command.split() and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def assert_gone(command: str) -> None:
    deadline = time.monotonic() + 3
    while running(command):
        assert time.monotonic() < deadline, f"still running: {running(command)}"
        time.sleep(0.01)


def assert_group_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the shell was reaped: no zombie of ours left
    # SIGKILL was sent to the whole group; the kernel takes a moment to end the others.
    deadline = time.monotonic() + 3
    while live_members(pid):
        assert time.monotonic() < deadline, f"still running: {live_members(pid)}"
        time.sleep(0.01)


async def test_output_and_exit_code(tool: RunCommandTool, ctx: ToolContext) -> None:
    result = await run(tool, ctx, "echo hello; echo oops >&2")
    assert result.ok
    assert result.output in ("hello\noops\n[exit code 0]", "oops\nhello\n[exit code 0]")
    assert result.full_output is None
    assert result.data["exit_code"] == 0
    assert result.data["timed_out"] is False
    assert 0 <= result.data["duration_ms"] < 5000
    assert_group_gone(result.data["pid"])


async def test_non_zero_exit_is_a_failure(tool: RunCommandTool, ctx: ToolContext) -> None:
    result = await run(tool, ctx, "echo failing; exit 3")
    assert not result.ok
    assert result.output == "failing\n[exit code 3]"
    assert result.data["exit_code"] == 3
    silent = await run(tool, ctx, "true")
    assert silent.output == "(no output)\n[exit code 0]"


async def test_killed_by_a_signal(tool: RunCommandTool, ctx: ToolContext) -> None:
    result = await run(tool, ctx, "kill -KILL $$")
    assert not result.ok
    if tool.use_sandbox:  # bubblewrap reports it as bash would: 128 + the signal
        assert result.output == "(no output)\n[exit code 137]"
        assert result.data["exit_code"] == 128 + signal.SIGKILL
    else:
        assert result.output == "(no output)\n[killed by signal SIGKILL]"
        assert result.data["exit_code"] == -signal.SIGKILL
    assert result.data["sandboxed"] is tool.use_sandbox


async def test_runs_in_the_workspace_with_the_allowed_env_and_no_stdin(
    tool: RunCommandTool, ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "from the parent")
    monkeypatch.setenv("FXDESK_TOOL_TEST", "not on the allow-list")
    result = await run(tool, ctx, 'pwd; echo "$TZ[$FXDESK_TOOL_TEST]"; cat; echo done')
    assert result.ok
    assert result.output == f"{workspace.resolve()}\nfrom the parent[]\ndone\n[exit code 0]"


async def test_non_utf8_output_is_replaced_not_raised(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    # dash's printf has no \x escapes; these octal ones are the bytes ff fe.
    result = await run(tool, ctx, r"printf '\377\376'; printf 'ok\n'")
    assert result.ok
    assert result.output == "\ufffd\ufffdok\n[exit code 0]"


async def test_characters_split_across_chunks_survive(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    # 300k two-byte characters: the 64 KiB reads split many of them in half.
    result = await run(
        tool, ctx, "i=0; while [ $i -lt 10 ]; do printf 'é%.0s' $(seq 30000); i=$((i+1)); done"
    )
    text = result.full_output
    assert text is not None
    assert "\ufffd" not in text
    assert text.count("é") == 300_000


async def test_both_pipes_are_read_at_once(tool: RunCommandTool, ctx: ToolContext) -> None:
    # 1 MB to stderr before any stdout: reading one pipe at a time would deadlock on the other.
    command = r"head -c 1000000 /dev/zero | tr '\0' a >&2; head -c 1000000 /dev/zero | tr '\0' b"
    result = await run(tool, ctx, command, timeout_s=20)
    assert result.ok
    assert result.data["timed_out"] is False
    full = result.full_output
    assert full is not None
    assert full.count("a") == 1_000_000
    assert full.count("b") == 1_000_000


async def test_50_mb_of_output_is_bounded_for_the_model(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    started = time.monotonic()
    tracing = tracemalloc.is_tracing()  # already, under python -X tracemalloc
    if not tracing:
        tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = await run(tool, ctx, r"head -c 52428800 /dev/zero | tr '\0' 'x'")
        peak = tracemalloc.get_traced_memory()[1] - baseline
    finally:
        if not tracing:
            tracemalloc.stop()
    assert time.monotonic() - started < 15
    # The chunks and the one joined text: about twice the output, not a copy per step.
    assert peak < 2.5 * 52_428_800
    assert result.ok
    assert len(result.output) < MODEL_OUTPUT_CAP + 200
    assert "characters cut" in result.output
    assert result.output.endswith("x\n[exit code 0]")
    assert result.full_output is not None
    body, footer = result.full_output.rsplit("\n", 1)
    assert footer == "[exit code 0]"
    assert len(body) == 52_428_800
    assert body.count("x") == 52_428_800


async def test_output_past_the_capture_limit_is_dropped_and_said(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    tool.capture_limit = 1024 * 1024
    result = await run(tool, ctx, r"head -c 52428800 /dev/zero | tr '\0' 'x'; echo after")
    assert result.ok  # the command finished: the pipe was drained, not left to fill up
    full = result.full_output
    assert full is not None
    body, note, footer = full.rsplit("\n", 2)
    assert body == "x" * 1024 * 1024
    assert note == (
        "[output cut: only the first 1048576 bytes were kept; 51380230 more bytes were dropped]"
    )
    assert footer == "[exit code 0]"
    assert result.output.endswith("dropped]\n[exit code 0]")


async def test_timeout_of_a_command_that_ignores_sigterm(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    started = time.monotonic()
    result = await run(tool, ctx, "echo started; trap '' TERM; sleep 60; echo never", timeout_s=0.5)
    elapsed = time.monotonic() - started
    assert not result.ok
    assert result.data["timed_out"] is True
    assert result.data["exit_code"] == -signal.SIGKILL
    assert result.output == (
        "started\n[timed out after 0.5 s; the command and its processes were stopped]"
    )
    assert 0.5 + tool.grace_s <= elapsed < 5
    assert_group_gone(result.data["pid"])


async def test_timeout_stops_children_that_obey_sigterm_without_waiting(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    tool.grace_s = 10  # must not be waited out: the group goes at once on SIGTERM
    started = time.monotonic()
    result = await run(tool, ctx, "sleep 60 & sleep 60; wait", timeout_s=0.3)
    assert time.monotonic() - started < 5
    assert result.data["timed_out"] is True
    # Sandboxed, bubblewrap outlives the shell SIGTERM ended and reports it as bash would.
    terminated = 128 + signal.SIGTERM if tool.use_sandbox else -signal.SIGTERM
    assert result.data["exit_code"] == terminated
    assert_group_gone(result.data["pid"])


async def test_cancellation_kills_the_group_and_re_raises(
    tool: RunCommandTool, ctx: ToolContext, workspace: Path
) -> None:
    pid_file = workspace / "pid"
    first, second = sleeper(), sleeper()
    task = asyncio.create_task(
        run(tool, ctx, f"trap '' TERM; echo $$ > {pid_file}; {first} & {second}")
    )
    deadline = time.monotonic() + 10
    while len(running(first) + running(second)) < 2:
        assert time.monotonic() < deadline, "the command never started"
        await asyncio.sleep(0.02)
    if not tool.use_sandbox:  # $$ is a pid of the sandbox's own namespace there
        pid = int(pid_file.read_text())
        assert os.getpgid(pid) == pid  # a session, and so a group, of its own
        assert len(live_members(pid)) == 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_gone(first)
    assert_gone(second)


async def test_background_processes_holding_the_output_are_stopped(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    started = time.monotonic()
    background = sleeper()
    result = await run(tool, ctx, f"{background} & echo launched")
    assert time.monotonic() - started < 5
    assert result.ok
    if tool.use_sandbox:  # the sandbox ends with the shell, and everything in it
        assert result.output == "launched\n[exit code 0]"
    else:
        assert result.output.startswith(
            "launched\n[exit code 0]\n[processes left in the background"
        )
    assert_group_gone(result.data["pid"])
    assert_gone(background)


async def test_a_process_that_left_the_group_cannot_hang_the_tool(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    escaped = sleeper()
    started = time.monotonic()
    result = await run(tool, ctx, f"setsid {escaped} & echo launched")
    try:
        assert time.monotonic() - started < 5
        assert result.ok
        assert result.output.startswith("launched\n[exit code 0]")
        assert_group_gone(result.data["pid"])
        if tool.use_sandbox:  # it left the group, not the sandbox
            assert_gone(escaped)
    finally:
        for proc in running(escaped):
            proc.kill()


async def test_background_processes_with_their_own_output_keep_running_only_unsandboxed(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    background = sleeper()
    result = await run(tool, ctx, f"{background} >/dev/null 2>&1 & echo launched")
    try:
        assert result.ok
        assert result.output == "launched\n[exit code 0]"
        if tool.use_sandbox:
            assert_gone(background)
        else:
            assert len(live_members(result.data["pid"])) == 1
            # The forked shell may not have exec'd sleep yet: its command line is bash's.
            assert wait_for(lambda: len(running(background)) == 1, timeout=10)
    finally:
        for proc in running(background):
            proc.kill()


@pytest.mark.parametrize("timeout_s", [0, -1, 3601, float("nan")])
async def test_bad_timeouts(tool: RunCommandTool, ctx: ToolContext, timeout_s: float) -> None:
    result = await run(tool, ctx, "echo hi", timeout_s=timeout_s)
    assert not result.ok
    assert result.output == "timeout_s must be a number above 0 and at most 3600"


async def test_missing_workspace_is_a_tool_error(tool: RunCommandTool, tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path / "gone", session_id="s", work_id="w", call_id="c")
    result = await run(tool, ctx, "echo hi")
    assert not result.ok
    assert result.output.startswith("cannot start the command: ")


async def test_commands_run_as_the_permission_check_read_them(
    tool: RunCommandTool, ctx: ToolContext, workspace: Path
) -> None:
    """Under bash `&>` redirects the command it ends; /bin/sh (dash) would run `c &` and then
    `> out` where the line started: a write the check had placed in `sub`."""
    from fxdesk.domain.shell import analyse

    (workspace / "sub").mkdir()
    line = "cd sub && echo hi &> out"
    analysis = analyse(line, cwd=str(workspace), home=str(workspace / "home"))
    assert analysis.writes == (str(workspace / "sub" / "out"),)
    result = await run(tool, ctx, line)
    assert result.ok, result.output
    assert (workspace / "sub" / "out").read_text() == "hi\n"
    assert not (workspace / "out").exists()


async def test_nothing_in_the_environment_makes_bash_run_more_than_the_line(
    tool: RunCommandTool, ctx: ToolContext, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sourced = workspace / "sourced"
    startup = workspace / "startup.sh"
    startup.write_text(f"echo sourced > {sourced}\n")
    monkeypatch.setenv("BASH_ENV", str(startup))
    monkeypatch.setenv("ENV", str(startup))
    monkeypatch.setenv("BASHOPTS", "extglob")
    monkeypatch.setenv("BASH_FUNC_ls%%", "() { echo not the real ls; }")
    monkeypatch.setenv("TZ", "kept")
    result = await run(tool, ctx, 'ls -d .; shopt extglob; echo "[$TZ]"')
    assert result.ok, result.output
    assert not sourced.exists()
    assert "not the real ls" not in result.output
    assert re.search(r"^extglob\s+off$", result.output, re.MULTILINE), result.output
    assert "[kept]" in result.output


async def test_a_watcher_sees_whole_lines_while_the_command_runs(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    """The window's live view: each line as soon as it is printed, never a line cut in two
    (a secret split between two reads is masked by the watcher only if it arrives whole)."""
    seen: list[tuple[float, str]] = []
    began = time.monotonic()
    watched = dataclasses.replace(
        ctx, on_output=lambda text: seen.append((time.monotonic() - began, text))
    )
    line = "printf 'first '; sleep 0.2; printf 'line\\n'; sleep 1; echo second; printf tail"
    result = await run(tool, watched, line)
    assert result.ok
    texts = [text for _, text in seen]
    assert "".join(texts) == "first line\nsecond\ntail"
    assert texts[0] == "first line\n"  # held until its end arrived, not "first " alone
    assert all(text.endswith("\n") for text in texts[:-1])
    # "first line" was seen a second before the command ended: while it ran.
    assert seen[0][0] < seen[-1][0] - 0.5


async def test_a_failing_watcher_never_fails_the_command(
    tool: RunCommandTool, ctx: ToolContext
) -> None:
    def broken(_text: str) -> None:
        raise RuntimeError("the window went away")

    result = await run(tool, dataclasses.replace(ctx, on_output=broken), "echo one; echo two")
    assert result.ok and result.output.startswith("one\ntwo\n")
