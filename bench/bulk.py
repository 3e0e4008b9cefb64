"""Stored orders in bulk, for status at scale: copies of one real approved sale (its order, transaction and
card rows, as the API and the job worker wrote them) made straight in the database by INSERT ... SELECT
over a number series (a recursive CTE on SQLite, generate_series on PostgreSQL), in chunks of one
transaction each. Every copy gets its own ids, ``client_orderid`` (``bulk-NNNNNNNNNN``), serial number
and card row, so a status by orderid reads the same three rows it reads for a sale made through the API.
The cards' last four digits vary (each of the 10,000 in turn, spread by a prime stride), as real cards'
do: the console's search by last four finds one order in 10,000, not every one."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import psycopg
from sqlalchemy import Connection, func, make_url, select

from kassa.storage.database import open_database
from kassa.storage.order_search import Search, search
from kassa.storage.tables import cards, orders, transactions

CHUNK = 500_000
LAST_FOUR_STRIDE = 7919  # a prime: n * 7919 mod 10,000 runs through all 10,000 endings
SQLITE_SERIES = "WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < {count}) "


@dataclass(frozen=True)
class Dialect:
    series_from: Callable[[int], str]  # a FROM item yielding n = 1 .. count
    label: Callable[[str], str]  # 'bulk-' and n (an SQL expression) zero-padded to 10 digits
    serial: Callable[[str], str]  # a UUID-shaped serial number, unique per n
    last_four: Callable[[str], str]  # four digits, each of 0000-9999 once in every 10,000 consecutive n


SQLITE = Dialect(
    series_from=lambda count: "seq",
    label=lambda n: f"printf('bulk-%010d', {n})",
    serial=lambda n: f"printf('00000000-0000-4000-8000-%012d', {n})",
    last_four=lambda n: f"printf('%04d', (({n}) * {LAST_FOUR_STRIDE}) % 10000)",
)
POSTGRES = Dialect(
    series_from=lambda count: f"generate_series(1, {count}) AS seq(n)",
    label=lambda n: f"'bulk-' || lpad(({n})::text, 10, '0')",
    serial=lambda n: f"'00000000-0000-4000-8000-' || lpad(({n})::text, 12, '0')",
    last_four=lambda n: f"lpad(((({n})::bigint * {LAST_FOUR_STRIDE}) % 10000)::text, 4, '0')",
)


def _copy(dialect: Dialect, table_name: str, columns: Sequence[str], overrides: dict[str, str], count: int) -> str:
    """INSERT of ``count`` copies of the template row ``t`` (id = :template), some columns overridden."""
    values = ", ".join(overrides.get(name, f"t.{name}") for name in columns)
    sql = (
        f"INSERT INTO {table_name} ({', '.join(columns)}) SELECT {values} "
        f"FROM {dialect.series_from(count)}, {table_name} t WHERE t.id = {{template}}"
    )
    return (SQLITE_SERIES.format(count=count) if dialect is SQLITE else "") + sql


def chunk_statements(
    dialect: Dialect, template: dict[str, int], bases: dict[str, int], done: int, count: int
) -> list[str]:
    """The three INSERTs of one chunk: copies ``done + 1`` .. ``done + count``; ``bases`` are the tables' max ids."""
    c, o, t = bases["cards"], bases["orders"], bases["transactions"]
    label = dialect.label(f"{done} + n")
    statements = [
        _copy(
            dialect,
            "cards",
            [x.name for x in cards.columns],
            {"id": f"{c} + n", "last_four": dialect.last_four(f"{done} + n")},
            count,
        ),
        _copy(
            dialect,
            "orders",
            [x.name for x in orders.columns],
            {"id": f"{o} + n", "client_orderid": label, "card_id": f"{c} + n", "created_at_ms": "t.created_at_ms + n"},
            count,
        ),
        _copy(
            dialect,
            "transactions",
            [x.name for x in transactions.columns],
            {
                "id": f"{t} + n",
                "order_id": f"{o} + n",
                "serial_number": dialect.serial(f"{done} + n"),
                "created_at_ms": "t.created_at_ms + n",
                "updated_at_ms": "t.updated_at_ms + n",
            },
            count,
        ),
    ]
    keys = {"cards": template["card"], "orders": template["order"], "transactions": template["transaction"]}
    return [sql.format(template=keys[name]) for sql, name in zip(statements, keys, strict=True)]


@dataclass
class BulkOrders:
    """Orders generated so far in one database: their id ranges, and the time generation took."""

    database_url: str
    template_order: int
    generated: int = 0
    ranges: list[tuple[int, int]] = field(default_factory=list)  # inclusive order id ranges
    seconds: float = 0.0

    def grow_to(self, total: int) -> float:
        """Adds copies until ``total`` exist; returns the seconds it took."""
        started = time.monotonic()
        if self.database_url.startswith("sqlite"):
            self._sqlite(total)
        else:
            self._postgres(total)
        took = time.monotonic() - started
        self.seconds += took
        return took

    def load_into_memory(self) -> float:
        """Reads the orders' tables and indexes once, so the status run starts with them in the OS's page
        cache; returns the seconds it took. This VM's host reclaims pages nobody touched for about a minute
        (a 2 GB file read once was fully evicted 75 s later), so without it the run at 10 million orders
        read part of the database from disk and measured the disk, not the stored-order count."""
        started = time.monotonic()
        if self.database_url.startswith("sqlite"):
            with open(self._sqlite_file, "rb") as database:
                while database.read(1 << 20):
                    pass
        else:
            with psycopg.connect(self.database_url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
                conn.execute(
                    "SELECT pg_prewarm(c.oid, 'read') FROM pg_class c WHERE c.relname IN "
                    "('orders', 'transactions', 'cards') OR c.oid IN (SELECT indexrelid FROM pg_index "
                    "WHERE indrelid IN ('orders'::regclass, 'transactions'::regclass, 'cards'::regclass))"
                )
        return time.monotonic() - started

    @property
    def _sqlite_file(self) -> str:
        return str(make_url(self.database_url).database)

    def sample(self, count: int) -> list[int]:
        """``count`` order ids drawn uniformly from every order generated (without repeats when possible)."""
        size = sum(last - first + 1 for first, last in self.ranges)
        picks = random.sample(range(size), min(count, size))
        ids = []
        for pick in picks:
            for first, last in self.ranges:
                if pick <= last - first:
                    ids.append(first + pick)
                    break
                pick -= last - first + 1
        return ids

    def _template(self, fetch: Callable[[str], int]) -> dict[str, int]:
        card = fetch(f"SELECT card_id FROM orders WHERE id = {self.template_order}")
        transaction = fetch(f"SELECT min(id) FROM transactions WHERE order_id = {self.template_order}")
        return {"order": self.template_order, "card": card, "transaction": transaction}

    def _chunks(self, total: int) -> list[int]:
        sizes, left = [], total - self.generated
        while left > 0:
            sizes.append(min(CHUNK, left))
            left -= sizes[-1]
        return sizes

    def _bases(self, fetch: Callable[[str], int]) -> dict[str, int]:
        return {name: fetch(f"SELECT coalesce(max(id), 0) FROM {name}") for name in ("cards", "orders", "transactions")}

    def _sqlite(self, total: int) -> None:
        conn = sqlite3.connect(self._sqlite_file, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute("PRAGMA cache_size=-262144")

            def fetch(sql: str) -> int:
                return int(conn.execute(sql).fetchone()[0])

            template = self._template(fetch)
            for size in self._chunks(total):
                bases = self._bases(fetch)
                conn.execute("BEGIN")
                for sql in chunk_statements(SQLITE, template, bases, self.generated, size):
                    conn.execute(sql)
                conn.execute("COMMIT")
                self._added(bases["orders"], size)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()

    def _postgres(self, total: int) -> None:
        with psycopg.connect(self.database_url, autocommit=True) as conn:

            def fetch(sql: str) -> int:
                row = conn.execute(sql).fetchone()
                assert row is not None
                return int(row[0])

            template = self._template(fetch)
            for size in self._chunks(total):
                bases = self._bases(fetch)
                with conn.transaction():
                    for sql in chunk_statements(POSTGRES, template, bases, self.generated, size):
                        conn.execute(sql)
                self._added(bases["orders"], size)
            for name in ("cards", "orders", "transactions"):
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), (SELECT max(id) FROM {name}))")
            conn.execute("ANALYZE cards, orders, transactions")

    def _added(self, order_base: int, size: int) -> None:
        self.ranges.append((order_base + 1, order_base + size))
        self.generated += size


def console_search(database_url: str, searches: int = 200, warmup: int = 20) -> list[float]:
    """Milliseconds each of ``searches`` console searches took (``storage.order_search.search``, run as the
    console runs it, through ``Database.read``): a random last four and the dates every order was made
    on, the first page of 50. ``warmup`` searches go first, not counted."""
    db = open_database(database_url)
    try:
        first, last = db.read_sync(_created_span)
        day = 86_400_000
        since, until = first - first % day, last - last % day + day
        took = []
        for n in range(warmup + searches):
            wanted = Search(last_four=f"{random.randrange(10_000):04d}", from_ms=since, until_ms=until)
            started = time.perf_counter()
            db.read_sync(partial(search, wanted=wanted))
            if n >= warmup:
                took.append((time.perf_counter() - started) * 1000)
        return took
    finally:
        db.close()


def _created_span(conn: Connection) -> tuple[int, int]:
    span = conn.execute(select(func.min(orders.c.created_at_ms), func.max(orders.c.created_at_ms))).one()
    return int(span[0]), int(span[1])
