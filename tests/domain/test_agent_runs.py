"""Agent runs and the inbox as pure values (domain/agent_runs.py, domain/agent_inbox.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fxdesk.domain.agent_inbox import (
    EventStatus,
    InvalidSignal,
    Severity,
    retry_delay_ms,
    validate_signal,
)
from fxdesk.domain.agent_runs import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    AdmissionRefused,
    Counters,
    IllegalTransition,
    Limits,
    NewRun,
    RunMode,
    RunStatus,
    TerminalOutcome,
    allowed_targets,
    check_admission,
    check_transition,
    child_budget,
    summarize,
)

S = RunStatus
LEGAL = {
    (S.QUEUED, S.RUNNING),
    (S.RUNNING, S.WAITING_CHILDREN),
    (S.WAITING_CHILDREN, S.RUNNING),
    *((source, end) for source in ACTIVE_STATUSES for end in TERMINAL_STATUSES),
}


@pytest.mark.parametrize("current", list(RunStatus))
@pytest.mark.parametrize("target", list(RunStatus))
def test_every_transition_is_allowed_or_refused(current: RunStatus, target: RunStatus) -> None:
    if (current, target) in LEGAL:
        check_transition(current, target)
        assert target in allowed_targets(current)
        return
    with pytest.raises(IllegalTransition) as caught:
        check_transition(current, target)
    assert caught.value.code == "ILLEGAL_TRANSITION"
    assert str(caught.value).startswith(f"a run cannot go from {current} to {target}: ")


def test_a_finished_run_never_changes_and_says_why() -> None:
    with pytest.raises(IllegalTransition, match="completed to running: it is finished"):
        check_transition(S.COMPLETED, S.RUNNING)
    assert all(allowed_targets(status) == frozenset() for status in TERMINAL_STATUSES)
    assert {s for s in RunStatus if s.terminal} == TERMINAL_STATUSES


def test_limits_defaults_follow_the_spec() -> None:
    limits = Limits()
    assert (limits.max_inbox, limits.max_concurrent_runs) == (32, 4)
    assert (limits.max_runs_per_tree, limits.max_tree_depth) == (16, 4)
    assert (limits.max_delivery_attempts, limits.signal_dedupe_window_ms) == (5, 300_000)
    assert (limits.stale_lease_ms, limits.summary_bytes) == (60_000, 500)
    with pytest.raises(ValueError, match="max_inbox must be at least 1"):
        Limits(max_inbox=0)


def _admit(mode: RunMode, batch: int, counters: Counters | None = None, **kw: object) -> None:
    options: dict[str, object] = {"depth": 1, "tree_runs": 0, "caller_is_root": True}
    options.update(kw)
    check_admission(mode, batch, counters=counters or Counters(), limits=Limits(), **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (
            lambda: _admit(RunMode.BACKGROUND, 1, Counters(pending=20, reserved=12)),
            "INBOX_FULL",
            "inbox full: 32 of 32 slots pending or reserved",
        ),
        (
            lambda: _admit(RunMode.BACKGROUND, 3, Counters(pending=20, reserved=10)),
            "INBOX_FULL",
            "inbox full: 30 of 32 slots pending or reserved; 3 needed, 2 free",
        ),
        (
            lambda: _admit(RunMode.BACKGROUND, 5),
            "BG_BATCH_TOO_LARGE",
            "batch of 5 is larger than the concurrent-run limit of 4",
        ),
        (
            lambda: _admit(RunMode.FOREGROUND, 0),
            "EMPTY_BATCH",
            "no tasks to delegate: the batch is empty",
        ),
        (
            lambda: _admit(RunMode.BACKGROUND, 1, caller_is_root=False),
            "BG_NESTED_UNSUPPORTED",
            "only the root agent may start background runs; a sub-agent delegates in the "
            "foreground",
        ),
        (
            lambda: _admit(RunMode.FOREGROUND, 1, depth=5),
            "DEPTH_EXCEEDED",
            "delegation too deep: a run at depth 5 exceeds the limit of 4; do this task yourself",
        ),
        (
            lambda: _admit(RunMode.FOREGROUND, 2, depth=2, tree_runs=15, caller_is_root=False),
            "TREE_BUDGET_EXCEEDED",
            "run budget exhausted: this delegation tree has 15 of 16 runs, 1 left, and the "
            "batch asks for 2",
        ),
    ],
)
def test_admission_refusals_say_why(call: object, code: str, message: str) -> None:
    with pytest.raises(AdmissionRefused) as caught:
        call()  # type: ignore[operator]
    assert (caught.value.code, str(caught.value)) == (code, message)


def test_admission_at_the_limits_is_allowed() -> None:
    _admit(RunMode.BACKGROUND, 4, Counters(pending=20, reserved=8))  # 28 + 4 = 32
    _admit(RunMode.FOREGROUND, 9, Counters(pending=32))  # foreground takes no slot
    _admit(RunMode.FOREGROUND, 1, depth=4, tree_runs=15, caller_is_root=False)


def test_child_budget() -> None:
    assert child_budget(Limits(), depth=1, tree_runs_after=1).to_json() == {
        "remaining_runs": 15,
        "remaining_depth": 3,
    }
    assert child_budget(Limits(), depth=9, tree_runs_after=99).remaining_runs == 0


def test_scenario_23_summaries_are_cut_on_whole_characters() -> None:
    assert summarize("a" * 600) == "a" * 500 + "..."
    assert summarize("a" * 500) == "a" * 500
    assert summarize("a" + "€" * 300) == "a" + "€" * 166 + "..."  # 1 + 3*166 = 499 bytes
    assert TerminalOutcome.completed("x" * 600).summary() == "x" * 500 + "..."
    assert TerminalOutcome.failed("boom", raised=True).summary() is None
    assert TerminalOutcome.cancelled("person said stop").summary() == "person said stop"


@given(st.text())
def test_summaries_are_valid_prefixes(text: str) -> None:
    cut = summarize(text, 50)
    if len(text.encode()) <= 50:
        assert cut == text
    else:
        assert cut.endswith("...") and text.startswith(cut[:-3])
        assert len(cut[:-3].encode()) <= 50


def test_outcomes_are_terminal_and_timeouts_keep_the_detection_time() -> None:
    timed_out = TerminalOutcome.timed_out(12_345)
    assert (timed_out.status, timed_out.detected_at_ms) == (S.TIMED_OUT, 12_345)
    with pytest.raises(ValueError, match="not a terminal status"):
        TerminalOutcome(S.RUNNING)


def test_a_new_run_needs_a_named_agent_and_a_known_lane() -> None:
    base = dict(id="r", root_session_id="s", caller_session_id="s", task="t")
    with pytest.raises(ValueError, match="named agent"):
        NewRun(**base, agent_id="", mode=RunMode.FOREGROUND, deadline_at_ms=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown signal lane"):
        NewRun(**base, agent_id="a", mode=RunMode.FOREGROUND, deadline_at_ms=1, signal_lane="x")  # type: ignore[arg-type]


def test_signal_validation_accepts_and_normalizes() -> None:
    sig = validate_signal(" err-rate ", "warning", " rate up ", {"current": 0.071}, " svc-a:err ")
    assert (sig.key, sig.severity, sig.summary, sig.dedupe_key) == (
        "err-rate",
        Severity.WARNING,
        "rate up",
        "svc-a:err",
    )
    assert sig.details_json() == '{"current": 0.071}'


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("", "info", "s"), "key"),
        (("has space", "info", "s"), "key"),
        (("k" * 65, "info", "s"), "key"),
        (("k", "loud", "s"), "severity"),
        (("k", None, "s"), "severity"),
        (("k", "info", "  "), "summary"),
        (("k", "info", "s" * 301), "summary"),
        (("k", "info", "s", {"x": object()}), "details"),
        (("k", "info", "s", {"x": float("nan")}), "details"),
        (("k", "info", "s", {"x": "y" * 9000}), "details"),
        (("k", "info", "s", None, ""), "dedupe_key"),
        (("k", "info", "s", None, "d" * 129), "dedupe_key"),
    ],
)
def test_signal_validation_names_the_bad_field(args: tuple[object, ...], field: str) -> None:
    with pytest.raises(InvalidSignal) as caught:
        validate_signal(*args)
    assert caught.value.field == field and str(caught.value).startswith(f"signal {field}: ")


def test_counted_event_statuses_and_retry_backoff() -> None:
    assert {s for s in EventStatus if s.counted} == {EventStatus.PENDING, EventStatus.CLAIMED}
    assert [retry_delay_ms(n, 1_000) for n in (1, 2, 3)] == [1_000, 2_000, 4_000]
    assert retry_delay_ms(30, 1_000) == 300_000
