"""What a claim costs with work queued that it cannot take: a callback claim with 0 to 1M callbacks queued
behind a destination that is down and one that is full, and a job claim with as many jobs not due yet; and
what the queue figures of a /metrics scrape cost with that backlog (``storage.queue_figures.read``).

Each measured claim leases the one callback (or job) that can go, written just before it, outside the timing.
The backlog, and 10,000 callbacks delivered before it at every step, are seeded with bulk SQL. In the bench's
own process, one claim at a time: only its latency counts.
Run alone: ``python -m bench.claims [--backlogs 0,10000,100000,1000000] [--claims 500] [--backends ...]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import psycopg
from sqlalchemy import Connection, text

from bench.postgres import fresh_database
from bench.scenarios import BACKENDS, Row, search_row
from kassa.core.opening import open_order
from kassa.domain.transactions import TxType
from kassa.storage import callbacks as callback_store
from kassa.storage import jobs as job_store
from kassa.storage import orders as order_store
from kassa.storage import queue_figures
from kassa.storage.callbacks import Attempt, DeliveryLimits
from kassa.storage.database import Database, open_database
from kassa.storage.jobs import JobKind
from kassa.storage.migrate import upgrade
from tests.support.databases import shop_endpoint

BACKLOGS = (0, 10_000, 100_000, 1_000_000)
LIMITS = DeliveryLimits(per_destination=16, per_merchant=10**9)
NOW = 10**12  # the bench's clock, in epoch ms: the backlog's times are set around it
FAR = NOW + 10**9
DOWN, FULL, LIVE = "down.example:80", "full.example:80", "live.example:80"
HISTORY = 10_000  # callbacks delivered before, at every step


def backlogs(quick: bool) -> tuple[int, ...]:
    """``make bench``'s backlogs: up to 100,000 with ``--quick``."""
    return tuple(n for n in BACKLOGS if n <= 100_000) if quick else BACKLOGS


@dataclass(frozen=True, slots=True)
class Shop:
    merchant_id: int
    order_id: int
    transaction_id: int


def _shop(conn: Connection) -> Shop:
    merchant_id, endpoint_id = shop_endpoint(conn)
    card = order_store.NewCard(b"card", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    new = order_store.NewOrder(
        merchant_id, endpoint_id, "claims", TxType.SALE, 1042, "USD", "a@example.com", "", "{}",
        None, None, None, None, "fingerprint", "serial-claims", 1, card=card, cvv_ciphertext=b"cvv",
    )  # fmt: skip
    order_id = open_order(conn, new).order_id
    conn.execute(text("DELETE FROM jobs"))  # the order's own: only the measured job is due
    return Shop(merchant_id, order_id, order_store.latest_transaction_id(conn, order_id))


def numbers(dialect: str, start: int, stop: int) -> str:
    """A row source of ``n`` from ``start`` to ``stop - 1`` (``FROM`` clause), in SQL alone."""
    if dialect == "postgresql":
        return f"generate_series({start}, {stop - 1}) AS s(n)"
    return (
        f"(WITH RECURSIVE s(n) AS (SELECT {start} UNION ALL SELECT n + 1 FROM s WHERE n < {stop - 1}) SELECT n FROM s)"
    )


def _grow(conn: Connection, shop: Shop, start: int, stop: int) -> None:
    """Callbacks ``start`` to ``stop - 1`` of the backlog, each its own URL (none waits for another): the even
    ones to a destination that is down (its next probe far off), the odd ones to one that has its limit in
    flight; and as many jobs due in a day, of the kinds a sale does not wait for."""
    if stop <= start:
        return
    rows = numbers(conn.dialect.name, start, stop)
    conn.execute(
        text(
            "INSERT INTO callbacks (order_id, transaction_id, kind, url, fields, state, attempts,"
            " next_attempt_at_ms, created_at_ms, destination, merchant_id, lane)"
            f" SELECT :order_id, :tx_id, 'notify', 'http://backlog.example/' || n, '{{}}', 'pending', 0, :now, :now,"
            f" CASE WHEN n % 2 = 0 THEN '{DOWN}' ELSE '{FULL}' END, :merchant_id, 0 FROM {rows}"
        ),
        {"order_id": shop.order_id, "tx_id": shop.transaction_id, "now": NOW - 1, "merchant_id": shop.merchant_id},
    )
    conn.execute(
        text(
            "INSERT INTO jobs (kind, transaction_id, run_at_ms, attempts, created_at_ms)"
            " SELECT CASE n % 3 WHEN 0 THEN 'reconcile' WHEN 1 THEN 'method_timeout' ELSE 'session_timeout' END,"
            f" :tx_id, :later + n, 0, :now FROM {rows}"
        ),
        {"tx_id": shop.transaction_id, "later": NOW + 86_400_000, "now": NOW},
    )


def _hold(conn: Connection, shop: Shop) -> None:
    """FULL's limit in flight for good, DOWN down with its next probe far off, and their queue heads."""
    conn.execute(
        text(
            "INSERT INTO callbacks (order_id, transaction_id, kind, url, fields, state, attempts,"
            " next_attempt_at_ms, created_at_ms, destination, merchant_id, lease_owner, lease_until_ms)"
            f" SELECT :order_id, :tx_id, 'notify', 'http://in-flight.example/' || n, '{{}}', 'pending', 0, :now,"
            f" :now, '{FULL}', :merchant_id, 'callbacks-elsewhere', :far FROM {numbers(conn.dialect.name, 0, 16)}"
        ),
        {"order_id": shop.order_id, "tx_id": shop.transaction_id, "now": NOW - 1, "merchant_id": shop.merchant_id}
        | {"far": FAR},
    )
    conn.execute(
        text(
            "INSERT INTO callback_destinations (destination, first_at_ms, retry_at_ms, failures, failed_at_ms,"
            " probe_at_ms) VALUES (:down, :far, NULL, 5, :now, :far), (:full, :now, NULL, 0, 0, 0)"
        ),
        {"down": DOWN, "full": FULL, "far": FAR, "now": NOW - 1},
    )


def _history(conn: Connection, shop: Shop) -> None:
    """``HISTORY`` callbacks delivered before: a deployment's outbox keeps them, and its planner chooses for
    tables of that size (on a table of a few rows PostgreSQL scans rather than searches, which made the empty
    queue's claims a third quicker than any other's, and not a reference of them)."""
    conn.execute(
        text(
            "INSERT INTO callbacks (order_id, transaction_id, kind, url, fields, state, attempts,"
            " next_attempt_at_ms, created_at_ms, delivered_at_ms, destination, merchant_id)"
            " SELECT :order_id, :tx_id, 'notify', 'http://history.example/' || n, '{}', 'delivered', 1, 0, 0, 0,"
            f" 'history.example:80', :merchant_id FROM {numbers(conn.dialect.name, 0, HISTORY)}"
        ),
        {"order_id": shop.order_id, "tx_id": shop.transaction_id, "merchant_id": shop.merchant_id},
    )


def _callback_claim(db: Database, shop: Shop, n: int) -> float:
    """Seconds of one claim that leases the one callback that can go (to LIVE), written before it."""
    order = {"id": shop.order_id, "merchant_id": shop.merchant_id}
    url = f"http://{LIVE}/cb/{n}"
    db.write_sync(lambda conn: callback_store.add(conn, order, shop.transaction_id, "notify", url, "{}", NOW, None))

    def claim(conn: Connection) -> tuple[float, list[callback_store.Due]]:
        started = time.perf_counter()
        claimed = callback_store.claim(conn, "callbacks-bench", NOW, 15_000, 256, LIMITS)
        return time.perf_counter() - started, claimed

    took, [due] = db.write_sync(claim)
    attempt = Attempt(due.url, NOW, 1, 200, None)
    db.write_sync(lambda conn: callback_store.record(conn, due, "callbacks-bench", attempt, None))
    return took


def _job_claim(db: Database, shop: Shop, n: int) -> float:
    """Seconds of one job claim that leases the one job due (a sale's), written before it."""
    db.write_sync(lambda conn: job_store.add(conn, JobKind.PROCESS, shop.transaction_id, NOW, NOW))

    def claim(conn: Connection) -> tuple[float, list[job_store.Job]]:
        started = time.perf_counter()
        claimed = job_store.claim(conn, "worker-bench", NOW, 15_000, 32)
        return time.perf_counter() - started, claimed

    took, [job] = db.write_sync(claim)
    db.write_sync(lambda conn: job_store.finish(conn, job))
    return took


@contextmanager
def _database(backend: str) -> Iterator[str]:
    if backend == "postgresql":
        with fresh_database() as url:
            yield url
    else:
        with tempfile.TemporaryDirectory(prefix="kassa-claims-") as tmp:
            yield f"sqlite:///{tmp}/kassa.db"


def measure(backend: str, backlogs: Sequence[int] = BACKLOGS, claims: int = 500) -> list[Row]:
    """A row per queue and backlog: callback claims, then job claims, each ``claims`` times."""
    rows: list[Row] = []
    with _database(backend) as url:
        upgrade(url)
        db = open_database(url, threads=1)
        try:
            shop = db.write_sync(_shop)
            db.write_sync(lambda conn: _hold(conn, shop))
            db.write_sync(lambda conn: _history(conn, shop))
            seeded = 0
            for backlog in sorted(backlogs):
                started = time.monotonic()
                db.write_sync(partial(_grow, shop=shop, start=seeded, stop=backlog))
                seeded = max(seeded, backlog)
                if db.dialect == "postgresql":
                    _vacuum(url)
                seeding = time.monotonic() - started
                for queue, one in (("callback", _callback_claim), ("job", _job_claim), ("figures", _figures)):
                    rows.append(_row(queue, backlog, backend, _timed(db, shop, one, claims), seeding))
        finally:
            db.close()
    return rows


def _vacuum(url: str) -> None:
    """What autovacuum does in a deployment, at once: the planner's statistics of the new backlog, and the
    dead rows of the claims measured before it (each job claimed is deleted) out of the indexes."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def _timed(db: Database, shop: Shop, one: Callable[[Database, Shop, int], float], claims: int) -> list[float]:
    for n in range(10):  # warm-up: statements compiled and prepared, pages cached
        one(db, shop, -n - 1)
    return [one(db, shop, n) * 1000 for n in range(claims)]


def _figures(db: Database, _shop: Shop, _n: int) -> float:
    """Seconds of one read of the queue figures a /metrics scrape makes, on a connection of the pool."""

    def read(conn: Connection) -> float:
        started = time.perf_counter()
        queue_figures.read(conn, NOW)
        return time.perf_counter() - started

    return db.read_sync(read)


def _row(queue: str, backlog: int, backend: str, took_ms: list[float], seeding_s: float) -> Row:
    if queue == "callback":
        name = f"callback claim, {backlog:,} queued behind a destination down and one full, {backend}"
    elif queue == "job":
        name = f"job claim, {backlog:,} jobs not due yet, {backend}"
    else:
        name = f"/metrics queue figures, {backlog:,} callbacks and {backlog:,} jobs queued, {backend}"
    row = search_row(took_ms, 0, backend)
    seeded = f"{name}: seeding up to {backlog:,} took {seeding_s:.1f} s; mean {statistics.fmean(took_ms):.3f} ms"
    return Row(name, row.result, 0, 0.0, row.cpu, kind=f"claim-{queue}", backend=backend, facts=(seeded,))


def table(rows: Sequence[Row]) -> str:
    """Plain columns: what was queued, and the claim's median and 99th percentile against the empty queue's."""
    lines = [f"{'claim':<88} {'p50 ms':>8} {'p99 ms':>8} {'p50 vs empty':>13}"]
    for row in rows:
        empty = next(r for r in rows if r.kind == row.kind and r.backend == row.backend)
        ratio = row.result.p50_ms / empty.result.p50_ms if empty.result.p50_ms else 0.0
        lines.append(f"{row.name:<88} {row.result.p50_ms:>8.3f} {row.result.p99_ms:>8.3f} {ratio:>12.2f}x")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.claims", description=__doc__)
    parser.add_argument("--backlogs", default=",".join(map(str, BACKLOGS)), help="queued rows, comma-separated")
    parser.add_argument("--claims", type=int, default=500, help="claims measured per row (default 500)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="of: sqlite, postgresql (default both)")
    args = parser.parse_args(argv)
    backlogs = [int(n) for n in args.backlogs.split(",")]
    rows = [row for backend in args.backends.split(",") for row in measure(backend, backlogs, args.claims)]
    print(table(rows))
    for row in rows:
        print(f"- {row.facts[0]}")


if __name__ == "__main__":
    main()
