"""What risk rules cost a sale (issue 32): the CPU an order's opening takes with an endpoint's rules (four
block lists of 2,500 entries each, 10,000 in all, and five velocity limits) against the same with none, on
a fresh SQLite database, and how a velocity count is read (SQLite's query plan: by the primary key, not a
scan).

Orders are opened as ``core.opening.open_order`` opens them, 200 in one transaction (so a commit's wait
does not count), the process's CPU time taken per order; cards, e-mail and IP addresses drawn from pools of
1,000 so that the limits' counts grow as under traffic; every limit high enough that each sale passes,
each counted by the five limits (the most a passing sale costs). Rounds alternate with and without rules;
the least CPU per order of each is the estimate.

Run: ``python -m bench.risk [--orders N] [--rounds R]``."""

from __future__ import annotations

import argparse
import base64
import itertools
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence

import orjson
from sqlalchemy import Connection

from bench.stages import SUMMARY

TARGET_US = 50.0  # issue 32: rule evaluation per sale on SQLite
BATCH = 200
POOL = 1000


def _database() -> object:
    from kassa.storage.database import open_database
    from kassa.storage.migrate import upgrade_quietly

    url = f"sqlite:///{tempfile.mkdtemp(prefix='kassa-risk-')}/kassa.db"
    upgrade_quietly(url)
    return open_database(url, threads=1)


def _endpoints(conn: Connection) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two merchants' endpoints: the first with the rules, the second with none."""
    from kassa.domain.merchants import Mode
    from kassa.storage import merchants as merchant_store
    from kassa.vault.keys import Vault

    vault = Vault(os.urandom(32))
    made = []
    for login in ("ruled", "free"):
        merchant = merchant_store.create_merchant(conn, vault, login, "k" * 32, False, 0)
        spec = merchant_store.EndpointSpec(merchant.id, "USD", Mode.SANDBOX, False, "", None, None, False)
        made.append((merchant.id, merchant_store.create_endpoint(conn, spec, 0)))
    return made[0], made[1]


def _rules(conn: Connection, endpoint_id: int) -> None:
    from kassa.domain.risk import Kind, Mode, Per, Velocity
    from kassa.storage import risk as store

    lists = {
        Kind.CARD: [f"{n:064x}" for n in range(2500)],
        Kind.BIN: [f"{300000 + 2 * n:06d}" for n in range(1250)]
        + [f"{500000 + 10 * n:06d}-{500000 + 10 * n + 4:06d}" for n in range(1250)],
        Kind.EMAIL: [f"blocked{n}@example.com" for n in range(2500)],
        Kind.IP: [f"10.{n // 256}.{n % 256}.0/24" for n in range(2500)],
    }
    for kind, entries in lists.items():
        store.create(conn, store.NewRule(kind, Mode.ENFORCE, None, endpoint_id, tuple(entries), None, "", "bench"), 0)
    limits = [
        (Kind.COUNT, Velocity(Per.CARD, 10**9, 3_600_000)),
        (Kind.COUNT, Velocity(Per.EMAIL, 10**9, 86_400_000)),
        (Kind.COUNT, Velocity(Per.IP, 10**9, 3_600_000)),
        (Kind.SUM, Velocity(Per.CARD, 10**12, 86_400_000, "USD")),
        (Kind.SUM, Velocity(Per.EMAIL, 10**12, 7 * 86_400_000, "USD")),
    ]
    for kind, velocity in limits:
        store.create(conn, store.NewRule(kind, Mode.ENFORCE, None, endpoint_id, (), velocity, "", "bench"), 0)


def _orders(scope: tuple[int, int], tag: str) -> Iterator[object]:
    from kassa.domain.transactions import TxType
    from kassa.storage.orders import NewCard, NewOrder

    merchant_id, endpoint_id = scope
    for n in itertools.count():
        k = n % POOL
        card = NewCard(b"c", f"{10**6 + k:064x}", "411111", "1111", "VISA", 12, 2030, "Jane Doe")
        customer = orjson.dumps({"ipaddress": f"203.0.{k // 250}.{k % 250}"}).decode()
        yield NewOrder(
            merchant_id, endpoint_id, f"{tag}-{n}", TxType.SALE, 1042, "USD", f"buyer{k}@example.com", "",
            customer, None, None, None, None, "f", f"{tag}-{n}", 1_000_000 + n, card=card, cvv_ciphertext=b"v",
        )  # fmt: skip


def _round(db: object, orders: Iterator[object], count: int) -> float:
    """CPU µs per order of ``count`` orders opened, ``BATCH`` a transaction."""
    from kassa.core.opening import open_order

    spent = 0.0
    for _ in range(count // BATCH):
        batch = list(itertools.islice(orders, BATCH))

        def unit(conn: Connection, batch: list[object] = batch) -> None:
            for new in batch:
                open_order(conn, new)  # type: ignore[arg-type]

        began = time.process_time()
        db.write_sync(unit)  # type: ignore[attr-defined]
        spent += time.process_time() - began
    return spent / (count // BATCH * BATCH) * 1e6


def _plan(db: object) -> str:
    """How SQLite reads two keys' velocity counts: the statement a sale runs, as SQLite plans it."""
    from kassa.storage import risk as store

    def plan(conn: Connection) -> list[tuple[object, ...]]:
        sql = store._totals_of((False, True))._for(conn).sql
        return [tuple(row) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", (1, 7, 0, 2, 8, 0))]

    rows = db.read_sync(plan)  # type: ignore[attr-defined]
    return "; ".join(str(row[-1]) for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.risk", description=__doc__)
    parser.add_argument("--orders", type=int, default=4000, help="orders a round, each way (default 4000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (the least CPU an order is the estimate)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("KASSA_VAULT_KEY", base64.b64encode(os.urandom(32)).decode())
    from kassa.core import risk

    risk.cache_for(2.0)  # as a deployment keeps them
    db = _database()
    ruled, free = db.write_sync(_endpoints)  # type: ignore[attr-defined]
    db.write_sync(lambda conn: _rules(conn, ruled[1]))  # type: ignore[attr-defined]
    with_rules, without = _orders(ruled, "r"), _orders(free, "f")
    _round(db, with_rules, 1000)  # warm-up: caches, the first buckets
    _round(db, without, 1000)
    ruled_us, free_us = [], []
    for _ in range(args.rounds):
        ruled_us.append(_round(db, with_rules, args.orders))
        free_us.append(_round(db, without, args.orders))
    added = min(ruled_us) - min(free_us)
    shown = ", ".join(f"{u:,.0f}" for u in ruled_us), ", ".join(f"{u:,.0f}" for u in free_us)
    print(f"with rules: {shown[0]} µs/order; without: {shown[1]}")
    print(f"velocity count read: {_plan(db)}")
    print(
        f"{SUMMARY}risk rules (bench/risk.py, SQLite, least of {args.rounds} rounds of {args.orders:,} orders):"
        f" opening an order takes {min(ruled_us):,.0f} µs of CPU with 4 block lists of 10,000 entries and 5"
        f" velocity limits against {min(free_us):,.0f} µs with none: the rules add {added:,.0f} µs"
        f" (target ≤ {TARGET_US:.0f} µs); the counts of a sale's keys are read in one statement: {_plan(db)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
