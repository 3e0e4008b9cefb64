"""What a sale writes on PostgreSQL, from its request to its delivered callback: rows per table, WAL bytes and
stored bytes (docs/deployment.md, the scaling plan's figures). Not a throughput run: an API-only process and
a ``kassa worker`` process on a fresh database with the recipe's table settings (docs/deploy/postgresql.sql),
SALES card sales with a callback each, counted between two quiet moments.
Run: ``python -m bench.writes [SALES]`` (500 by default); needs root to read PostgreSQL's WAL files."""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.support.databases import POSTGRES_ADMIN_URL, fresh_postgres, run_script, run_sql
from tests.support.gateway import KASSA, Gateway, Merchant, cli_run, free_port, new_merchant
from tests.support.receiver import Receiver, running

RECIPE_SQL = Path(__file__).resolve().parents[1] / "docs" / "deploy" / "postgresql.sql"
STATS = "SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables"
SIZES = """SELECT relname, pg_total_relation_size(oid) FROM pg_class
           WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace"""
# A WAL record as pg_waldump prints it: its total length, its transaction and the relations it touches.
RECORD = re.compile(r"len \(rec/tot\):\s*(\d+)/\s*(\d+), tx:\s*(\d+),.*?desc: (.*)$")


@dataclass(frozen=True)
class Snapshot:
    rows: dict[str, tuple[int, int, int, int]]  # inserted, updated, of which HOT, deleted
    sizes: dict[str, int]
    wal_lsn: str


def snapshot(url: str) -> Snapshot:
    time.sleep(11)  # a backend reports its counts once a second while busy, and after 10 s once idle
    rows = {name: (ins, upd, hot, dele) for name, ins, upd, hot, dele in run_sql(url, STATS)}
    [(lsn,)] = run_sql(url, "SELECT pg_current_wal_flush_lsn()::text")
    return Snapshot(rows, dict(run_sql(url, SIZES)), lsn)


@dataclass(frozen=True)
class Wal:
    bytes: int  # this database's records: its relations' and the commits of the transactions that wrote them
    images: int  # of which full-page images
    transactions: int  # transactions that wrote (each a commit that waited for the disk)


def wal_of(url: str, start: str, end: str) -> Wal:
    """What this database wrote to the WAL between two positions (the WAL is the whole server's)."""
    [(oid,)] = run_sql(url, "SELECT oid FROM pg_database WHERE datname = current_database()")
    [(data_dir,)] = run_sql(POSTGRES_ADMIN_URL, "SHOW data_directory")
    [(version,)] = run_sql(POSTGRES_ADMIN_URL, "SHOW server_version_num")
    waldump = f"/usr/lib/postgresql/{int(version) // 10000}/bin/pg_waldump"
    done = subprocess.run(
        [waldump, "-p", f"{data_dir}/pg_wal", "-s", start, "-e", end], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"pg_waldump: {done.stderr.strip()}")
    dump = done.stdout
    ours, images = 0, 0
    by_tx: defaultdict[str, int] = defaultdict(int)
    mine: set[str] = set()
    for line in dump.splitlines():
        found = RECORD.search(line)
        if found is None:
            continue
        record, total, tx, _ = found.groups()
        by_tx[tx] += int(total)
        if f"/{oid}/" in line:
            mine.add(tx)
            images += int(total) - int(record) if "FPW" in line else 0
            if tx == "0":  # no transaction (pruning, vacuum, a hint's page image): counted alone
                ours += int(total)
    ours += sum(size for tx, size in by_tx.items() if tx in mine and tx != "0")
    return Wal(ours, images, len(mine - {"0"}))


def sales(merchant: Merchant, first: int, count: int, callback_url: str) -> list[str]:
    def one(n: int) -> str:
        return str(merchant.sale(f"w-{n}", server_callback_url=callback_url).json()["paynet-order-id"])

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(first, first + count)))


def wait_delivered(url: str, count: int) -> None:
    deadline = time.monotonic() + 120
    while run_sql(url, "SELECT COUNT(*) FROM callbacks WHERE state = 'delivered'") != [(count,)]:
        if time.monotonic() > deadline:
            raise RuntimeError("callbacks not delivered")
        time.sleep(0.1)


def report(before: Snapshot, after: Snapshot, wal: Wal, count: int) -> None:
    print(f"| table | inserted | updated (HOT) | deleted | bytes stored | per sale, {count} sales |")
    print("|---|---:|---:|---:|---:|")
    total_rows = total_bytes = 0.0
    for name in sorted(after.rows):
        deltas = [(a - b) / count for a, b in zip(after.rows[name], before.rows.get(name, (0,) * 4), strict=True)]
        grown = (after.sizes.get(name, 0) - before.sizes.get(name, 0)) / count
        if any(deltas) or grown:
            ins, upd, hot, dele = deltas
            total_rows += ins + upd + dele
            total_bytes += grown
            print(f"| {name} | {ins:.2f} | {upd:.2f} ({hot:.2f}) | {dele:.2f} | {grown:,.0f} |")
    print(f"| all | rows written {total_rows:.1f} | | | {total_bytes:,.0f} |")
    print(f"WAL: {wal.bytes / count:,.0f} bytes a sale, {wal.images / count:,.0f} of them full-page images")
    print(f"transactions that wrote: {wal.transactions / count:.2f} a sale")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sales", type=int, nargs="?", default=500)
    count = parser.parse_args().sales
    with fresh_postgres("kassa_writes") as url, tempfile.TemporaryDirectory() as folder:
        api = Gateway(url, Path(folder))
        cli_run(api, "db", "upgrade").check_returncode()
        run_script(url, RECIPE_SQL.read_text())
        api.start("--workers", "0")
        worker = subprocess.Popen([KASSA, "worker", "--workers", "2"], env=api.env, stderr=subprocess.DEVNULL)
        try:
            with running(Receiver(free_port())) as receiver:
                merchant = new_merchant(api, "writes")
                sales(merchant, 0, 50, receiver.url)  # warm-up: first pages, caches, the scheduler's first tick
                wait_delivered(url, 50)
                before = snapshot(url)
                sales(merchant, 50, count, receiver.url)
                wait_delivered(url, 50 + count)
                after = snapshot(url)
        finally:
            worker.terminate()
            worker.wait(10)
            api.stop()
        report(before, after, wal_of(url, before.wal_lsn, after.wal_lsn), count)


if __name__ == "__main__":
    main()
