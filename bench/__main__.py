"""``python -m bench``: run every scenario, print the table, rewrite docs/performance.md."""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import claims, isolation, logcost, metricscost, overload, peer, postgres, probe, report
from bench.load import LoadResult, LoadSpec
from bench.pyload import run_pyload
from bench.scenarios import BACKENDS, SCENARIOS, Bench, Generator, Options, Row, connector_cost, risk_cost, say
from bench.wrk import ensure_wrk, run_wrk, write_script

DOCS = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--duration", type=float, default=10, help="seconds of each measured run (default 10)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="3-second runs, 500 seeded orders, a 5-second end-to-end run and 100,000 bulk orders",
    )
    parser.add_argument("--connections", type=int, default=50, help="concurrent connections (default 50)")
    parser.add_argument("--seed-orders", type=int, default=2000, help="orders polled by the status runs")
    parser.add_argument(
        "--backends", default=",".join(BACKENDS), help="comma-separated, of: sqlite, postgresql (default both)"
    )
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help="comma-separated, of: core (sale, payout, status), peer, e2e, bulk, scale, oauth, claims, overload,"
        " isolation, connector, risk (default all; the ceiling always runs)",
    )
    parser.add_argument("--e2e-rate", type=float, default=1000, help="end to end: sales per second (default 1000)")
    parser.add_argument("--e2e-duration", type=float, default=60, help="end to end: seconds of load (default 60)")
    parser.add_argument(
        "--e2e-sustained-rate",
        type=float,
        default=200,
        help="end to end: PostgreSQL runs again at this rate, one it keeps up with here (default 200; 0: no)",
    )
    parser.add_argument(
        "--e2e-high-rate",
        type=float,
        default=1500,
        help="end to end: SQLite runs again at this rate, held to the same target (default 1500; 0: no)",
    )
    parser.add_argument(
        "--overload-seconds", type=float, default=60, help="overload: seconds of the burst at twice the capacity"
    )
    parser.add_argument(
        "--isolation-queued",
        type=int,
        default=100_000,
        help="isolation: callbacks of another merchant queued to a dead receiver (default 100,000)",
    )
    parser.add_argument(
        "--isolation-rate", type=float, default=200, help="isolation: the healthy merchant's sales/s (default 200)"
    )
    parser.add_argument(
        "--e2e-grace", type=float, default=30, help="end to end: seconds to wait for the last callbacks (default 30)"
    )
    parser.add_argument(
        "--big-orders", type=int, default=10_000_000, help="bulk: stored orders of the big status run (default 10M)"
    )
    parser.add_argument(
        "--small-orders", type=int, default=10_000, help="bulk: stored orders of the small status run (default 10k)"
    )
    parser.add_argument(
        "--docs",
        type=Path,
        default=DOCS,
        help="Markdown file whose results to rewrite (default docs/performance.md)",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=30,
        help="before each warm-up, wait up to this many seconds for the machine to go idle (default 30; 0: never)",
    )
    parser.add_argument("--no-docs", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    unknown = set(args.backends.split(",")) - set(BACKENDS)
    if unknown:
        parser.error(f"unknown backends: {', '.join(sorted(unknown))}")
    unknown = set(args.scenarios.split(",")) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return args


def options(args: argparse.Namespace) -> Options:
    two_cores = probe.cores() >= 2
    return Options(
        duration=3 if args.quick else args.duration,
        warmup=1,
        connections=args.connections,
        seed_orders=500 if args.quick else args.seed_orders,
        backends=tuple(b for b in BACKENDS if b in args.backends.split(",")),
        server_core=0 if two_cores else None,
        load_core=1 if two_cores else None,
        quiet_wait=args.quiet_wait,
        scenarios=tuple(x for x in SCENARIOS if x in args.scenarios.split(",")),
        e2e_rate=args.e2e_rate,
        e2e_duration=min(args.e2e_duration, 5) if args.quick else args.e2e_duration,
        e2e_grace=args.e2e_grace,
        e2e_sustained_rate=args.e2e_sustained_rate,
        e2e_high_rate=args.e2e_high_rate,
        small_orders=args.small_orders,
        big_orders=min(args.big_orders, 100_000) if args.quick else args.big_orders,
    )


def generator(work_dir: Path) -> Generator:
    binary = ensure_wrk()
    if binary is None:
        say("wrk is not available: falling back to the Python load generator (it may be the bottleneck)")
        return run_pyload
    script = write_script(work_dir)

    def generate(spec: LoadSpec) -> LoadResult:
        return run_wrk(binary, script, spec)

    return generate


def settings_text(o: Options) -> str:
    pinning = "server on core 0, load generator on core 1" if o.server_core is not None else "no CPU pinning"
    return (
        f"Settings: {o.duration:g} s measured per scenario after a {o.warmup:g} s warm-up, {o.connections} "
        f"connections, {o.seed_orders} orders polled by the status runs, {pinning}. End to end: "
        f"{o.e2e_rate:,.0f} sales/s for {o.e2e_duration:g} s, {o.e2e_grace:g} s grace for callbacks"
        f"{f' (SQLite also at {o.e2e_high_rate:,.0f}/s)' if o.e2e_high_rate else ''}"
        f"{f' (PostgreSQL also at {o.e2e_sustained_rate:,.0f}/s)' if o.e2e_sustained_rate else ''}. Bulk: "
        f"{o.small_orders:,} then {o.big_orders:,} stored orders. Scenarios: {', '.join(o.scenarios)}."
    )


def _overload(backend: str, args: argparse.Namespace) -> Row:
    """``python -m bench.overload`` on ``backend`` with its defaults, but the burst's length (10 s at most
    with ``--quick``)."""
    seconds = min(args.overload_seconds, 10) if args.quick else args.overload_seconds
    say(f"overload on {backend}: twice the capacity for {seconds:g} s")
    given = overload.parse_args(["--backend", backend, "--seconds", str(seconds)])
    with tempfile.TemporaryDirectory(prefix="kassa-overload-") as tmp:
        return overload.row(overload.measure(given, Path(tmp)), given.after)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    opts = options(args)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kassa-bench-") as tmp:
        work_dir = Path(tmp)
        bench = Bench(opts, work_dir, generator(work_dir))
        rows = bench.run()
    if "claims" in opts.scenarios:
        say("claims: callback and job claims with 0 to 1M rows queued that they cannot take")
        rows += [row for backend in opts.backends for row in claims.measure(backend, claims.backlogs(args.quick))]
    if "overload" in opts.scenarios:
        rows += [_overload(backend, args) for backend in opts.backends]
    if "isolation" in opts.scenarios:
        for backend in opts.backends:
            spec = isolation.Spec(args.isolation_queued, args.isolation_rate, opts.e2e_duration, opts.e2e_grace)
            rows += isolation.measure(backend, spec, opts.connections)
    if "connector" in opts.scenarios:
        bench.facts.append(connector_cost())
    if "risk" in opts.scenarios:
        bench.facts.append(risk_cost())
    bench.facts.append(logcost.in_own_process(opts.server_core))
    bench.facts.append(metricscost.note(opts.server_core))
    bench.facts.append(f"the whole bench took {(time.monotonic() - started) / 60:.1f} minutes")
    print(report.table(rows))
    for note in report.notes(rows, bench.facts):
        print(f"- {note}")
    if not args.no_docs:
        pg_version = postgres.server_version() if "postgresql" in opts.backends else "not measured"
        peer_version = peer.version() if "peer" in opts.scenarios else "not measured"
        command = shlex.join([".venv/bin/python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
        facts = report.machine(pg_version, peer_version)
        written = report.results(rows, command, facts, settings_text(opts), bench.facts)
        args.docs.write_text(report.with_results(args.docs.read_text(), written))
        say(f"wrote {args.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
