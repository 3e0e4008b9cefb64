"""Where a sale's CPU goes, stage by stage: accept (the API call), process (the job: the sandbox's decision and
the outcome), callback (the signed GET and its record). One process, as ``kassa serve`` runs it (uvloop, one
worker, the dispatcher), on a fresh database: SALES sales with a ``server_callback_url`` are accepted
through the ASGI app (no HTTP server, no uvicorn), then processed with only the worker running, then called
back with only the dispatcher running, to a receiver in its own process (``bench/receiver.py``). Each stage
runs alone, so its CPU is its own: the process's CPU time (every thread: the event loop, SQLite's writer, the
PostgreSQL unit threads) and PostgreSQL's backends'. Statements are counted at the driver (SQLite's trace
callback; psycopg's cursors), BEGIN, COMMIT and SAVEPOINTs apart; write units are ``Database.write`` calls
and commits the transactions that ended in a COMMIT, counted in one more round whose CPU is not taken (tracing
costs the traced threads a call per statement). A last run does the three together, as a server does
(jobs and callbacks handed over in memory), for the total to compare with the end-to-end row.

Run: ``python -m bench.stages [--backend sqlite|postgresql] [--sales N] [--rounds R] [--statements]
[--profile STAGE]``: the least of R rounds per stage; ``--statements`` lists each stage's statements per sale,
with each one's mean CPU in µs in the thread that runs it (hot-path statements) and on PostgreSQL its wall
time; ``--profile`` runs one stage under cProfile in CPU time (the event loop's thread only)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import dataclasses
import functools
import os
import pstats
import re
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import uvloop
from sqlalchemy import Engine, event

from bench.bodies import MerchantKeys, callback_sale_bodies
from bench.endtoend import CallbackReceiver
from bench.inprocess import _caller
from bench.postgres import backend_pids, fresh_database
from bench.probe import process_cpu_seconds
from bench.server import NO_SHEDDING, UNREACHED_RATE

CONCURRENCY = 50
SUMMARY = "summary: "  # the line ``python -m bench`` takes into its notes
STAGES = ("accept", "process", "callback")
_SHOWN = 110
_LITERALS = re.compile(r"x?'[^']*'|\b\d+\b")  # SQLite traces statements with their values: grouped without
_NOT_COUNTED = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "PRAGMA", "--")


@dataclass
class Counts:
    """What the process did: statements and commits at the driver, write units asked of ``Database``."""

    statements: int = 0
    commits: int = 0
    writes: int = 0
    texts: Counter[str] | None = None  # with ``--statements``: each statement's start, how often it ran

    took: Counter[str] = field(default_factory=Counter)  # on PostgreSQL: each statement's wall time, µs
    cpu: Counter[str] = field(default_factory=Counter)  # a hot-path statement's CPU in its thread, µs

    def seen(self, sql: str, took_s: float = 0.0) -> None:
        self.statements += 1
        if self.texts is not None:
            text = _shown(sql)
            self.texts[text] += 1
            self.took[text] += round(took_s * 1e6)


@functools.lru_cache(maxsize=1024)  # the compiled statements' texts, a few dozen: the timing stays cheap
def _compiled_shown(sql: str) -> str:
    return _shown(sql)


def _shown(sql: str) -> str:
    return _LITERALS.sub("?", " ".join(sql.split()))[:_SHOWN]


def _timing_prepared(counts: Counts) -> None:
    """With ``--statements``: the CPU each hot-path statement (``storage.prepared``: run on the driver's
    cursor) costs the thread that runs it, driver and database engine included (SQLite runs in it); taken
    in the untraced rounds (SQLite's trace callback costs a long statement more than the statement)."""
    from kassa.storage.prepared import Prepared

    for name in ("execute", "execute_many"):
        original = getattr(Prepared, name)

        def timed(self: Any, conn: Any, values: Any, _original: Any = original) -> Any:
            started = time.thread_time()
            try:
                return _original(self, conn, values)
            finally:
                counts.cpu[_compiled_shown(self._for(conn).sql)] += round((time.thread_time() - started) * 1e6)

        setattr(Prepared, name, timed)


@dataclass(frozen=True)
class Stage:
    name: str
    sales: int
    cpu_s: float  # the gateway process, every thread
    db_threads_s: float  # of which its database threads (SQLite's writer, PostgreSQL's unit threads)
    pg_cpu_s: float  # PostgreSQL's backends serving it (0 on SQLite)
    counts: Counts
    wall_s: float

    def line(self) -> str:
        per = 1e6 / self.sales
        c = self.counts
        pg = f"{self.pg_cpu_s * per:,.0f}" if self.pg_cpu_s else "-"
        return (
            f"| {self.name} | {self.cpu_s * per:,.0f} | {self.db_threads_s * per:,.0f} | {pg} |"
            f" {c.statements / self.sales:.2f} | {c.writes / self.sales:.2f} | {c.commits / self.sales:.2f} |"
            f" {self.sales / self.wall_s:,.0f} |"
        )


HEADER = (
    "| stage | server CPU µs/sale | of which DB threads | PostgreSQL CPU µs/sale | statements/sale |"
    " write units/sale | commits/sale | sales/s |\n|---|---:|---:|---:|---:|---:|---:|---:|"
)


class Tracer:
    """Counts statements on every connection any engine opens from now on, while ``on``: tracing costs the
    traced threads a call per statement, so the rounds whose CPU is taken run untraced."""

    def __init__(self, counts: Counts) -> None:
        self.counts = counts
        self.connections: list[Any] = []
        self.on = False
        event.listen(Engine, "connect", self._opened)
        event.listen(Engine, "commit", self._committed)

    def _opened(self, dbapi_conn: Any, _record: Any) -> None:
        self.connections.append(dbapi_conn)
        self._trace(dbapi_conn)

    def _committed(self, _conn: Any) -> None:
        if self.on:
            self.counts.commits += 1

    def _trace(self, dbapi_conn: Any) -> None:
        if isinstance(dbapi_conn, sqlite3.Connection):
            dbapi_conn.set_trace_callback(_sqlite_trace(self.counts) if self.on else None)
        else:
            dbapi_conn.cursor_factory = _counting_cursor(self.counts) if self.on else psycopg.Cursor

    def switch(self, on: bool) -> None:
        self.on = on
        for dbapi_conn in self.connections:
            self._trace(dbapi_conn)


def _counting_writes(db: Any, tracer: Tracer) -> None:
    for name in ("write", "write_point"):
        setattr(db, name, _counted_write(getattr(db, name), tracer))


def _count_commit(counts: Counts) -> None:
    counts.commits += 1


def _counted_write(original: Callable[..., Awaitable[Any]], tracer: Tracer) -> Callable[..., Awaitable[Any]]:
    async def write(unit: Any) -> Any:
        if tracer.on:
            tracer.counts.writes += 1
        return await original(unit)

    return write


def _sqlite_trace(counts: Counts) -> Callable[[str], None]:
    def trace(sql: str) -> None:
        if not sql.lstrip().upper().startswith(_NOT_COUNTED):
            counts.seen(sql)

    return trace


def _counting_cursor(counts: Counts) -> type:
    class Counted(psycopg.Cursor):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().execute(query, params, **kwargs)
            finally:
                counts.seen(str(query), time.perf_counter() - started)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().executemany(query, params_seq, **kwargs)  # one round trip (pipelined)
            finally:
                counts.seen(str(query), time.perf_counter() - started)

    return Counted


class Watcher:
    """Reads the database's progress on a connection of its own, not counted, a few times a second."""

    def __init__(self, url: str) -> None:
        self.url = url

    def count(self, sql: str) -> int:
        if self.url.startswith("sqlite"):
            with sqlite3.connect(self.url.split("///", 1)[1]) as conn:
                return int(conn.execute(sql).fetchone()[0])
        with psycopg.connect(self.url) as pg:
            row = pg.execute(sql).fetchone()
            return int(row[0]) if row else 0

    async def until(self, sql: str, expected: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while self.count(sql) < expected:
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {expected}: {sql}")
            await asyncio.sleep(0.05)


DELIVERED = "SELECT COUNT(*) FROM callbacks WHERE state = 'delivered'"
NO_JOBS = "SELECT -COUNT(*) FROM jobs"  # reaches 0 when every job is done


def _db_threads_cpu() -> float:
    """CPU time so far of this process's database threads (``kassa-db``: the writer and the unit threads)."""
    total = 0.0
    for thread in threading.enumerate():
        if thread.name.startswith("kassa-db") and thread.native_id is not None:
            try:
                total += process_cpu_seconds(f"{os.getpid()}/task/{thread.native_id}")
            except OSError:
                continue
    return total


@dataclass
class Meter:
    url: str
    counts: Counts
    taken: list[Stage] = field(default_factory=list)
    profiled: str | None = None  # a stage run under cProfile (the event loop's thread only), printed after it

    def _pg(self) -> dict[int, float]:
        if self.url.startswith("sqlite"):
            return {}
        cpu = {}
        for pid in backend_pids(self.url):
            try:
                cpu[pid] = process_cpu_seconds(pid)
            except OSError:
                continue
        return cpu

    @contextmanager
    def stage(self, name: str, sales: int) -> Iterator[None]:
        c = self.counts
        texts = Counter(c.texts) if c.texts is not None else None
        before = Counts(c.statements, c.commits, c.writes, texts, Counter(c.took), Counter(c.cpu))
        profiler = cProfile.Profile(time.thread_time) if name == self.profiled else None  # CPU, not waits
        pg, cpu, wall, threads = self._pg(), time.process_time(), time.monotonic(), _db_threads_cpu()
        if profiler is not None:
            profiler.enable()
        yield
        if profiler is not None:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(35)
        cpu, wall, threads = time.process_time() - cpu, time.monotonic() - wall, _db_threads_cpu() - threads
        pg_after = self._pg()
        pg_cpu = sum(v - pg.get(pid, 0.0) for pid, v in pg_after.items())
        texts = None if c.texts is None or before.texts is None else c.texts - before.texts
        delta = Counts(
            c.statements - before.statements,
            c.commits - before.commits,
            c.writes - before.writes,
            texts,
            c.took - before.took,
            c.cpu - before.cpu,
        )
        self.taken.append(Stage(name, sales, cpu, threads, pg_cpu, delta, wall))


async def _gateway(url: str, data_dir: str, tracer_of: Callable[[], Tracer]) -> tuple[Any, MerchantKeys, Tracer]:
    from kassa import logs
    from kassa.domain.merchants import Mode
    from kassa.runtime import build_services, settle_garbage_collector
    from kassa.settings import Settings
    from kassa.storage import merchants as merchant_store
    from kassa.storage.migrate import upgrade

    os.environ.update(
        KASSA_DATABASE_URL=url,
        KASSA_DATA_DIR=data_dir,
        KASSA_VAULT_KEY=base64.b64encode(os.urandom(32)).decode(),
        KASSA_ADDRESS_RATE=UNREACHED_RATE,
        **NO_SHEDDING,  # the accept stage runs with no worker: its jobs wait for the next stage, by design
    )
    settings = Settings.from_env()
    logs.configure(settings.log_level, open(os.path.join(data_dir, "kassa.log"), "a"))  # noqa: SIM115
    upgrade(settings.database_url)
    tracer = tracer_of()  # before the gateway's first connection opens
    services = build_services(settings, 1)
    _counting_writes(services.db, tracer)

    def merchant(conn: Any) -> MerchantKeys:
        created = merchant_store.create_merchant(conn, services.vault, "bench", "k" * 32, False, 0)
        spec = merchant_store.EndpointSpec(created.id, "USD", Mode.SANDBOX, False, "", None, None, False)
        return MerchantKeys("bench", "k" * 32, merchant_store.create_endpoint(conn, spec, 0))

    keys = services.db.write_sync(merchant)
    settle_garbage_collector()
    return services, keys, tracer


async def _accept(call: Any, path: str, bodies: list[bytes]) -> None:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(body: bytes) -> None:
        async with gate:
            sent = await call(path, body)
            if sent[0]["status"] != 200:
                raise RuntimeError(f"sale answered {sent[0]['status']}")

    await asyncio.gather(*(one(body) for body in bodies))


async def _round(
    services: Any, keys: MerchantKeys, meter: Meter, watcher: Watcher, receiver_url: str, sales: int, n: int
) -> None:
    from kassa.api.app import OperationDispatch

    call = _caller(OperationDispatch(None, services))  # type: ignore[arg-type]
    path = f"{services.settings.prefix}/api/v2/sale/{keys.endpoint_id}"
    worker, dispatcher = services.workers[0], services.dispatcher
    done = watcher.count(DELIVERED)

    def bodies(tag: str) -> list[bytes]:
        return [b.encode() for b in callback_sale_bodies(keys, f"{tag}-{n}", sales, receiver_url)]

    separate, together = bodies("s"), bodies("t")
    with meter.stage("accept", sales):
        await _accept(call, path, separate)
    await _loops_until([worker.run], meter, "process", sales, watcher.until(NO_JOBS, 0))
    await _loops_until([dispatcher.run], meter, "callback", sales, watcher.until(DELIVERED, done + sales))
    done += sales
    await _loops_until(
        [worker.run, dispatcher.run],
        meter,
        "all three together",
        sales,
        _then(_accept(call, path, together), watcher.until(DELIVERED, done + sales)),
    )


async def _then(first: Awaitable[None], second: Awaitable[None]) -> None:
    await first
    await second


async def _loops_until(
    loops: list[Callable[[asyncio.Event], Coroutine[Any, Any, None]]],
    meter: Meter,
    name: str,
    sales: int,
    done: Awaitable[None],
) -> None:
    stop = asyncio.Event()
    with meter.stage(name, sales):
        tasks = [asyncio.get_running_loop().create_task(loop(stop)) for loop in loops]
        await done
        stop.set()
        await asyncio.gather(*tasks)


def least(stages: list[Stage]) -> list[Stage]:
    """Per stage name, the round with the least server CPU, in the order first taken."""
    best: dict[str, Stage] = {}
    for stage in stages:
        if stage.name not in best or stage.cpu_s < best[stage.name].cpu_s:
            best[stage.name] = stage
    return list(best.values())


def table(stages: list[Stage]) -> list[str]:
    chosen = least(stages)
    lines = [*HEADER.split("\n"), *(s.line() for s in chosen)]
    parts = [s for s in chosen if s.name in STAGES]
    if len(parts) == len(STAGES):
        sales = parts[0].sales
        cpu = sum(s.cpu_s for s in parts) * 1e6 / sales
        pg = sum(s.pg_cpu_s for s in parts) * 1e6 / sales
        lines.append(f"| sum of the stages | {cpu:,.0f} | | {f'{pg:,.0f}' if pg else '-'} | | | | |")
    return lines


def summary(backend: str, stages: list[Stage]) -> str:
    """The table as one line, for ``python -m bench``'s notes."""
    parts = []
    for stage in least(stages):
        per, c = 1e6 / stage.sales, stage.counts
        pg = f" (PostgreSQL {stage.pg_cpu_s * per:,.0f} µs)" if stage.pg_cpu_s else ""
        parts.append(
            f"{stage.name} {stage.cpu_s * per:,.0f} µs{pg}, {c.statements / stage.sales:.1f} statements,"
            f" {c.writes / stage.sales:.1f} write units"
        )
    return f"end to end by stage, {backend} (bench/stages.py: in process, no HTTP server): " + "; ".join(parts)


def statements(stages: list[Stage]) -> list[str]:
    """Each stage's statements per sale, the most frequent first."""
    lines = []
    for stage in least(stages):
        if stage.counts.texts is None:
            continue
        lines.append(f"{stage.name}:")
        for text, count in stage.counts.texts.most_common(12):
            took, cpu = stage.counts.took[text], stage.counts.cpu[text]
            wall = f"wall {took / count:6,.0f}" if took else ""
            spent = f"CPU {cpu / count:5,.0f}" if cpu else ""
            lines.append(f"  {count / stage.sales:6.2f} {spent:>9} {wall:>11}  {text}")
    return lines


async def profile(
    backend: str, sales: int, rounds: int, *, show_statements: bool = False, profiled: str | None = None
) -> list[str]:
    with ExitStack() as stack:
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="kassa-stages-"))
        url = f"sqlite:///{data_dir}/kassa.db" if backend == "sqlite" else stack.enter_context(fresh_database())
        receiver = CallbackReceiver(Path(data_dir), None)
        try:
            counts = Counts(texts=Counter() if show_statements else None)
            if show_statements:
                _timing_prepared(counts)
            services, keys, tracer = await _gateway(url, data_dir, lambda: Tracer(counts))
            meter, watcher = Meter(url, counts), Watcher(url)
            await _round(services, keys, meter, watcher, receiver.url, min(sales, 500), 0)  # warm-up
            meter.taken.clear()
            meter.profiled = profiled
            for n in range(1, rounds + 1):
                await _round(services, keys, meter, watcher, receiver.url, sales, n)
            timed, meter.taken = meter.taken, []
            tracer.switch(True)  # a last round counts the statements; its CPU is not taken
            meter.profiled = None
            await _round(services, keys, meter, watcher, receiver.url, sales, rounds + 1)
            counted = zip(least(timed), meter.taken, strict=True)
            meter.taken = [
                dataclasses.replace(t, counts=dataclasses.replace(c.counts, cpu=t.counts.cpu)) for t, c in counted
            ]
            services.db.close()
        finally:
            receiver.stop()
        shown = statements(meter.taken) if show_statements else []
        heading = f"{backend}, {sales:,} sales a round, least of {rounds}:"
        return [heading, *table(meter.taken), *shown, f"{SUMMARY}{summary(backend, meter.taken)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--sales", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--statements", action="store_true", help="also each stage's statements, per sale")
    parser.add_argument("--profile", choices=[*STAGES, "all three together"], help="run this stage under cProfile")
    args = parser.parse_args()
    shown = profile(args.backend, args.sales, args.rounds, show_statements=args.statements, profiled=args.profile)
    for line in uvloop.run(shown):
        print(line)


if __name__ == "__main__":
    main()
