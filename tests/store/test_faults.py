"""Fault injection at commit points: definite failures leave no trace, indeterminate ones land."""

from __future__ import annotations

from pathlib import Path

import pytest

from fxdesk.store import Store, repo
from fxdesk.store.errors import CommitFailed, CommitIndeterminate
from fxdesk.store.faults import Fault, FaultInjector


@pytest.fixture
def faulty(tmp_path: Path) -> tuple[Store, FaultInjector]:
    faults = FaultInjector()
    store = Store.open(tmp_path / "db.sqlite3", faults=faults)
    yield store, faults
    store.close()


def _set(store: Store, key: str, label: str = "write") -> None:
    def job() -> None:
        repo.set_setting(key, key)
        repo.set_setting(key + "-twin", key)  # two statements: all or nothing

    store.write_blocking(job, label=label)


def _keys(store: Store) -> set[str]:
    return {row[0] for row in store.execute_for_tests("SELECT key FROM setting")}


def test_definite_failure_leaves_no_trace(faulty: tuple[Store, FaultInjector]) -> None:
    store, faults = faulty
    _set(store, "a")
    faults.fail(faults.commits_seen + 1, Fault.DEFINITE)
    with pytest.raises(CommitFailed) as caught:
        _set(store, "b")
    assert caught.value.definite
    assert _keys(store) == {"a", "a-twin"}
    assert faults.records[-1].fault is Fault.DEFINITE


def test_indeterminate_failure_commits_then_raises(faulty: tuple[Store, FaultInjector]) -> None:
    store, faults = faulty
    faults.fail(1, Fault.INDETERMINATE)
    with pytest.raises(CommitIndeterminate) as caught:
        _set(store, "a")
    assert not caught.value.definite
    assert _keys(store) == {"a", "a-twin"}
    assert [r.fault for r in faults.records[:1]] == [Fault.INDETERMINATE]


def test_from_the_nth_on(faulty: tuple[Store, FaultInjector]) -> None:
    store, faults = faulty
    faults.fail(2, Fault.DEFINITE, onward=True)
    _set(store, "one")
    for key in ("two", "three", "four"):
        with pytest.raises(CommitFailed):
            _set(store, key)
    assert _keys(store) == {"one", "one-twin"}
    faults.clear()
    _set(store, "five")
    assert "five" in _keys(store)
    assert [r.fault for r in faults.records if r.label == "write"] == [
        None,
        Fault.DEFINITE,
        Fault.DEFINITE,
        Fault.DEFINITE,
        None,
    ]


def test_plans_can_count_one_label_only(faulty: tuple[Store, FaultInjector]) -> None:
    store, faults = faulty
    faults.fail(2, Fault.INDETERMINATE, label="tool_result")
    _set(store, "a", label="admit")
    _set(store, "b", label="tool_result")
    _set(store, "c", label="admit")
    with pytest.raises(CommitIndeterminate):
        _set(store, "d", label="tool_result")
    assert {"a", "b", "c", "d"} <= _keys(store)
    assert [(r.label, r.fault) for r in faults.records if r.fault] == [
        ("tool_result", Fault.INDETERMINATE)
    ]


def test_plans_are_validated() -> None:
    with pytest.raises(ValueError):
        FaultInjector().fail(0, Fault.DEFINITE)
