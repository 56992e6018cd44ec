"""How agent runs and inbox events are worded in the window (pure functions, no widgets)."""

from __future__ import annotations

from fxdesk.domain.agent_inbox import EventKind, InboxEvent, Lane, Severity
from fxdesk.domain.agent_runs import AgentRun, RunMode, RunStatus
from fxdesk.domain.usage import money, tokens
from fxdesk.gui.agents.marks import PLAIN_SPAWNED

STATUS_LABELS = {
    RunStatus.QUEUED: "queued",
    RunStatus.RUNNING: "running",
    RunStatus.WAITING_CHILDREN: "waiting for sub-agents",
    RunStatus.COMPLETED: "completed",
    RunStatus.FAILED: "failed",
    RunStatus.TIMED_OUT: "timed out",
    RunStatus.CANCELLED: "cancelled",
    RunStatus.INTERRUPTED: "interrupted",
}
MODE_MARKS = {RunMode.FOREGROUND: "fg", RunMode.BACKGROUND: "bg"}
MODE_WORDS = {
    RunMode.FOREGROUND: "foreground run: its caller waits for the result",
    RunMode.BACKGROUND: "background run: its result arrives in the root session's inbox",
}
SEVERITY_MARKS = {
    Severity.INFO: "ℹ info",
    Severity.WARNING: "⚠ warning",
    Severity.ERROR: "✖ error",
    Severity.CRITICAL: "‼ critical",
}
SEVERITY_ORDER = {Severity.CRITICAL: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}
NONE = "—"


def duration_text(ms: int) -> str:
    """ "8 s", "4 min 05 s", "1 h 02 min"."""
    seconds = max(0, ms) // 1000
    if ms < 1000:
        return "<1 s"
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def countdown_text(seconds: int) -> str:
    """Time left before a deadline, as a clock: "4:32", "1:02:03", "0:00" once passed."""
    seconds = max(0, seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def seconds_left(run: AgentRun, now_ms: int) -> int | None:
    """Seconds until an unfinished run's deadline (None once it finished)."""
    if run.status.terminal or not run.deadline_at_ms:
        return None
    return max(0, (run.deadline_at_ms - now_ms + 999) // 1000)


def run_duration(run: AgentRun, now_ms: int) -> str:
    if run.started_at_ms is None:
        return NONE
    return duration_text((run.finished_at_ms or now_ms) - run.started_at_ms)


def run_model(run: AgentRun) -> str:
    """The model the run's definition asked for; "as caller" when it takes its caller's."""
    return run.model_id or (
        f"{run.provider_profile} profile" if run.provider_profile else "as caller"
    )


def run_tokens(run: AgentRun) -> str:
    if run.prompt_tokens is None and run.completion_tokens is None:
        return NONE
    return f"{tokens(run.prompt_tokens or 0)} in / {tokens(run.completion_tokens or 0)} out"


def run_cost(run: AgentRun) -> str:
    return money(run.cost) if run.cost is not None else NONE


def run_result(run: AgentRun) -> str:
    """The run's outcome in one line: its summary, else why it failed or stopped."""
    text = run.summary or run.result or run.error or ""
    return " ".join(text.split())


def run_tooltip(run: AgentRun, now_ms: int) -> str:
    """Everything about a run, for the tree row and the Runs table."""
    lines = [
        f"{run.agent_id} · {MODE_WORDS[run.mode]}",
        f"Status: {STATUS_LABELS[run.status]}",
        f"Task: {run.task}",
        f"Model: {run_model(run)}",
    ]
    left = seconds_left(run, now_ms)
    if left is not None:
        lines.append(f"Deadline in {countdown_text(left)}")
    if run.started_at_ms is not None:
        lines.append(f"Took {run_duration(run, now_ms)}")
    if run.tool_calls is not None:
        lines.append(f"Tool calls: {run.tool_calls}")
    if run.prompt_tokens is not None or run.cost is not None:
        lines.append(f"Used: {run_tokens(run)} · {run_cost(run)}")
    if run.error:
        lines.append(f"Reason: {run.error}")
    lines.append(f"Run {run.id}")
    return "\n".join(lines)


PERSISTENT_MARK = "persistent"


def spawned_mark(agent: str) -> str:
    """The tree's badge of a persistent child: "explorer · persistent"."""
    return f"{agent} · {PERSISTENT_MARK}"


def spawned_tooltip(agent: str) -> str:
    what = "a sub-agent with a role of its own" if agent == PLAIN_SPAWNED else agent
    return (
        f"Persistent sub-agent ({what}), started by its parent's agent: it keeps its "
        "conversation and takes more work from that agent until the agent closes it"
    )


def event_summary(event: InboxEvent) -> str:
    """One line: a signal's summary, or which run finished how."""
    payload = event.payload
    if event.kind is EventKind.SIGNAL:
        return str(payload.get("summary") or event.signal_key or "signal")
    agent = payload.get("agent_id") or "sub-agent"
    status = payload.get("status") or "finished"
    text = str(payload.get("summary") or payload.get("error") or "")
    return f"{agent} {status}" + (f": {' '.join(text.split())}" if text else "")


def event_severity(event: InboxEvent) -> str:
    """ "⚠ warning" for a signal, "✓ done"/"✗ failed"… for a completion."""
    if event.kind is EventKind.SIGNAL and event.severity is not None:
        return SEVERITY_MARKS[event.severity]
    status = str(event.payload.get("status") or "")
    return "✓ done" if status == RunStatus.COMPLETED else f"■ {status.replace('_', ' ')}"


def event_rank(event: InboxEvent) -> tuple[int, int]:
    """Sort key: by severity (critical first; completions after signals), newest first."""
    if event.kind is EventKind.SIGNAL and event.severity is not None:
        rank = SEVERITY_ORDER[event.severity]
    else:
        status = str(event.payload.get("status") or "")
        rank = 4 if status == RunStatus.COMPLETED else 1 if status == RunStatus.FAILED else 3
    return rank, -event.created_at_ms


def lane_mark(event: InboxEvent) -> str:
    """ "⤷ steer" for events that go into the running turn, "" for the queue lane."""
    return "⤷ steer" if event.lane is Lane.STEER else ""


def external_mark(agent: str) -> str:
    """The tree's badge of a session an external agent runs: "ACP · claude-code-acp"."""
    return f"ACP · {agent}"
