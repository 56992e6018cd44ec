"""The one SQLite database: opening it safely, and the single writer.

All writes run on one thread (``fxdesk-db-writer``, see ``writer.py``: group commit) that owns the
write connection; reads run on a reader thread with its own connection (WAL lets them proceed
while a write is in flight). The GUI thread therefore never waits on disk: it awaits
``Store.write``/``Store.read``.

Opening checks the file read-only before anything is written, so a database from a newer fxdesk, a
file that is not a database, a damaged one or a read-only one gets a clear ``StoreError`` and stays
byte-for-byte unchanged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import os
import sqlite3
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import peewee as pw

from fxdesk.store import errors, migrations
from fxdesk.store.faults import FaultInjector
from fxdesk.store.schema import database_proxy
from fxdesk.store.writer import OnDone, Writer, WriterStats, after_results

log = logging.getLogger(__name__)

T = TypeVar("T")

SQLITE_MAGIC = b"SQLite format 3\x00"
DEFAULT_BUSY_TIMEOUT_S = 5.0
CACHE_SIZE_KIB = 16 * 1024
# The writer's own: it mostly appends, and its cache, which its own commits never reset (a
# reader's is dropped whenever another connection wrote since its last read), filled to the
# whole 16 MiB with pages it wrote and never read again (issue 17: the streaming soak).
WRITER_CACHE_SIZE_KIB = 2 * 1024


class Store:
    """The fxdesk database. Create with ``Store.open`` (blocking) or ``await Store.aopen``.

    Attributes:
        path: the database file.
        schema_version: the schema version after migrations.
        journal_mode: what SQLite reports (``wal`` unless the file system refuses it).
        faults: the fault injector consulted at every commit, or ``None``.
    """

    _open_instance: Store | None = None
    _instance_lock = threading.Lock()

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S,
        faults: FaultInjector | None = None,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self.faults = faults
        self.schema_version = 0
        self.journal_mode = ""
        self.migrated_from: int | None = None
        self._db = pw.SqliteDatabase(None, autoconnect=False)
        self._writer = Writer(self._db, self._translate, faults)
        self._reader = concurrent.futures.ThreadPoolExecutor(1, "fxdesk-db-reader")
        self._closed = False

    # --- opening and closing ---------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, **kwargs: Any) -> Store:
        """Open (creating or migrating) the database; blocks until done."""
        store = cls(path, **kwargs)
        with cls._instance_lock:
            if cls._open_instance is not None:
                store._shutdown_executors()
                raise RuntimeError(f"a Store is already open on {cls._open_instance.path}")
            cls._open_instance = store
        try:
            store._writer.call(store._open_on_writer).result()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    async def aopen(cls, path: Path, **kwargs: Any) -> Store:
        """``open`` without blocking the running event loop."""
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: cls.open(path, **kwargs)
        )

    def close(self) -> None:
        """Close both connections and stop the threads. Idempotent; pending writes finish first."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(errors.StoreClosedError):
            self._writer.call(self._close_thread_connection).result()
        with contextlib.suppress(RuntimeError):  # executor already shut down
            self._reader.submit(self._close_thread_connection).result()
        self._shutdown_executors()
        with Store._instance_lock:
            if Store._open_instance is self:
                Store._open_instance = None
                database_proxy.initialize(None)
        log.info("database closed: %s", self.path)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def writer_stats(self) -> WriterStats:
        return self._writer.stats

    def _shutdown_executors(self) -> None:
        self._writer.stop()
        self._reader.shutdown(wait=True)

    def _translate(self, exc: BaseException, at_commit: bool) -> errors.StoreError | None:
        return errors.translate(
            exc, self.path, busy_seconds=self.busy_timeout_s, at_commit=at_commit
        )

    def _close_thread_connection(self) -> None:
        if not self._db.is_closed():
            self._db.close()

    def _open_on_writer(self) -> None:
        started = time.perf_counter()
        version = probe(self.path, self.busy_timeout_s)
        check_writable(self.path)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._db.init(
            str(self.path),
            timeout=self.busy_timeout_s,  # type: ignore[arg-type]
            pragmas=self._pragmas(),
        )
        try:
            self._db.connect()
            self._db.execute_sql(f"PRAGMA cache_size = -{WRITER_CACHE_SIZE_KIB}")
            self.journal_mode = str(self._db.pragma("journal_mode"))
            if self.journal_mode != "wal":
                log.warning(
                    "database %s is in %s mode, not WAL (file system without shared "
                    "memory?); writes will block readers",
                    self.path,
                    self.journal_mode,
                )
            self._migrate(version)
        except Exception as exc:
            self._close_thread_connection()
            translated = errors.translate(exc, self.path, busy_seconds=self.busy_timeout_s)
            if translated is not None:
                raise translated from exc
            raise
        database_proxy.initialize(self._db)
        log.info(
            "database open: %s (schema %d, %s, %.0f ms)",
            self.path,
            self.schema_version,
            self.journal_mode,
            (time.perf_counter() - started) * 1000,
        )

    def _pragmas(self) -> list[tuple[str, Any]]:
        return [
            ("journal_mode", "wal"),
            ("foreign_keys", 1),
            ("synchronous", "normal"),
            ("busy_timeout", int(self.busy_timeout_s * 1000)),
            ("cache_size", -CACHE_SIZE_KIB),
            ("temp_store", "memory"),
        ]

    def _migrate(self, probed_version: int) -> None:
        current = int(self._db.pragma("user_version"))
        if current > migrations.LATEST_VERSION:  # written by a newer fxdesk since the probe
            raise errors.NewerSchemaError(self.path, current)
        todo = migrations.pending(current)
        if todo:
            self.migrated_from = current
        for migration in todo:
            with (
                self._foreign_keys_off(migration.foreign_keys_off),
                self._db.atomic("IMMEDIATE"),
            ):
                # Re-read inside the write lock: another process may have migrated meanwhile.
                if int(self._db.pragma("user_version")) >= migration.version:
                    continue
                migration.apply(self._db.execute_sql)
                self._db.execute_sql(f"PRAGMA user_version = {migration.version}")
            log.info("database migrated to schema %d (%s)", migration.version, migration.name)
            # Each migration's pages sit in the WAL until a checkpoint (all of them from an
            # empty file: ~0.5 MB beside the ~0.3 MB database): move them in now, so opening
            # never holds the schema twice on disk (a nearly full disk refused it). A reader of
            # another process may keep part of the WAL: then that part is done later.
            self._db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        self.schema_version = int(self._db.pragma("user_version"))
        if probed_version != current:
            log.info("schema changed from %d to %d while opening", probed_version, current)

    @contextlib.contextmanager
    def _foreign_keys_off(self, off: bool) -> Iterator[None]:
        """Foreign keys off around a migration that rebuilds a table others refer to (SQLite
        ignores the pragma inside a transaction, so it is set around it), on again after."""
        if not off:
            yield
            return
        self._db.execute_sql("PRAGMA foreign_keys = OFF")
        try:
            yield
        finally:
            self._db.execute_sql("PRAGMA foreign_keys = ON")

    # --- writing and reading ---------------------------------------------------------------

    async def write(self, fn: Callable[[], T], *, label: str = "write") -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction on the writer thread.

        Once submitted, the write runs to completion even if the awaiting task is cancelled (a
        durable transition must not be dropped half-way through a shutdown).

        Raises:
            StoreError: a failure the person can act on (``CommitFailed`` and
                ``CommitIndeterminate`` among them).
        """
        if self._closed:
            raise errors.StoreClosedError()
        waiting, deliver = _waiter()
        self._writer.submit(fn, label, deliver)
        return await waiting

    async def read(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in one read transaction (a consistent snapshot) on the reader thread."""
        waiting, deliver = _waiter()
        self._submit(self._reader, self._read_job, fn).add_done_callback(
            lambda done: deliver(*_outcome(done))
        )
        return await waiting

    def write_blocking(self, fn: Callable[[], T], *, label: str = "write") -> T:
        """``write`` for code with no event loop (start-up, tests). Refuses to run on a loop."""
        _refuse_on_running_loop("write_blocking")
        if self._closed:
            raise errors.StoreClosedError()
        return self._writer.write(fn, label).result()

    def read_blocking(self, fn: Callable[[], T]) -> T:
        _refuse_on_running_loop("read_blocking")
        return self._submit(self._reader, self._read_job, fn).result()

    def _submit(
        self, executor: concurrent.futures.ThreadPoolExecutor, job: Callable[..., T], *args: Any
    ) -> concurrent.futures.Future[T]:
        if self._closed:
            raise errors.StoreClosedError()
        try:
            return executor.submit(job, *args)
        except RuntimeError as exc:  # shut down between the check and the submit
            raise errors.StoreClosedError() from exc

    def _read_job(self, fn: Callable[[], T]) -> T:
        if self._db.is_closed():
            self._db.connect()
            self._db.execute_sql("PRAGMA query_only = 1")
        try:
            with self._db.atomic():
                return fn()
        except (pw.PeeweeException, sqlite3.Error) as exc:
            translated = errors.translate(exc, self.path, busy_seconds=self.busy_timeout_s)
            if translated is not None:
                raise translated from exc
            raise

    # --- maintenance -------------------------------------------------------------------------

    def quick_check(self) -> str:
        """``PRAGMA quick_check`` through the reader: ``"ok"`` or the first problems found."""
        rows = self.read_blocking(lambda: self._db.execute_sql("PRAGMA quick_check").fetchall())
        return "; ".join(str(row[0]) for row in rows[:5])

    def execute_for_tests(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run raw SQL on the writer connection, bypassing fault injection (tests, benchmarks)."""

        def job() -> list[tuple[Any, ...]]:
            return list(self._db.execute_sql(sql, params).fetchall())

        _refuse_on_running_loop("execute_for_tests")
        return self._writer.write(job, "raw", inject=False).result()


def _waiter() -> tuple[asyncio.Future[Any], OnDone]:
    """A future of the running loop, and what sets it from any thread: ``deliver(error,
    value)`` with a store job's outcome. The job is not linked to it: a caller cancelled while
    it awaits this future cancels the future only, and the job runs to its end all the same
    (what ``asyncio.shield`` did, without its second future and the loop passes it costs:
    issue 17)."""
    global _recent_waker
    loop = asyncio.get_running_loop()
    waker = _recent_waker  # one loop runs the store: skip the weak dictionary's look-up
    if waker is None or waker.loop is not loop:
        waker = _WAKERS.get(loop)
        if waker is None:
            waker = _WAKERS[loop] = _LoopWaker(loop)
        _recent_waker = waker
    waiting: asyncio.Future[Any] = loop.create_future()
    # a partial, not a lambda: fewer objects for the garbage collector while the job waits
    return waiting, functools.partial(waker.deliver, waiting)


def _outcome(done: concurrent.futures.Future[Any]) -> tuple[BaseException | None, Any]:
    if done.cancelled():
        return concurrent.futures.CancelledError(), None
    error = done.exception()
    return (error, None) if error is not None else (None, done.result())


class _LoopWaker:
    """Hands the results of finished store jobs to one event loop, a burst at a time.

    ``asyncio.wrap_future`` wakes the loop once per job (a write to its self-pipe, ~20 µs on
    the writer thread, and a loop pass that takes the GIL from the writer); the writer finishes
    a whole group commit's jobs together and runs the wake after the last of them
    (``writer.after_results``), so the loop wakes once per group and sets every result in one
    callback (issue 17: durable transitions).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weakly: ``_WAKERS`` is keyed by the loop, and a value that held its key would keep
        # every loop that ever used the store alive (and its waker with it).
        self._loop = weakref.ref(loop)
        self._lock = threading.Lock()
        self._ready: list[tuple[asyncio.Future[Any], BaseException | None, Any]] = []

    def deliver(
        self, waiting: asyncio.Future[Any], error: BaseException | None, value: Any
    ) -> None:
        """Any thread: a store job ended; set ``waiting`` to its outcome on the loop."""
        with self._lock:
            self._ready.append((waiting, error, value))
            if len(self._ready) > 1:
                return  # a flush is already on its way
        if not after_results(self._wake):  # the writer wakes the loop once its batch is out
            self._wake()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop()

    def _wake(self) -> None:
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the loop is gone")
            loop.call_soon_threadsafe(self._flush)
        except RuntimeError:  # the loop is closed or gone: nobody is waiting any more
            with self._lock:
                self._ready.clear()

    def _flush(self) -> None:
        with self._lock:
            ready, self._ready = self._ready, []
        for waiting, error, value in ready:
            if waiting.done():  # cancelled: its caller stopped waiting
                _after_caller_left(error)
            elif error is None:
                waiting.set_result(value)
            elif isinstance(error, concurrent.futures.CancelledError):
                waiting.cancel()
            else:
                waiting.set_exception(error)


_WAKERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopWaker] = (
    weakref.WeakKeyDictionary()
)
_recent_waker: _LoopWaker | None = None  # the one ``_waiter`` handed out last


def _after_caller_left(error: BaseException | None) -> None:
    # Nobody reads this outcome any more; a failure is still worth a line in the log.
    if error is not None and not isinstance(error, concurrent.futures.CancelledError):
        log.debug("store job finished with %r after its caller stopped waiting", error)


def _refuse_on_running_loop(name: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(f"Store.{name} would block the event loop; await the async variant")


def probe(path: Path, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> int:
    """Read the schema version without writing anything. 0 for a missing or empty file.

    Raises:
        NotADatabaseError, CorruptDatabaseError, NewerSchemaError, DatabaseLockedError.
    """
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise errors.ReadOnlyError(path, exc.strerror or str(exc)) from exc
    if size == 0:
        return 0
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise errors.ReadOnlyError(path, exc.strerror or str(exc)) from exc
    if header != SQLITE_MAGIC:
        raise errors.NotADatabaseError(path, "it has no SQLite header")
    wal = Path(f"{path}-wal")
    # With no WAL file the main file is complete, and "immutable" reads it without creating
    # -wal/-shm files next to it; otherwise read through the WAL, read-only.
    mode = "mode=ro" if wal.exists() and wal.stat().st_size > 0 else "immutable=1"
    uri = f"file:{urllib.parse.quote(str(path))}?{mode}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s)
    except sqlite3.Error as exc:
        raise _probe_error(exc, path, busy_timeout_s) from exc
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.Error as exc:
        raise _probe_error(exc, path, busy_timeout_s) from exc
    finally:
        conn.close()
    if app_id != migrations.APPLICATION_ID:
        if app_id == 0 and version == 0 and tables == 0:
            return 0  # an empty SQLite file: ours to initialise
        raise errors.NotADatabaseError(path, "it is an SQLite database of another program")
    if version > migrations.LATEST_VERSION:
        raise errors.NewerSchemaError(path, version)
    return int(version)


def _probe_error(exc: sqlite3.Error, path: Path, busy_timeout_s: float) -> errors.StoreError:
    translated = errors.translate(exc, path, busy_seconds=busy_timeout_s)
    return translated or errors.CorruptDatabaseError(path, str(exc))


def check_writable(path: Path) -> None:
    """Refuse early, without touching anything, when the file or its folder cannot be written."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if path.exists() and not os.access(path, os.W_OK):
        raise errors.ReadOnlyError(path, "the file is read-only")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise errors.ReadOnlyError(path, f"the folder {folder} is read-only")
