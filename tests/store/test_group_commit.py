"""Group commit: writes that queue up share a transaction, yet each stays atomic and isolated."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pytest

from fxdesk.store import Store, repo
from fxdesk.store.errors import CommitFailed, CommitIndeterminate, DiskFullError
from fxdesk.store.faults import Fault, FaultInjector


def _queue_behind_a_gate(
    store: Store, jobs: list[Callable[[], object]]
) -> tuple[threading.Event, list[Future[object]]]:
    """Hold the writer so ``jobs`` queue up and run as one batch when the gate opens."""
    gate = threading.Event()
    store._writer.call(lambda: gate.wait(30))
    futures = [store._writer.write(job, "test") for job in jobs]
    return gate, futures


def test_queued_writes_share_one_commit(store: Store) -> None:
    before = store.writer_stats.batches
    gate, futures = _queue_behind_a_gate(
        store, [lambda i=i: repo.set_setting(f"k{i}", i) for i in range(10)]
    )
    gate.set()
    for future in futures:
        future.result(timeout=30)
    assert store.writer_stats.batches == before + 1
    assert store.writer_stats.largest_batch == 10
    assert store.read_blocking(lambda: [repo.get_setting(f"k{i}") for i in range(10)]) == list(
        range(10)
    )


def test_a_failing_write_in_a_batch_rolls_back_only_itself(store: Store) -> None:
    def broken() -> None:
        repo.set_setting("broken-part", 1)
        raise ValueError("this job fails")

    gate, futures = _queue_behind_a_gate(
        store, [lambda: repo.set_setting("a", 1), broken, lambda: repo.set_setting("c", 3)]
    )
    gate.set()
    assert futures[0].result(timeout=30) is None
    with pytest.raises(ValueError, match="this job fails"):
        futures[1].result(timeout=30)
    assert futures[2].result(timeout=30) is None
    values = store.read_blocking(lambda: [repo.get_setting(k) for k in ("a", "broken-part", "c")])
    assert values == [1, None, 3]


def test_a_lone_failing_write_leaves_nothing(store: Store) -> None:
    def broken() -> None:
        repo.set_setting("half", 1)
        raise ValueError("alone")

    with pytest.raises(ValueError):
        store.write_blocking(broken)
    assert store.read_blocking(lambda: repo.get_setting("half")) is None


def test_injected_faults_apply_per_write_inside_a_batch(tmp_path: Path) -> None:
    faults = FaultInjector()
    store = Store.open(tmp_path / "db.sqlite3", faults=faults)
    try:
        faults.fail(2, Fault.DEFINITE, label="test")
        faults.fail(3, Fault.INDETERMINATE, label="test")
        gate, futures = _queue_behind_a_gate(
            store, [lambda k=k: repo.set_setting(k, k) for k in ("one", "two", "three", "four")]
        )
        gate.set()
        assert futures[0].result(timeout=30) is None
        with pytest.raises(CommitFailed):
            futures[1].result(timeout=30)
        with pytest.raises(CommitIndeterminate):
            futures[2].result(timeout=30)
        assert futures[3].result(timeout=30) is None
        keys = store.read_blocking(
            lambda: [repo.get_setting(k) for k in ("one", "two", "three", "four")]
        )
        assert keys == ["one", None, "three", "four"]
    finally:
        store.close()


def test_disk_full_in_a_batch_fails_every_write_of_it(store: Store) -> None:
    store.write_blocking(lambda: repo.set_setting("kept", 1))
    pages = store.execute_for_tests("PRAGMA page_count")[0][0]
    store.execute_for_tests(f"PRAGMA max_page_count = {pages}")
    gate, futures = _queue_behind_a_gate(
        store,
        [lambda: repo.set_setting("small", 1), lambda: repo.set_setting("big", "x" * 500_000)],
    )
    gate.set()
    for future in futures:
        with pytest.raises(DiskFullError):
            future.result(timeout=30)
    store.execute_for_tests("PRAGMA max_page_count = 1073741823")
    assert store.read_blocking(lambda: (repo.get_setting("kept"), repo.get_setting("small"))) == (
        1,
        None,
    )
    store.write_blocking(lambda: repo.set_setting("after", 2))  # the writer carries on


async def test_concurrent_writers_are_batched_and_all_land(store: Store) -> None:
    async def writer(n: int) -> None:
        for i in range(20):
            await store.write(lambda n=n, i=i: repo.set_setting(f"w{n}-{i}", i))

    await asyncio.gather(*(writer(n) for n in range(16)))
    stored = await store.read(
        lambda: sum(repo.get_setting(f"w{n}-{i}") is not None for n in range(16) for i in range(20))
    )
    assert stored == 320
    assert store.writer_stats.batches < store.writer_stats.jobs  # some commits were shared


def test_an_event_loop_that_used_the_store_can_be_freed(store: Store) -> None:
    """The store wakes each loop through a waker kept per loop; the waker must not keep its
    loop alive once the loop is closed and dropped (tests and restarts make many loops)."""
    import gc
    import weakref

    async def write_and_read() -> object:
        await store.write(lambda: repo.set_setting("loop-test", 1))
        return await store.read(lambda: repo.get_setting("loop-test"))

    loop = asyncio.new_event_loop()
    assert loop.run_until_complete(write_and_read()) == 1
    loop.close()
    gone = weakref.ref(loop)
    del loop
    # A later loop is woken as before; the store's threads hold nothing of the first one.
    assert asyncio.run(write_and_read()) == 1
    gc.collect()
    assert gone() is None
