"""The database runner: units of work executed atomically, off the event loop.

A *unit* is a plain function ``fn(conn) -> T`` of SQLAlchemy Core statements. ``write`` runs it in a
transaction and resolves only after the commit is durable; ``read`` runs it on a snapshot.

SQLite allows one writer at a time, so every write goes through one writer thread that commits many
units in one transaction (group commit); when a unit fails, the batch runs again with a savepoint per
unit, so the failing unit rolls back alone. Measured here, that beats a pool of writer connections by 2x
in throughput and by far in p99. Units may therefore run twice: they touch nothing but the database.
PostgreSQL takes concurrent writers, so each unit gets its own transaction from a small pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.exc import DBAPIError

T = TypeVar("T")
Unit = Callable[[Connection], T]

_MAX_BATCH = 256


class Database:
    """Runs units of work; one instance per process."""

    dialect: str

    def __init__(self, engine: Engine, threads: int, writer_engine: Engine | None = None) -> None:
        self.engine = engine
        self.writer_engine = writer_engine or engine
        self.dialect = engine.dialect.name
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kassa-db")

    async def read(self, unit: Unit[T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, self.read_sync, unit)

    async def read_point(self, unit: Unit[T]) -> T:
        """A short read by key (a status lookup). Here it is a ``read``; SQLite answers it in place."""
        return await self.read(unit)

    async def write_point(self, unit: Unit[T]) -> T:
        """A write of one statement, atomic by itself, that a power loss may undo once committed: an OAuth
        nonce of a request that wrote nothing, which guards nothing but that request's replay. Here it is
        a ``write``; SQLite commits it without an fsync, PostgreSQL in autocommit without waiting for its
        WAL flush. A process crash loses neither."""
        return await self.write(unit)

    def read_sync(self, unit: Unit[T]) -> T:
        with self.engine.connect() as conn:
            return unit(conn)

    async def write(self, unit: Unit[T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, self.write_sync, unit)

    def write_sync(self, unit: Unit[T]) -> T:
        with self.writer_engine.begin() as conn:
            return unit(conn)

    def close(self) -> None:
        self._threads.shutdown(wait=True)
        self.engine.dispose()
        self.writer_engine.dispose()

    def connections_in_use(self) -> int:
        """Connections checked out of this process's pools now (the SQLite writer's counts: it holds one)."""
        return sum(_checked_out(engine) for engine in self._engines())

    def _engines(self) -> tuple[Engine, ...]:
        return (self.engine,) if self.writer_engine is self.engine else (self.engine, self.writer_engine)


class _Pending:
    __slots__ = ("durable", "future", "loop", "unit")

    def __init__(self, unit: Unit[Any], loop: asyncio.AbstractEventLoop, *, durable: bool) -> None:
        self.unit = unit
        self.loop = loop
        self.future: asyncio.Future[Any] = loop.create_future()
        self.durable = durable


# SQLite's page cache for the reads by key on the event loop (the default is 2 MiB). A read that misses
# it stalls the loop for a system call per page, or a disk read; at 10 million orders, with the index
# pages of the order, transaction and card tables held here, status went from 5,700 to 6,400 req/s and
# its p99 from 18.0 to 14.2 ms. The one connection is the only one with this cache: RSS stays near 120 MiB.
_POINT_READ_CACHE_KIB = 32 * 1024


class SqliteDatabase(Database):
    """SQLite in WAL mode: readers in a pool, all writes group-committed by one writer thread."""

    def __init__(
        self, engine: Engine, threads: int, writer_engine: Engine, *, synchronous: str, reads_in_place: bool = True
    ) -> None:
        super().__init__(engine, threads, writer_engine)
        self._reads_in_place = reads_in_place
        # What a batch of point writes alone commits with, then the setting back: in WAL mode NORMAL
        # skips the commit's fsync (120 µs of CPU of the 140 a one-nonce commit cost here) and loses no
        # commit to a process crash; the next durable commit's fsync covers it too.
        self._unforced = (
            ("PRAGMA synchronous=NORMAL", f"PRAGMA synchronous={synchronous}")
            if synchronous.upper() in ("FULL", "EXTRA", "2", "3")
            else None
        )
        self._in_place: Connection | None = None
        self._queue: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, name="kassa-db-writer", daemon=True)
        self._writer.start()

    async def write(self, unit: Unit[T]) -> T:
        return await self._queued(unit, durable=True)

    async def write_point(self, unit: Unit[T]) -> T:
        return await self._queued(unit, durable=False)

    async def _queued(self, unit: Unit[T], *, durable: bool) -> T:
        pending = _Pending(unit, asyncio.get_running_loop(), durable=durable)
        self._queue.put(pending)
        return await pending.future  # type: ignore[no-any-return]

    async def read_point(self, unit: Unit[T]) -> T:
        """Runs on the event loop's own thread: a read by key from SQLite's page cache takes tens of µs,
        less than the hand-off to a reader thread and back (which also contends for the GIL). A database
        much larger than memory turns some of those into disk reads that stall the loop: operators can
        send them to the reader pool instead (KASSA_SQLITE_READS_IN_PLACE=0)."""
        if not self._reads_in_place:
            return await self.read(unit)
        if self._in_place is None:
            self._in_place = self.engine.connect()
            driver = self._in_place.connection.driver_connection
            driver.execute(f"PRAGMA cache_size=-{_POINT_READ_CACHE_KIB}")  # type: ignore[union-attr]
        conn = self._in_place
        # No transaction of our own: a statement on the driver's cursor is atomic by itself (SQLite reads a
        # consistent snapshot per statement), and SQLAlchemy's begin and commit cost as much as the query.
        # A unit that runs statements through SQLAlchemy begins a transaction (one snapshot for them all),
        # which ends here.
        try:
            return unit(conn)
        finally:
            if conn.in_transaction():
                conn.rollback()

    def close(self) -> None:
        if self._in_place is not None:
            self._in_place.close()
        self._queue.put(None)
        self._writer.join()
        super().close()

    def _write_loop(self) -> None:
        # One connection for the thread's life: checking one out of the pool and back (with its reset) for
        # each batch cost 20-70 µs a commit, as much as the commit itself. It is opened with the first
        # batch, and again after a batch it could not be opened for (another process held the file past
        # the busy timeout): that batch is refused, and the thread, with every later write, goes on.
        conn: Connection | None = None
        try:
            for batch in self._batches():
                try:
                    conn = conn or self.writer_engine.connect()
                except Exception as failure:
                    self._settle(batch, [(False, failure)] * len(batch))
                    continue
                self._commit_batch(conn, batch)
        finally:
            if conn is not None:
                conn.close()

    def _batches(self) -> Iterator[list[_Pending]]:
        """The queued units, up to ``_MAX_BATCH`` at a time, until ``close``."""
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < _MAX_BATCH:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                batch.append(item)
            yield batch

    def _commit_batch(self, conn: Connection, batch: list[_Pending]) -> None:
        """Commits the batch in one transaction. Units rarely fail, so they first run without savepoints
        (two statements fewer each); if any fails, the whole transaction is rolled back and the batch runs
        again with a savepoint per unit, so the failing unit alone is refused."""
        unforced = None if any(pending.durable for pending in batch) else self._unforced
        driver = conn.connection.driver_connection
        if unforced:
            driver.execute(unforced[0])  # type: ignore[union-attr]
        try:
            with conn.begin():
                outcomes = [(True, pending.unit(conn)) for pending in batch]
        except Exception:
            outcomes = self._commit_isolated(conn, batch)
        finally:
            if unforced:
                driver.execute(unforced[1])  # type: ignore[union-attr]
        self._settle(batch, outcomes)

    def _settle(self, batch: list[_Pending], outcomes: list[tuple[bool, Any]]) -> None:
        # One wake-up per event loop, not one per unit: each costs the loop a system call.
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
        for pending, (ok, value) in zip(batch, outcomes, strict=True):
            by_loop.setdefault(pending.loop, []).append((pending.future, ok, value))
        for loop, settled in by_loop.items():
            loop.call_soon_threadsafe(_settle_all, settled)

    def _commit_isolated(self, conn: Connection, batch: list[_Pending]) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        try:
            with conn.begin():
                for pending in batch:
                    outcomes.append(_run_in_savepoint(conn, pending.unit))
        except BaseException as exc:  # the commit itself failed: no unit of the batch is durable
            outcomes = [(False, exc)] * len(batch)
        return outcomes


class PostgresDatabase(Database):
    """PostgreSQL takes concurrent writers: each unit gets its own transaction from the pool.

    Pooled connections are not pinged before use (a round trip per unit, about 13% of a sale). A
    connection found dead while a unit runs (a PostgreSQL restart, a failover, a dropped backend) has
    committed nothing of it, so the unit runs once more on a new connection, after the pool is renewed:
    its other connections died with it. A failure in the COMMIT itself is not retried, since the commit
    may have happened; it fails the unit as before."""

    def __init__(self, engine: Engine, threads: int, point_engine: Engine) -> None:
        super().__init__(engine, threads)
        self._point_engine = point_engine

    async def read_point(self, unit: Unit[T]) -> T:
        """In autocommit on a pool of its own: no BEGIN, and no ROLLBACK when the connection goes back,
        so a status lookup is one round trip instead of three."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, self._read_point_sync, unit)

    def _read_point_sync(self, unit: Unit[T]) -> T:
        return _once_more_if_disconnected(self._point_engine, unit, transaction=False)

    async def write_point(self, unit: Unit[T]) -> T:
        """In autocommit, like ``read_point``: one round trip instead of three (BEGIN, the statement,
        COMMIT), which made an OAuth nonce's write cost as much server CPU as a sale's. Run again on a new
        connection if its connection died, as any unit: a statement that had committed before then
        finds its own row (for a nonce, the request is refused as a replay and signed again)."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, self._read_point_sync, unit)

    def read_sync(self, unit: Unit[T]) -> T:
        return _once_more_if_disconnected(self.engine, unit, transaction=False)

    def write_sync(self, unit: Unit[T]) -> T:
        return _once_more_if_disconnected(self.writer_engine, unit, transaction=True)

    def close(self) -> None:
        super().close()
        self._point_engine.dispose()

    def _engines(self) -> tuple[Engine, ...]:
        return (*super()._engines(), self._point_engine)


def _checked_out(engine: Engine) -> int:
    checked_out = getattr(engine.pool, "checkedout", None)  # pools that keep no count have none
    return int(checked_out()) if callable(checked_out) else 0


class _Disconnected(Exception):
    """The connection died before the unit's commit: nothing of it was written."""


def _once_more_if_disconnected(engine: Engine, unit: Unit[T], *, transaction: bool) -> T:
    try:
        return _run_unit(engine, unit, transaction=transaction)
    except _Disconnected:
        engine.dispose()  # its other connections are as dead; those in use are dropped when they come back
        return _run_unit(engine, unit, transaction=transaction)


def _run_unit(engine: Engine, unit: Unit[T], *, transaction: bool) -> T:
    with engine.connect() as conn:
        try:
            if transaction:
                conn.begin()
            value = unit(conn)
        except Exception as failure:
            if _dead(conn, failure):
                conn.invalidate()
                raise _Disconnected from failure
            raise
        if transaction:
            conn.commit()
        return value


def _dead(conn: Connection, failure: Exception) -> bool:
    if isinstance(failure, DBAPIError) and failure.connection_invalidated:
        return True
    driver = conn.connection.dbapi_connection if not conn.invalidated else None
    return bool(getattr(driver, "broken", False) or getattr(driver, "closed", False))


def _run_in_savepoint(conn: Connection, unit: Unit[Any]) -> tuple[bool, Any]:
    savepoint = conn.begin_nested()
    try:
        value = unit(conn)
    except Exception as exc:
        savepoint.rollback()
        return False, exc
    savepoint.commit()
    return True, value


def _settle_all(settled: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in settled:
        if future.cancelled():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def one_moment(conn: Connection) -> None:
    """Makes the rest of ``conn``'s transaction read the database as it was at its first read, as SQLite's
    read transactions do. On PostgreSQL (READ COMMITTED) each statement reads its own moment, so two
    statements can see a write's two halves. The first statement of its transaction."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def _sqlite_engine(url: str, synchronous: str, busy_timeout_ms: int, *, writer: bool, pool_size: int) -> Engine:
    engine = create_engine(url, pool_size=pool_size, max_overflow=pool_size)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Hand transaction control to SQLAlchemy's events below (pysqlite's own BEGIN is deferred and late).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        for pragma in (
            f"busy_timeout={busy_timeout_ms}",  # first: the others may wait for another process's lock too
            "journal_mode=WAL",
            f"synchronous={synchronous}",
            "foreign_keys=ON",
            "secure_delete=ON",
        ):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # A writer takes the lock up front (IMMEDIATE), so two processes never deadlock upgrading a read
        # lock; a reader's deferred BEGIN gives it a consistent WAL snapshot without blocking writers.
        # On the driver's cursor: through exec_driver_sql it cost 40 µs, more than a read by key.
        conn.connection.driver_connection.execute("BEGIN IMMEDIATE" if writer else "BEGIN")  # type: ignore[union-attr]

    return engine


def _commit_unflushed(dbapi_conn: Any, _record: Any) -> None:
    """The point pool's writes are ``write_point``'s: their commits need not wait for the WAL's flush. A
    SET, not a startup option, which a connection pooler such as PgBouncer refuses."""
    dbapi_conn.execute("SET synchronous_commit TO off")
    dbapi_conn.commit()


def sqlalchemy_url(url: str) -> str:
    """Accepts the plain ``postgresql://`` form operators write and picks the psycopg 3 driver for it."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def ensure_sqlite_file(url: str) -> None:
    """SQLite creates the file but not its folder (a fresh checkout has no ``var/`` yet), and creates it
    with the process's umask. The folder is made 0700 and the file 0600 here, whatever the umask: they
    hold the vault's ciphertexts, the ledger and the merchants' sealed keys. SQLite gives the WAL and
    SHM files the database file's mode, so those are 0600 too. Existing files keep their modes."""
    database = make_url(url).database
    if url.startswith("sqlite") and database and database != ":memory:":
        path = Path(database)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def open_database(
    url: str,
    *,
    sqlite_synchronous: str = "FULL",
    sqlite_reads_in_place: bool = True,
    sqlite_busy_timeout_ms: int = 10_000,
    threads: int = 4,
) -> Database:
    """``threads`` run units besides the event loop: SQLite's readers (its writes have a thread of their
    own); on PostgreSQL every unit, each pool keeping up to one connection per thread."""
    if url.startswith("sqlite"):
        ensure_sqlite_file(url)
        reader = _sqlite_engine(url, sqlite_synchronous, sqlite_busy_timeout_ms, writer=False, pool_size=threads)
        writer = _sqlite_engine(url, sqlite_synchronous, sqlite_busy_timeout_ms, writer=True, pool_size=1)
        return SqliteDatabase(
            reader, threads, writer, synchronous=sqlite_synchronous, reads_in_place=sqlite_reads_in_place
        )
    # A PostgreSQL unit holds its thread for every round trip it makes, so threads, not CPU, bounded the
    # end-to-end rate: 16 threads took it from 481 to 612 sales/s over 8. No overflow: a connection beyond
    # the pool is closed when it comes back, and a new backend per unit cost more than the unit.
    pool = {"pool_size": threads, "max_overflow": 0}
    engine = create_engine(sqlalchemy_url(url), **pool)
    points = create_engine(sqlalchemy_url(url), isolation_level="AUTOCOMMIT", pool_reset_on_return=None, **pool)
    event.listen(points, "connect", _commit_unflushed)
    return PostgresDatabase(engine, threads, points)
