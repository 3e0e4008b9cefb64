"""The five scenarios: the ceiling app, then sale and status on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.bodies import MerchantKeys, sale_bodies, status_body, write_lines
from bench.load import LoadResult, LoadSpec
from bench.postgres import backend_pids, fresh_database
from bench.probe import CpuSampler, CpuSnapshot, CpuUse, wait_until_quiet
from bench.seed import create_orders, wait_until_settled
from bench.server import PREFIX, KassaDeployment, Server, ceiling_server

Generator = Callable[[LoadSpec], LoadResult]
BACKENDS = ("sqlite", "postgresql")
BODY_MARGIN = 1000
QUIET = 0.15


@dataclass(frozen=True)
class Options:
    duration: float
    warmup: float
    connections: int
    seed_orders: int
    backends: tuple[str, ...]
    server_core: int | None
    load_core: int | None
    quiet_wait: float = 0.0


@dataclass(frozen=True)
class Row:
    name: str
    result: LoadResult
    rss_kib: int
    server_cpu: float
    cpu: CpuUse
    unique_bodies: bool = False


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


@dataclass
class Bench:
    options: Options
    work_dir: Path
    generate: Generator
    ceiling_rps: float = 0.0

    def spec(self, server: Server, path: str, bodies: Path, duration: float) -> LoadSpec:
        o = self.options
        return LoadSpec(server.url, path, bodies, duration, o.connections, o.load_core)

    def measure(
        self, name: str, server: Server, spec: LoadSpec, database_url: str = "", unique_bodies: bool = False
    ) -> Row:
        """One measured run: the server's CPU share is sampled during it, its RSS read right after."""
        pg_pids = backend_pids(database_url) if database_url.startswith("postgresql") else []
        start = CpuSnapshot.take(server.pid, pg_pids)
        with CpuSampler(server.cpu_seconds) as sampler:
            result = self.generate(spec)
        cpu = CpuUse.between(start, CpuSnapshot.take(server.pid, pg_pids), result.generator_cpu)
        row = Row(name, result, server.rss_kib(), sampler.share(), cpu, unique_bodies)
        say(f"{name}: {result.rps:,.0f} req/s, p99 {result.p99_ms:.1f} ms, {result.errors} errors")
        return row

    def wait_for_quiet(self, name: str, server: Server) -> None:
        """Before a warm-up: wait up to ``quiet_wait`` s until nothing but ``server`` keeps the machine busy."""
        if self.options.quiet_wait:
            busy = wait_until_quiet(self.options.quiet_wait, QUIET, own=server.cpu_seconds)
            if busy >= QUIET:
                say(f"{name}: the machine is still busy ({busy:.0%} of a core), measuring anyway")

    def warm_and_measure(self, name: str, server: Server, path: str, bodies: Path, database_url: str = "") -> Row:
        """A warm-up then a measured run, both replaying the same bodies (for idempotent requests)."""
        self.wait_for_quiet(name, server)
        self.generate(self.spec(server, path, bodies, self.options.warmup))
        return self.measure(name, server, self.spec(server, path, bodies, self.options.duration), database_url)

    def body_budget(self, rate: float, duration: float) -> int:
        """Distinct bodies for a run at about ``rate`` req/s: twice that, never more than the ceiling allows."""
        wanted = 2 * rate * duration
        if self.ceiling_rps:
            wanted = min(wanted, 1.2 * self.ceiling_rps * duration)
        return math.ceil(wanted) + BODY_MARGIN

    def ceiling(self) -> Row:
        say("ceiling app")
        bodies = self.work_dir / "ceiling-bodies.txt"
        write_lines(bodies, sale_bodies(MerchantKeys("ceiling", "k" * 32, 1), "ceiling", 2000))
        with ceiling_server(self.work_dir, self.options.server_core) as server:
            row = self.warm_and_measure("ceiling (parse_qsl + orjson)", server, f"{PREFIX}/api/v2/sale/1", bodies)
        self.ceiling_rps = row.result.rps
        return row

    def status(self, deployment: KassaDeployment, merchant: MerchantKeys, backend: str) -> Row:
        say(f"status on {backend}: seeding {self.options.seed_orders} orders")
        with deployment.server(self.options.server_core, f"status-{backend}") as server:
            orderids = create_orders(server.url, merchant, self.options.seed_orders)
            wait_until_settled(deployment, merchant.login)
            random.shuffle(orderids)
            bodies = self.work_dir / f"status-{backend}.txt"
            write_lines(bodies, (status_body(merchant, orderid) for orderid in orderids))
            path = f"{PREFIX}/api/v2/status/{merchant.endpoint_id}"
            name = f"status by orderid, {backend}"
            return self.warm_and_measure(name, server, path, bodies, deployment.database_url)

    def sale(self, deployment: KassaDeployment, merchant: MerchantKeys, backend: str) -> Row:
        say(f"sale on {backend}")
        o = self.options
        path = f"{PREFIX}/api/v2/sale/{merchant.endpoint_id}"
        with deployment.server(o.server_core, f"sale-{backend}") as server:
            warm_bodies = self.work_dir / f"sale-warm-{backend}.txt"
            write_lines(warm_bodies, sale_bodies(merchant, "warm", self.body_budget(self.ceiling_rps / 2, o.warmup)))
            self.wait_for_quiet(f"sale acceptance, {backend}", server)
            warm = self.generate(self.spec(server, path, warm_bodies, o.warmup))
            bodies = self.work_dir / f"sale-{backend}.txt"
            count = write_lines(bodies, sale_bodies(merchant, "run", self.body_budget(warm.rps, o.duration)))
            say(f"sale on {backend}: {count:,} distinct bodies (warm-up ran at {warm.rps:,.0f} req/s)")
            spec = self.spec(server, path, bodies, o.duration)
            name = f"sale acceptance, {backend}"
            return self.measure(name, server, spec, deployment.database_url, unique_bodies=True)

    def backend(self, backend: str) -> tuple[Row, Row]:
        """(sale, status) on one database; the status run comes first, on a database without a backlog."""
        with self.database(backend) as url:
            deployment = KassaDeployment(url, self.work_dir / backend)
            deployment.data_dir.mkdir(parents=True, exist_ok=True)
            deployment.upgrade()
            merchant = bootstrap_merchant(deployment, f"bench-{backend}")
            status = self.status(deployment, merchant, backend)
            return self.sale(deployment, merchant, backend), status

    @contextlib.contextmanager
    def database(self, backend: str) -> Iterator[str]:
        if backend == "postgresql":
            with fresh_database() as url:
                yield url
        else:
            yield f"sqlite:///{self.work_dir / backend / 'kassa.db'}"

    def run(self) -> list[Row]:
        """Rows in table order: ceiling, every sale, every status."""
        rows = [self.ceiling()]
        pairs = [self.backend(backend) for backend in self.options.backends]
        return rows + [sale for sale, _ in pairs] + [status for _, status in pairs]


def bootstrap_merchant(deployment: KassaDeployment, login: str) -> MerchantKeys:
    created = deployment.cli("merchant", "create", "--login", login)
    endpoint = deployment.cli("endpoint", "create", "--merchant", login, "--currency", "USD")
    return MerchantKeys(login, created["control_key"], int(endpoint["id"]))
