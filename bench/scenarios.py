"""The scenarios: the ceiling app, sale and status on SQLite and PostgreSQL, the peer (localstripe), end to
end at a fixed rate, status over bulk-generated orders, 1 vs 2 server processes on PostgreSQL, and what
OAuth 1.0a verification costs a request."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import random
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlencode

from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bench import peer
from bench.bodies import (
    MerchantKeys,
    OAuthSigner,
    card_ref_bodies,
    card_ref_fields,
    oauth_bodies,
    refused_fields,
    sale_bodies,
    status_body,
    write_lines,
)
from bench.bulk import BulkOrders, console_search
from bench.endtoend import ENV, CallbackReceiver, EndToEndSpec, percentile, run_endtoend
from bench.load import LoadResult, LoadSpec
from bench.postgres import backend_pids, fresh_database
from bench.probe import CpuSampler, CpuSnapshot, CpuUse, wait_until_quiet
from bench.scale import process_group
from bench.seed import create_orders, wait_until_settled
from bench.server import API_ONLY, PREFIX, KassaDeployment, Server, ceiling_server, floor_server
from bench.stages import SUMMARY

Generator = Callable[[LoadSpec], LoadResult]
BACKENDS = ("sqlite", "postgresql")
# claims (bench/claims.py), overload (bench/overload.py), isolation (bench/isolation.py), connector
# (bench/connector.py) and risk (bench/risk.py), the last two a line of the notes each: run by main
SCENARIOS = ("core", "peer", "e2e", "bulk", "scale", "oauth", "claims", "overload", "isolation", "connector", "risk")
T = TypeVar("T")
BODY_MARGIN = 1000
QUIET = 0.15
OAUTH_ROUNDS = 5
CARD_REF_ORDERS = 200  # 50 connections: a call finds its order locked by another about a quarter of the time
# Refused at their first field (a client_orderid too long), after a signature check or none: the same
# work but for the check, whose cost is then the difference.
OAUTH_REFUSED_PATHS = ("/api/v2/sale", "/api/v2/payout", "/api/v4/payout")
Make = Callable[[str, int], Iterable[str]]  # bodies: (prefix, count)
OAUTH_ROWS = {
    "oauth-none": "no signature checked: sale refused at its first field",
    "oauth-hmac": "OAuth HMAC-SHA1: payout refused at its first field",
    "oauth-rsa": "OAuth RSA-SHA256: v4 payout refused at its first field",
    "cardref-v2": "control: create-card-ref v2 of 200 approved orders in turn",
    "cardref-v4": "OAuth RSA-SHA256: create-card-ref v4 of the same orders",
}


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
    scenarios: tuple[str, ...] = SCENARIOS
    e2e_rate: float = 1000
    e2e_duration: float = 60
    e2e_grace: float = 30
    e2e_sustained_rate: float = 200  # PostgreSQL again, at a rate this machine keeps up with
    e2e_high_rate: float = 1500  # SQLite again, at a rate above the target's
    small_orders: int = 10_000
    big_orders: int = 10_000_000


@dataclass(frozen=True)
class Row:
    """One line of the table. ``kind`` (ceiling, sale, status, peer, e2e, bulk-small, bulk-big, scale-1,
    scale-2) and ``backend`` tell the report which figures to set side by side."""

    name: str
    result: LoadResult
    rss_kib: int
    server_cpu: float
    cpu: CpuUse
    unique_bodies: bool = False
    kind: str = ""
    backend: str = ""
    rss_each_kib: tuple[int, ...] = ()
    lost: int | None = None
    facts: tuple[str, ...] = ()
    refused: int = 0  # overload: sales refused with 503
    recovery_s: float | None = None  # overload: seconds after the burst until the p99 was normal; None: never


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


@dataclass
class Bench:
    options: Options
    work_dir: Path
    generate: Generator
    ceiling_rps: float = 0.0
    facts: list[str] = field(default_factory=list)  # notes on the run as a whole (generation times, installs)

    def spec(self, server: Server, path: str, bodies: Path, duration: float) -> LoadSpec:
        o = self.options
        return LoadSpec(server.url, path, bodies, duration, o.connections, o.load_core)

    def sampled(self, server: Server, database_url: str, action: Callable[[], T]) -> tuple[T, float, CpuSnapshot]:
        """Runs ``action`` with the server's CPU sampled; returns its value, the server's CPU share in the
        middle of the run, and a snapshot taken before, for ``CpuUse.between``."""
        start = CpuSnapshot.take(server.cpu_seconds(), self.pg_pids(database_url))
        with CpuSampler(server.cpu_seconds) as sampler:
            value = action()
        return value, sampler.share(), start

    def pg_pids(self, database_url: str) -> list[int]:
        return backend_pids(database_url) if database_url.startswith("postgresql") else []

    def measure(
        self,
        name: str,
        server: Server,
        spec: LoadSpec,
        database_url: str = "",
        unique_bodies: bool = False,
        kind: str = "",
        backend: str = "",
    ) -> Row:
        """One measured run: the server's CPU share is sampled during it, its RSS read right after."""
        result, share, start = self.sampled(server, database_url, lambda: self.generate(spec))
        end = CpuSnapshot.take(server.cpu_seconds(), self.pg_pids(database_url))
        cpu = CpuUse.between(start, end, result.generator_cpu)
        row = Row(name, result, server.rss_kib(), share, cpu, unique_bodies, kind, backend)
        say(f"{name}: {result.rps:,.0f} req/s, p99 {result.p99_ms:.1f} ms, {result.errors} errors")
        return row

    def wait_for_quiet(self, name: str, server: Server) -> None:
        """Before a warm-up: wait up to ``quiet_wait`` s until nothing but ``server`` keeps the machine busy."""
        if self.options.quiet_wait:
            busy = wait_until_quiet(self.options.quiet_wait, QUIET, own=server.cpu_seconds)
            if busy >= QUIET:
                say(f"{name}: the machine is still busy ({busy:.0%} of a core), measuring anyway")

    def warm_and_measure(
        self,
        name: str,
        server: Server,
        path: str,
        bodies: Path,
        database_url: str = "",
        kind: str = "",
        backend: str = "",
    ) -> Row:
        """A warm-up then a measured run, both replaying the same bodies (for idempotent requests)."""
        self.wait_for_quiet(name, server)
        self.generate(self.spec(server, path, bodies, self.options.warmup))
        spec = self.spec(server, path, bodies, self.options.duration)
        return self.measure(name, server, spec, database_url, kind=kind, backend=backend)

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
            row = self.warm_and_measure(
                "ceiling (parse_qsl + orjson)", server, f"{PREFIX}/api/v2/sale/1", bodies, kind="ceiling"
            )
        self.ceiling_rps = row.result.rps
        return row

    def floor(self) -> list[Row]:
        """The floor app's sale and status (``bench/floor.py``): the least the same durable work costs."""
        say("floor app")
        merchant, seeded = MerchantKeys("ceiling", "k" * 32, 1), 2000
        with floor_server(self.work_dir, self.options.server_core, seeded) as server:
            sale = self.sale_run("floor: sale, bare ASGI + SQLite", server, merchant, "", "floor-sale", "sqlite")
            bodies = self.work_dir / "floor-status.txt"
            write_lines(bodies, (status_body(merchant, str(n)) for n in range(1, seeded + 1)))
            path = f"{PREFIX}/api/v2/status/1"
            name = "floor: status, bare ASGI + SQLite"
            status = self.warm_and_measure(name, server, path, bodies, kind="floor-status", backend="sqlite")
        return [sale, status]

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
            return self.warm_and_measure(name, server, path, bodies, deployment.database_url, "status", backend)

    def sale(self, deployment: KassaDeployment, merchant: MerchantKeys, backend: str) -> Row:
        say(f"sale on {backend}")
        with deployment.server(self.options.server_core, f"sale-{backend}", *API_ONLY) as server:
            return self.sale_run(
                f"sale acceptance, {backend}", server, merchant, deployment.database_url, "sale", backend
            )

    def sale_run(
        self, name: str, server: Server, merchant: MerchantKeys, database_url: str, kind: str, backend: str
    ) -> Row:
        path = f"{PREFIX}/api/v2/sale/{merchant.endpoint_id}"
        make = partial(sale_bodies, merchant)
        return self.fresh_run(name, server, path, make, database_url, kind, backend)

    def fresh_run(
        self,
        name: str,
        server: Server,
        path: str,
        make: Make,
        database_url: str,
        kind: str,
        backend: str,
        expected_status: int = 200,
        round_: int = 0,
    ) -> Row:
        """A warm-up and a measured run on bodies never sent before: ``make(prefix, count)`` makes them,
        for each run just before it (OAuth bodies carry their signing time); ``round_`` tells apart the
        bodies of repeated runs of one kind."""
        o = self.options
        tag = f"{kind}-{backend}-{round_}"
        warm_bodies = self.work_dir / f"warm-{tag}.txt"
        write_lines(warm_bodies, make(f"warm-{tag}", self.body_budget(self.ceiling_rps / 2, o.warmup)))
        self.wait_for_quiet(name, server)
        warm_spec = self.spec(server, path, warm_bodies, o.warmup)
        warm = self.generate(dataclasses.replace(warm_spec, expected_status=expected_status))
        bodies = self.work_dir / f"run-{tag}.txt"
        count = write_lines(bodies, make(f"run-{tag}", self.body_budget(warm.rps, o.duration)))
        say(f"{name}: {count:,} distinct bodies (warm-up ran at {warm.rps:,.0f} req/s)")
        spec = dataclasses.replace(self.spec(server, path, bodies, o.duration), expected_status=expected_status)
        return self.measure(name, server, spec, database_url, unique_bodies=True, kind=kind, backend=backend)

    def oauth(self, backend: str) -> list[Row]:
        """What OAuth 1.0a costs a request, on one API-only server. Three rows are refused at their first
        field (code 1, a client_orderid too long) of the same body: a sale, a control row, with no signature
        checked (the control is checked after the fields); payout (HMAC-SHA1) and v4 payout (RSA-SHA256, a
        2048-bit key) once the signature is verified and the nonce written. They run in ``OAUTH_ROUNDS`` interleaved
        rounds, and each keeps its least round by server CPU per request: one run of each on this shared
        machine put the same build 30 µs either way, and the reference alone went from 84 to 134 µs over
        three rounds of one bench. What disturbs a round here (the load generator and the database on the
        other core, the machine's other work) only ever adds to a request's CPU, so the least round is the
        estimate of the request's own cost that the rest disturbs least; the notes give every round.
        Two rows do a real operation, the same work signed two
        ways: create-card-ref, v2 (control) then v4 (RSA-SHA256, its nonce written in
        the handler's transaction), of ``CARD_REF_ORDERS`` approved orders in turn, so that concurrent
        calls seldom wait on one order's lock. Every OAuth body is new (a nonce is accepted once), its ``oauth_*``
        parameters in the body."""
        o = self.options
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with self.deployment(backend, f"oauth-{backend}") as (deployment, merchant):
            pem = deployment.data_dir / "merchant-public.pem"
            pem.write_bytes(private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
            deployment.cli("key", "add", "--merchant", merchant.login, "--mode", "sandbox", "--pem", str(pem))
            with deployment.server(o.server_core, f"oauth-seed-{backend}") as server:  # with its worker
                orders = list(enumerate(create_orders(server.url, merchant, CARD_REF_ORDERS)))
                wait_until_settled(deployment, merchant.login)
            card_refs = [(f"seed-{n}", orderid) for n, orderid in orders]
            rsa_signer = OAuthSigner(merchant.login, merchant.control_key, private)
            hmac_signer = OAuthSigner(merchant.login, merchant.control_key)
            with deployment.server(o.server_core, f"oauth-{backend}", *API_ONLY) as server:
                url = deployment.database_url

                def run(kind: str, path: str, make: Make, status: int, round_: int = 0) -> Row:
                    name = f"{OAUTH_ROWS[kind]}, {backend}"
                    return self.fresh_run(name, server, path, make, url, kind, backend, status, round_)

                def signed(signer: OAuthSigner, path: str, fields: Sequence[dict[str, str]] = ()) -> Make:
                    return partial(oauth_bodies, signer, server.url + path, fields=fields)

                none, hmac, rsa_ = (self.endpoint_path(merchant, op) for op in OAUTH_REFUSED_PATHS)
                refused = refused_fields(merchant)
                unsigned: Make = lambda _prefix, count: itertools.repeat(urlencode(refused), count)  # noqa: E731
                oauth_refused = [{k: v for k, v in refused.items() if k != "control"}]
                rounds = [
                    (
                        run("oauth-none", none, unsigned, 400, n),
                        run("oauth-hmac", hmac, signed(hmac_signer, hmac, oauth_refused), 400, n),
                        run("oauth-rsa", rsa_, signed(rsa_signer, rsa_, oauth_refused), 400, n),
                    )
                    for n in range(OAUTH_ROUNDS)
                ]
                rows = [self.least_round([r[i] for r in rounds]) for i in range(3)]
                v2, v4 = (self.endpoint_path(merchant, f"/api/{v}/create-card-ref") for v in ("v2", "v4"))
                v2_bodies: Make = lambda _prefix, count: card_ref_bodies(merchant, card_refs, count)  # noqa: E731
                v4_fields = [card_ref_fields(client_orderid, orderid) for client_orderid, orderid in card_refs]
                rows.append(run("cardref-v2", v2, v2_bodies, 200))
                rows.append(run("cardref-v4", v4, signed(rsa_signer, v4, v4_fields), 200))
        return rows

    @staticmethod
    def endpoint_path(merchant: MerchantKeys, operation: str) -> str:
        return f"{PREFIX}{operation}/{merchant.endpoint_id}"

    def least_round(self, runs: list[Row]) -> Row:
        """The run of least server CPU per request; every run is named in the notes."""
        per_request = sorted((row.cpu.server / row.result.rps * 1e6 if row.result.rps else 0.0, row) for row in runs)
        spread = ", ".join(f"{us:.0f}" for us, _ in per_request)
        self.facts.append(
            f"{runs[0].name}: server CPU per request over {len(runs)} rounds: {spread} µs (the least kept)"
        )
        return per_request[0][1]

    def backend(self, backend: str) -> tuple[Row, Row, Row]:
        """(sale, payout, status) on one database; the status run comes first, on a database without a
        backlog."""
        with self.deployment(backend, backend) as (deployment, merchant):
            status = self.status(deployment, merchant, backend)
            return self.sale(deployment, merchant, backend), self.payout(deployment, merchant, backend), status

    def payout(self, deployment: KassaDeployment, merchant: MerchantKeys, backend: str) -> Row:
        """Payouts to a card signed with OAuth HMAC-SHA1, accepted: the nonce, order, card, transaction,
        the reservation of the amount on the merchant's one balance row, and the job."""
        say(f"payout on {backend}")
        credit = ("--currency", "USD", "--amount", "1000000000.00", "--reason", "bench payouts")
        deployment.cli("balance", "credit", "--merchant", merchant.login, *credit)
        signer = OAuthSigner(merchant.login, merchant.control_key)
        with deployment.server(self.options.server_core, f"payout-{backend}", *API_ONLY) as server:
            path = self.endpoint_path(merchant, "/api/v2/payout")
            make = partial(oauth_bodies, signer, server.url + path)
            name = f"payout acceptance (OAuth HMAC-SHA1), {backend}"
            return self.fresh_run(name, server, path, make, deployment.database_url, "payout", backend)

    @contextlib.contextmanager
    def deployment(self, backend: str, name: str) -> Iterator[tuple[KassaDeployment, MerchantKeys]]:
        """A fresh, migrated database of ``backend`` with one merchant; ``name`` keeps SQLite files apart."""
        with self.database(backend, name) as url:
            deployment = KassaDeployment(url, self.work_dir / name)
            deployment.data_dir.mkdir(parents=True, exist_ok=True)
            deployment.upgrade()
            yield deployment, bootstrap_merchant(deployment, f"bench-{name}")

    @contextlib.contextmanager
    def database(self, backend: str, name: str) -> Iterator[str]:
        if backend == "postgresql":
            with fresh_database() as url:
                yield url
        else:
            yield f"sqlite:///{self.work_dir / name / 'kassa.db'}"

    def peer(self) -> Row | None:
        command = peer.ensure_localstripe()
        if command is None:
            self.facts.append("peer: localstripe could not be installed with pip, so it was not measured")
            return None
        say("peer: localstripe charges")
        bodies = self.work_dir / "peer-bodies.txt"
        o = self.options
        write_lines(bodies, peer.charge_bodies(self.body_budget(self.ceiling_rps / 2, o.warmup + o.duration)))
        headers = peer.write_headers(self.work_dir / "peer-headers.txt")
        with peer.Localstripe(command, self.work_dir, o.server_core) as server:
            self.wait_for_quiet("peer", server)
            self.generate(dataclasses.replace(self.spec(server, "/v1/charges", bodies, o.warmup), headers=headers))
            spec = dataclasses.replace(self.spec(server, "/v1/charges", bodies, o.duration), headers=headers)
            return self.measure("peer: localstripe charges", server, spec, kind="peer")

    def endtoend(self, backend: str, rate: float | None = None, kind: str = "e2e-sustained") -> Row:
        """End to end at the target rate, or at ``rate``: a row of ``kind``, ``e2e`` (held to the target) or
        ``e2e-sustained`` (latency below overload, for a backend that cannot keep up with the target rate)."""
        o = self.options
        offered = rate or o.e2e_rate
        name = f"end to end at {offered:,.0f}/s, {backend}"
        say(f"{name}: {o.e2e_duration:g} s, then up to {o.e2e_grace:g} s for the last callbacks")
        spec = EndToEndSpec(offered, o.e2e_duration, o.e2e_grace, o.connections, o.load_core)
        place = f"e2e-{backend}-{offered:.0f}"
        with (
            self.deployment(backend, place) as (deployment, merchant),
            deployment.server(o.server_core, place) as server,
        ):
            receiver = CallbackReceiver(self.work_dir, o.load_core)
            self.wait_for_quiet(name, server)
            outcome, share, start = self.sampled(
                server,
                deployment.database_url,
                lambda: run_endtoend(server.url, merchant, deployment.data_dir, spec, receiver),
            )
            end = CpuSnapshot.take(server.cpu_seconds(), self.pg_pids(deployment.database_url))
            durable = stored_outcomes(deployment, merchant.login, outcome.accepted)
            load_cpu = outcome.load.generator_cpu + outcome.receiver_cpu_s / (end.at - start.at)
            r = dataclasses.replace(outcome.load, generator_cpu=load_cpu)  # the generator and the receiver
            facts = (
                f"{name}: {outcome.accepted:,} of {outcome.planned:,} sales accepted, {r.rps:,.0f}/s achieved;"
                f" {outcome.approved:,} approved callbacks, {outcome.lost:,} lost (no approved callback"
                f" {o.e2e_grace:g} s after the load; waited {outcome.waited_s:.1f} s),"
                f" {outcome.other_callbacks:,} other callbacks; request to answer p50 {outcome.answer_p50_ms:.1f} ms,"
                f" p99 {outcome.answer_p99_ms:.1f} ms; {outcome.late_sends:,} requests went out over 1 ms late"
                " (all connections busy), their latency counted from when they were due",
                f"{name}: in the database when the wait for callbacks ended, {durable}",
            )
            row = Row(
                name,
                r,
                server.rss_kib(),
                share,
                CpuUse.between(start, end, load_cpu),
                kind="e2e" if rate is None else kind,
                backend=backend,
                lost=outcome.lost,
                facts=facts,
            )
        say(f"{name}: p99 {r.p99_ms:,.1f} ms request to callback, {outcome.lost} lost")
        return row

    def bulk(self, backend: str) -> list[Row]:
        """Status by orderid over ``small_orders`` then ``big_orders`` stored orders, generated in bulk; then
        the console's order search by last four and dates over the big count (``bulk.console_search``)."""
        o = self.options
        rows = []
        with self.deployment(backend, f"bulk-{backend}") as (deployment, merchant):
            with deployment.server(o.server_core, f"bulk-template-{backend}") as server:
                [template] = create_orders(server.url, merchant, 1)
                wait_until_settled(deployment, merchant.login)
            orders = BulkOrders(deployment.database_url, int(template))
            for count, kind in ((o.small_orders, "bulk-small"), (o.big_orders, "bulk-big")):
                took = orders.grow_to(count)
                say(f"bulk on {backend}: {orders.generated:,} orders generated ({took:.1f} s for this step)")
                self.facts.append(
                    f"bulk on {backend}: generating up to {orders.generated:,} stored orders took {took:.1f} s"
                )
                bodies = self.work_dir / f"{kind}-{backend}.txt"
                ids = orders.sample(max(o.seed_orders, 20_000))
                write_lines(bodies, (status_body(merchant, str(orderid)) for orderid in ids))
                name = f"status, {orders.generated:,} stored orders, {backend}"
                path = f"{PREFIX}/api/v2/status/{merchant.endpoint_id}"
                loaded = orders.load_into_memory()
                self.facts.append(
                    f"bulk on {backend}: reading {orders.generated:,} orders into memory took {loaded:.1f} s"
                )
                with deployment.server(o.server_core, f"{kind}-{backend}") as server:
                    rows.append(
                        self.warm_and_measure(name, server, path, bodies, deployment.database_url, kind, backend)
                    )
            rows.append(search_row(console_search(deployment.database_url), orders.generated, backend))
        return rows

    def scale(self) -> list[Row]:
        """Sale acceptance with 1, then 2 server processes on PostgreSQL; the processes may use both cores."""
        rows = []
        cores = "0,1" if self.options.server_core is not None else None
        for processes in (1, 2):
            with self.deployment("postgresql", f"scale-{processes}") as (deployment, merchant):
                name = f"sale, {processes} server process{'es' if processes > 1 else ''}, postgresql"
                say(name)
                with process_group(deployment, processes, cores) as server:
                    row = self.sale_run(
                        name, server, merchant, deployment.database_url, f"scale-{processes}", "postgresql"
                    )
                    rows.append(dataclasses.replace(row, rss_each_kib=tuple(server.rss_each_kib())))
        return rows

    def run(self) -> list[Row]:
        """Rows in table order: ceiling, floor, every sale, every status, the peer, end to end, bulk, scale."""
        o = self.options
        rows = [self.ceiling()]
        if "core" in o.scenarios:
            rows += self.floor()
            runs = [self.backend(backend) for backend in o.backends]
            rows += [row for sale, payout, _ in runs for row in (sale, payout)] + [status for *_, status in runs]
        if "peer" in o.scenarios and (found := self.peer()) is not None:
            rows.append(found)
        if "e2e" in o.scenarios:
            rows += [self.endtoend(backend) for backend in o.backends]
            self.facts += [stage_profile(backend) for backend in o.backends]
            if "sqlite" in o.backends and o.e2e_high_rate:
                rows.append(self.endtoend("sqlite", o.e2e_high_rate, kind="e2e"))
            if "postgresql" in o.backends and o.e2e_sustained_rate:
                rows.append(self.endtoend("postgresql", o.e2e_sustained_rate))
        if "bulk" in o.scenarios:
            for backend in o.backends:
                rows += self.bulk(backend)
        if "scale" in o.scenarios and "postgresql" in o.backends:
            rows += self.scale()
        if "oauth" in o.scenarios:
            for backend in o.backends:
                rows += self.oauth(backend)
        return rows


def stage_profile(backend: str) -> str:
    """Where an end-to-end sale's CPU goes, stage by stage (``bench/stages.py``), as one line of the notes."""
    say(f"end to end by stage, {backend}")
    args = ["--backend", backend, "--sales", "1000", "--rounds", "2"]
    return summary_of(f"end to end by stage, {backend}", "stages", args)


def connector_cost() -> str:
    """What the ISO 8583 connector adds to a sale's CPU over the sandbox (``bench/connector.py``), as one line
    of the notes."""
    say("ISO 8583 connector against the sandbox")
    return summary_of("ISO 8583 connector", "connector", ["--sales", "2000", "--rounds", "3"])


def risk_cost() -> str:
    """What risk rules add to a sale's opening on SQLite (``bench/risk.py``), as one line of the notes."""
    say("risk rules: 10,000 block-list entries and 5 velocity limits")
    return summary_of("risk rules", "risk", ["--orders", "4000", "--rounds", "3"])


def summary_of(name: str, module: str, args: list[str]) -> str:
    """The summary line ``python -m bench.<module>`` prints, or why there is none."""
    argv = [sys.executable, "-m", f"bench.{module}", *args]
    done = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=900, check=False)
    line = next((x for x in done.stdout.splitlines() if x.startswith(SUMMARY)), None)
    if done.returncode != 0 or line is None:
        last = done.stderr.strip().splitlines()[-1:] or [""]
        return f"{name}: bench/{module}.py failed ({done.returncode}): {last[0][:300]}"
    return line[len(SUMMARY) :]


def search_row(took_ms: Sequence[float], stored: int, backend: str) -> Row:
    """The console's search by last four and dates over ``stored`` orders: one search at a time, in the
    bench's own process (no server, no HTTP), so only the latencies count; CPU and RSS are not taken."""
    ordered = sorted(took_ms)
    result = LoadResult(
        requests=len(ordered),
        duration_s=sum(ordered) / 1000,
        p50_ms=percentile(ordered, 0.50),
        p99_ms=percentile(ordered, 0.99),
        p999_ms=percentile(ordered, 0.999),
        non_200=0,
        socket_errors=0,
        sent=len(ordered),
        wraps=0,
        first_error="",
        generator="in-process",
        generator_cpu=0.0,
    )
    name = f"console search, last four + dates, {stored:,} stored orders, {backend}"
    return Row(name, result, 0, 0.0, CpuUse(0.0, 0.0, 0.0), kind="console-search", backend=backend)


def bootstrap_merchant(deployment: KassaDeployment, login: str) -> MerchantKeys:
    created = deployment.cli("merchant", "create", "--login", login)
    endpoint = deployment.cli("endpoint", "create", "--merchant", login, "--currency", "USD")
    return MerchantKeys(login, created["control_key"], int(endpoint["id"]))


def stored_outcomes(deployment: KassaDeployment, login: str, accepted: int) -> str:
    """What the database holds once the callbacks are in: every accepted sale approved, none processing,
    no callback pending (the receiver's count alone would not show a write that never became durable)."""
    limit = str(accepted + 1)
    approved = deployment.cli("order", "list", "--merchant", login, "--status", "approved", "--limit", limit)
    processing = deployment.cli("order", "list", "--merchant", login, "--status", "processing", "--limit", limit)
    pending = deployment.cli("callbacks", "list", "--status", "pending")  # the CLI lists 100 at most
    waiting = f"{len(pending)}+" if len(pending) >= 100 else str(len(pending))
    return f"{len(approved):,} approved, {len(processing):,} still processing, {waiting} callbacks pending"
