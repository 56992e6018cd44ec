"""The background runtime: one per ``App``, the only owner of background tasks (spec §2.1).

It composes the parts: ``launching`` (held-back launch and policies), ``monitor`` (exit
detection, every second), ``stopping`` (stop, stop-and-forget, quit), ``restore`` (start-up)
and ``records`` (persistence); and it runs the URL watchers (``watchers.UrlWatcher``) of tasks
started with *expect a URL*. All its state lives on the event loop; every blocking call goes
to a worker thread or the store's threads. Every change is published as ``BackgroundChanged``.

The engine facade (``Engine.start_background`` ...) is the one way in for the window, the CLI
and the agent's tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from fxdesk.domain.background import (
    BackgroundError,
    BackgroundTask,
    ForgetResult,
    LaunchPolicy,
    LogNotAccessible,
    Origin,
    PortTaken,
    StopOutcome,
    TaskNotFound,
    explicit_port,
    is_inside,
    parse_ref,
    same_command,
)
from fxdesk.domain.model import PermissionMode
from fxdesk.engine.background import launching, monitor, records, restore, stopping
from fxdesk.engine.background.context import (
    Context,
    SessionPlace,
    SpecBuilder,
    Timings,
    log,
)
from fxdesk.engine.background.launching import LaunchRequest
from fxdesk.engine.background.monitor import Completion
from fxdesk.engine.background.restore import RestoreReport
from fxdesk.engine.background.table import Task
from fxdesk.engine.background.watchers import GIVE_UP_S, UrlWatcher
from fxdesk.engine.bus import EventBus
from fxdesk.engine.clock import Clock
from fxdesk.store import Store, background, repo
from fxdesk.tools.background import logs, ports
from fxdesk.tools.background.provider import ProcessProvider

PORT_CHECK_TIMEOUT_S = 0.5


class BackgroundRuntime:
    """Background tasks of every session this fxdesk runs (module docstring).

    Args:
        provider: Spawns, identifies and signals wrappers (the real one, or a test's fake).
        store: The database (records).
        bus: Where ``BackgroundChanged`` is published.
        clock: The engine's clock (record times).
        durable_logs: Where durable tasks log (``<data>/background``; one folder per session).
        local_logs: Where process-local tasks log (default: the temp folder).
        build_spec: How a wrapper is started (``specs.sandboxed_specs``).
        instance_id: This fxdesk process (``InstanceLock``): the owner of its records.
        owner_alive: Whether another fxdesk process is alive (blocking).
        timings: The spec's waits (tests shorten them).
        url_give_up_s: How long a URL watcher waits for a URL.
    """

    def __init__(
        self,
        provider: ProcessProvider,
        store: Store,
        bus: EventBus,
        clock: Clock,
        *,
        durable_logs: Path,
        build_spec: SpecBuilder,
        local_logs: Path | None = None,
        instance_id: str | None = None,
        owner_alive: Callable[[str], bool] | None = None,
        timings: Timings | None = None,
        url_give_up_s: float = GIVE_UP_S,
    ) -> None:
        self._ctx = Context(
            provider=provider,
            store=store,
            bus=bus,
            clock=clock,
            timings=timings or Timings(),
            durable_logs=durable_logs,
            local_logs=local_logs or Path(tempfile.gettempdir()),
            build_spec=build_spec,
            instance_id=instance_id,
            owner_alive=owner_alive or (lambda _owner: False),
        )
        self._url_give_up_s = url_give_up_s
        self._watchers: dict[Task, UrlWatcher] = {}
        self._jobs: set[asyncio.Task[None]] = set()
        self._monitor: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._last_refresh = -math.inf
        self.restored: RestoreReport | None = None

    @property
    def provider(self) -> ProcessProvider:
        return self._ctx.provider

    # --- life ------------------------------------------------------------------------------

    async def start(self, *, monitor_tasks: bool = True) -> RestoreReport:
        """Re-attach durable tasks that still run, then watch for exits every second."""
        report = await self.restore()
        if monitor_tasks:
            self._monitor = asyncio.get_running_loop().create_task(
                self._monitor_loop(), name="background-monitor"
            )
            self._monitor.add_done_callback(_log_failure)
        return report

    async def restore(self) -> RestoreReport:
        """Look for running records not listed yet (start-up; harmless again: no duplicates)."""
        report, listed = await restore.restore(self._ctx)
        for task in listed:
            self._ctx.publish(task, None)
            if task.expect_url:
                self._watch(task)
        self.restored = report
        return report

    async def shutdown(self) -> int:
        """Quit (spec §3.12): no more refreshes or URLs; watchers end; process-local and
        unsaved tasks are stopped; durable servers keep running. The number stopped."""
        ctx = self._ctx
        await records.retry_degraded(ctx)  # a last chance to make them survive
        ctx.stop_requested = True
        self._wake.set()
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor
        await asyncio.gather(*(w.stop() for w in self._watchers.values()))
        self._watchers.clear()
        stopped = await stopping.stop_at_quit(ctx)
        if self._jobs:
            await asyncio.wait(self._jobs, timeout=5)
        log.info("background runtime stopped: %d task(s) stopped at quit", stopped)
        return stopped

    async def _monitor_loop(self) -> None:
        while not self._ctx.stop_requested:
            try:
                await self.refresh(force=True)
            except Exception:
                log.exception("background refresh failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._ctx.timings.refresh_s)

    async def refresh(self, *, force: bool = False) -> list[Completion]:
        """Look for exits now (throttled to one per 500 ms unless ``force``)."""
        loop = asyncio.get_running_loop()
        if not force and loop.time() - self._last_refresh < self._ctx.timings.refresh_throttle_s:
            return []
        self._last_refresh = loop.time()
        completions = await monitor.refresh(self._ctx)
        for task in list(self._watchers):
            if not task.state.running:
                self._stop_watching(task)
        return completions

    # --- launching -------------------------------------------------------------------------

    async def launch(
        self,
        session_id: str,
        command: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        expect_url: bool = False,
        policy: LaunchPolicy = LaunchPolicy.DURABLE,
        origin: Origin = Origin.AGENT,
    ) -> BackgroundTask:
        """Start ``command`` in the background for the session (``launching``). Raises a
        ``BackgroundError`` whose text says whether the command ran (it did not, unless
        ``ran``)."""
        if not command.strip():
            raise BackgroundError("no command to run")
        place = await self._place(session_id)
        folder = await self._folder(place, cwd)
        if expect_url:
            await self._check_port(place, command)
        request = LaunchRequest(place, command, folder, expect_url, policy, origin)
        task, outcome = await launching.launch(self._ctx, request)
        log.info(
            "background launched display_id=%d policy=%s outcome=%s",
            task.number,
            policy.value,
            outcome.value,
        )
        self._ctx.publish(task, None)
        if expect_url:
            self._watch(task)
        return task.snapshot()

    async def _place(self, session_id: str) -> SessionPlace:
        def read() -> tuple[tuple[int, str, str] | None, tuple[str, ...], tuple[str, ...]]:
            place = background.session_place(session_id)
            if place is None:
                return None, (), ()
            settings = repo.get_workspace_sandbox(place[0])
            if place[2] == PermissionMode.UNRESTRICTED.value and not repo.unrestricted_enabled():
                # Turned off in Settings: it runs as yolo, in the sandbox (as run_command does).
                place = (place[0], place[1], PermissionMode.YOLO.value)
            return place, tuple(settings.writable), tuple(settings.extra_env)

        found, writable, extra_env = await self._ctx.store.read(read)
        if found is None:
            raise BackgroundError(f"no session {session_id}")
        workspace = Path(await asyncio.to_thread(os.path.realpath, found[1]))
        return SessionPlace(session_id, found[0], workspace, found[2], writable, extra_env)

    async def _folder(self, place: SessionPlace, cwd: str | os.PathLike[str] | None) -> Path:
        given = place.workspace if cwd is None else place.workspace / cwd
        folder = Path(await asyncio.to_thread(os.path.realpath, given))
        if not is_inside(str(place.workspace), str(folder)):
            raise BackgroundError(
                f"{cwd} is outside the workspace; a background command runs inside it"
            )
        if not await asyncio.to_thread(folder.is_dir):
            raise BackgroundError(f"{cwd} is not a folder in the workspace")
        return folder

    async def _check_port(self, place: SessionPlace, command: str) -> None:
        """A server whose command names its port, when something already answers there."""
        port = explicit_port(command)
        if port is None:
            return
        try:
            async with asyncio.timeout(PORT_CHECK_TIMEOUT_S):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
        except (OSError, TimeoutError):
            return
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        holder = next(
            (
                t
                for t in reversed(list(self._ctx.table))
                if t.state.running and t.url is not None and f":{port}" in t.url
            ),
            None,
        )
        process = ""
        if holder is None:  # who listens there, as the system says (read only, never signalled)
            found = await asyncio.to_thread(ports.port_holders, port)
            process = " and ".join(h.text() for h in found)
        raise PortTaken(port, None if holder is None else holder.snapshot(), process)

    # --- URLs ------------------------------------------------------------------------------

    def _watch(self, task: Task) -> None:
        if self._ctx.stop_requested or task in self._watchers:
            return
        watcher = UrlWatcher(
            Path(task.log_path),
            on_url=lambda url: self._publish_url(task, url),
            on_give_up=lambda reason: self._gave_up(task, reason),
            give_up_s=self._url_give_up_s,
        )
        self._watchers[task] = watcher
        watcher.start()

    def _stop_watching(self, task: Task) -> None:
        watcher = self._watchers.pop(task, None)
        if watcher is not None:
            self._spawn(watcher.stop(), "url-watcher-stop")

    def _publish_url(self, task: Task, url: str) -> None:
        """A URL found (spec §5.3): kept and saved unless stopping, not running or the same."""
        self._watchers.pop(task, None)
        if self._ctx.stop_requested or not task.state.running or task.url == url:
            return
        task.url = url
        task.expect_url = False
        task.url_note = ""
        self._ctx.publish(task, task.state)
        self._spawn(self._save(task, "publish server URL"), "background-url-save")

    def _gave_up(self, task: Task, reason: str) -> None:
        """No URL in time (Appendix A 3): stop saying "waiting for URL"."""
        self._watchers.pop(task, None)
        if not task.state.running or not task.expect_url:
            return
        task.expect_url = False
        task.url_note = reason
        self._ctx.publish(task, task.state)
        self._spawn(self._save(task, "url watcher gave up"), "background-url-save")

    async def _save(self, task: Task, operation: str) -> None:
        await records.save(self._ctx, task, operation)

    def _spawn(self, job: Coroutine[Any, Any, None], name: str) -> None:
        created = asyncio.get_running_loop().create_task(job, name=name)
        self._jobs.add(created)
        created.add_done_callback(self._jobs.discard)
        created.add_done_callback(_log_failure)

    # --- reading ---------------------------------------------------------------------------

    def tasks(self, session_id: str) -> list[BackgroundTask]:
        """The session's tasks, in the order they were listed."""
        return [t.snapshot() for t in self._ctx.table.of_session(session_id)]

    def all_tasks(self) -> list[BackgroundTask]:
        """Every listed task, of every session."""
        return [t.snapshot() for t in self._ctx.table]

    def workspace_tasks(self, workspace_id: int) -> list[BackgroundTask]:
        """Every session's tasks in the workspace (another fxdesk's flagged ``read_only``)."""
        return [t.snapshot() for t in self._ctx.table.of_workspace(workspace_id)]

    def find(self, ref: str, session_id: str | None = None) -> Task:
        try:
            wanted = parse_ref(ref)
        except ValueError as exc:
            raise TaskNotFound(str(exc)) from exc
        if isinstance(wanted, int):
            if session_id is None:
                raise TaskNotFound(f"#{wanted} names a task within a session: say which session")
            task = self._ctx.table.find(session_id, wanted)
            if task is None:
                raise TaskNotFound(f"no background task #{wanted} in this session")
            return task
        found = self._ctx.table.with_stable_id(wanted)
        if session_id is not None:
            found = [t for t in found if t.session_id == session_id]
        if len(found) != 1:
            raise TaskNotFound(f"no background task {wanted}")
        return found[0]

    def task(self, ref: str, session_id: str | None = None) -> BackgroundTask:
        return self.find(ref, session_id).snapshot()

    async def log_summary(
        self,
        ref: str,
        session_id: str | None = None,
        *,
        max_head_bytes: int = logs.SUMMARY_HEAD_BYTES,
        max_tail_bytes: int = logs.SUMMARY_TAIL_BYTES,
        max_lines: int = logs.SUMMARY_MAX_LINES,
    ) -> logs.LogSummary:
        """The head and the tail of the task's log (spec §8)."""
        task = self.find(ref, session_id)
        try:
            return await asyncio.to_thread(
                functools.partial(
                    logs.summary,
                    Path(task.log_path),
                    max_head_bytes=max_head_bytes,
                    max_tail_bytes=max_tail_bytes,
                    max_lines=max_lines,
                )
            )
        except (logs.LogUnavailable, OSError) as exc:
            raise LogNotAccessible(f"the log of #{task.number} cannot be read: {exc}") from exc

    def log_path(self, ref: str, session_id: str | None = None) -> Path:
        return Path(self.find(ref, session_id).log_path)

    async def reusable(
        self,
        session_id: str,
        command: str,
        cwd: str | os.PathLike[str] | None = None,
        expect_url: bool = False,
    ) -> BackgroundTask | None:
        """A running task of the same command in the same folder (spec §3.14), newest first,
        the session's own before another's: start nothing, use it. ``expect_url`` is ignored,
        as in the reference."""
        del expect_url
        place = await self._place(session_id)
        folder = str(await self._folder(place, cwd))
        await self.refresh()
        candidates = [
            t
            for t in reversed(list(self._ctx.table))
            if t.state.running and t.cwd == folder and same_command(t.command, command)
        ]
        candidates.sort(key=lambda t: t.session_id != session_id)
        return candidates[0].snapshot() if candidates else None

    # --- stopping --------------------------------------------------------------------------

    async def stop(self, ref: str, session_id: str | None = None) -> StopOutcome:
        """Stop one task: SIGTERM to its group after an identity match, SIGKILL if it stays."""
        task = self.find(ref, session_id)
        outcome = await stopping.stop(self._ctx, task)
        if not task.state.running:
            self._stop_watching(task)
        return outcome

    async def forget_workspace(self, workspace_id: int) -> ForgetResult:
        """Stop-and-forget a workspace's running tasks (spec §3.10)."""
        tasks = self._ctx.table.of_workspace(workspace_id)
        result = await stopping.stop_and_forget(self._ctx, tasks)
        for task in tasks:
            if task not in list(self._ctx.table) or not task.state.running:
                self._stop_watching(task)
        return result

    def quit_plan(self) -> tuple[list[BackgroundTask], list[BackgroundTask]]:
        """(stopped at quit, kept running) among this fxdesk's running tasks: what the quit
        dialog says ("N background commands will be stopped; durable servers keep running")."""
        running = [t for t in self._ctx.table.running() if not t.snapshot().read_only]
        stops = [t.snapshot() for t in running if t.stops_at_quit]
        keeps = [t.snapshot() for t in running if not t.stops_at_quit]
        return stops, keeps


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background job %s failed", task.get_name(), exc_info=task.exception())
