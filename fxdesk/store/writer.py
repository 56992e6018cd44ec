"""The single writer thread, with group commit.

Every database write runs on this one thread, which owns the write connection. Writes that queue
up while the thread is busy are committed together: one ``BEGIN IMMEDIATE`` ... ``COMMIT`` around
several jobs, each inside its own savepoint. A job is still atomic and isolated (a job that raises
rolls back to its savepoint and the others carry on), and its caller hears back only after the
shared COMMIT, so "done" still means "durable". Under load this turns many small commits into a
few larger ones; alone, a job costs the same as before.

If SQLite itself abandons the transaction (disk full, I/O error) or the COMMIT fails, nothing of
the batch was saved and every job in it fails with that error.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import peewee as pw

from fxdesk.store import errors
from fxdesk.store.faults import Fault, FaultInjector

log = logging.getLogger(__name__)

MAX_BATCH = 64

# Every job of a batch gets a savepoint of this one name (each is released, or rolled back,
# before the next job starts; see ``_JobSavepoint``), so the statements are the same each time
# (SQLite's statement cache keeps them) and no id is generated per job, as peewee's ``atomic()``
# does (issue 17: durable transitions).
_SAVEPOINT_SQL = 'SAVEPOINT "fxdesk_job"'
_RELEASE_SQL = 'RELEASE SAVEPOINT "fxdesk_job"'
_ROLLBACK_SQL = 'ROLLBACK TO SAVEPOINT "fxdesk_job"'

_handing_out = threading.local()  # the writer thread, while it hands out a batch's results

Translate = Callable[[BaseException, bool], "errors.StoreError | None"]
# How a ``submit``ted job's outcome is handed over: (the error, or None; the value).
OnDone = Callable[[BaseException | None, Any], None]


@dataclass(eq=False)
class _Write:
    fn: Callable[[], Any]
    label: str
    inject: bool
    future: concurrent.futures.Future[Any] | None  # None: ``on_done`` takes the outcome
    on_done: OnDone | None = None


@dataclass(eq=False)
class _Call:
    fn: Callable[[], Any]
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)


_STOP = object()


class _InjectedRollback(Exception):
    """Raised inside a job's savepoint to make an injected definite failure roll it back."""


@dataclass
class WriterStats:
    """What the writer did (for tests and benchmarks)."""

    jobs: int = 0
    batches: int = 0
    largest_batch: int = 0


class Writer:
    """One thread that runs every write, group-committing the ones that queue up."""

    def __init__(
        self, db: pw.SqliteDatabase, translate: Translate, faults: FaultInjector | None
    ) -> None:
        self._db = db
        self._translate = translate
        self.faults = faults
        self.stats = WriterStats()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._stopped = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="fxdesk-db-writer", daemon=True)
        self._thread.start()

    @property
    def ident(self) -> int | None:
        return self._thread.ident

    def write(
        self, fn: Callable[[], Any], label: str, inject: bool = True
    ) -> concurrent.futures.Future[Any]:
        """Queue ``fn`` to run in a transaction; the future resolves after it is committed."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._put(_Write(fn, label, inject, future))
        return future

    def submit(self, fn: Callable[[], Any], label: str, on_done: OnDone) -> None:
        """``write`` with the outcome handed to ``on_done(error, value)`` on the writer thread
        after the COMMIT (as a future's done-callback would be), for a caller that awaits it on
        an event loop: no future to make, lock and read on each side (issue 17: durable
        transitions). ``on_done`` must be quick and must not raise."""
        self._put(_Write(fn, label, True, None, on_done))

    def call(self, fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
        """Queue ``fn`` to run on the writer thread outside any transaction (open, close)."""
        job = _Call(fn)
        self._put(job)
        return job.future

    def _put(self, job: _Write | _Call) -> None:
        with self._lock:
            if self._stopped:
                raise errors.StoreClosedError()
            self._queue.put(job)

    def stop(self) -> None:
        """Finish every queued job, then end the thread. Idempotent."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._queue.put(_STOP)
        if threading.get_ident() != self._thread.ident:
            self._thread.join()

    # --- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        backlog: collections.deque[Any] = collections.deque()
        while True:
            job = backlog.popleft() if backlog else self._queue.get()
            if job is _STOP:
                return
            if isinstance(job, _Call):
                _resolve_call(job)
                continue
            batch = [job]
            while len(batch) < MAX_BATCH:
                try:
                    following = self._queue.get_nowait()
                except queue.Empty:
                    break
                if isinstance(following, _Write):
                    batch.append(following)
                else:
                    backlog.append(following)
                    break
            self._commit(batch)

    def _commit(self, batch: list[_Write]) -> None:
        live = [
            job for job in batch if job.future is None or job.future.set_running_or_notify_cancel()
        ]
        if not live:
            return
        self.stats.batches += 1
        self.stats.jobs += len(live)
        self.stats.largest_batch = max(self.stats.largest_batch, len(live))
        outcomes: dict[_Write, tuple[bool, Any, Fault | None]] = {}
        committing = False
        lost: BaseException | None = None  # why SQLite abandoned the transaction
        try:
            self._db.connect(reuse_if_open=True)
            conn = self._db.connection()
            with self._db.atomic("IMMEDIATE"):
                alone = len(live) == 1  # no savepoint needed: the transaction is the job's
                # one savepoint helper (and its cursor) for the batch's jobs, made once
                savepoint = None if alone else _JobSavepoint(self._db)
                for job in live:
                    outcomes[job] = self._run_one(job, savepoint)
                    if alone and not outcomes[job][0]:
                        raise _BatchLost(None)  # roll the lone job's transaction back
                    if not _in_transaction(conn):
                        # SQLite gave up the whole transaction (disk full, I/O error): nothing
                        # of this batch survives. (peewee's own ROLLBACK then fails too.)
                        failure = outcomes[job][1]
                        lost = failure if isinstance(failure, BaseException) else None
                        raise _BatchLost(lost)
                committing = True
        except Exception as exc:
            cause = lost if lost is not None else exc
            error = self._translate(cause, committing) or cause
            with _handing_out_results():
                for job in live:
                    ok, value, _fault = outcomes.get(job, (True, None, None))
                    # a job that failed alone keeps its own error
                    _fail(job, error if ok else value)
            return
        with _handing_out_results():
            for job in live:
                ok, value, fault = outcomes[job]
                if not ok:
                    _fail(job, value)
                elif fault is Fault.INDETERMINATE:
                    _fail(
                        job,
                        errors.CommitIndeterminate(
                            f"saving ({job.label}) failed: injected indeterminate failure, "
                            "the change was committed"
                        ),
                    )
                else:
                    _succeed(job, value)

    def _run_one(
        self, job: _Write, savepoint: _JobSavepoint | None
    ) -> tuple[bool, Any, Fault | None]:
        fault: Fault | None = None
        try:
            with savepoint if savepoint is not None else contextlib.nullcontext():
                value = job.fn()
                if self.faults is not None and job.inject:
                    fault = self.faults.on_commit(job.label)
                if fault is Fault.DEFINITE:
                    raise _InjectedRollback
        except _InjectedRollback:
            return (
                False,
                errors.CommitFailed(
                    f"saving ({job.label}) failed: injected definite failure, nothing was written"
                ),
                fault,
            )
        except Exception as exc:
            return False, self._translate(exc, False) or exc, None
        return True, value, fault


def _in_transaction(conn: Any) -> bool:
    return bool(isinstance(conn, sqlite3.Connection) and conn.in_transaction)


class _JobSavepoint:
    """What ``db.atomic()`` does inside a transaction (peewee's ``_savepoint``), with one fixed
    name and a plain cursor (errors reach ``_translate`` as the driver's). A savepoint rolled
    back stays open until the COMMIT, as peewee leaves it; the next job's savepoint of the same
    name nests inside it and is the one its RELEASE ends. A class rather than a generator:
    it runs for every job of a group commit; one is made per batch and entered for each job
    (its cursor is only ever used between one job's statements and the next's)."""

    __slots__ = ("_execute",)

    def __init__(self, db: pw.SqliteDatabase) -> None:
        self._execute = db.cursor().execute

    def __enter__(self) -> None:
        self._execute(_SAVEPOINT_SQL)

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None:
            self._execute(_ROLLBACK_SQL)
            return
        try:
            self._execute(_RELEASE_SQL)
        except Exception:
            self._execute(_ROLLBACK_SQL)
            raise


class _BatchLost(Exception):
    def __init__(self, cause: BaseException | None) -> None:
        super().__init__("the transaction was rolled back by SQLite")
        self.cause = cause


def after_results(fn: Callable[[], None]) -> bool:
    """Run ``fn`` once the writer has handed out the results of the whole batch it is on.

    For what runs on the writer thread as each result is handed out (the ``on_done`` of
    ``submit``, a write future's done-callbacks): one that wakes an event loop can wake it once
    per group commit instead of once per job. Returns False (and keeps nothing) when not
    called from there: the caller runs ``fn`` itself.
    """
    pending: list[Callable[[], None]] | None = getattr(_handing_out, "pending", None)
    if pending is None:
        return False
    pending.append(fn)
    return True


@contextlib.contextmanager
def _handing_out_results() -> Iterator[None]:
    pending: list[Callable[[], None]] = []
    _handing_out.pending = pending
    try:
        yield
    finally:
        _handing_out.pending = None
        for fn in pending:
            try:
                fn()
            except Exception:  # as a future's done-callback: logged, the writer carries on
                log.exception("a callback after a batch's results failed")


def _succeed(job: _Write, value: Any) -> None:
    if job.future is not None:
        job.future.set_result(value)
    elif job.on_done is not None:
        _hand_over(job.on_done, None, value)


def _fail(job: _Write, error: BaseException) -> None:
    if job.future is not None:
        job.future.set_exception(error)
    elif job.on_done is not None:
        _hand_over(job.on_done, error, None)


def _hand_over(on_done: OnDone, error: BaseException | None, value: Any) -> None:
    try:
        on_done(error, value)
    except Exception:  # as a future's done-callback would be: logged, the writer carries on
        log.exception("a store job's outcome could not be handed over")


def _resolve_call(job: _Call) -> None:
    if not job.future.set_running_or_notify_cancel():
        return
    try:
        result = job.fn()
    except BaseException as exc:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)
