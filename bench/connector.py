"""What the ISO 8583 connector costs a sale (issue 31): authorizations through an ``IsoProcessor`` to the
acquirer host simulator over TCP, through the endpoint's route as a worker sends them, against the same
authorizations through the built-in sandbox.

The simulator runs in its own process (``kassa acquirer-sim --port 0``), on core 1 when there are two; the
measuring process, on core 0, is a gateway's as ``kassa serve`` runs it (uvloop, a deployment's log at
KASSA_LOG_LEVEL to a file, a fresh SQLite database migrated): an ISO 8583 connection to the simulator, the
bench endpoint routed to it and its route taken from ``processors.connectors`` (its ``Link`` signed on,
``DatabaseStans``, the ``Route``, each sale its job's first run as a worker sends it), then SALES
authorizations (card 4111 1111 1111 1111, CVV2 123: approved), 50 at a time, with the process's CPU time
(every thread: the event loop, SQLite's writer) taken per sale and the wall rate; then the same through the
``SandboxProcessor``, round by round in turn. Each outcome is recorded as a worker records it
(``core.outcomes.record_for_job``, the bench holding the sales' jobs), with what the connector left
unrecorded of its answer in the same transaction: so the difference is what the connector adds, its
message's row written before it goes, the answer written with the outcome, encoding and decoding, the
socket, and the commits its slower answers batch less well. The API takes no part.

Each message belongs to a sale accepted through the ASGI app first (a message names its transaction), one
sale a message, each processor its own sales (an outcome is recorded once).

Run: ``python -m bench.connector [--sales N] [--rounds R] [--sockets S] [--profile SORT]``: the least of R
rounds; ``--profile`` runs one more ISO 8583 round under cProfile (the event loop's thread only)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import os
import pstats
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvloop

from bench.bodies import sale_body
from bench.endtoend import ENV
from bench.inprocess import _environment, bench_merchant
from bench.probe import cores, process_cpu_seconds
from bench.server import KASSA, pinned
from bench.stages import SUMMARY

CONCURRENCY = 50
TARGET_US = 150.0  # issue 31: the connector's added CPU per sale
WARMUP = 500
_OWNER = "bench-connector"  # the worker the bench's jobs are leased to
_LEASE_MS = 24 * 3600 * 1000  # the bench's run, whatever its length
_LISTENING = "acquirer host listening on "


@dataclass
class Measured:
    name: str
    cpu_us: list[float] = field(default_factory=list)  # per sale, one a round
    loop_us: list[float] = field(default_factory=list)  # of which the event loop's thread
    host_us: list[float] = field(default_factory=list)  # the simulator's process, per sale
    rates: list[float] = field(default_factory=list)  # sales/s, one a round
    stages: Counter[str] = field(default_factory=Counter)  # outcomes of the measured rounds

    @property
    def least(self) -> float:
        return min(self.cpu_us)

    @property
    def rate(self) -> float:
        """The sales/s of the round of least CPU."""
        return self.rates[self.cpu_us.index(self.least)]

    def row(self) -> str:
        best = self.cpu_us.index(self.least)
        return (
            f"| {self.name} | {self.rate:,.0f} | {self.least:,.1f} | {self.loop_us[best]:,.1f}"
            f" | {self.least:,.1f}-{max(self.cpu_us):,.1f} | {self.host_us[best]:,.0f}"
            f" | {', '.join(f'{n:,} {s}' for s, n in sorted(self.stages.items()))} |"
        )


@contextlib.contextmanager
def simulator(core: int | None) -> Iterator[tuple[int, int]]:
    """``kassa acquirer-sim`` on any free port, on ``core`` if given; its port and process id."""
    argv = pinned(core, [KASSA, "acquirer-sim", "--port", "0"])
    process = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith(_LISTENING):
            raise RuntimeError(f"kassa acquirer-sim did not start: {line!r}")
        yield int(line.rsplit(":", 1)[1]), process.pid  # taskset execs: the pid is the simulator's
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _run(
    db: Any, processor: Any, requests: Iterator[tuple[Any, Any]], count: int, stages: Counter[str]
) -> tuple[float, float, float]:
    """The next ``count`` requests, CONCURRENCY at a time, each outcome recorded as a worker records it (with
    what the connector left unrecorded of its answer, in one transaction); CPU seconds (the process's, the
    event loop's thread's) and wall seconds."""
    from kassa.clock import now_ms
    from kassa.core import outcomes

    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(request: Any, job: Any) -> None:
        async with gate:
            outcome = await processor.process(request, first=True)
            recorded, _ = await db.write(
                lambda conn: outcomes.record_for_job(
                    conn, job, _OWNER, outcome, now_ms(), reconcile_after_ms=60_000, callback_lease=None
                )
            )
            assert recorded, "the bench's lease on its jobs ran out"
            stages[outcome.stage.value] += 1

    cpu, loop, wall = time.process_time(), time.thread_time(), time.perf_counter()
    await asyncio.gather(*(one(*next(requests)) for _ in range(count)))
    return time.process_time() - cpu, time.thread_time() - loop, time.perf_counter() - wall


async def _seeded_requests(services: Any, count: int) -> tuple[int, list[tuple[Any, Any]]]:
    """``count`` sales accepted through the ASGI app (no worker: they stay queued); their endpoint, and an
    approving authorization of each with its job, claimed by the bench as a worker claims it."""
    from sqlalchemy import select

    from kassa.clock import now_ms
    from kassa.processors.interface import Authorize, Card, Initiator
    from kassa.storage import jobs as job_queue
    from kassa.storage.tables import transactions

    keys, call = bench_merchant(services)
    path = f"{services.settings.prefix}/api/v2/sale/{keys.endpoint_id}"
    for n in range(count):
        await call(path, sale_body(keys, f"seed-{n}").encode())
    t = transactions.c
    query = select(t.id, t.order_id, t.serial_number, t.amount, t.currency).order_by(t.id)
    rows = await services.db.read(lambda conn: conn.execute(query).all())
    claimed = await services.db.write(lambda conn: job_queue.claim(conn, _OWNER, now_ms(), _LEASE_MS, count))
    jobs = {job.transaction_id: job for job in claimed}
    card = Card("4111111111111111", 12, 2035, "Bench Holder", cvv="123")
    return keys.endpoint_id, [
        (
            Authorize(order_id, serial, amount, currency, "BENCH", card, capture=True, initiator=Initiator.CARDHOLDER),
            jobs[tx_id],
        )
        for tx_id, order_id, serial, amount, currency in rows
    ]


async def _routed(services: Any, endpoint_id: int, port: int, sockets: int) -> tuple[Any, Any]:
    """The endpoint routed to an ISO 8583 connection to the simulator: the connectors, and the endpoint's
    route as a worker finds it (a ``Route``: not the sandbox's shortcut)."""
    from kassa.clock import now_ms
    from kassa.domain.acquirers import LinkSettings
    from kassa.domain.routing import Entry
    from kassa.processors.connectors import Connectors
    from kassa.sandbox.acquirer import SandboxProcessor
    from kassa.storage import acquirers as acquirer_store

    link = LinkSettings("127.0.0.1", port, False, "123456", "TERM0001", "SHOP00000000001", "5999", sockets=sockets)

    def connect(conn: Any) -> None:
        acquirer_store.create(conn, services.vault, "bench-simulator", link, None, now_ms())
        acquirer_store.set_route(conn, endpoint_id, [Entry("bench-simulator")])

    services.db.write_sync(connect)
    connectors = Connectors(services.db, services.vault, SandboxProcessor())
    return connectors, await connectors.serving(endpoint_id)


async def _round(
    db: Any, m: Measured, processor: Any, requests: Iterator[tuple[Any, Any]], sales: int, host_pid: int
) -> None:
    host = process_cpu_seconds(host_pid)
    cpu, loop, wall = await _run(db, processor, requests, sales, m.stages)
    m.host_us.append((process_cpu_seconds(host_pid) - host) / sales * 1e6)
    m.cpu_us.append(cpu / sales * 1e6)
    m.loop_us.append(loop / sales * 1e6)
    m.rates.append(sales / wall)


async def measure(
    port: int, host_pid: int, sales: int, rounds: int, sockets: int, profile_sort: str | None
) -> list[Measured]:
    # Imported here: the settings are read from the environment set up first.
    from kassa import logs
    from kassa.runtime import build_services
    from kassa.sandbox.acquirer import SandboxProcessor
    from kassa.settings import Settings
    from kassa.storage.migrate import upgrade

    settings = Settings.from_env()
    log_file = open(os.path.join(os.environ["KASSA_DATA_DIR"], "kassa.log"), "a")  # noqa: SIM115
    logs.configure(settings.log_level, log_file)
    upgrade(settings.database_url)
    services = build_services(settings, 0)
    # Each processor its own sales (an outcome is recorded once), each sale one message.
    processors = {"iso": None, "sandbox": SandboxProcessor()}
    needed = len(processors) * (WARMUP + sales * rounds) + (sales if profile_sort else 0)
    endpoint_id, seeded = await _seeded_requests(services, needed)
    connectors, processors["iso"] = await _routed(services, endpoint_id, port, sockets)
    measured = {"iso": Measured("ISO 8583, simulator over TCP"), "sandbox": Measured("sandbox, in process")}
    taken = iter(seeded)
    for processor in processors.values():
        await _run(services.db, processor, taken, WARMUP, Counter())
    for n in range(rounds):
        for key, processor in processors.items():  # alternately: a busy spell weighs on both
            await _round(services.db, measured[key], processor, taken, sales, host_pid)
            m = measured[key]
            print(f"round {n + 1}, {m.name}: {m.rates[-1]:,.0f} sales/s, {m.cpu_us[-1]:.1f} µs of CPU a sale")
    if profile_sort:
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        await _run(services.db, processors["iso"], taken, sales, Counter())
        profiler.disable()
        pstats.Stats(profiler).sort_stats(profile_sort).print_stats(40)
    await connectors.close()
    services.db.close()
    return list(measured.values())


def table(results: Sequence[Measured], rounds: int) -> str:
    iso, sandbox = results
    added = iso.least - sandbox.least
    verdict = "within" if added <= TARGET_US else "over"
    return "\n".join(
        [
            f"| connector | sales/s | CPU µs/sale (least of {rounds}) | of which the event loop | spread |"
            " simulator CPU µs/sale | outcomes |",
            "|---|---:|---:|---:|---:|---:|---|",
            *(m.row() for m in results),
            "",
            f"The connector adds {added:,.1f} µs of CPU a sale: {verdict} the target of {TARGET_US:.0f} µs"
            f" ({added - TARGET_US:+,.1f} µs).",
        ]
    )


def summary(results: Sequence[Measured], rounds: int, sales: int) -> str:
    iso, sandbox = results
    return (
        f"{SUMMARY}ISO 8583 connector (bench/connector.py, least of {rounds} rounds of {sales:,} authorizations):"
        f" {iso.rate:,.0f} sales/s through the simulator over TCP, {iso.least:,.0f} µs of CPU a sale against the"
        f" sandbox's {sandbox.least:,.0f}: it adds {iso.least - sandbox.least:,.0f} µs (target ≤ {TARGET_US:.0f} µs)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.connector", description=__doc__)
    parser.add_argument("--sales", type=int, default=5000, help="authorizations a round, each way (default 5000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (the least CPU a sale is the estimate)")
    parser.add_argument("--sockets", type=int, default=1, help="the connection's sockets (default 1)")
    parser.add_argument("--profile", metavar="SORT", help="cProfile sort key, e.g. tottime or cumulative")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    two_cores = cores() >= 2
    _environment()
    with simulator(1 if two_cores else None) as (port, pid):
        if two_cores:
            os.sched_setaffinity(0, {0})
        results = uvloop.run(measure(port, pid, args.sales, args.rounds, args.sockets, args.profile))
    print(table(results, args.rounds))
    print(summary(results, args.rounds, args.sales))
    print(f"simulator {'on core 1, this process on core 0' if two_cores else 'and this process unpinned'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
