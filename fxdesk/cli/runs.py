"""``fxdesk runs SESSION``, ``fxdesk inbox SESSION``, ``fxdesk cancel-run RUN``: the sub-agent
runs of a session's tree, its root's inbox, and cancelling a run (issue 13)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from fxdesk.cli.exit_codes import ExitCode
from fxdesk.cli.runner import CommandError, execute
from fxdesk.domain.agent_inbox import InboxEvent
from fxdesk.domain.agent_runs import AgentRun, AgentRunError
from fxdesk.paths import DataPaths

if TYPE_CHECKING:
    from fxdesk.engine.facade import Engine


def register(commands: Any) -> None:
    runs = commands.add_parser("runs", help="the sub-agent runs of a session's tree")
    runs.add_argument("session", help="a session id (or unique prefix)")
    runs.add_argument("--json", action="store_true", help="print JSON")
    runs.set_defaults(handler=cmd_runs)
    inbox = commands.add_parser("inbox", help="a root session's inbox: completions and signals")
    inbox.add_argument("session", help="a session id (or unique prefix)")
    inbox.add_argument("--json", action="store_true", help="print JSON")
    inbox.set_defaults(handler=cmd_inbox)
    cancel = commands.add_parser("cancel-run", help="cancel a sub-agent run and the runs below it")
    cancel.add_argument("run", help="a run id (or unique prefix)")
    cancel.set_defaults(handler=cmd_cancel_run)


def run_json(run: AgentRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "agent": run.agent_id,
        "mode": run.mode.value,
        "status": run.status.value,
        "depth": run.depth,
        "parent_run_id": run.parent_run_id,
        "child_session_id": run.child_session_id,
        "task": run.task,
        "model": run.model_id,
        "created_at_ms": run.created_at_ms,
        "started_at_ms": run.started_at_ms,
        "finished_at_ms": run.finished_at_ms,
        "deadline_at_ms": run.deadline_at_ms,
        "tool_calls": run.tool_calls,
        "iterations": run.iterations,
        "prompt_tokens": run.prompt_tokens,
        "completion_tokens": run.completion_tokens,
        "cost": run.cost,
        "summary": run.summary,
        "error": run.error,
        "signal_ids": list(run.signal_ids),
    }


def event_json(event: InboxEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "kind": event.kind.value,
        "run_id": event.run_id,
        "status": event.status.value,
        "lane": event.lane.value,
        "severity": event.severity.value if event.severity else None,
        "count": event.count,
        "requires_continuation": event.requires_continuation,
        "created_at_ms": event.created_at_ms,
        "payload": dict(event.payload),
    }


def _duration(run: AgentRun) -> str:
    if run.started_at_ms is None:
        return "-"
    end = run.finished_at_ms or run.updated_at_ms
    return f"{(end - run.started_at_ms) / 1000:.1f}s"


def cmd_runs(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        runs = await engine.runs(session.id)
        if args.json:
            print(json.dumps([run_json(r) for r in runs], indent=2))
            return ExitCode.OK
        if not runs:
            print("no sub-agent runs")
        for run in runs:
            indent = "  " * (run.depth - 1)
            task = run.task.splitlines()[0][:60]
            line = (
                f"{indent}{run.id[:8]}  {run.agent_id:<10} {run.mode.value:<10} "
                f"{run.status.value:<16} {_duration(run):>7}  {task}"
            )
            outcome = run.summary or run.error
            print(f"{line}  -> {outcome}" if run.status.terminal and outcome else line)
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def cmd_inbox(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        session = await engine.find_session(args.session)
        view = await engine.inbox(session.id)
        if args.json:
            print(
                json.dumps(
                    {
                        "root_session_id": view.root_session_id,
                        "pending": view.counters.pending,
                        "reserved": view.counters.reserved,
                        "capacity": view.capacity,
                        "events": [event_json(e) for e in view.events],
                    },
                    indent=2,
                )
            )
            return ExitCode.OK
        used = view.counters.pending + view.counters.reserved
        print(
            f"inbox of {view.root_session_id}: {view.counters.pending} pending, "
            f"{view.counters.reserved} reserved ({used} of {view.capacity})"
        )
        for event in view.events:
            p = event.payload
            if event.kind.value == "signal":
                text = f"signal {event.severity} {p.get('key')}: {p.get('summary')}"
                if event.count > 1:
                    text += f" (x{event.count})"
            else:
                text = f"run {str(p.get('run_id'))[:8]} {p.get('status')}"
                if p.get("summary") or p.get("error"):
                    text += f": {p.get('summary') or p.get('error')}"
            lane = " [steer]" if event.lane.value == "steer" else ""
            print(f"  {event.status.value:<10} {text}{lane}")
        return ExitCode.OK

    return execute(paths, body, with_engine=False)


def cmd_cancel_run(args: argparse.Namespace, paths: DataPaths) -> int:
    async def body(engine: Engine) -> int:
        try:
            changed = await engine.cancel_run(args.run)
        except AgentRunError as exc:
            raise CommandError(str(exc), ExitCode.FAILED) from exc
        print("cancelled" if changed else "already finished: nothing to cancel")
        return ExitCode.OK

    # Runs nothing of its own and recovers nothing: another fxdesk may be running the run.
    return execute(paths, body, recover=False, background=False)
