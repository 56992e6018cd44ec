"""Running tasks: URLs, watchers, exit detection and numbering (spec §3.7-3.11, §5): scenarios
15-21, 26 and 27 of spec §9.

The runtime is real, on a real store, its URL watchers reading real log files; the recording
fake provider stands for the processes (the log is written by the test, as the wrapper would).
The watchers against real servers and replayed banners are in ``test_watchers.py``.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from fxdesk.domain.background import TaskState
from fxdesk.engine.background.monitor import Completion
from fxdesk.engine.events import BackgroundChanged
from tests.engine.background.harness import Harness, wait_until


def watched(bg: Harness) -> list[int]:
    """The numbers of the tasks whose log a URL watcher reads now."""
    return [task.number for task in bg.runtime._watchers]


def open_on(path: str) -> bool:
    """Whether this process has ``path`` open."""
    fds = Path("/proc/self/fd")
    for fd in fds.iterdir():
        try:
            if os.readlink(fd) == path:
                return True
        except OSError:
            continue
    return False


async def test_scenario_15_forgotten_tasks_keep_their_numbers_used(bg: Harness) -> None:
    """Scenario 15 (adapted: fxdesk has no "clear session state", a new conversation is a new
    session with its own numbers; forgetting is stop-and-forget): forgetting a session's tasks
    drops them from the list, and the next launch does not reuse their numbers."""
    first, second = await bg.launch("npm run dev"), await bg.launch("npm run api")
    assert (first.number, second.number) == (1, 2)
    for task in (first, second):
        bg.fake.reuse_pid(task.pid)  # gone: forgotten without a signal
    result = await bg.runtime.forget_workspace(first.workspace_id)
    assert result.removed == 2 and bg.runtime.tasks(bg.session_id) == []
    assert bg.fake.signals == []
    assert (await bg.launch("npm run dev")).number == 3


async def test_scenario_16_a_url_is_kept_once_and_never_after_a_stop(bg: Harness) -> None:
    """Scenario 16: publishing a URL stores it (and saves it) and ends "waiting for URL"; the
    same URL again changes nothing; nor does a URL for a task that no longer runs, or any URL
    once fxdesk is quitting."""
    task = await bg.launch("npm run dev", expect_url=True)
    other = await bg.launch("npm run storybook", expect_url=True)
    live, ended = bg.runtime.find(task.ref, bg.session_id), bg.runtime.find(other.ref, "s1")
    await bg.runtime.stop(other.ref, bg.session_id)
    before = len(bg.events)

    bg.runtime._publish_url(live, "http://localhost:3000")  # what the watcher calls
    assert (bg.task(task.number).url, bg.task(task.number).expect_url) == (
        "http://localhost:3000",
        False,
    )
    assert len(bg.events) == before + 1
    await wait_until(lambda: bg.runtime._jobs == set())
    assert [r[6] for r in await bg.records() if r[1] == task.stable_id] == ["http://localhost:3000"]

    bg.runtime._publish_url(live, "http://localhost:3000")  # the same again: nothing
    bg.runtime._publish_url(ended, "http://localhost:6006")  # stopped: nothing
    assert len(bg.events) == before + 1
    assert bg.task(other.number).url is None

    await bg.runtime.shutdown()
    bg.runtime._publish_url(live, "http://stopped")
    assert bg.task(task.number).url == "http://localhost:3000"
    assert len(bg.events) == before + 1


async def test_scenario_17_no_watcher_without_expect_url_or_with_a_url(bg: Harness) -> None:
    """Scenario 17: a task not expecting a URL, and a restored task that has its URL already,
    get no watcher."""
    await bg.launch("npm run build -- --watch", expect_url=False)
    assert watched(bg) == []

    server = await bg.launch("npm run dev", expect_url=True)
    Path(server.log_path).write_text("ready - local: http://localhost:5173\n")
    await wait_until(lambda: bg.task(server.number).url is not None)
    restarted = await bg.restart()
    found = restarted.task(server.ref, bg.session_id)
    assert (found.url, found.expect_url) == ("http://localhost:5173", False)
    assert restarted._watchers == {}


async def test_scenario_18_the_watcher_publishes_the_url_within_a_second(bg: Harness) -> None:
    """Scenario 18: the log says ``ready - local: http://localhost:5173``: within 1 s the task
    has that URL, no longer waits for one, and the URL is announced and saved."""
    task = await bg.launch("npm run dev", expect_url=True)
    assert watched(bg) == [task.number]
    Path(task.log_path).write_text("ready - local: http://localhost:5173\n")
    written = time.monotonic()
    await wait_until(lambda: bg.task(task.number).url is not None, timeout=5.0)
    assert time.monotonic() - written < 1.0
    found = bg.task(task.number)
    assert (found.url, found.expect_url) == ("http://localhost:5173", False)
    assert any(e.task.url == "http://localhost:5173" for e in bg.events)
    assert watched(bg) == []
    await wait_until(lambda: bg.runtime._jobs == set())
    assert [r[6] for r in await bg.records()] == ["http://localhost:5173"]


async def test_scenario_19_a_started_watcher_is_always_tracked(bg: Harness) -> None:
    """Scenario 19 (adapted: no slot to reserve in Python): the watcher is listed in the same
    step that starts it, with no await in between, so a started watcher is always tracked
    (and stopped at quit)."""
    task = await bg.launch("npm run dev", expect_url=True)
    assert watched(bg) == [task.number]  # right after the launch returned, nothing awaited
    watcher = next(iter(bg.runtime._watchers.values()))
    assert watcher._task is not None and not watcher.done


async def test_scenario_20_quitting_joins_every_watcher(bg: Harness) -> None:
    """Scenario 20: a watcher on an empty log is listed; after the quit request the list is
    empty and the watcher has ended."""
    await bg.launch("npm run dev", expect_url=True)
    (watcher,) = bg.runtime._watchers.values()
    await bg.runtime.shutdown()
    assert bg.runtime._watchers == {}
    assert watcher.done


async def test_scenario_21_a_stopped_watcher_cleans_up_without_a_url(bg: Harness) -> None:
    """Scenario 21: the watcher's cleanup (closing the log it reads) runs when it is stopped
    without having found a URL, before the stop returns; neither callback is called."""
    task = await bg.launch("npm run dev", expect_url=True)
    Path(task.log_path).write_text("compiling...\n")
    (watcher,) = bg.runtime._watchers.values()
    await wait_until(lambda: open_on(task.log_path))
    before = len(bg.events)
    await bg.runtime.shutdown()
    assert watcher.done and not open_on(task.log_path)
    assert len(bg.events) == before  # no URL, no "no URL detected"
    assert bg.task(task.number).url is None


async def test_scenario_26_the_exit_marker_decides_and_listeners_may_read(bg: Harness) -> None:
    """Scenario 26: a log ending in the exit marker ``0`` makes the task ``exited`` with code 0,
    even with no token and a PID that is no process; the change is announced after the state
    changed, and a listener reading the runtime from the announcement works."""
    task = await bg.launch("true")
    live = bg.runtime.find(task.ref, bg.session_id)
    live.token, live.pid = None, 2**22 + 1  # no token; no such PID
    Path(task.log_path).write_text("stdout\n__FX_EXIT_CODE__=0\n")
    seen: list[list[TaskState]] = []

    def listener(event: BackgroundChanged) -> None:
        seen.append([t.state for t in bg.runtime.tasks(bg.session_id)])

    bg.bus.subscribe(BackgroundChanged, listener)
    completions = await bg.runtime.refresh(force=True)
    assert completions == [Completion(task.number, bg.session_id, TaskState.EXITED, 0)]
    assert seen == [[TaskState.EXITED]]
    found = bg.task(task.number)
    assert (found.state, found.exit_code) == (TaskState.EXITED, 0)
    assert bg.fake.named("match") == []  # the marker decided, not the identity


async def test_scenario_27_a_watcher_in_its_retry_wait_stops_within_250_ms(
    bg: Harness,
) -> None:
    """Scenario 27: a watcher waiting between two looks at its log stops in under 250 ms."""
    task = await bg.launch("npm run dev", expect_url=True)
    (watcher,) = bg.runtime._watchers.values()
    await wait_until(lambda: open_on(task.log_path) or Path(task.log_path).exists())
    await asyncio.sleep(0.1)  # well inside one 200 ms wait
    began = time.monotonic()
    await watcher.stop()
    assert time.monotonic() - began < 0.25
    assert watcher.done
