"""The console's order search on its own, at a count of stored orders of your choice:

    .venv/bin/python -m bench.console_search --orders 1000000

makes one real sale through the API of a server on a temporary SQLite file (or a fresh PostgreSQL
database), copies it in bulk to ``--orders`` orders as the ``bulk`` scenario does (``bench/bulk.py``),
reads the file into the page cache, then times ``--searches`` searches by a random last four and the
orders' dates (``bulk.console_search``) and prints p50 and p99 against the target."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import targets
from bench.bulk import BulkOrders, console_search
from bench.postgres import fresh_database
from bench.scenarios import bootstrap_merchant, say, search_row
from bench.seed import create_orders, wait_until_settled
from bench.server import KassaDeployment


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.console_search", description=__doc__)
    parser.add_argument("--orders", type=int, default=1_000_000, help="stored orders (default 1,000,000)")
    parser.add_argument("--searches", type=int, default=200, help="searches timed (default 200)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="kassa-search-") as tmp:
        if args.backend == "postgresql":
            with fresh_database() as url:
                took = _run(url, Path(tmp), args.orders, args.searches)
        else:
            took = _run(f"sqlite:///{tmp}/kassa.db", Path(tmp), args.orders, args.searches)
    row = search_row(took, args.orders, args.backend)
    r = row.result
    print(f"{row.name}: {r.requests} searches, p50 {r.p50_ms:.2f} ms, p99 {r.p99_ms:.2f} ms, max {r.p999_ms:.2f} ms")
    print(f"target: {targets.cell(row, [row])}")
    return 0


def _run(database_url: str, work_dir: Path, count: int, searches: int) -> list[float]:
    deployment = KassaDeployment(database_url, work_dir / "data")
    deployment.data_dir.mkdir(parents=True, exist_ok=True)
    deployment.upgrade()
    merchant = bootstrap_merchant(deployment, "bench-console-search")
    with deployment.server(None, "console-search-template") as server:
        [template] = create_orders(server.url, merchant, 1)
        wait_until_settled(deployment, merchant.login)
    orders = BulkOrders(database_url, int(template))
    say(f"generating {count:,} orders")
    took = orders.grow_to(count)
    say(f"{orders.generated:,} orders generated in {took:.1f} s; reading them into memory")
    orders.load_into_memory()
    return console_search(database_url, searches)


if __name__ == "__main__":
    sys.exit(main())
